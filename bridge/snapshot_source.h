// The snapshot fetch of docs/bridge-events.md, "Recovery > Mode S": asks
// SGLang's snapshot ROUTER socket (SGLANG_KV_SNAPSHOT_ENDPOINT) for the
// publisher's current placement. snapshot-v2 names each held block's tier,
// component mask and block size; snapshot-v1, which older publishers speak
// only, names the held block hashes alone (tier-blind). The production
// implementation (SnapshotClient) speaks both protocols and validates the
// replies; tests substitute fakes.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_SOURCE_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/wire_vocabulary.h"

namespace kvindexer::bridge {

// SGLANG_KV_SNAPSHOT_PROTOCOL: which snapshot protocol the bridge asks for.
enum class SnapshotProtocol : uint8_t {
  kAuto,  // snapshot-v2; snapshot-v1 once the publisher refuses v2
  kV2,    // snapshot-v2 only; a refusal fails the fetch
  kV1,    // snapshot-v1 only (tier-blind)
};
std::string_view SnapshotProtocolName(SnapshotProtocol protocol);

// One record of a snapshot-v2: a block the worker holds at one tier.
struct SnapshotBlock {
  int64_t hash = 0;
  Tier tier = Tier::kHbm;
  uint32_t component_mask = 0;  // != 0; FULL 1, SWA 2, MAMBA 4
  uint32_t block_size = 0;      // tokens, != 0
  bool operator==(const SnapshotBlock&) const = default;
};

// What a snapshot-v2 header says about the stream and its hashing, each
// field only when the header carries it. `unreadable` names the keys that
// are present with a value of the wrong type.
struct SnapshotHeaderFields {
  std::optional<std::string> stream_namespace;  // "namespace"
  std::optional<std::string> worker_id;
  std::optional<uint32_t> dp_rank;  // "dp_rank" (or "replica_rank")
  std::optional<std::string> model;
  std::optional<uint32_t> hash_schema_version;
  std::optional<uint32_t> page_size;
  std::optional<bool> is_bigram;
  std::optional<std::string> worker_generation;
  std::vector<std::string> unreadable;
};

struct PublisherSnapshot {
  uint32_t version = 1;  // the protocol that produced it: 1 or 2
  std::string epoch;     // non-empty
  uint64_t barrier_seq = 0;
  std::string barrier_id;   // non-empty
  uint64_t resume_seq = 0;  // barrier_seq + 1
  // Version 1: one hash per record, in record order (parents before
  // children). Empty for version 2.
  std::vector<int64_t> hashes;
  // Version 2: the records in record order. Empty for version 1.
  std::vector<SnapshotBlock> blocks;
  // Version 2: the header's identity and schema fields. Empty for version 1.
  SnapshotHeaderFields fields;
};

class SnapshotSource {
 public:
  virtual ~SnapshotSource() = default;
  // Blocking, bounded by the 30 s fetch timeout (sooner on shutdown). Any
  // protocol or validation failure, an `error` frame included, is returned
  // as UNAVAILABLE with the reason.
  virtual absl::StatusOr<PublisherSnapshot> Fetch() = 0;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_SOURCE_H_
