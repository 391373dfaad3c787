#include "bridge/snapshot_client.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <msgpack.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "bridge/dealer_request.h"

namespace kvindexer::bridge {
namespace {

constexpr absl::string_view kRequest = "snapshot-v1";
constexpr absl::string_view kHeader = "header";
constexpr absl::string_view kChunk = "chunk";
constexpr absl::string_view kEnd = "end";
constexpr absl::string_view kError = "error";
constexpr uint64_t kVersion = 1;
// How much of a provider's error message is quoted.
constexpr size_t kMaxErrorMessage = 1024;

absl::Status Fail(absl::string_view why) {
  return absl::UnavailableError(absl::StrCat("snapshot-v1: ", why));
}

absl::string_view View(const zmq::message_t& frame) {
  return {static_cast<const char*>(frame.data()), frame.size()};
}

bool AsUnsigned(const msgpack::object& o, uint64_t* out) {
  if (o.type != msgpack::type::POSITIVE_INTEGER) return false;
  *out = o.via.u64;
  return true;
}

bool AsString(const msgpack::object& o, std::string* out) {
  if (o.type != msgpack::type::STR) return false;
  out->assign(o.via.str.ptr, o.via.str.size);
  return true;
}

// A block hash: any msgpack integer; unsigned values above the int64
// maximum are reinterpreted bit for bit, as for live events
// (docs/bridge-events.md, "Hashes").
bool AsHash(const msgpack::object& o, int64_t* out) {
  if (o.type == msgpack::type::POSITIVE_INTEGER) {
    *out = static_cast<int64_t>(o.via.u64);
    return true;
  }
  if (o.type == msgpack::type::NEGATIVE_INTEGER) {
    *out = o.via.i64;
    return true;
  }
  return false;
}

struct Header {
  PublisherSnapshot snapshot;  // without hashes
  uint64_t record_count = 0;
};

absl::StatusOr<Header> ParseHeader(absl::string_view payload,
                                   uint32_t expected_rank) {
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(payload.data(), payload.size());
  } catch (const std::exception& e) {
    return Fail(absl::StrCat("header is not msgpack: ", e.what()));
  }
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::ARRAY || root.via.array.size != 7) {
    return Fail(
        "header is not an array of 7 fields [version, epoch, "
        "replica_rank, resume_seq, barrier_seq, barrier_id, "
        "record_count]");
  }
  const msgpack::object* f = root.via.array.ptr;
  Header h;
  uint64_t version = 0;
  uint64_t rank = 0;
  if (!AsUnsigned(f[0], &version))
    return Fail("header version is not an unsigned integer");
  if (version != kVersion) {
    return Fail(absl::StrCat("unsupported version ", version, "; expected 1"));
  }
  if (!AsString(f[1], &h.snapshot.epoch))
    return Fail("header epoch is not a string");
  if (h.snapshot.epoch.empty()) return Fail("header epoch is empty");
  if (!AsUnsigned(f[2], &rank))
    return Fail("header replica_rank is not an unsigned integer");
  if (rank != expected_rank) {
    return Fail(absl::StrCat("replica_rank ", rank,
                             " does not match the configured DP rank ",
                             expected_rank));
  }
  if (!AsUnsigned(f[3], &h.snapshot.resume_seq)) {
    return Fail("header resume_seq is not an unsigned integer");
  }
  if (!AsUnsigned(f[4], &h.snapshot.barrier_seq)) {
    return Fail("header barrier_seq is not an unsigned integer");
  }
  if (h.snapshot.barrier_seq == ~uint64_t{0} ||
      h.snapshot.resume_seq != h.snapshot.barrier_seq + 1) {
    return Fail(absl::StrCat("resume_seq ", h.snapshot.resume_seq,
                             " is not barrier_seq + 1 (barrier_seq ",
                             h.snapshot.barrier_seq, ")"));
  }
  if (!AsString(f[5], &h.snapshot.barrier_id))
    return Fail("header barrier_id is not a string");
  if (h.snapshot.barrier_id.empty()) return Fail("header barrier_id is empty");
  if (!AsUnsigned(f[6], &h.record_count)) {
    return Fail("header record_count is not an unsigned integer");
  }
  if (h.record_count > kMaxSnapshotRecords) {
    return Fail(absl::StrCat("record_count ", h.record_count,
                             " exceeds the cap of ", kMaxSnapshotRecords));
  }
  return h;
}

// Appends the hashes of one chunk's records; `records` counts records.
absl::Status AppendChunk(absl::string_view payload, uint64_t record_count,
                         uint64_t* records, std::vector<int64_t>* hashes) {
  msgpack::object_handle handle;
  try {
    handle = msgpack::unpack(payload.data(), payload.size());
  } catch (const std::exception& e) {
    return Fail(absl::StrCat("chunk is not msgpack: ", e.what()));
  }
  const msgpack::object& root = handle.get();
  if (root.type != msgpack::type::ARRAY) return Fail("chunk is not an array");
  if (*records + root.via.array.size > record_count) {
    return Fail(absl::StrCat("more records than the header's record_count ",
                             record_count));
  }
  for (const msgpack::object& record :
       std::span(root.via.array.ptr, root.via.array.size)) {
    if (record.type != msgpack::type::ARRAY || record.via.array.size != 2) {
      return Fail("a record is not [parent_block_hash, [block_hash]]");
    }
    const msgpack::object& parent = record.via.array.ptr[0];
    const msgpack::object& list = record.via.array.ptr[1];
    int64_t hash = 0;
    if (parent.type != msgpack::type::NIL && !AsHash(parent, &hash)) {
      return Fail("a record's parent_block_hash is neither nil nor an integer");
    }
    if (list.type != msgpack::type::ARRAY) {
      return Fail("a record's block hashes are not an array");
    }
    if (list.via.array.size == 0) return Fail("a record has no block hash");
    if (list.via.array.size > kMaxSnapshotHashesPerRecord) {
      return Fail(absl::StrCat("a record has ", list.via.array.size,
                               " block hashes; the cap is ",
                               kMaxSnapshotHashesPerRecord));
    }
    for (const msgpack::object& h :
         std::span(list.via.array.ptr, list.via.array.size)) {
      if (!AsHash(h, &hash)) return Fail("a block hash is not an integer");
      hashes->push_back(hash);
    }
    ++*records;
  }
  return absl::OkStatus();
}

}  // namespace

SnapshotClient::SnapshotClient(zmq::context_t* context, std::string endpoint,
                               uint32_t replica_rank,
                               const ShutdownSignal* shutdown,
                               std::chrono::milliseconds fetch_timeout)
    : context_(context),
      endpoint_(std::move(endpoint)),
      replica_rank_(replica_rank),
      shutdown_(shutdown),
      fetch_timeout_(fetch_timeout) {}

absl::StatusOr<PublisherSnapshot> SnapshotClient::Fetch() {
  const auto deadline = DealerRequest::Clock::now() + fetch_timeout_;
  absl::StatusOr<std::unique_ptr<DealerRequest>> request = DealerRequest::Send(
      context_, endpoint_, {std::string(), std::string(kRequest)}, shutdown_);
  if (!request.ok()) return Fail(request.status().message());

  std::optional<Header> header;
  uint64_t records = 0;
  while (true) {
    absl::StatusOr<std::vector<zmq::message_t>> reply =
        (*request)->Receive(deadline);
    if (!reply.ok()) {
      if (reply.status().code() == absl::StatusCode::kDeadlineExceeded) {
        return Fail(absl::StrCat("no complete snapshot from \"", endpoint_,
                                 "\" within ", fetch_timeout_.count(), " ms"));
      }
      return Fail(reply.status().message());
    }
    const std::vector<zmq::message_t>& frames = *reply;
    if (frames.size() != 3 || frames[0].size() != 0) {
      return Fail(absl::StrCat("malformed reply of ", frames.size(),
                               " frames; expected [empty, kind, payload]"));
    }
    const absl::string_view kind = View(frames[1]);
    const absl::string_view payload = View(frames[2]);
    if (kind == kError) {
      return Fail(absl::StrCat(
          "the provider answered an error: ",
          payload.substr(0, std::min(payload.size(), kMaxErrorMessage))));
    }
    if (!header.has_value()) {
      if (kind != kHeader) {
        return Fail(absl::StrCat("the first reply is \"", kind.substr(0, 32),
                                 "\", not a header"));
      }
      absl::StatusOr<Header> parsed = ParseHeader(payload, replica_rank_);
      if (!parsed.ok()) return parsed.status();
      header = *std::move(parsed);
      // One hash per record is the usual shape; the claim is only trusted
      // so far before the records arrive.
      header->snapshot.hashes.reserve(
          std::min<uint64_t>(header->record_count, uint64_t{1} << 20));
      continue;
    }
    if (kind == kChunk) {
      absl::Status appended = AppendChunk(payload, header->record_count,
                                          &records, &header->snapshot.hashes);
      if (!appended.ok()) return appended;
      continue;
    }
    if (kind != kEnd) {
      return Fail(
          absl::StrCat("unexpected reply kind \"", kind.substr(0, 32), "\""));
    }
    if (!payload.empty()) {
      return Fail(absl::StrCat("the end reply carries ", payload.size(),
                               " payload bytes; expected none"));
    }
    if (records != header->record_count) {
      return Fail(absl::StrCat("received ", records,
                               " records; the header declared ",
                               header->record_count));
    }
    return std::move(header->snapshot);
  }
}

}  // namespace kvindexer::bridge
