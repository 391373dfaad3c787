// LookupFloor: the least work a prefix scan can do on this machine. A plain
// tsl::robin_map<int64_t, small record> holding as many blocks as a
// BackendScenario, whose records point at (worker, tier, mask) triples in one
// array. Probing a query finds each hash and reads each of its placements:
// the same bytes a backend must hand to the prefix rules, with no snapshot,
// no locking, no worker lookup and no visitor.
//
// Thread safety: Probe is const and may run concurrently.
#ifndef KVINDEXER_BENCH_LOOKUP_FLOOR_H_
#define KVINDEXER_BENCH_LOOKUP_FLOOR_H_

#include <cstdint>
#include <vector>

#include "backend_scenario.h"
#include "kvindexer/backend.h"
#include "tsl/robin_map.h"

namespace kvindexer::bench {

class LookupFloor {
 public:
  explicit LookupFloor(const ScenarioSpec& spec);

  // Returns a checksum of every placement read, so the work is not elided.
  uint64_t Probe(const std::vector<int64_t>& hashes) const;

  size_t blocks() const { return map_.size(); }
  size_t placements() const { return arena_.size(); }

 private:
  struct Record {
    uint32_t token_count;
    uint32_t count;
    uint64_t first;  // index into arena_
  };
  tsl::robin_map<int64_t, Record> map_;
  std::vector<Placement> arena_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LOOKUP_FLOOR_H_
