// Splits an action list into ApplyExternalKvBatch requests
// (docs/bridge-events.md, "Chunking"):
// at most 16,384 hashes and 256 actions per request, actions in order, and
// every request repeating the same worker_id, seq, worker_address and
// cache_spec.
#ifndef KVINDEXER_BRIDGE_CHUNKER_H_
#define KVINDEXER_BRIDGE_CHUNKER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bridge/action_builder.h"
#include "common/wire_vocabulary.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

// The per-worker fields repeated on every request.
struct ApplyHeader {
  std::string worker_id;
  std::string worker_address;
  std::optional<kv_indexer::v1::WorkerCacheSpec> cache_spec;  // absent = legacy
  // Multi-stream mode: the stream key every apply and replace carries
  // (line A). Absent in single-worker mode, whose requests stay seed-era.
  std::optional<kv_indexer::v1::StreamId> stream_id;
  // Multi-stream mode: the worker generation a snapshot-v2 header named;
  // carried by every apply and replace once known (empty: not sent).
  std::string worker_generation;
};

struct ChunkLimits {
  size_t max_hashes = kMaxHashesPerRequest;
  size_t max_actions = kMaxActionsPerBatch;
};

// Returns the requests for one batch, in sending order. An empty action list
// yields no request at all. An action with more hashes than
// limits.max_hashes is first cut into consecutive slices (side arrays cut
// with the same bounds); then actions are packed greedily.
// REQUIRES: limits.max_hashes > 0 and limits.max_actions > 0.
std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> ChunkActions(
    const ActionList& actions, const ApplyHeader& header, uint64_t seq,
    const ChunkLimits& limits = {});

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_CHUNKER_H_
