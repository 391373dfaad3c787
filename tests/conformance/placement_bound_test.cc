// The placement bound over the backend under test (docs/contract.md,
// "Limits > The placement bound"): seeded sequences of applies, snapshots
// and removals run through an Indexer with a bound over the backend under
// test and through one over the reference model. The host decides
// evictions from the counts a backend reports, so every conforming backend
// must lead to the same evictions, logged in the same order, and to the
// same placements after each step. Skipped for a backend used below ABI 1.2
// (the server refuses a bound with one).
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "core/mutation_log.h"
#include "durable/image_backend.h"
#include "kv_indexer_state.pb.h"
#include "tests/support/model_backend.h"

namespace kvindexer::conformance {
// Named: the unity build compiles this file with the other suites.
namespace placement_bound_test {

using test_support::ModelBackend;

// Keeps the eviction records; durable at once.
class EvictionLog final : public MutationLog {
 public:
  std::vector<std::string> evictions;  // "worker tier reason"

  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& r) override {
    if (r.has_eviction()) {
      evictions.push_back(absl::StrCat(r.eviction().worker_id(), " ",
                                       r.eviction().tier(), " ",
                                       r.eviction().reason()));
      last_was_eviction_ = true;
    } else {
      last_was_eviction_ = false;
    }
    return ++end_;
  }
  void Retract(uint64_t) override {
    if (last_was_eviction_) evictions.pop_back();
    --end_;
  }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t) override { return absl::OkStatus(); }

 private:
  uint64_t end_ = 0;
  bool last_was_eviction_ = false;
};

constexpr int kBoundWorkers = 6;
constexpr int64_t kBoundHashes = 240;
constexpr int kBoundSequences = 12;
constexpr int kBoundSteps = 150;

RequestLimits Bounded() {
  RequestLimits limits;
  limits.placement_bound = {.max_placements = 320, .max_per_worker = 110};
  return limits;
}

// worker -> tier -> hashes, from a match over the whole universe.
using Holdings = std::map<std::string, std::map<uint32_t, std::set<int64_t>>>;

Holdings HoldingsOf(Indexer& indexer) {
  v1::MatchExternalKvResponse resp;
  EXPECT_TRUE(indexer.operations()
                  .Match(MatchRequest(Range(0, kBoundHashes)), &resp)
                  .ok());
  Holdings out;
  for (const auto& match : resp.matches()) {
    for (const auto& tier : match.hashes_by_tier()) {
      auto& hashes = out[match.worker_id()][static_cast<uint32_t>(tier.tier())];
      hashes.insert(tier.hashes().begin(), tier.hashes().end());
    }
  }
  return out;
}

class PlacementBoundTest : public ConformanceTest {
 protected:
  void SetUp() override {
    if (!SupportsAbiMinor(kPlacementBoundAbiMinor)) {
      GTEST_SKIP() << "backend \"" << descriptor().name
                   << "\" is used as backend " << AbiInUse()
                   << ", which cannot count placements (added in 1."
                   << kPlacementBoundAbiMinor << ")";
    }
    ConformanceTest::SetUp();
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(PlacementBoundTest);

// One random mutation, sent to every Indexer; their statuses (and whether
// the stream is left evicted) must agree with the first's.
class Driver {
 public:
  Driver(uint64_t seed, std::vector<Indexer*> indexers)
      : rng_(seed), indexers_(std::move(indexers)) {}

  std::string Step() {
    const std::string worker = absl::StrCat("w", Below(kBoundWorkers));
    const uint64_t kind = Below(100);
    if (kind < 4) {
      Each([&](Indexer& indexer) {
        return indexer.operator_view().RemoveWorker(worker,
                                                    RemovalReason::kAdmin);
      });
      return "remove " + worker;
    }
    if (kind < 12) {
      test_support::Snapshot snapshot(worker, "addr-" + worker);
      for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
        if (Below(2) == 0) {
          snapshot.Tier(static_cast<int>(tier), Hashes(Below(60)));
        }
      }
      Each([&](Indexer& indexer) {
        v1::ReplaceExternalKvSnapshotResponse resp;
        return indexer.operations().Replace(snapshot, &resp).Wait();
      });
      return "replace " + worker;
    }
    Batch batch(worker, "addr-" + worker);
    const int actions = 1 + static_cast<int>(Below(3));
    for (int i = 0; i < actions; ++i) {
      const int tier = static_cast<int>(kTierHbm + Below(kMaxTier));
      const uint64_t what = Below(10);
      if (what < 7) {
        batch.Report(tier, Hashes(1 + Below(40)));
      } else if (what < 9) {
        batch.Revoke(tier, Hashes(1 + Below(30)));
      } else {
        batch.Clear(tier);
      }
    }
    std::vector<bool> evicted;
    Each([&](Indexer& indexer) {
      v1::ApplyExternalKvBatchResponse resp;
      bool e = false;
      absl::Status status =
          indexer.operations().Apply(batch, &resp, {.evicted = &e}).Wait();
      evicted.push_back(e);
      return status;
    });
    for (size_t i = 1; i < evicted.size(); ++i) {
      EXPECT_EQ(evicted[i], evicted[0]) << "apply " << worker << ", " << i;
    }
    return "apply " + worker;
  }

 private:
  // Runs `call` on every Indexer; the status codes must agree.
  template <typename Call>
  void Each(Call call) {
    std::vector<absl::StatusCode> codes;
    for (Indexer* indexer : indexers_) codes.push_back(call(*indexer).code());
    for (size_t i = 1; i < codes.size(); ++i) {
      EXPECT_EQ(codes[i], codes[0]) << "indexer " << i;
    }
  }
  uint64_t Below(uint64_t n) { return rng_() % n; }
  test_support::Hashes Hashes(uint64_t n) {
    test_support::Hashes out;
    std::set<int64_t> seen;
    while (out.size() < n) {
      const auto h = static_cast<int64_t>(Below(kBoundHashes));
      if (seen.insert(h).second) out.push_back(h);
    }
    return out;
  }

  std::mt19937_64 rng_;
  std::vector<Indexer*> indexers_;
};

TEST_P(PlacementBoundTest, EveryBackendEvictsWhatTheModelEvicts) {
  size_t evictions = 0;
  std::set<std::string> reasons;
  for (int sequence = 0; sequence < kBoundSequences; ++sequence) {
    // A fresh backend per sequence, created through the descriptor.
    BackendInstance instance(descriptor());
    ASSERT_NE(instance.get(), nullptr) << instance.error();
    Indexer tested(instance.get(), nullptr, Bounded(), abi_minor());
    ModelBackend model_backend;
    Indexer model(&model_backend, nullptr, Bounded());
    // A checkpoint build's and a fleet snapshot image's backend, which the
    // bound counts through too (no queries: counts and evictions only).
    durable::ImageBackend image_backend;
    Indexer image(&image_backend, nullptr, Bounded());
    EvictionLog tested_log;
    EvictionLog model_log;
    EvictionLog image_log;
    tested.durable_state().AttachLog(&tested_log);
    model.durable_state().AttachLog(&model_log);
    image.durable_state().AttachLog(&image_log);
    Driver driver(20261206 + sequence, {&tested, &model, &image});
    for (int step = 0; step < kBoundSteps; ++step) {
      const std::string what = driver.Step();
      SCOPED_TRACE(
          absl::StrCat("sequence ", sequence, " step ", step, ": ", what));
      ASSERT_EQ(tested_log.evictions, model_log.evictions);
      ASSERT_EQ(image_log.evictions, model_log.evictions);
      ASSERT_EQ(HoldingsOf(tested), HoldingsOf(model));
      for (int w = 0; w < kBoundWorkers; ++w) {
        const std::string id = absl::StrCat("w", w);
        ASSERT_EQ(tested.operator_view().PlacementCounts(id),
                  model.operator_view().PlacementCounts(id))
            << id;
        ASSERT_EQ(image.operator_view().PlacementCounts(id),
                  model.operator_view().PlacementCounts(id))
            << id;
        const auto a = tested.operator_view().DescribeWorker(id);
        const auto b = model.operator_view().DescribeWorker(id);
        ASSERT_EQ(a.has_value(), b.has_value()) << id;
        if (a.has_value()) {
          ASSERT_EQ(a->evicted, b->evicted) << id;
        }
      }
    }
    evictions += model_log.evictions.size();
    for (const std::string& e : model_log.evictions) {
      reasons.insert(e.substr(e.rfind(' ') + 1));
    }
  }
  // The sequences do reach the bound, for both reasons.
  EXPECT_GE(evictions, 20u);
  EXPECT_EQ(reasons.size(), 2u);
}

}  // namespace placement_bound_test
}  // namespace kvindexer::conformance
