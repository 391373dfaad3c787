// PlacementBoundFeed: a seeded, fixed sequence of ungated applies for
// several streams at every tier, REPORTs of fresh hashes and REVOKEs of
// hashes reported before, sized so that a small placement bound
// (docs/contract.md, "Limits > The placement bound") evicts for both of its
// reasons. Two servers fed the same feed in the same order must end in the
// same state.
//
// BoundState: what the placement bound left of every stream, as admin
// ListWorkers reports it (placements per tier and the evicted mark), in a
// form two servers can be compared in.
//
// Thread safety: none; one thread uses a feed or a state at a time.
#ifndef KVINDEXER_TESTS_E2E_PLACEMENT_BOUND_FEED_H_
#define KVINDEXER_TESTS_E2E_PLACEMENT_BOUND_FEED_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kv_indexer.pb.h"
#include "kvindexer_admin.pb.h"

namespace kvindexer::e2e {

struct PlacementBoundFeedOptions {
  uint64_t seed = 1;
  int streams = 4;
  size_t batches = 160;
  // Each REPORT names this many fresh hashes, drawn uniformly.
  uint32_t min_report = 40;
  uint32_t max_report = 120;
  // The last this many streams report 1 to 3 hashes a batch instead: they
  // stay within their fair share of a bound the others exceed.
  int small_streams = 1;
  // Line-A requests (a stream_id in namespace "bound-ns") instead of
  // seed-era ones (a bare worker_id): what a fleet replica writes through.
  bool line_a = false;
};

class PlacementBoundFeed {
 public:
  explicit PlacementBoundFeed(const PlacementBoundFeedOptions& options);

  size_t size() const { return requests_.size(); }
  // REQUIRES: n < size().
  const ::kv_indexer::v1::ApplyExternalKvBatchRequest& request(size_t n) const {
    return requests_[n];
  }
  // Every hash a request names, sorted.
  const std::vector<int64_t>& universe() const { return universe_; }
  // Placements the feed leaves reported and not revoked, summed over
  // streams and tiers: what an unbounded index holds after it.
  uint64_t reported() const { return reported_; }

 private:
  std::vector<::kv_indexer::v1::ApplyExternalKvBatchRequest> requests_;
  std::vector<int64_t> universe_;
  uint64_t reported_ = 0;
};

// One stream's placements per tier ([0] unused, as TierType numbers them)
// and whether the bound has it marked evicted.
struct StreamBoundState {
  std::array<uint64_t, 4> tiers{};
  bool evicted = false;

  uint64_t total() const { return tiers[1] + tiers[2] + tiers[3]; }
  bool operator==(const StreamBoundState&) const = default;
};

struct BoundState {
  // Keyed "<namespace>/<worker_id>/<dp_rank>".
  std::map<std::string, StreamBoundState> streams;

  uint64_t total() const;
  size_t evicted() const;
  // One line per stream, for failure messages.
  std::string Text() const;
  bool operator==(const BoundState&) const = default;
};

// For gtest's messages: Text().
void PrintTo(const BoundState& state, std::ostream* os);

// The state of every listed stream. An error when the answer is paged or a
// stream's counts are unknown (a backend below ABI 1.2).
absl::StatusOr<BoundState> BoundStateOf(
    const ::kvindexer::admin::v1::ListWorkersResponse& listed);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_PLACEMENT_BOUND_FEED_H_
