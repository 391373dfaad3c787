// RequestLimits: the configurable bounds on what a client can make the server
// hold and serve (docs/contract.md, "Limits > Bounds"). Each is read at
// startup from the variable named next to it (server/server_config.h) and
// named in the status message of every request it refuses, so that an
// operator who sees the error knows which knob it was.
//
// The fixed limits of the wire contract (MAX_HASHES_PER_REQUEST,
// MAX_ACTIONS_PER_BATCH, the 4,096 workers of one ConfigureExpectedWorkers)
// are not here: they are part of kv_indexer.v1 itself
// (common/wire_vocabulary.h).
#ifndef KVINDEXER_CORE_REQUEST_LIMITS_H_
#define KVINDEXER_CORE_REQUEST_LIMITS_H_

#include <cstdint>
#include <string_view>

#include "core/placement_bound.h"

namespace kvindexer {

inline constexpr std::string_view kMaxWorkerIdBytesVar =
    "KV_INDEXER_MAX_WORKER_ID_BYTES";
inline constexpr std::string_view kMaxWorkerAddressBytesVar =
    "KV_INDEXER_MAX_WORKER_ADDRESS_BYTES";
inline constexpr std::string_view kMaxWorkerEpochBytesVar =
    "KV_INDEXER_MAX_WORKER_EPOCH_BYTES";
inline constexpr std::string_view kMaxWorkersVar = "KV_INDEXER_MAX_WORKERS";
inline constexpr std::string_view kMaxPrefixAnswerBytesVar =
    "KV_INDEXER_MAX_PREFIX_ANSWER_BYTES";

// Worker ids are short names such as "worker-17" or a pod name (at most 253
// bytes as a DNS name); no real deployment reaches 256.
inline constexpr uint32_t kDefaultMaxWorkerIdBytes = 256;
// Addresses are router-facing URLs such as "http://10.0.0.1:30000"; 2,048 is
// the length browsers and proxies have long accepted for a whole URL.
inline constexpr uint32_t kDefaultMaxWorkerAddressBytes = 2048;
// Epochs are the publisher's incarnation names: SGLang sends 32 hex digits
// of a UUID4. 256 leaves room for any naming scheme, and one epoch is kept
// per worker record, in the log and in every checkpoint.
inline constexpr uint32_t kDefaultMaxWorkerEpochBytes = 256;
// Live worker records. 16 times the 4,096 workers one
// ConfigureExpectedWorkers may declare, and far above any fleet one router
// routes to, so only a client that churns worker ids reaches it. At the limit
// the host's records take at most about
// 65,536 x (256 + 2,048 + 256 + a few hundred) bytes (id, address, epoch and
// the rest), some 190 MB, and typically a tenth of that.
inline constexpr uint32_t kDefaultMaxWorkers = 65536;
// Encoded bytes of one MatchExternalKvPrefix response. gRPC clients refuse
// messages above 4 MiB (4,194,304 bytes) unless configured otherwise, and
// sgl-router keeps that default; 4,000,000 stays below it with room to
// spare. An answer of realistic entries (about 60 bytes each) fits some
// 65,000 workers.
inline constexpr uint32_t kDefaultMaxPrefixAnswerBytes = 4'000'000;

struct RequestLimits {
  // Bytes of a worker_id in ApplyExternalKvBatch, ReplaceExternalKvSnapshot
  // and each ConfigureExpectedWorkers entry.
  uint32_t max_worker_id_bytes = kDefaultMaxWorkerIdBytes;
  // Bytes of a worker_address in the same requests.
  uint32_t max_worker_address_bytes = kDefaultMaxWorkerAddressBytes;
  // Bytes of a worker_epoch in ApplyExternalKvBatch (either path) and
  // ReplaceExternalKvSnapshot. ConfigureExpectedWorkers carries none.
  uint32_t max_worker_epoch_bytes = kDefaultMaxWorkerEpochBytes;
  // Worker records the host keeps at once. A seed-era apply that would add
  // one more, or a ConfigureExpectedWorkers listing more, is refused.
  uint32_t max_workers = kDefaultMaxWorkers;
  // Encoded bytes of one prefix answer; a larger answer is refused whole.
  uint32_t max_prefix_answer_bytes = kDefaultMaxPrefixAnswerBytes;
  // Placements the index holds in all and per worker (core/placement_bound.h);
  // unbounded by default. Not a refusal: a mutation past it evicts.
  PlacementBound placement_bound;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_REQUEST_LIMITS_H_
