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
// MatchExternalKvPrefixResponse.
constexpr uint8_t kMatchesTag = Tag(1, 2);
constexpr uint8_t kBestPrefixBlocksTag = Tag(2, 0);
constexpr uint8_t kBlocksReadTag = Tag(3, 0);

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
size_t UintFieldSize(uint32_t v) { return v == 0 ? 0 : 1 + VarintSize(v); }

uint8_t* WriteUintField(uint8_t tag, uint32_t v, uint8_t* out) {
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

size_t MatchBodySize(const PrefixMatchView& m) {
  return StringFieldSize(m.worker_address) +
         UintFieldSize(m.matched_prefix_blocks) + StringFieldSize(m.worker_id);
}

}  // namespace

size_t PrefixResponseWireSize(const PrefixAnswer& answer) {
  size_t size = 0;
  for (const PrefixMatchView& m : answer.matches) {
    const size_t body = MatchBodySize(m);
    // A repeated message element is written even when it is empty.
    size += 1 + VarintSize(body) + body;
  }
  return size + UintFieldSize(answer.best_prefix_blocks) +
         UintFieldSize(answer.blocks_read);
}

uint8_t* WritePrefixResponseWire(const PrefixAnswer& answer, uint8_t* out) {
  for (const PrefixMatchView& m : answer.matches) {
    *out++ = kMatchesTag;
    out = WriteVarint(MatchBodySize(m), out);
    out = WriteStringField(kWorkerAddressTag, m.worker_address, out);
    out = WriteUintField(kMatchedPrefixBlocksTag, m.matched_prefix_blocks, out);
    out = WriteStringField(kWorkerIdTag, m.worker_id, out);
  }
  out = WriteUintField(kBestPrefixBlocksTag, answer.best_prefix_blocks, out);
  return WriteUintField(kBlocksReadTag, answer.blocks_read, out);
}

}  // namespace kvindexer
