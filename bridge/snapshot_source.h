// The snapshot-v1 fetch of docs/bridge-events.md, "Recovery > Mode S":
// asks SGLang's snapshot ROUTER socket (SGLANG_KV_SNAPSHOT_ENDPOINT) for the
// publisher's current set of held block hashes. The production
// implementation (SnapshotClient) speaks the real protocol and validates the
// header; tests substitute fakes.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_SOURCE_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_SOURCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvindexer::bridge {

struct PublisherSnapshot {
  std::string epoch;  // non-empty
  uint64_t barrier_seq = 0;
  std::string barrier_id;   // non-empty
  uint64_t resume_seq = 0;  // barrier_seq + 1
  // One hash per record, in record order (parents before children).
  std::vector<int64_t> hashes;
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
