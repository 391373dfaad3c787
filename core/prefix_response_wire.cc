#include "core/prefix_response_wire.h"

#include <string.h>

namespace kvindexer {
namespace {

// Wire types (protobuf encoding): 0 varint, 2 length-delimited.
constexpr uint8_t Tag(uint8_t field, uint8_t wire_type) {
  return static_cast<uint8_t>(field << 3 | wire_type);
}

// ExternalKvPrefixMatch.
constexpr uint8_t kWorkerAddressTag = Tag(1, 2);
constexpr uint8_t kMatchedPrefixBlocksTag = Tag(2, 0);
constexpr uint8_t kWorkerIdTag = Tag(3, 2);
constexpr uint8_t kMatchStreamIdTag = Tag(4, 2);
constexpr uint8_t kMatchGenerationTag = Tag(5, 2);
// MatchExternalKvPrefixResponse.
constexpr uint8_t kMatchesTag = Tag(1, 2);
constexpr uint8_t kBestPrefixBlocksTag = Tag(2, 0);
constexpr uint8_t kBlocksReadTag = Tag(3, 0);
constexpr uint8_t kCoverageTag = Tag(4, 2);
constexpr uint8_t kCompleteCoverageTag = Tag(5, 0);
constexpr uint8_t kUncoveredTag = Tag(6, 2);
// StreamId.
constexpr uint8_t kNamespaceTag = Tag(1, 2);
constexpr uint8_t kStreamWorkerIdTag = Tag(2, 2);
constexpr uint8_t kDpRankTag = Tag(3, 0);
// StreamCoverage.
constexpr uint8_t kCoverageStreamIdTag = Tag(1, 2);
constexpr uint8_t kCoverageAddressTag = Tag(2, 2);
constexpr uint8_t kReadyTag = Tag(3, 0);
constexpr uint8_t kEpochTag = Tag(4, 2);
constexpr uint8_t kWatermarkTag = Tag(5, 0);
constexpr uint8_t kCoverageGenerationTag = Tag(6, 2);

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

uint8_t* WriteVarint(uint64_t v, uint8_t* out) {
  while (v >= 0x80) {
    *out++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<uint8_t>(v);
  return out;
}

// A proto3 field with implicit presence is written only when non-zero.
size_t UintFieldSize(uint64_t v) { return v == 0 ? 0 : 1 + VarintSize(v); }

uint8_t* WriteUintField(uint8_t tag, uint64_t v, uint8_t* out) {
  if (v == 0) return out;
  *out++ = tag;
  return WriteVarint(v, out);
}

size_t StringFieldSize(std::string_view s) {
  return s.empty() ? 0 : 1 + VarintSize(s.size()) + s.size();
}

uint8_t* WriteStringField(uint8_t tag, std::string_view s, uint8_t* out) {
  if (s.empty()) return out;
  *out++ = tag;
  out = WriteVarint(s.size(), out);
  memcpy(out, s.data(), s.size());
  return out + s.size();
}

// A message field that is present, however small its body.
size_t MessageFieldSize(size_t body) { return 1 + VarintSize(body) + body; }

size_t StreamIdBodySize(const StreamCoverageView& s) {
  return StringFieldSize(s.ns) + StringFieldSize(s.worker_id) +
         UintFieldSize(s.dp_rank);
}

uint8_t* WriteStreamId(uint8_t tag, const StreamCoverageView& s, uint8_t* out) {
  *out++ = tag;
  out = WriteVarint(StreamIdBodySize(s), out);
  out = WriteStringField(kNamespaceTag, s.ns, out);
  out = WriteStringField(kStreamWorkerIdTag, s.worker_id, out);
  return WriteUintField(kDpRankTag, s.dp_rank, out);
}

size_t MatchBodySize(const PrefixMatchView& m) {
  size_t size = StringFieldSize(m.worker_address) +
                UintFieldSize(m.matched_prefix_blocks) +
                StringFieldSize(m.worker_id);
  if (m.stream != nullptr) {
    size += MessageFieldSize(StreamIdBodySize(*m.stream)) +
            StringFieldSize(m.stream->worker_generation);
  }
  return size;
}

size_t CoverageBodySize(const StreamCoverageView& s) {
  return MessageFieldSize(StreamIdBodySize(s)) +
         StringFieldSize(s.worker_address) + (s.ready ? 2 : 0) +
         StringFieldSize(s.worker_epoch) + UintFieldSize(s.watermark) +
         StringFieldSize(s.worker_generation);
}

size_t CoverageSize(const PrefixCoverage& c) {
  size_t size = 0;
  for (const StreamCoverageView& s : c.streams) {
    size += MessageFieldSize(CoverageBodySize(s));
  }
  size += c.complete ? 2 : 0;
  // A repeated string element is written even when it is empty.
  for (std::string_view a : c.uncovered_worker_addresses) {
    size += 1 + VarintSize(a.size()) + a.size();
  }
  return size;
}

uint8_t* WriteCoverage(const PrefixCoverage& c, uint8_t* out) {
  for (const StreamCoverageView& s : c.streams) {
    *out++ = kCoverageTag;
    out = WriteVarint(CoverageBodySize(s), out);
    out = WriteStreamId(kCoverageStreamIdTag, s, out);
    out = WriteStringField(kCoverageAddressTag, s.worker_address, out);
    out = WriteUintField(kReadyTag, s.ready ? 1 : 0, out);
    out = WriteStringField(kEpochTag, s.worker_epoch, out);
    out = WriteUintField(kWatermarkTag, s.watermark, out);
    out = WriteStringField(kCoverageGenerationTag, s.worker_generation, out);
  }
  out = WriteUintField(kCompleteCoverageTag, c.complete ? 1 : 0, out);
  for (std::string_view a : c.uncovered_worker_addresses) {
    *out++ = kUncoveredTag;
    out = WriteVarint(a.size(), out);
    memcpy(out, a.data(), a.size());
    out += a.size();
  }
  return out;
}

}  // namespace

size_t PrefixResponseWireSize(const PrefixAnswer& answer) {
  size_t size = 0;
  for (const PrefixMatchView& m : answer.matches) {
    const size_t body = MatchBodySize(m);
    // A repeated message element is written even when it is empty.
    size += 1 + VarintSize(body) + body;
  }
  size += UintFieldSize(answer.best_prefix_blocks) +
          UintFieldSize(answer.blocks_read);
  if (answer.coverage != nullptr) size += CoverageSize(*answer.coverage);
  return size;
}

uint8_t* WritePrefixResponseWire(const PrefixAnswer& answer, uint8_t* out) {
  for (const PrefixMatchView& m : answer.matches) {
    *out++ = kMatchesTag;
    out = WriteVarint(MatchBodySize(m), out);
    out = WriteStringField(kWorkerAddressTag, m.worker_address, out);
    out = WriteUintField(kMatchedPrefixBlocksTag, m.matched_prefix_blocks, out);
    out = WriteStringField(kWorkerIdTag, m.worker_id, out);
    if (m.stream != nullptr) {
      out = WriteStreamId(kMatchStreamIdTag, *m.stream, out);
      out = WriteStringField(kMatchGenerationTag, m.stream->worker_generation,
                             out);
    }
  }
  out = WriteUintField(kBestPrefixBlocksTag, answer.best_prefix_blocks, out);
  out = WriteUintField(kBlocksReadTag, answer.blocks_read, out);
  if (answer.coverage != nullptr) out = WriteCoverage(*answer.coverage, out);
  return out;
}

}  // namespace kvindexer
