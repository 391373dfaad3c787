// Randomised differential test at the ABI level: random apply sequences (every
// apply flips the live copy and replays onto the other, so a replay bug shows
// up in later reads), with now and then a RemoveWorker (in the model: CLEAR
// at every tier, and the record no longer counted), against
// test_support::ReferenceModel. Each seed runs under
// three merge policies: the default (deltas of this size never merge), a
// delta merged into the base after every apply, and merges now and then;
// and, for half the seeds, each of those with CLEAR finding the placements
// of every (worker, tier) holding three or more by a scan instead of its
// holdings log. Bulk-load runs make the first 200 steps in WriteMode::kBulkLoad
// (ABI 1.4; no counting Match then), checking that readers still see the
// empty index and CountPlacements the model's, and then the rest in service
// (the first reads after kServing, and the later applies, which catch up the
// copy the end of the load filled, show what it got wrong).
// Deterministic per seed; the seed and policy are printed with any failure.
#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "robin_backend.h"
#include "robin_backend_testing.h"
#include "tests/support/reference_model.h"
#include "tests/support/requests.h"

namespace kvindexer::robin {
namespace {

using test_support::Batch;
using test_support::ReferenceModel;
using testing::Ok;
using testing::RecordingVisitor;

struct MergePolicy {
  const char* name;
  size_t min_delta;
  size_t base_ratio;
};

const MergePolicy kPolicies[] = {
    {"default", RobinShardedSnapshotBackend::kMergeMinDelta,
     RobinShardedSnapshotBackend::kMergeBaseRatio},
    {"every_apply", 0, size_t{1} << 40},
    {"now_and_then", 2, 2},
};

void PrintTo(const MergePolicy& policy, std::ostream* os) {
  *os << policy.name;
}

class ModelTest : public ::testing::TestWithParam<
                      std::tuple<uint64_t, MergePolicy, bool, bool>> {};

constexpr int kBulkSteps = 200;

// During a bulk load: readers see the index as before the load (empty),
// the writer's counts follow the model.
void CheckDuringBulkLoad(RobinShardedSnapshotBackend& backend,
                         const ReferenceModel& model,
                         const std::set<std::string>& removed,
                         const std::vector<int64_t>& universe) {
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, 0u);
  EXPECT_EQ(stats.workers, 0u);
  RecordingVisitor v;
  ASSERT_TRUE(
      Ok(backend.PrefixScan(HashSpan{universe.data(), universe.size()}, &v)));
  for (const auto& b : v.blocks) EXPECT_TRUE(b.placements.empty());
  for (const auto& [id, worker] : model.workers()) {
    std::array<uint64_t, kMaxTier + 1> counts{};
    uint32_t existed = 0;
    ASSERT_TRUE(Ok(backend.CountPlacements(StringView{id.data(), id.size()},
                                           counts.data(), &existed)));
    EXPECT_EQ(existed, removed.count(id) == 0 ? 1u : 0u) << id;
    for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
      const auto held = worker.holdings.find(tier);
      EXPECT_EQ(counts[tier],
                held == worker.holdings.end() ? 0 : held->second.size())
          << id << " tier " << tier;
    }
  }
}

// `removed`: the workers removed since they last applied a batch, which the
// model still has records of.
void CheckAgainstModel(RobinShardedSnapshotBackend& backend,
                       const ReferenceModel& model,
                       const std::set<std::string>& removed,
                       const std::vector<int64_t>& universe) {
  RecordingVisitor v;
  ASSERT_TRUE(
      Ok(backend.PrefixScan(HashSpan{universe.data(), universe.size()}, &v)));
  ASSERT_TRUE(v.errors.empty()) << v.errors.front();
  ASSERT_EQ(v.blocks.size(), universe.size());
  for (const auto& b : v.blocks) {
    const int64_t h = universe[b.index];
    auto it = model.blocks().find(h);
    if (it == model.blocks().end()) {
      EXPECT_TRUE(b.placements.empty()) << "hash " << h << " should be absent";
      EXPECT_EQ(b.token_count, 0u);
      continue;
    }
    EXPECT_EQ(b.token_count, it->second.token_count) << "hash " << h;
    EXPECT_EQ(b.placements, it->second.placements) << "hash " << h;
  }
  for (const auto& [ordinal, w] : v.workers) {
    EXPECT_EQ(removed.count(w.id), 0u) << "removed worker " << w.id;
    const ReferenceModel::Worker& m = model.workers().at(w.id);
    EXPECT_EQ(w.address, m.address) << w.id;
    EXPECT_EQ(w.has_spec != 0, m.spec.has_value()) << w.id;
    if (m.spec.has_value()) {
      EXPECT_EQ(w.spec.swa_window_tokens, m.spec->swa_window_tokens);
      EXPECT_EQ(w.spec.full_tier_mask, m.spec->full_tier_mask);
    }
  }
  std::vector<uint64_t> counts(universe.size());
  ASSERT_TRUE(Ok(backend.HitCounts(HashSpan{universe.data(), universe.size()},
                                   counts.data())));
  for (size_t i = 0; i < universe.size(); ++i) {
    auto it = model.hits().find(universe[i]);
    EXPECT_EQ(counts[i], it == model.hits().end() ? 0 : it->second)
        << "hits of " << universe[i];
  }
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, model.block_count());
  EXPECT_EQ(stats.placements, model.placement_count());
  EXPECT_EQ(stats.workers, model.worker_count() - removed.size());
  EXPECT_EQ(stats.hit_counters, model.hits().size());
}

TEST_P(ModelTest, RandomApplySequencesAgreeWithAMapModel) {
  const auto [seed, policy, scans, bulk] = GetParam();
  SCOPED_TRACE("seed " + std::to_string(seed) + ", merge policy " +
               policy.name + (scans ? ", scanned clears" : "") +
               (bulk ? ", bulk load" : ""));
  std::mt19937_64 rng(seed);
  auto uniform = [&](uint64_t n) { return rng() % n; };
  RobinShardedSnapshotBackend backend;
  backend.SetMergePolicy(policy.min_delta, policy.base_ratio);
  if (scans) {
    RobinBackendTesting::SetScanThreshold(backend, 3, UINT64_MAX);
  }
  bool saw_scanned = false;
  ReferenceModel model;
  std::vector<int64_t> universe;
  for (int64_t h = -40; h < 360; ++h) universe.push_back(h * 1000003);
  const std::vector<std::string> addresses = {"", "10.0.0.1:1", "10.0.0.2:2"};

  std::set<std::string> removed;
  bool loading = false;
  uint64_t merges_in_load = 0;
  if (bulk) {
    ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kBulkLoad)));
    loading = true;
  }
  const auto check = [&] {
    if (loading) {
      CheckDuringBulkLoad(backend, model, removed, universe);
    } else {
      CheckAgainstModel(backend, model, removed, universe);
    }
  };
  for (int step = 0; step < 300; ++step) {
    if (loading && step == kBulkSteps) {
      merges_in_load = RobinBackendTesting::Merges(backend);
      ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kServing)));
      loading = false;
      CheckAgainstModel(backend, model, removed, universe);
      if (HasFailure()) {
        ADD_FAILURE() << "divergence at the end of the bulk load";
        return;
      }
    }
    const std::string worker = "w" + std::to_string(uniform(6));
    if (uniform(12) == 0) {
      uint32_t existed = 7;
      const BackendStatus s = backend.RemoveWorker(
          StringView{worker.data(), worker.size()}, &existed);
      ASSERT_TRUE(Ok(s)) << s.message;
      const bool known =
          model.workers().count(worker) != 0 && removed.count(worker) == 0;
      EXPECT_EQ(existed, known ? 1u : 0u) << worker;
      if (known) {
        Batch clear(worker);
        for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
          clear.Clear(tier);
        }
        model.Store(test_support::BatchView(clear).view());
        removed.insert(worker);
      }
      check();
      if (HasFailure()) {
        ADD_FAILURE() << "first divergence after removal at step " << step;
        return;
      }
      continue;
    }
    removed.erase(worker);
    Batch batch(worker, addresses[uniform(addresses.size())]);
    if (uniform(3) == 0) {
      batch.Spec(CacheSpec{1, 3, uint32_t(uniform(4) * 64),
                           uint32_t(uniform(8)), 1, 0});
    }

    struct Planned {
      uint32_t type, tier;
      std::vector<int64_t> hashes;
      std::vector<uint32_t> masks, sizes;
    };
    const int actions = int(uniform(5));
    for (int a = 0; a < actions; ++a) {
      Planned p;
      p.tier = uint32_t(1 + uniform(3));
      const uint64_t kind = uniform(10);
      p.type = kind < 6   ? kActionReport
               : kind < 9 ? kActionRevoke
                          : kActionClearAllAtTier;
      if (p.type != kActionClearAllAtTier) {
        const size_t n = uniform(10) == 0 ? 1 + uniform(300) : 1 + uniform(8);
        std::set<int64_t> distinct;
        while (distinct.size() < n) {
          distinct.insert(universe[uniform(universe.size())]);
        }
        p.hashes.assign(distinct.begin(), distinct.end());
        std::shuffle(p.hashes.begin(), p.hashes.end(), rng);
      }
      if (p.type == kActionReport) {
        if (uniform(2) == 0) {
          for (size_t i = 0; i < p.hashes.size(); ++i) {
            p.masks.push_back(uint32_t(uniform(8)));
          }
        }
        if (uniform(2) == 0) {
          for (size_t i = 0; i < p.hashes.size(); ++i) {
            p.sizes.push_back(uint32_t(uniform(3) * 16));
          }
        }
        batch.Report(p.tier, p.hashes, p.masks, p.sizes);
      } else if (p.type == kActionRevoke) {
        batch.Revoke(p.tier, p.hashes);
      } else {
        batch.Clear(p.tier);
      }
    }
    const test_support::BatchView view(batch);
    const BackendStatus s = backend.Apply(view.view());
    ASSERT_TRUE(Ok(s)) << s.message;
    model.Store(view.view());
    saw_scanned =
        saw_scanned || RobinBackendTesting::ScannedTiers(backend, worker) != 0;
    if (uniform(3) == 0 && !loading) {
      std::vector<int64_t> counted;
      std::set<int64_t> distinct;
      for (int i = 0; i < 20; ++i) {
        distinct.insert(universe[uniform(universe.size())]);
      }
      counted.assign(distinct.begin(), distinct.end());
      RecordingVisitor v;
      ASSERT_TRUE(Ok(
          backend.Match(HashSpan{counted.data(), counted.size()}, true, &v)));
      model.CountHits(counted);
    }
    check();
    if (HasFailure()) {
      ADD_FAILURE() << "first divergence after step " << step;
      return;
    }
  }
  if (policy.min_delta == 0) {
    EXPECT_GT(RobinBackendTesting::Merges(backend), 100u);
  } else if (policy.min_delta < RobinShardedSnapshotBackend::kMergeMinDelta) {
    EXPECT_GT(RobinBackendTesting::Merges(backend), 10u);
  }
  if (policy.min_delta == RobinShardedSnapshotBackend::kMergeMinDelta) {
    EXPECT_EQ(RobinBackendTesting::Merges(backend), 0u);
  }
  // Without the low threshold no tier of this small index is scanned.
  EXPECT_EQ(saw_scanned, scans);
  // The load merged into base tables of its own copy.
  if (bulk && policy.min_delta < RobinShardedSnapshotBackend::kMergeMinDelta) {
    EXPECT_GT(merges_in_load, 10u);
  }
}

std::string ModelTestName(
    const ::testing::TestParamInfo<ModelTest::ParamType>& param) {
  return "seed" + std::to_string(std::get<0>(param.param)) + "_" +
         std::get<1>(param.param).name +
         (std::get<2>(param.param) ? "_scanned" : "") +
         (std::get<3>(param.param) ? "_bulk" : "");
}

INSTANTIATE_TEST_SUITE_P(
    SeedsAndPolicies, ModelTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 6, 7, 8),
                       ::testing::ValuesIn(kPolicies), ::testing::Values(false),
                       ::testing::Values(false)),
    ModelTestName);
// Half the seeds with scanned clears: they share every code path but CLEAR
// with the others, and CI runs these under the sanitizers too.
INSTANTIATE_TEST_SUITE_P(ScannedClears, ModelTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::ValuesIn(kPolicies),
                                            ::testing::Values(true),
                                            ::testing::Values(false)),
                         ModelTestName);
// Bulk loads (ABI 1.4), with log-found and scanned clears.
INSTANTIATE_TEST_SUITE_P(BulkLoads, ModelTest,
                         ::testing::Combine(::testing::Values(1, 2),
                                            ::testing::ValuesIn(kPolicies),
                                            ::testing::Bool(),
                                            ::testing::Values(true)),
                         ModelTestName);

}  // namespace
}  // namespace kvindexer::robin
