// IndexBackend::RemoveWorker (ABI 1.1, include/kvindexer/backend.h;
// docs/backend-abi.md, "ABI 1.1: removing a worker"): placements at every
// tier go, blocks left with none go with their hit counters, the record goes
// and the memory comes back; unknown ids change nothing; a freed ordinal may
// be given to a later worker, and then names that worker only.
//
// A backend built against ABI 1.0 has no RemoveWorker: every test here is
// skipped for it (the host composes CLEAR_ALL_AT_TIER batches instead).
// Concurrency is in remove_worker_concurrency_test.cc.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "recording_visitor.h"
#include "remove_worker_fixture.h"
#include "tests/support/model_backend.h"

namespace kvindexer::conformance {
namespace {

class RemoveWorkerTest : public RemoveWorkerFixture {};
KVINDEXER_INSTANTIATE_CONFORMANCE(RemoveWorkerTest);

TEST_P(RemoveWorkerTest, RemovesEveryPlacementAtEveryTier) {
  ApplyOk(Batch("w1", "a1")
              .Report(kTierHbm, {1, 2, 3})
              .Report(kTierDram, {2, 4})
              .Report(kTierSsd, {5}));
  ApplyOk(Batch("w2", "a2").Report(kTierHbm, {3}).Report(kTierSsd, {4}));
  EXPECT_EQ(Remove("w1"), 1u);
  for (int64_t h = 1; h <= 5; ++h) {
    EXPECT_EQ(Tiers(h, "w1"), std::vector<int>{}) << "hash " << h;
  }
  EXPECT_EQ(Tiers(1), std::vector<int>{});
  EXPECT_EQ(Tiers(2), std::vector<int>{});
  EXPECT_EQ(Tiers(3), std::vector<int>{kTierHbm});
  EXPECT_EQ(Tiers(4), std::vector<int>{kTierSsd});
  EXPECT_EQ(Tiers(5), std::vector<int>{});
  const auto match = Match({1, 2, 3, 4, 5});
  ASSERT_EQ(match.matches_size(), 1) << Text(match);
  EXPECT_EQ(At(match.matches(), 0).worker_id(), "w2");
  EXPECT_EQ(Prefixes(Prefix({3, 5})),  // 5 went with w1
            (std::map<std::string, uint32_t>{{"w2", 1}}));
  EXPECT_EQ(Prefix({1, 3}).matches_size(), 0);  // block 0 is gone
  // Nothing in the raw callbacks names the removed worker any more.
  const Hashes all = {1, 2, 3, 4, 5};
  for (const RecordingVisitor& v : {RawMatch(all), RawScan(all)}) {
    EXPECT_TRUE(v.WorkersAnnouncedFirst());
    EXPECT_EQ(v.Worker("w1"), nullptr);
  }
}

TEST_P(RemoveWorkerTest, BlocksHeldOnlyByTheWorkerGoWithTheirHitCounters) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {4}));
  ApplyOk(Batch("w2", "a2").Report(kTierSsd, {3}).Report(kTierHbm, {4}));
  Match({1, 2, 3, 4}, /*count_as_hit=*/true);
  Match({1, 2, 3, 4}, /*count_as_hit=*/true);
  EXPECT_EQ(Remove("w1"), 1u);
  // 1 and 2 were w1's alone; 3 and 4 are still held by w2.
  EXPECT_EQ(Hits({1, 2, 3, 4}), (std::map<int64_t, uint64_t>{{3, 2}, {4, 2}}));
  const Hashes hashes = {1, 2, 3, 4};
  uint64_t counts[4] = {9, 9, 9, 9};
  const BackendStatus s =
      backend()->HitCounts(HashSpan{hashes.data(), hashes.size()}, counts);
  EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
  EXPECT_EQ(std::vector<uint64_t>(counts, counts + 4),
            (std::vector<uint64_t>{0, 0, 2, 2}));
  // A deleted block's counter does not come back with a new report.
  ApplyOk(Batch("w2", "a2").Report(kTierHbm, {1}));
  Match({4}, /*count_as_hit=*/true);
  EXPECT_EQ(Hits({1, 4}), (std::map<int64_t, uint64_t>{{4, 3}}));
}

TEST_P(RemoveWorkerTest, StatsFollowARemoval) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {1}));
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {3}));
  ApplyOk(Batch("w3", "c"));  // a worker without placements
  Match({1, 2, 3}, /*count_as_hit=*/true);
  BackendStats s = Stats();
  EXPECT_EQ(s.blocks, 3u);
  EXPECT_EQ(s.placements, 5u);
  EXPECT_EQ(s.workers, 3u);
  EXPECT_EQ(s.hit_counters, 3u);

  EXPECT_EQ(Remove("w1"), 1u);
  s = Stats();
  EXPECT_EQ(s.blocks, 1u);
  EXPECT_EQ(s.placements, 1u);
  EXPECT_EQ(s.workers, 2u);
  EXPECT_EQ(s.hit_counters, 1u);

  EXPECT_EQ(Remove("w3"), 1u);  // a record alone is removed too
  EXPECT_EQ(Stats().workers, 1u);
  EXPECT_EQ(Remove("w2"), 1u);
  s = Stats();
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.placements, 0u);
  EXPECT_EQ(s.workers, 0u);
  EXPECT_EQ(s.hit_counters, 0u);
}

TEST_P(RemoveWorkerTest, TheMemoryComesBack) {
  const uint64_t empty = Stats().memory_bytes;
  // In batches of 500, so that buffers a backend keeps between calls stay
  // small next to the index itself.
  for (int64_t start = 0; start < 20000; start += 500) {
    ApplyOk(Batch("w1", "a").Report(kTierHbm, Range(start, 500)));
  }
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {1}));
  const uint64_t full = Stats().memory_bytes;
  ASSERT_GT(full, empty);
  EXPECT_EQ(Remove("w1"), 1u);
  const uint64_t after = Stats().memory_bytes;
  EXPECT_LE(after - empty, (full - empty) / 2)
      << "memory_bytes: empty " << empty << ", with 20000 placements " << full
      << ", after removing their worker " << after;
}

TEST_P(RemoveWorkerTest, UnknownIdsAndRepeatedRemovalsChangeNothing) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2}).Report(kTierSsd, {2}));
  Match({1}, /*count_as_hit=*/true);
  const Hashes universe = {1, 2, 3};
  const std::string before = Observe(universe);
  const BackendStats stats_before = Stats();
  EXPECT_EQ(Remove("nobody"), 0u);
  EXPECT_EQ(Remove("w"), 0u);    // a prefix of a known id
  EXPECT_EQ(Remove("w10"), 0u);  // an extension of one
  EXPECT_EQ(Remove(""), 0u);
  uint32_t existed = 7;
  BackendStatus s = backend()->RemoveWorker(StringView{nullptr, 0}, &existed);
  EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
  EXPECT_EQ(existed, 0u);
  s = backend()->RemoveWorker(StringView{"x", 1}, nullptr);  // may be null
  EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
  EXPECT_EQ(Observe(universe), before);
  BackendStats stats = Stats();
  EXPECT_EQ(stats.blocks, stats_before.blocks);
  EXPECT_EQ(stats.placements, stats_before.placements);
  EXPECT_EQ(stats.workers, stats_before.workers);
  EXPECT_EQ(stats.hit_counters, stats_before.hit_counters);

  EXPECT_EQ(Remove("w1"), 1u);
  const std::string removed = Observe(universe);
  EXPECT_NE(removed, before);
  EXPECT_EQ(Remove("w1"), 0u);
  s = backend()->RemoveWorker(StringView{"w1", 2}, nullptr);
  EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
  EXPECT_EQ(Observe(universe), removed);
  stats = Stats();
  EXPECT_EQ(stats.workers, 0u);
  EXPECT_EQ(stats.blocks, 0u);
}

TEST_P(RemoveWorkerTest, AReusedOrdinalNamesTheNewWorker) {
  ApplyOk(Batch("w1", "addr-1")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Report(kTierHbm, {1, 2}));
  ApplyOk(Batch("w2", "addr-2").Report(kTierHbm, {3}));
  const RecordingVisitor before = RawMatch({1});
  ASSERT_NE(before.Worker("w1"), nullptr);
  const uint32_t old_ordinal = before.Worker("w1")->worker;
  EXPECT_EQ(Remove("w1"), 1u);
  ApplyOk(Batch("w3", "addr-3").Report(kTierHbm, {4}));
  const Hashes match_order = {1, 2, 3, 4};
  const Hashes scan_order = {4, 3, 1, 2};
  for (const auto& [v, order] : {std::pair(RawMatch(match_order), match_order),
                                 std::pair(RawScan(scan_order), scan_order)}) {
    EXPECT_TRUE(v.WorkersAnnouncedFirst());
    EXPECT_EQ(v.Worker("w1"), nullptr) << "the removed worker was announced";
    const RecordingVisitor::Event* w3 = v.Worker("w3");
    const RecordingVisitor::Event* w2 = v.Worker("w2");
    ASSERT_NE(w3, nullptr);
    ASSERT_NE(w2, nullptr);
    EXPECT_NE(w3->worker, w2->worker);
    EXPECT_EQ(w3->address, "addr-3");
    EXPECT_FALSE(w3->has_spec) << "the new worker got the old one's spec";
    // Reuse is allowed, not required; the report says which case ran.
    RecordProperty("w3_took_w1s_ordinal", w3->worker == old_ordinal ? 1 : 0);
    for (const RecordingVisitor::Event* b : v.Blocks()) {
      const int64_t hash = order[b->index];
      if (hash == 1 || hash == 2) {
        EXPECT_TRUE(b->placements.empty()) << "hash " << hash;
        continue;
      }
      ASSERT_EQ(b->placements.size(), 1u) << "hash " << hash;
      EXPECT_EQ(b->placements[0].worker, hash == 4 ? w3->worker : w2->worker)
          << "hash " << hash;
    }
  }
  // Through the host: block 4 belongs to w3 at addr-3, never to w1.
  const auto match = Match({4});
  ASSERT_EQ(match.matches_size(), 1);
  EXPECT_EQ(At(match.matches(), 0).worker_id(), "w3");
  EXPECT_EQ(At(match.matches(), 0).address(), "addr-3");
  const auto prefix = Prefix({4});
  ASSERT_EQ(prefix.matches_size(), 1);
  EXPECT_EQ(At(prefix.matches(), 0).worker_id(), "w3");
  EXPECT_EQ(At(prefix.matches(), 0).worker_address(), "addr-3");
}

// Many removals and arrivals: every placement's ordinal must be announced as
// the worker that reported that block, with that worker's address, in both
// Match and PrefixScan.
TEST_P(RemoveWorkerTest, OrdinalsNameTheirHoldersThroughManyReuses) {
  std::map<int64_t, std::string> holder;  // hash -> worker id
  std::vector<std::string> present;
  const auto add = [&](const std::string& id, int64_t hash) {
    ApplyOk(Batch(id, "addr-" + id).Report(kTierHbm, {hash}));
    holder[hash] = id;
    present.push_back(id);
  };
  for (int i = 0; i < 4; ++i) add(absl::StrCat("first-", i), 100 + i);
  for (int round = 0; round < 24; ++round) {
    // Remove one present worker (not always the newest) and add a new one.
    const size_t victim = static_cast<size_t>(round * 7) % present.size();
    EXPECT_EQ(Remove(present[victim]), 1u);
    for (auto it = holder.begin(); it != holder.end();) {
      it = it->second == present[victim] ? holder.erase(it) : std::next(it);
    }
    present.erase(present.begin() + static_cast<ptrdiff_t>(victim));
    add(absl::StrCat("round-", round), 200 + round);
    if (round % 5 == 0) add(absl::StrCat("extra-", round), 300 + round);
  }
  Hashes all;
  for (int64_t h = 100; h < 330; ++h) all.push_back(h);
  for (const RecordingVisitor& v : {RawMatch(all), RawScan(all)}) {
    ASSERT_TRUE(v.WorkersAnnouncedFirst());
    const auto names = v.Announced();
    std::set<uint32_t> ordinals;
    for (const RecordingVisitor::Event* b : v.Blocks()) {
      const int64_t hash = all[b->index];
      const auto it = holder.find(hash);
      if (it == holder.end()) {
        EXPECT_TRUE(b->placements.empty()) << "hash " << hash;
        continue;
      }
      ASSERT_EQ(b->placements.size(), 1u) << "hash " << hash;
      const uint32_t ordinal = b->placements[0].worker;
      ordinals.insert(ordinal);
      EXPECT_EQ(names.at(ordinal), it->second) << "hash " << hash;
      EXPECT_EQ(v.Worker(it->second)->address, "addr-" + it->second);
    }
    EXPECT_EQ(ordinals.size(), present.size()) << "ordinals must be distinct";
  }
  EXPECT_EQ(Stats().workers, present.size());
}

TEST_P(RemoveWorkerTest, ARemovedIdAddedAgainStartsEmpty) {
  ApplyOk(Batch("w1", "first")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Report(kTierHbm, {1, 2}, {}, {16, 16})
              .Report(kTierDram, {3}));
  Match({1, 2, 3}, /*count_as_hit=*/true);
  EXPECT_EQ(Remove("w1"), 1u);
  ApplyOk(Batch("w1", "second").Report(kTierSsd, {4}));
  const auto match = Match({1, 2, 3, 4});
  ASSERT_EQ(match.matches_size(), 1) << Text(match);
  const auto& m = At(match.matches(), 0);
  EXPECT_EQ(m.worker_id(), "w1");
  EXPECT_EQ(m.address(), "second");
  ASSERT_EQ(m.hashes_by_tier_size(), 1) << Text(m);
  EXPECT_EQ(At(m.hashes_by_tier(), 0).tier(), v1::TIER_SSD);
  EXPECT_EQ(Hits({1, 2, 3, 4}), (std::map<int64_t, uint64_t>{}));
  const RecordingVisitor v = RawMatch({4});
  ASSERT_NE(v.Worker("w1"), nullptr);
  EXPECT_FALSE(v.Worker("w1")->has_spec);
  // Its CLEAR finds only what it reported since.
  ApplyOk(Batch("w1", "second").Clear(kTierHbm).Clear(kTierDram));
  EXPECT_EQ(Tiers(4, "w1"), std::vector<int>{kTierSsd});
  const BackendStats s = Stats();
  EXPECT_EQ(s.workers, 1u);
  EXPECT_EQ(s.placements, 1u);
  EXPECT_EQ(s.blocks, 1u);
}

// ModelBackend (tests/support) stands in for a backend in the host's tests
// and here as the concurrency audit's torn example; its RemoveWorker must
// keep the same promises, and reuse the lowest free ordinal.
TEST(ModelBackendRemoveWorkerTest, RemovesAndReusesTheLowestFreeOrdinal) {
  test_support::ModelBackend backend;
  const auto apply = [&](const Batch& batch) {
    const test_support::BatchView view(batch);
    const BackendStatus s = backend.Apply(view.view());
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
  };
  const auto remove = [&](const std::string& id) {
    uint32_t existed = 7;
    const BackendStatus s =
        backend.RemoveWorker(StringView{id.data(), id.size()}, &existed);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    return existed;
  };
  for (int w = 0; w < 5; ++w) {
    apply(Batch(absl::StrCat("w", w), "a").Report(kTierHbm, {w, 10}));
  }
  const Hashes all = {0, 1, 2, 3, 4, 5, 6, 10};
  RecordingVisitor counted;
  ASSERT_EQ(
      backend.Match(HashSpan{all.data(), all.size()}, true, &counted).code,
      BackendCode::kOk);
  EXPECT_EQ(remove("w3"), 1u);
  EXPECT_EQ(remove("w1"), 1u);
  EXPECT_EQ(remove("w1"), 0u);
  EXPECT_EQ(remove("nobody"), 0u);
  EXPECT_EQ(backend.model().blocks().count(3), 0u);
  EXPECT_EQ(backend.model().hits().count(3), 0u);
  EXPECT_EQ(backend.model().hits().at(10), 1u);  // still held by others
  apply(Batch("n1", "b").Report(kTierDram, {5}));
  apply(Batch("n2", "c").Report(kTierDram, {6}));
  apply(Batch("n3", "d").Report(kTierDram, {6}));
  RecordingVisitor v;
  ASSERT_EQ(backend.PrefixScan(HashSpan{all.data(), all.size()}, &v).code,
            BackendCode::kOk);
  EXPECT_TRUE(v.WorkersAnnouncedFirst());
  EXPECT_EQ(
      v.Announced(),
      (std::map<uint32_t, std::string>{
          {0, "w0"}, {1, "n1"}, {2, "w2"}, {3, "n2"}, {4, "w4"}, {5, "n3"}}));
  EXPECT_EQ(backend.removed_workers,
            (std::vector<std::string>{"w3", "w1", "w1", "nobody"}));
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.workers, 6u);
}

}  // namespace
}  // namespace kvindexer::conformance
