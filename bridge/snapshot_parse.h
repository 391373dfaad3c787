// The payloads of SGLang's snapshot replies (docs/bridge-events.md,
// "Recovery > Mode S"), parsed and validated; the transport is
// SnapshotClient's.
//
// snapshot-v1
//   header  msgpack [version, epoch, replica_rank, resume_seq, barrier_seq,
//                    barrier_id, record_count]
//   chunk   msgpack [[parent_block_hash | nil, [block_hash, ...]], ...]
// snapshot-v2
//   header  msgpack map; read: version, worker_epoch (or epoch), dp_rank (or
//           replica_rank), barrier_seq, resume_seq, barrier_id,
//           record_count; and, into SnapshotHeaderFields when present:
//           namespace, worker_id, model, hash_schema_version, page_size,
//           is_bigram, worker_generation (a string, or an unsigned integer
//           read as its decimal form); a wrong-typed one is listed as
//           unreadable, not refused; every other key (cache_spec, ...) is
//           ignored
//   chunk   msgpack [{block_hash, parent_block_hash, block_size, tier,
//                     component_mask, ...}, ...]
//
// A header is accepted only if its version is the protocol's, its rank is
// the expected DP rank (a v2 header's rank is not compared when none is
// expected: the caller compares SnapshotHeaderFields::dp_rank), epoch and
// barrier_id are non-empty, resume_seq = barrier_seq + 1 and record_count <=
// kMaxSnapshotRecords. A chunk is accepted only if it keeps the records
// received within record_count; a v1 record
// carries 1..kMaxSnapshotHashesPerRecord hashes, a v2 record an integer
// block_hash, a tier in 1..3 and a non-zero component_mask and block_size (both
// uint32). Hashes are any msgpack integer; unsigned values above the int64
// maximum are reinterpreted bit for bit, as for live events.
//
// Errors are InvalidArgument with the reason, without a protocol prefix.
// Nothing throws. Thread safety: pure functions.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_PARSE_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bridge/snapshot_source.h"

namespace kvindexer::bridge {

inline constexpr size_t kMaxSnapshotRecords = 10'000'000;
inline constexpr size_t kMaxSnapshotHashesPerRecord = 65'536;

struct SnapshotHeader {
  PublisherSnapshot snapshot;  // version and fences; no records yet
  uint64_t record_count = 0;
};

[[nodiscard]] absl::StatusOr<SnapshotHeader> ParseSnapshotV1Header(
    absl::string_view payload, uint32_t expected_rank);
[[nodiscard]] absl::StatusOr<SnapshotHeader> ParseSnapshotV2Header(
    absl::string_view payload, std::optional<uint32_t> expected_rank);

// Appends one chunk's records. `*records` counts the records received so
// far (updated); `record_count` is the header's.
[[nodiscard]] absl::Status AppendSnapshotV1Chunk(absl::string_view payload,
                                                 uint64_t record_count,
                                                 uint64_t* records,
                                                 std::vector<int64_t>* hashes);
[[nodiscard]] absl::Status AppendSnapshotV2Chunk(
    absl::string_view payload, uint64_t record_count, uint64_t* records,
    std::vector<SnapshotBlock>* blocks);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_PARSE_H_
