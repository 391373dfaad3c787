// The Indexer under the placement bound (docs/contract.md, "Limits > The
// placement bound"): which placements a mutation past it evicts, how the
// stream is shown afterwards, what is logged, and that a replay of the log
// ends in the same state without deciding anything itself.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/indexer.h"
#include "core/request_limits.h"
#include "kv_indexer_state.pb.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace eviction_test {

using test_support::Batch;
using test_support::ModelBackend;
using test_support::Range;
using test_support::Snapshot;
using Counts = std::array<uint64_t, kMaxTier + 1>;

// Keeps every record; durable at once.
class KeptLog final : public MutationLog {
 public:
  std::vector<state::v1::WalRecord> records;

  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& r) override {
    records.push_back(r);
    return ++end_;
  }
  void Retract(uint64_t) override {
    records.pop_back();
    --end_;
  }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t) override { return absl::OkStatus(); }

  std::vector<state::v1::PlacementEviction> evictions() const {
    std::vector<state::v1::PlacementEviction> out;
    for (const auto& r : records) {
      if (r.has_eviction()) out.push_back(r.eviction());
    }
    return out;
  }

 private:
  uint64_t end_ = 0;
};

// Every placement the backend holds: hash -> ((worker, tier) -> mask).
std::map<int64_t, std::map<std::pair<std::string, uint32_t>, uint32_t>>
PlacementsOf(const ModelBackend& backend) {
  std::map<int64_t, std::map<std::pair<std::string, uint32_t>, uint32_t>> out;
  for (const auto& [hash, block] : backend.model().blocks()) {
    out[hash] = block.placements;
  }
  return out;
}

RequestLimits Bounded(uint64_t total, uint64_t per_worker) {
  RequestLimits limits;
  limits.placement_bound = {.max_placements = total,
                            .max_per_worker = per_worker};
  return limits;
}

class IndexerEvictionTest : public ::testing::Test {
 protected:
  void Start(const RequestLimits& limits) {
    indexer_ = std::make_unique<Indexer>(&backend_, nullptr, limits);
    indexer_->durable_state().AttachLog(&log_);
  }
  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     bool* evicted = nullptr) {
    v1::ApplyExternalKvBatchResponse resp;
    return indexer_->operations()
        .Apply(req, &resp, {.evicted = evicted})
        .Wait();
  }
  absl::Status Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                       bool* evicted = nullptr) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    return indexer_->operations()
        .Replace(req, &resp, {.evicted = evicted})
        .Wait();
  }
  Counts CountsOf(const std::string& id) {
    return indexer_->operator_view().PlacementCounts(id).value_or(Counts{});
  }
  WorkerSnapshot Describe(const std::string& id) {
    return indexer_->operator_view().DescribeWorker(id).value();
  }

  ModelBackend backend_;
  KeptLog log_;
  std::unique_ptr<Indexer> indexer_;
};

TEST_F(IndexerEvictionTest, AnUnboundedIndexNeverCountsOrEvicts) {
  Start(RequestLimits{});
  ASSERT_TRUE(Apply(Batch("a").Report(kTierHbm, Range(0, 100))).ok());
  EXPECT_TRUE(backend_.counted_workers.empty());
  EXPECT_TRUE(log_.evictions().empty());
}

TEST_F(IndexerEvictionTest, AWorkerPastItsBoundLosesItsLowestTiers) {
  Start(Bounded(0, 10));
  bool evicted = true;
  ASSERT_TRUE(Apply(Batch("a")
                        .Report(kTierHbm, Range(0, 6))
                        .Report(kTierSsd, Range(100, 4)),
                    &evicted)
                  .ok());
  EXPECT_FALSE(evicted);
  EXPECT_EQ(CountsOf("a"), (Counts{0, 6, 0, 4}));
  // Three more DRAM blocks: 13 > 10. SSD goes (9 left), DRAM stays.
  ASSERT_TRUE(
      Apply(Batch("a").Report(kTierDram, Range(200, 3)), &evicted).ok());
  EXPECT_TRUE(evicted);
  EXPECT_EQ(CountsOf("a"), (Counts{0, 6, 3, 0}));
  const auto evictions = log_.evictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].worker_id(), "a");
  EXPECT_EQ(evictions[0].tier(), static_cast<uint32_t>(kTierSsd));
  EXPECT_EQ(evictions[0].reason(),
            static_cast<uint32_t>(EvictionReason::kWorkerBound));
  // The eviction is logged after the apply that caused it.
  ASSERT_GE(log_.records.size(), 2u);
  EXPECT_TRUE(log_.records[log_.records.size() - 2].has_apply());

  const WorkerSnapshot a = Describe("a");
  EXPECT_TRUE(a.evicted);
  EXPECT_EQ(
      a.evicted_placements[static_cast<size_t>(EvictionReason::kWorkerBound)],
      4u);
  EXPECT_EQ(
      a.evicted_placements[static_cast<size_t>(EvictionReason::kIndexBound)],
      0u);
  EXPECT_EQ(a.fidelity, Fidelity::kDegraded);
  EXPECT_EQ(a.fidelity_reason, "evicted");
  // Degraded, but covered: its answers may miss blocks, never add one.
  EXPECT_TRUE(a.covered);
  const EvictionStats stats = indexer_->operator_view().eviction_stats();
  EXPECT_EQ(stats.tiers[static_cast<size_t>(EvictionReason::kWorkerBound)], 1u);
  EXPECT_EQ(stats.placements[static_cast<size_t>(EvictionReason::kWorkerBound)],
            4u);
}

TEST_F(IndexerEvictionTest, AWholeSnapshotMakesTheStreamExactAgain) {
  Start(Bounded(0, 10));
  ASSERT_TRUE(Apply(Batch("a").Report(kTierSsd, Range(0, 11))).ok());
  EXPECT_TRUE(Describe("a").evicted);
  bool evicted = true;
  ASSERT_TRUE(
      Replace(Snapshot("a").Tier(kTierHbm, Range(50, 8)), &evicted).ok());
  EXPECT_FALSE(evicted);
  EXPECT_FALSE(Describe("a").evicted);
  EXPECT_NE(Describe("a").fidelity_reason, "evicted");
  EXPECT_EQ(CountsOf("a"), (Counts{0, 8, 0, 0}));
  // A snapshot past the bound is evicted as it installs.
  ASSERT_TRUE(Replace(Snapshot("a")
                          .Tier(kTierHbm, Range(50, 8))
                          .Tier(kTierDram, Range(70, 5)),
                      &evicted)
                  .ok());
  EXPECT_TRUE(evicted);
  EXPECT_EQ(CountsOf("a"), (Counts{0, 8, 0, 0}));
}

TEST_F(IndexerEvictionTest, TheIndexBoundSparesWorkersWithinTheirShare) {
  Start(Bounded(30, 0));
  ASSERT_TRUE(Apply(Batch("small").Report(kTierHbm, Range(0, 5))).ok());
  ASSERT_TRUE(Apply(Batch("big")
                        .Report(kTierHbm, Range(100, 10))
                        .Report(kTierDram, Range(200, 10)))
                  .ok());
  // 25 <= 30. "small" grows to 12: 32 > 30, share 15. Only "big" (20) is
  // over its share: its DRAM goes.
  bool evicted = true;
  ASSERT_TRUE(
      Apply(Batch("small").Report(kTierHbm, Range(0, 12)), &evicted).ok());
  EXPECT_FALSE(evicted);  // the caller's own stream was not evicted
  EXPECT_EQ(CountsOf("small"), (Counts{0, 12, 0, 0}));
  EXPECT_EQ(CountsOf("big"), (Counts{0, 10, 0, 0}));
  EXPECT_TRUE(Describe("big").evicted);
  EXPECT_FALSE(Describe("small").evicted);
  const auto evictions = log_.evictions();
  ASSERT_EQ(evictions.size(), 1u);
  EXPECT_EQ(evictions[0].reason(),
            static_cast<uint32_t>(EvictionReason::kIndexBound));
}

TEST_F(IndexerEvictionTest, RemovalsAndRevokesKeepTheCountsExact) {
  Start(Bounded(20, 0));
  ASSERT_TRUE(Apply(Batch("a").Report(kTierHbm, Range(0, 15))).ok());
  ASSERT_TRUE(Apply(Batch("a").Revoke(kTierHbm, Range(0, 10))).ok());
  ASSERT_TRUE(Apply(Batch("b").Report(kTierHbm, Range(100, 15))).ok());
  // 5 + 15 = 20: within the bound, though 30 were ever reported.
  EXPECT_TRUE(log_.evictions().empty());
  ASSERT_TRUE(
      indexer_->operator_view().RemoveWorker("b", RemovalReason::kAdmin).ok());
  ASSERT_TRUE(Apply(Batch("a").Report(kTierHbm, Range(200, 15))).ok());
  EXPECT_TRUE(log_.evictions().empty());
  EXPECT_EQ(CountsOf("a"), (Counts{0, 20, 0, 0}));
}

TEST_F(IndexerEvictionTest, AReplayRepeatsTheLoggedEvictionsAndDecidesNone) {
  Start(Bounded(40, 12));
  for (int round = 0; round < 6; ++round) {
    for (const std::string id : {"a", "b", "c"}) {
      ASSERT_TRUE(Apply(Batch(id)
                            .Report(kTierHbm, Range(round * 7, 4))
                            .Report(kTierSsd, Range(1000 + round * 5, 3)))
                      .ok());
    }
  }
  ASSERT_FALSE(log_.evictions().empty());

  // Replays of the log under no bound, the same bound and a much tighter
  // one all end where the live index is: what they hold comes from the log
  // alone, and a replay decides no eviction of its own.
  for (const RequestLimits& limits :
       {RequestLimits{}, Bounded(40, 12), Bounded(10, 2)}) {
    ModelBackend replayed_backend;
    Indexer replayed(&replayed_backend, nullptr, limits);
    for (const state::v1::WalRecord& record : log_.records) {
      ASSERT_TRUE(replayed.durable_state().Replay(record).ok());
    }
    for (const std::string id : {"a", "b", "c"}) {
      EXPECT_EQ(replayed.operator_view().PlacementCounts(id), CountsOf(id))
          << id;
      EXPECT_EQ(replayed.operator_view().DescribeWorker(id)->evicted,
                Describe(id).evicted)
          << id;
    }
    EXPECT_EQ(PlacementsOf(replayed_backend), PlacementsOf(backend_));
    // Replayed evictions are not counted as this process's.
    EXPECT_EQ(replayed.operator_view().eviction_stats().tiers,
              EvictionStats{}.tiers);
  }
}

TEST_F(IndexerEvictionTest, TheEvictedMarkSurvivesACheckpoint) {
  Start(Bounded(0, 5));
  ASSERT_TRUE(Apply(Batch("a").Report(kTierDram, Range(0, 6))).ok());
  ASSERT_TRUE(Describe("a").evicted);
  ModelBackend restored_backend;
  Indexer restored(&restored_backend, nullptr, Bounded(0, 5));
  indexer_->durable_state().ExportHost(
      [&](const state::v1::CheckpointChunk& c) {
        ASSERT_TRUE(restored.durable_state().Restore(c).ok());
      });
  EXPECT_TRUE(restored.operator_view().DescribeWorker("a")->evicted);
}

}  // namespace eviction_test
}  // namespace kvindexer
