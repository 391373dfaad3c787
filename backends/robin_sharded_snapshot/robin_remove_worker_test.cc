// RobinShardedSnapshotBackend::RemoveWorker (ABI 1.1): every placement of the
// worker goes at every tier with the blocks and counters only it held, its
// record goes and its ordinal is reused lowest first, a reader still on the
// old snapshot keeps reading the removed worker whole, concurrent readers see
// a worker wholly or not at all, a failed removal changes nothing, and the
// memory comes back. The randomised model test (robin_model_test.cc) mixes
// removals into random apply sequences.
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "robin_backend.h"
#include "robin_backend_testing.h"
#include "tests/support/requests.h"
#include "thread_rendezvous.h"

namespace kvindexer::robin {
namespace robin_remove_worker_test {
namespace {

using test_support::Batch;
using testing::Ok;
using testing::RecordingVisitor;
using testing::Rendezvous;
using Phase = RobinBackendTesting::WriterPhase;
using Placements = std::map<std::pair<std::string, uint32_t>, uint32_t>;

constexpr size_t kHugeRatio = size_t{1} << 40;

class RemoveWorkerTest : public ::testing::Test {
 protected:
  void Apply(const Batch& batch) {
    const BackendStatus s =
        backend_.Apply(test_support::BatchView(batch).view());
    ASSERT_TRUE(Ok(s)) << s.message;
  }
  // Removes `id` and returns *existed.
  uint32_t Remove(const std::string& id) {
    uint32_t existed = 12345;
    const BackendStatus s =
        backend_.RemoveWorker(StringView{id.data(), id.size()}, &existed);
    EXPECT_TRUE(Ok(s)) << s.message;
    return existed;
  }
  RecordingVisitor Match(std::vector<int64_t> hashes, bool count = false) {
    RecordingVisitor v;
    const BackendStatus s =
        backend_.Match(HashSpan{hashes.data(), hashes.size()}, count, &v);
    EXPECT_TRUE(Ok(s)) << s.message;
    EXPECT_TRUE(v.errors.empty()) << v.errors.front();
    return v;
  }
  std::vector<uint64_t> Hits(std::vector<int64_t> hashes) {
    std::vector<uint64_t> counts(hashes.size(), 12345);
    const BackendStatus s = backend_.HitCounts(
        HashSpan{hashes.data(), hashes.size()}, counts.data());
    EXPECT_TRUE(Ok(s)) << s.message;
    return counts;
  }
  BackendStats Stats() {
    BackendStats stats{};
    stats.struct_size = sizeof(stats);
    backend_.GetStats(&stats);
    return stats;
  }
  // The ordinal a query names `id` by on block `hash` (UINT32_MAX: none).
  uint32_t OrdinalOn(int64_t hash, const std::string& id) {
    RecordingVisitor v = Match({hash});
    for (const auto& [ordinal, worker] : v.workers) {
      if (worker.id == id) return ordinal;
    }
    return UINT32_MAX;
  }

  RobinShardedSnapshotBackend backend_;
};

TEST_F(RemoveWorkerTest, RemovesEveryPlacementAtEveryTierAndTheRecord) {
  Apply(Batch("w1", "a1")
            .Report(kTierHbm, {1, 2, 3})
            .Report(kTierDram, {2, 4})
            .Report(kTierSsd, {5}));
  Apply(Batch("w2", "a2").Report(kTierHbm, {2, 3}).Report(kTierSsd, {6}));
  Match({1, 2, 3, 4, 5, 6}, /*count=*/true);
  BackendStats before = Stats();
  EXPECT_EQ(before.workers, 2u);
  EXPECT_EQ(before.placements, 9u);
  EXPECT_EQ(before.blocks, 6u);
  EXPECT_EQ(before.hit_counters, 6u);

  EXPECT_EQ(Remove("w1"), 1u);
  RecordingVisitor v = Match({1, 2, 3, 4, 5, 6});
  ASSERT_EQ(v.blocks.size(), 6u);
  EXPECT_TRUE(v.blocks[0].placements.empty());
  EXPECT_EQ(v.blocks[1].placements, (Placements{{{"w2", kTierHbm}, 0}}));
  EXPECT_EQ(v.blocks[2].placements, (Placements{{{"w2", kTierHbm}, 0}}));
  EXPECT_TRUE(v.blocks[3].placements.empty());
  EXPECT_TRUE(v.blocks[4].placements.empty());
  EXPECT_EQ(v.blocks[5].placements, (Placements{{{"w2", kTierSsd}, 0}}));
  ASSERT_EQ(v.workers.size(), 1u);
  EXPECT_EQ(v.workers.begin()->second.id, "w2");
  // Blocks only w1 held went with their counters; w2's kept theirs.
  EXPECT_EQ(Hits({1, 2, 3, 4, 5, 6}),
            (std::vector<uint64_t>{0, 1, 1, 0, 0, 1}));
  const BackendStats after = Stats();
  EXPECT_EQ(after.workers, 1u);
  EXPECT_EQ(after.placements, 3u);
  EXPECT_EQ(after.blocks, 3u);
  EXPECT_EQ(after.hit_counters, 3u);

  // Removing it again, an unknown id or an empty id changes nothing.
  EXPECT_EQ(Remove("w1"), 0u);
  EXPECT_EQ(Remove("nobody"), 0u);
  EXPECT_EQ(Remove(""), 0u);
  EXPECT_TRUE(Ok(backend_.RemoveWorker(StringView{"w1", 2}, nullptr)));
  EXPECT_EQ(Stats().placements, 3u);
  EXPECT_EQ(Stats().workers, 1u);

  // w2's holdings were not disturbed: its CLEAR still finds its blocks.
  Apply(Batch("w2", "a2").Clear(kTierHbm));
  EXPECT_EQ(Stats().placements, 1u);
  EXPECT_EQ(Stats().blocks, 1u);
}

TEST_F(RemoveWorkerTest, ANullExistedPointerIsAllowed) {
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  EXPECT_TRUE(Ok(backend_.RemoveWorker(StringView{"w", 1}, nullptr)));
  EXPECT_EQ(Stats().workers, 0u);
  EXPECT_EQ(Stats().blocks, 0u);
}

TEST_F(RemoveWorkerTest, AReAddedIdStartsEmpty) {
  Apply(Batch("w1", "old").Report(kTierHbm, {1, 2}).Report(kTierDram, {3}));
  EXPECT_EQ(Remove("w1"), 1u);
  Apply(Batch("w1", "new"));  // back, with no actions
  EXPECT_EQ(Stats().workers, 1u);
  EXPECT_EQ(Stats().placements, 0u);
  RecordingVisitor v = Match({1, 2, 3});
  for (const auto& block : v.blocks) EXPECT_TRUE(block.placements.empty());
  // Its old holdings do not come back through CLEAR either.
  Apply(Batch("w1", "new").Clear(kTierHbm).Clear(kTierDram));
  Apply(Batch("w1", "new").Report(kTierSsd, {4}));
  v = Match({1, 4});
  EXPECT_TRUE(v.blocks[0].placements.empty());
  EXPECT_EQ(v.blocks[1].placements, (Placements{{{"w1", kTierSsd}, 0}}));
  ASSERT_EQ(v.workers.size(), 1u);
  EXPECT_EQ(v.workers.begin()->second.address, "new");
  EXPECT_EQ(Stats().placements, 1u);
}

TEST_F(RemoveWorkerTest, FreedOrdinalsAreReusedLowestFirst) {
  for (int w = 0; w < 5; ++w) {
    Apply(Batch("w" + std::to_string(w), "a").Report(kTierHbm, {100 + w}));
  }
  for (int w = 0; w < 5; ++w) {
    ASSERT_EQ(OrdinalOn(100 + w, "w" + std::to_string(w)), uint32_t(w));
  }
  EXPECT_EQ(Remove("w3"), 1u);
  EXPECT_EQ(Remove("w1"), 1u);
  EXPECT_EQ(Stats().workers, 3u);
  Apply(Batch("n1", "b1").Report(kTierHbm, {201}));
  Apply(Batch("n2", "b2").Report(kTierHbm, {202}));
  Apply(Batch("n3", "b3").Report(kTierHbm, {203}));
  EXPECT_EQ(OrdinalOn(201, "n1"), 1u);
  EXPECT_EQ(OrdinalOn(202, "n2"), 3u);
  EXPECT_EQ(OrdinalOn(203, "n3"), 5u);  // none free: a fresh one
  // Queries name the new worker for the reused ordinal, with its own address,
  // and the blocks of the removed ones are gone.
  RecordingVisitor v = Match({101, 103, 201, 202, 100, 102, 104});
  EXPECT_TRUE(v.blocks[0].placements.empty());
  EXPECT_TRUE(v.blocks[1].placements.empty());
  EXPECT_EQ(v.workers.at(1).id, "n1");
  EXPECT_EQ(v.workers.at(1).address, "b1");
  EXPECT_EQ(v.workers.at(3).id, "n2");
  EXPECT_EQ(v.workers.at(0).id, "w0");
  EXPECT_EQ(v.workers.at(2).id, "w2");
  EXPECT_EQ(v.workers.at(4).id, "w4");
  EXPECT_EQ(RobinBackendTesting::WorkerTableLength(backend_), 6u);
}

// Workers that come and go one at a time keep taking ordinal 1, so the
// worker table stays two entries long and the memory stays flat.
TEST_F(RemoveWorkerTest, ChurnKeepsTheWorkerTableAtTheWorkersPresent) {
  Apply(Batch("stays", "a").Report(kTierHbm, {1}));
  uint64_t memory_after_warm_up = 0;
  for (int i = 0; i < 2000; ++i) {
    const std::string id = "churn-" + std::to_string(i);
    Apply(Batch(id, "address-long-enough-to-live-on-the-heap-" + id)
              .Report(kTierHbm, {1, 1000 + i}));
    if (i % 100 == 0) {
      ASSERT_EQ(OrdinalOn(1000 + i, id), 1u) << id;
    }
    ASSERT_EQ(Remove(id), 1u);
    // By then every shard's delta has grown the few buckets it needs.
    if (i == 249) memory_after_warm_up = Stats().memory_bytes;
  }
  EXPECT_EQ(Stats().workers, 1u);
  EXPECT_EQ(Stats().placements, 1u);
  EXPECT_EQ(RobinBackendTesting::WorkerTableLength(backend_), 2u);
  // Flat, not equal: the process's random hash key decides which shards the
  // churned blocks visit, so a delta may still grow a bucket array after the
  // warm-up. A leak of even one record per worker would add far more than
  // the slack (1,750 workers of over 100 bytes each).
  EXPECT_LE(Stats().memory_bytes,
            memory_after_warm_up + memory_after_warm_up / 10);
}

// A reader that started before the removal keeps reading the removed worker
// (its placements and its record) until it leaves; the removal waits for it,
// and only then can the ordinal go to a new worker.
TEST_F(RemoveWorkerTest, AHeldReaderKeepsTheRemovedWorkerUntilItLeaves) {
  Apply(Batch("w0", "a0").Report(kTierHbm, {1}));
  Apply(Batch("w1", "a1-long-enough-to-live-on-the-heap")
            .Report(kTierDram, {2, 3}));
  Rendezvous reader_held;
  Rendezvous writer_published;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase != Phase::kPublished) return;
    // New readers see the removal already.
    RecordingVisitor now = Match({2, 3});
    EXPECT_TRUE(now.blocks[0].placements.empty());
    EXPECT_TRUE(now.workers.empty());
    EXPECT_EQ(Stats().workers, 1u);
    writer_published.Release();
  });
  class HoldingVisitor : public RecordingVisitor {
   public:
    explicit HoldingVisitor(Rendezvous* r) : r_(r) {}
    bool OnBlock(const BlockView& b) noexcept override {
      if (b.index == 0) r_->Hold();  // before w1 is announced
      return RecordingVisitor::OnBlock(b);
    }

   private:
    Rendezvous* r_;
  };
  HoldingVisitor visitor(&reader_held);
  std::thread reader([&] {
    const int64_t hashes[] = {1, 2, 3};
    EXPECT_TRUE(Ok(backend_.PrefixScan(HashSpan{hashes, 3}, &visitor)));
  });
  ASSERT_TRUE(reader_held.WaitHeld());
  std::atomic<bool> removed{false};
  std::thread remover([&] {
    EXPECT_EQ(Remove("w1"), 1u);
    removed = true;
  });
  ASSERT_TRUE(writer_published.WaitReleased());
  EXPECT_FALSE(removed.load()) << "RemoveWorker returned while an old reader "
                                  "could still read the worker";
  reader_held.Release();
  reader.join();
  remover.join();
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
  ASSERT_TRUE(visitor.errors.empty()) << visitor.errors.front();
  ASSERT_EQ(visitor.blocks.size(), 3u);
  EXPECT_EQ(visitor.blocks[1].placements, (Placements{{{"w1", kTierDram}, 0}}));
  EXPECT_EQ(visitor.blocks[2].placements, (Placements{{{"w1", kTierDram}, 0}}));
  EXPECT_EQ(visitor.workers.at(1).address,
            "a1-long-enough-to-live-on-the-heap");

  // The ordinal is free now, and a new worker takes it.
  Apply(Batch("n", "b").Report(kTierHbm, {4}));
  RecordingVisitor v = Match({2, 4});
  EXPECT_TRUE(v.blocks[0].placements.empty());
  EXPECT_EQ(v.blocks[1].placements, (Placements{{{"n", kTierHbm}, 0}}));
  EXPECT_EQ(v.workers.at(1).id, "n");
}

// What one scan reported, kept flat so that readers stay fast under the
// sanitizers: each worker's id and address by ordinal, and each placement
// with the index of its block. The checks run after the scan.
class FlatVisitor final : public BlockVisitor {
 public:
  struct Seen {
    uint32_t worker;
    uint32_t tier;
    uint32_t mask;
    size_t index;
  };
  void OnWorker(const WorkerView& w) noexcept override {
    if (w.worker >= ids.size()) {
      ids.resize(w.worker + 1);
      addresses.resize(w.worker + 1);
    }
    ids[w.worker].assign(w.id.data, w.id.size);
    addresses[w.worker].assign(w.address.data, w.address.size);
  }
  bool OnBlock(const BlockView& b) noexcept override {
    ++blocks;
    for (size_t k = 0; k < b.placement_count; ++k) {
      const Placement& p = b.placements[k];
      placements.push_back({p.worker, p.tier, p.mask, b.index});
    }
    return true;
  }

  std::vector<std::string> ids;  // empty: never announced
  std::vector<std::string> addresses;
  std::vector<Seen> placements;
  size_t blocks = 0;
};

// Readers scan while the test thread removes a worker and adds its successor
// (which takes the freed ordinal) over and over. Incarnation i of slot s is
// worker "s<s>-<i>": it holds a set of the hashes that depends on (s, i), at
// HBM and some at SSD, with mask i. A reader must see each worker it is told
// of with exactly that set (the whole worker, under its own name) and no
// placement of a worker it was not told of.
class RemoveWorkerConcurrencyTest : public RemoveWorkerTest,
                                    public ::testing::WithParamInterface<bool> {
};

TEST_P(RemoveWorkerConcurrencyTest, ReadersSeeAWorkerWhollyOrNotAtAll) {
  const bool merge_every_apply = GetParam();
  if (merge_every_apply) backend_.SetMergePolicy(0, kHugeRatio);
  constexpr int kHashes = 192;
  constexpr int kSlots = 4;
  std::vector<int64_t> hashes(kHashes);
  for (int j = 0; j < kHashes; ++j) hashes[j] = int64_t(j) * 7919 + 11;
  // Whether incarnation `i` of slot `s` holds hash `j` at `tier`.
  auto holds = [](int s, uint32_t i, size_t j, uint32_t tier) {
    if (tier == kTierHbm) return (j + s + i) % 3 != 0;
    if (tier == kTierSsd) return (j + i) % 5 == size_t(s);
    return false;
  };
  auto held_count = [&](int s, uint32_t i) {
    size_t n = 0;
    for (size_t j = 0; j < kHashes; ++j) {
      n += (holds(s, i, j, kTierHbm) ? 1 : 0) +
           (holds(s, i, j, kTierSsd) ? 1 : 0);
    }
    return n;
  };
  auto batch_for = [&](int s, uint32_t i) {
    Batch b("s" + std::to_string(s) + "-" + std::to_string(i),
            "addr-" + std::to_string(s) + "-" + std::to_string(i));
    std::vector<int64_t> hbm, ssd;
    for (size_t j = 0; j < kHashes; ++j) {
      if (holds(s, i, j, kTierHbm)) hbm.push_back(hashes[j]);
      if (holds(s, i, j, kTierSsd)) ssd.push_back(hashes[j]);
    }
    b.Report(kTierHbm, hbm, std::vector<uint32_t>(hbm.size(), i));
    b.Report(kTierSsd, ssd, std::vector<uint32_t>(ssd.size(), i));
    return b;
  };
  // A worker that stays, on the even hashes.
  std::vector<int64_t> even;
  for (int j = 0; j < kHashes; j += 2) even.push_back(hashes[j]);
  Apply(Batch("stays", "x").Report(kTierDram, even));
  std::vector<uint32_t> incarnation(kSlots, 0);
  for (int s = 0; s < kSlots; ++s) Apply(batch_for(s, 0));

  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  auto check = [&](const FlatVisitor& v) {
    ASSERT_EQ(v.blocks, size_t{kHashes});
    // Who each announced ordinal is: slot and incarnation (-1: "stays").
    std::vector<std::pair<int, uint32_t>> who(v.ids.size(), {-2, 0});
    for (uint32_t ordinal = 0; ordinal < v.ids.size(); ++ordinal) {
      if (v.ids[ordinal].empty()) continue;
      ASSERT_LE(ordinal, uint32_t{kSlots}) << "ordinals stay dense";
      if (v.ids[ordinal] == "stays") {
        who[ordinal] = {-1, 0};
        continue;
      }
      int s = 0;
      uint32_t i = 0;
      ASSERT_EQ(std::sscanf(v.ids[ordinal].c_str(), "s%d-%u", &s, &i), 2);
      ASSERT_EQ(v.addresses[ordinal],
                "addr-" + std::to_string(s) + "-" + std::to_string(i));
      who[ordinal] = {s, i};
    }
    std::vector<size_t> count(v.ids.size(), 0);
    for (const FlatVisitor::Seen& p : v.placements) {
      ASSERT_LT(p.worker, who.size()) << "placement before its OnWorker";
      const auto [s, i] = who[p.worker];
      ASSERT_NE(s, -2) << "placement before its OnWorker";
      ++count[p.worker];
      if (s == -1) {
        ASSERT_TRUE(p.tier == kTierDram && p.index % 2 == 0);
        continue;
      }
      ASSERT_TRUE(holds(s, i, p.index, p.tier) && p.mask == i)
          << v.ids[p.worker] << " named for another worker's placement";
    }
    for (uint32_t ordinal = 0; ordinal < who.size(); ++ordinal) {
      const auto [s, i] = who[ordinal];
      if (s == -2) continue;
      ASSERT_EQ(count[ordinal], s == -1 ? even.size() : held_count(s, i))
          << v.ids[ordinal] << " seen in part";
    }
  };
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        FlatVisitor v;
        EXPECT_TRUE(Ok(
            backend_.PrefixScan(HashSpan{hashes.data(), hashes.size()}, &v)));
        check(v);
        ++reads;
      }
    });
  }
  // A step that merges rewrites every shard twice (after the removal and
  // after the apply), so fewer of them cover as many reader overlaps.
  const uint32_t min_steps = merge_every_apply ? 16 : 48;
  for (uint32_t step = 0;
       step < 100000 && (step < min_steps || reads.load() < 200); ++step) {
    const int s = int(step % kSlots);
    const std::string id =
        "s" + std::to_string(s) + "-" + std::to_string(incarnation[s]);
    uint32_t existed = 0;
    const BackendStatus removed =
        backend_.RemoveWorker(StringView{id.data(), id.size()}, &existed);
    ASSERT_TRUE(Ok(removed)) << removed.message;
    ASSERT_EQ(existed, 1u) << id;
    ++incarnation[s];
    const Batch b = batch_for(s, incarnation[s]);
    const BackendStatus applied =
        backend_.Apply(test_support::BatchView(b).view());
    ASSERT_TRUE(Ok(applied)) << applied.message;
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(Stats().workers, uint64_t{kSlots} + 1);
  EXPECT_EQ(RobinBackendTesting::WorkerTableLength(backend_),
            size_t{kSlots} + 1);
  if (merge_every_apply) {
    EXPECT_GE(RobinBackendTesting::Merges(backend_), 2u * min_steps);
  }
}

INSTANTIATE_TEST_SUITE_P(Merges, RemoveWorkerConcurrencyTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "merge_every_apply"
                                              : "default_policy";
                         });

// An allocation failure in the middle of a removal (shrinking spill arrays
// shared with the live copy needs new ones) changes nothing; the removal
// then succeeds.
TEST_F(RemoveWorkerTest, AnAllocationFailureChangesNothing) {
  std::vector<int64_t> hundred;
  for (int64_t h = 1; h <= 100; ++h) hundred.push_back(h * 977);
  Apply(Batch("w1", "a").Report(kTierHbm, hundred).Report(kTierSsd, hundred));
  Apply(Batch("w2", "b").Report(kTierHbm, hundred));
  Apply(Batch("w3", "c").Report(kTierDram, {hundred[0], hundred[1]}));
  Match(hundred, true);
  auto observe = [&] {
    RecordingVisitor v = Match(hundred);
    std::vector<Placements> blocks;
    for (const auto& b : v.blocks) blocks.push_back(b.placements);
    const BackendStats st = Stats();
    return std::make_tuple(blocks, Hits(hundred), st.blocks, st.placements,
                           st.workers, st.hit_counters,
                           RobinBackendTesting::SpillArrays(backend_));
  };
  const auto before = observe();
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, 10);
  uint32_t existed = 7;
  EXPECT_EQ(backend_.RemoveWorker(StringView{"w1", 2}, &existed).code,
            BackendCode::kResourceExhausted);
  EXPECT_EQ(existed, 0u);
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, -1);
  EXPECT_EQ(observe(), before);

  EXPECT_EQ(Remove("w1"), 1u);
  const BackendStats after = Stats();
  EXPECT_EQ(after.workers, 2u);
  EXPECT_EQ(after.placements, 102u);
  EXPECT_EQ(after.blocks, 100u);
  EXPECT_EQ(after.hit_counters, 100u);
  // w1's ordinal (0) goes to the next worker; w2 and w3 are intact.
  Apply(Batch("n", "d").Report(kTierSsd, {hundred[5]}));
  EXPECT_EQ(OrdinalOn(hundred[5], "n"), 0u);
  RecordingVisitor v = Match({hundred[0], hundred[5]});
  EXPECT_EQ(v.blocks[0].placements,
            (Placements{{{"w2", kTierHbm}, 0}, {{"w3", kTierDram}, 0}}));
  EXPECT_EQ(v.blocks[1].placements,
            (Placements{{{"n", kTierSsd}, 0}, {{"w2", kTierHbm}, 0}}));
}

// The memory a removed worker used comes back: after the merges that fold
// its tombstones away, the index costs what it costs with the other worker
// alone, plus the writer's lists sized for the removal.
TEST_F(RemoveWorkerTest, TheMemoryComesBack) {
  backend_.SetMergePolicy(0, RobinShardedSnapshotBackend::kMergeBaseRatio);
  const BackendStats empty = Stats();
  std::vector<int64_t> shared(10000), own1(50000), own2(50000);
  for (size_t i = 0; i < shared.size(); ++i) shared[i] = int64_t(i) * 31 + 1;
  for (size_t i = 0; i < own1.size(); ++i) own1[i] = -int64_t(i) * 37 - 1;
  for (size_t i = 0; i < own2.size(); ++i)
    own2[i] = (int64_t(i) * 41 + 1) << 20;
  Apply(Batch("w2", "b").Report(kTierHbm, shared).Report(kTierDram, own2));
  const BackendStats alone = Stats();
  Apply(Batch("w1", "a").Report(kTierHbm, shared).Report(kTierHbm, own1));
  const BackendStats both = Stats();
  EXPECT_EQ(both.placements, 120000u);
  EXPECT_EQ(both.blocks, 110000u);
  EXPECT_GT(RobinBackendTesting::SpillArrays(backend_), 0u);

  EXPECT_EQ(Remove("w1"), 1u);
  const BackendStats removed = Stats();
  EXPECT_EQ(removed.workers, 1u);
  EXPECT_EQ(removed.placements, alone.placements);
  EXPECT_EQ(removed.blocks, alone.blocks);
  // The shared blocks are back to one placement each: no spill array left.
  EXPECT_EQ(RobinBackendTesting::SpillArrays(backend_), 0u);
  printf(
      "memory: %llu bytes empty, %llu with w2, %llu with both, %llu after "
      "removing w1\n",
      static_cast<unsigned long long>(empty.memory_bytes),
      static_cast<unsigned long long>(alone.memory_bytes),
      static_cast<unsigned long long>(both.memory_bytes),
      static_cast<unsigned long long>(removed.memory_bytes));
  // w1's 60,000 placements cost at least 20 + 8 bytes each (a base entry
  // or an array slot, and its holdings log entry).
  EXPECT_LE(removed.memory_bytes + 60000u * 28, both.memory_bytes);
  // What stays above `alone`: the writer's list of changed blocks, which
  // grew to 2^16 entries of 8 bytes for the removal, and page mappings the
  // merges cached (at most MappingPool::kCached shard tables of about
  // 60,000 / 64 entries of 20 bytes).
  EXPECT_LE(removed.memory_bytes, alone.memory_bytes + (uint64_t{1} << 16) * 8 +
                                      MappingPool::kCached * 64 * 1024);
}

// A worker whose blocks never left the deltas (fewer than a merge's worth
// per shard): the removal erases them, and the delta and counter tables it
// emptied are rebuilt smaller in both copies at once, not at the next merge.
// Its own list of changed blocks goes back to what the applies needed.
TEST_F(RemoveWorkerTest, TheTablesARemovalEmptiesShrinkAtOnce) {
  const BackendStats empty = Stats();
  std::vector<int64_t> hashes;
  for (int64_t start = 0; start < 20000; start += 500) {
    Batch batch("w1", "a");
    std::vector<int64_t> range;
    for (int64_t h = start; h < start + 500; ++h) range.push_back(h);
    batch.Report(kTierHbm, range);
    Apply(batch);
    Match(range, /*count=*/true);
  }
  Apply(Batch("w2", "b").Report(kTierHbm, {1}));
  ASSERT_EQ(RobinBackendTesting::Merges(backend_), 0u);
  const BackendStats full = Stats();
  ASSERT_EQ(full.hit_counters, 20000u);
  const auto [deltas_full, counters_full] =
      RobinBackendTesting::DeltaAndCounterBuckets(backend_);
  // 20,000 blocks, twice, at most three quarters full.
  EXPECT_GE(deltas_full, 2 * 20000 * 4 / 3);
  EXPECT_GE(counters_full, 2 * 20000);

  EXPECT_EQ(Remove("w1"), 1u);
  const BackendStats removed = Stats();
  EXPECT_EQ(removed.blocks, 1u);
  EXPECT_EQ(removed.hit_counters, 1u);  // block 1 stays, with w2
  const auto [deltas_after, counters_after] =
      RobinBackendTesting::DeltaAndCounterBuckets(backend_);
  // One entry left in one shard of each copy, in the smallest table.
  EXPECT_LE(deltas_after, 2u * 2);
  EXPECT_LE(counters_after, 2u * 2);
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 0u);
  printf("memory: %llu bytes empty, %llu full, %llu after removing w1\n",
         static_cast<unsigned long long>(empty.memory_bytes),
         static_cast<unsigned long long>(full.memory_bytes),
         static_cast<unsigned long long>(removed.memory_bytes));
  // What stays: the 500-entry lists the applies needed, w2's state and
  // holdings chunk, and the spill slab block 1 needed while it had both
  // workers (the arena keeps one free 64 KiB slab per size class as a
  // spare).
  EXPECT_LE(removed.memory_bytes, empty.memory_bytes + 64 * 1024 + 16 * 1024);

  // The tables grow back as usual.
  Apply(Batch("w1", "a").Report(kTierHbm, {5, 6, 7}));
  EXPECT_EQ(Match({5, 6, 7}).blocks.size(), 3u);
  EXPECT_EQ(Stats().blocks, 4u);
}

}  // namespace
}  // namespace robin_remove_worker_test
}  // namespace kvindexer::robin
