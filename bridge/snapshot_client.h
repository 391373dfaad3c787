// SnapshotSource over SGLang's snapshot ROUTER socket, protocol snapshot-v1
// (docs/bridge-events.md, "Replay and snapshot channels" and "Recovery").
// One request per Fetch(), on a fresh DEALER socket (bridge/dealer_request.h):
//   request  [empty]["snapshot-v1"]
//   replies  [empty][kind][payload], kind one of
//     "header"  msgpack [version, epoch, replica_rank, resume_seq,
//                        barrier_seq, barrier_id, record_count]
//     "chunk"   msgpack [[parent_block_hash | nil, [block_hash, ...]], ...]
//     "end"     empty payload; the snapshot is complete
//     "error"   a UTF-8 message from the provider; the fetch fails
// The header comes first (or an error). The snapshot is accepted only if
// version = 1, replica_rank = the configured DP rank, epoch and barrier_id
// are non-empty, resume_seq = barrier_seq + 1, record_count and the records
// received agree and stay within kMaxSnapshotRecords, every record carries
// 1..kMaxSnapshotHashesPerRecord hashes, and `end` is empty. SGLang sends one
// hash per record; a record with several contributes them all, in order.
//
// Thread safety: Fetch() may be called from one thread at a time.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include <zmq.hpp>

#include "bridge/shutdown_signal.h"
#include "bridge/snapshot_source.h"

namespace kvindexer::bridge {

inline constexpr std::chrono::milliseconds kSnapshotFetchTimeout{30000};
inline constexpr size_t kMaxSnapshotRecords = 10'000'000;
inline constexpr size_t kMaxSnapshotHashesPerRecord = 65'536;

class SnapshotClient final : public SnapshotSource {
 public:
  // `context` and `shutdown` must outlive the client; `shutdown` may be
  // null. `endpoint` is SGLANG_KV_SNAPSHOT_ENDPOINT for this DP rank, and
  // `replica_rank` that rank. `fetch_timeout` bounds the whole fetch.
  SnapshotClient(
      zmq::context_t* context, std::string endpoint, uint32_t replica_rank,
      const ShutdownSignal* shutdown,
      std::chrono::milliseconds fetch_timeout = kSnapshotFetchTimeout);

  absl::StatusOr<PublisherSnapshot> Fetch() override;

 private:
  zmq::context_t* const context_;
  const std::string endpoint_;
  const uint32_t replica_rank_;
  const ShutdownSignal* const shutdown_;
  const std::chrono::milliseconds fetch_timeout_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_
