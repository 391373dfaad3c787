// Structure-specific tests of RobinShardedSnapshotBackend: readers never wait
// for a blocked writer, snapshots stay consistent across a publish, the
// hit-counter reset races, and stats/memory accounting. Semantics shared by all
// backends are covered by tests/conformance.
#include "robin_backend.h"
#include "robin_backend_testing.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "tests/support/requests.h"
#include "thread_rendezvous.h"

namespace kvindexer::robin {
namespace {

using test_support::Batch;
using testing::CompletesOnAnotherThread;
using testing::Ok;
using testing::RecordingVisitor;
using testing::Rendezvous;
using Phase = RobinBackendTesting::WriterPhase;

// Merge policies: with a minimum delta of 0, kHugeRatio merges after every
// apply that changes something; kNeverMerge as minimum never merges.
constexpr size_t kNeverMerge = SIZE_MAX;
constexpr size_t kHugeRatio = size_t{1} << 40;

class RobinBackendTest : public ::testing::Test {
 protected:
  void Apply(const Batch& batch) {
    const BackendStatus s =
        backend_.Apply(test_support::BatchView(batch).view());
    ASSERT_TRUE(Ok(s)) << s.message;
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

  // Two readers check that every scan sees one batch's values on all blocks
  // while the test thread applies batch after batch.
  void ReadersSeeWholeBatchesWhileWriting();
  // Two reader threads scan `hashes` and hand every scan to `check` while
  // this thread applies batch(0), batch(1), ...: at least 400 batches, then
  // until the readers have made 200 scans (at most 200,000 batches).
  void ScanWhileWriting(
      const std::vector<int64_t>& hashes,
      const std::function<void(const RecordingVisitor&)>& check,
      const std::function<Batch(uint32_t)>& batch);
  // Failed applies (spill allocations failing mid-batch) change nothing that
  // readers, hit counts or stats can see, and later batches behave as if
  // they never happened.
  void AllocationFailuresChangeNothing();

  RobinShardedSnapshotBackend backend_;
};

TEST_F(RobinBackendTest, ReportsAbsentBlocksAndAnnouncesWorkersOnce) {
  Apply(Batch("w1", "a1").Report(kTierHbm, {1, 2}, {3, 5}, {16, 0}));
  Apply(Batch("w2", "a2").Report(kTierDram, {2}));
  RecordingVisitor v = Match({1, 404, 2});
  ASSERT_EQ(v.blocks.size(), 3u);
  EXPECT_EQ(v.blocks[0].token_count, 16u);
  EXPECT_EQ(v.blocks[0].placements.size(), 1u);
  EXPECT_EQ((v.blocks[0].placements[{"w1", kTierHbm}]), 3u);
  EXPECT_EQ(v.blocks[1].index, 1u);
  EXPECT_TRUE(v.blocks[1].placements.empty());
  EXPECT_EQ(v.blocks[2].placements.size(), 2u);
  EXPECT_EQ(v.workers.size(), 2u);
  EXPECT_EQ(v.workers.at(0).address, "a1");
}

TEST_F(RobinBackendTest, EarlyStopMakesNoFurtherCallbacksButCountsAllHits) {
  Apply(Batch("w", "a").Report(kTierHbm, {1, 2, 3}));
  const int64_t hashes[] = {1, 2, 3};
  RecordingVisitor v(/*stop_after=*/1);
  ASSERT_TRUE(Ok(backend_.PrefixScan(HashSpan{hashes, 3}, &v)));
  EXPECT_EQ(v.blocks.size(), 1u);
  RecordingVisitor counting(/*stop_after=*/1);
  ASSERT_TRUE(Ok(backend_.Match(HashSpan{hashes, 3}, true, &counting)));
  EXPECT_EQ(counting.blocks.size(), 1u);
  EXPECT_EQ(Hits({1, 2, 3}), (std::vector<uint64_t>{1, 1, 1}));
}

TEST_F(RobinBackendTest, ManyWorkersSpillAndShrinkBack) {
  // 40 workers on one block exercises spill arrays of several size classes,
  // in both directions, across many publishes.
  for (int w = 0; w < 40; ++w) {
    Apply(Batch("w" + std::to_string(w), "a")
              .Report(kTierHbm, {7}, {}, {uint32_t(w + 1)}));
    Apply(Batch("w" + std::to_string(w), "a").Report(kTierSsd, {7}));
  }
  RecordingVisitor v = Match({7});
  ASSERT_EQ(v.blocks.size(), 1u);
  EXPECT_EQ(v.blocks[0].placements.size(), 80u);
  EXPECT_EQ(v.blocks[0].token_count, 40u);
  for (int w = 0; w < 40; w += 2) {
    Apply(Batch("w" + std::to_string(w), "a").Clear(kTierHbm).Clear(kTierSsd));
  }
  v = Match({7});
  EXPECT_EQ(v.blocks[0].placements.size(), 40u);
  for (int w = 1; w < 40; w += 2) {
    Apply(Batch("w" + std::to_string(w), "a").Revoke(kTierSsd, {7}));
  }
  v = Match({7});
  EXPECT_EQ(v.blocks[0].placements.size(), 20u);
  EXPECT_EQ(Stats().placements, 20u);
  EXPECT_EQ(Stats().blocks, 1u);
}

TEST_F(RobinBackendTest, ReadersCompleteWhileTheWriterIsBlockedBeforePublish) {
  Apply(Batch("w", "old").Report(kTierHbm, {1}));
  ASSERT_EQ(Match({1}, true).blocks.size(), 1u);  // counter of 1 := 1
  Rendezvous writer_blocked;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase == Phase::kBackCopyApplied) writer_blocked.Hold();
  });
  std::thread writer([&] {
    Batch b("w", "new");
    b.Revoke(kTierHbm, {1}).Report(kTierHbm, {2});
    EXPECT_TRUE(Ok(backend_.Apply(test_support::BatchView(b).view())));
  });
  ASSERT_TRUE(writer_blocked.WaitHeld());
  // The writer holds its mutex mid-apply; every query still completes and
  // sees the state before the batch.
  EXPECT_TRUE(CompletesOnAnotherThread([&] {
    RecordingVisitor v = Match({1, 2});
    EXPECT_EQ(v.blocks[0].placements.size(), 1u);
    EXPECT_TRUE(v.blocks[1].placements.empty());
    EXPECT_EQ(v.workers.at(0).address, "old");
    RecordingVisitor p;
    const int64_t hashes[] = {1};
    EXPECT_TRUE(Ok(backend_.PrefixScan(HashSpan{hashes, 1}, &p)));
    EXPECT_EQ(Hits({1}), std::vector<uint64_t>{1});
    EXPECT_EQ(Stats().blocks, 1u);
  }));
  writer_blocked.Release();
  writer.join();
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
  RecordingVisitor v = Match({1, 2});
  EXPECT_TRUE(v.blocks[0].placements.empty());
  EXPECT_EQ(v.blocks[1].placements.size(), 1u);
  EXPECT_EQ(v.workers.at(0).address, "new");
  EXPECT_EQ(Hits({1}), std::vector<uint64_t>{0});
}

TEST_F(RobinBackendTest, ReadersCompleteWhileTheWriterDrains) {
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  Rendezvous writer_blocked;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase == Phase::kPublished) writer_blocked.Hold();
  });
  std::thread writer([&] {
    Batch b("w", "a");
    b.Report(kTierHbm, {2});
    EXPECT_TRUE(Ok(backend_.Apply(test_support::BatchView(b).view())));
  });
  ASSERT_TRUE(writer_blocked.WaitHeld());
  EXPECT_TRUE(CompletesOnAnotherThread([&] {
    RecordingVisitor v = Match({1, 2});
    EXPECT_EQ(v.blocks[1].placements.size(), 1u) << "the batch is published";
    EXPECT_EQ(Stats().blocks, 2u);
  }));
  writer_blocked.Release();
  writer.join();
}

// A reader that started before a publish keeps reading its own snapshot: the
// writer waits for it before touching that copy.
TEST_F(RobinBackendTest, AHeldReaderKeepsItsSnapshotAcrossAPublish) {
  Apply(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  Rendezvous reader_held;
  Rendezvous writer_published;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase == Phase::kPublished) writer_published.Release();
  });
  class HoldingVisitor : public RecordingVisitor {
   public:
    explicit HoldingVisitor(Rendezvous* r) : r_(r) {}
    bool OnBlock(const BlockView& b) noexcept override {
      if (b.index == 0) r_->Hold();
      return RecordingVisitor::OnBlock(b);
    }

   private:
    Rendezvous* r_;
  };
  HoldingVisitor visitor(&reader_held);
  std::thread reader([&] {
    const int64_t hashes[] = {1, 2};
    EXPECT_TRUE(Ok(backend_.PrefixScan(HashSpan{hashes, 2}, &visitor)));
  });
  ASSERT_TRUE(reader_held.WaitHeld());
  std::atomic<bool> applied{false};
  std::thread writer([&] {
    Batch b("w2", "b");
    b.Report(kTierHbm, {2}).Report(kTierDram, {1});
    EXPECT_TRUE(Ok(backend_.Apply(test_support::BatchView(b).view())));
    applied = true;
  });
  // Wait until the batch is live, then let the held reader continue.
  ASSERT_TRUE(writer_published.WaitReleased());
  EXPECT_FALSE(applied.load()) << "Apply returned while an old reader ran";
  reader_held.Release();
  reader.join();
  writer.join();
  ASSERT_EQ(visitor.blocks.size(), 2u);
  EXPECT_EQ(visitor.blocks[1].placements.size(), 1u)
      << "the held reader must not see the later batch";
  EXPECT_EQ(visitor.workers.size(), 1u);
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
  EXPECT_EQ(Match({2}).blocks[0].placements.size(), 2u);
}

// Block 9 is deleted and re-created inside one batch: its counter is reset,
// and readers see the reset together with the rest of the batch.
TEST_F(RobinBackendTest, ACounterResetIsPublishedWithItsBatch) {
  Apply(Batch("w", "a").Report(kTierHbm, {9}, {}, {1}));
  for (int i = 0; i < 3; ++i) Match({9}, true);
  ASSERT_EQ(Hits({9}), std::vector<uint64_t>{3});
  int hooks = 0;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    // Runs on the writer thread between its steps; non-counting queries
    // from here are ordinary readers.
    if (phase == Phase::kBackCopyApplied) {
      ++hooks;
      EXPECT_EQ(Match({9}).blocks[0].token_count, 1u) << "old snapshot";
      EXPECT_EQ(Hits({9}), std::vector<uint64_t>{3});
      EXPECT_EQ(Stats().hit_counters, 1u);
    } else if (phase == Phase::kPublished) {
      ++hooks;
      EXPECT_EQ(Match({9}).blocks[0].token_count, 2u) << "new snapshot";
      EXPECT_EQ(Hits({9}), std::vector<uint64_t>{0});
      EXPECT_EQ(Stats().hit_counters, 0u);
    }
  });
  Apply(Batch("w", "a")
            .Report(kTierHbm, {9}, {}, {1})
            .Revoke(kTierHbm, {9})
            .Report(kTierHbm, {9}, {}, {2}));
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
  EXPECT_EQ(hooks, 2);
  EXPECT_EQ(Hits({9}), std::vector<uint64_t>{0});
  Match({9}, true);
  EXPECT_EQ(Hits({9}), std::vector<uint64_t>{1});
  EXPECT_EQ(Stats().hit_counters, 1u);
}

// A counting match publishes all of its increments at once.
TEST_F(RobinBackendTest, ACountingMatchIsAtomicForHitCountReaders) {
  Apply(Batch("w", "a").Report(kTierHbm, {1, 2, 3}));
  Match({1, 2}, true);
  int hooks = 0;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase == Phase::kBackCopyApplied) {
      ++hooks;
      EXPECT_EQ(Hits({1, 2, 3, 4}), (std::vector<uint64_t>{1, 1, 0, 0}));
    } else if (phase == Phase::kPublished) {
      ++hooks;
      EXPECT_EQ(Hits({1, 2, 3, 4}), (std::vector<uint64_t>{2, 2, 1, 0}));
    }
  });
  Match({1, 2, 3, 4}, true);
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
  EXPECT_EQ(hooks, 2);
  EXPECT_EQ(Stats().hit_counters, 3u);
}

// Readers count while a writer deletes and re-creates blocks. Each block
// incarnation carries a unique token count, so a reader knows which
// incarnation it counted. At the end, each present block's counter must equal
// the counts its current incarnation received, and absent blocks have none.
TEST_F(RobinBackendTest, ConcurrentCountingMatchesAgreeWithIncarnations) {
  constexpr int kHashes = 16;
  constexpr int kReaders = 3;
  std::atomic<bool> stop{false};
  std::vector<std::map<std::pair<int64_t, uint32_t>, uint64_t>> seen(kReaders);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&, r] {
      std::vector<int64_t> hashes(kHashes);
      for (int i = 0; i < kHashes; ++i) hashes[i] = i;
      while (!stop.load()) {
        RecordingVisitor v;
        EXPECT_TRUE(Ok(
            backend_.Match(HashSpan{hashes.data(), hashes.size()}, true, &v)));
        for (const auto& b : v.blocks) {
          if (!b.placements.empty())
            ++seen[r][{hashes[b.index], b.token_count}];
        }
      }
    });
  }
  std::mt19937_64 rng(42);
  std::map<int64_t, uint32_t> token;  // present blocks -> incarnation token
  uint32_t next_token = 1;
  for (int step = 0; step < 3000; ++step) {
    Batch b("w", "a");
    for (int k = 0; k < 4; ++k) {
      const int64_t h = static_cast<int64_t>(rng() % kHashes);
      if (token.count(h) != 0 && rng() % 2 == 0) {
        b.Revoke(kTierHbm, {h});
        token.erase(h);
        if (rng() % 2 == 0) {  // re-create within the same batch
          b.Report(kTierHbm, {h}, {}, {next_token});
          token[h] = next_token++;
        }
      } else if (token.count(h) == 0) {
        b.Report(kTierHbm, {h}, {}, {next_token});
        token[h] = next_token++;
      }
    }
    ASSERT_TRUE(Ok(backend_.Apply(test_support::BatchView(b).view())));
  }
  stop = true;
  for (auto& t : readers) t.join();
  std::map<std::pair<int64_t, uint32_t>, uint64_t> total;
  for (const auto& s : seen) {
    for (const auto& [k, n] : s) total[k] += n;
  }
  uint64_t counters = 0;
  for (int64_t h = 0; h < kHashes; ++h) {
    const uint64_t got = Hits({h})[0];
    auto it = token.find(h);
    if (it == token.end()) {
      EXPECT_EQ(got, 0u) << "hash " << h;
    } else {
      EXPECT_EQ(got, (total[{h, it->second}])) << "hash " << h;
      if (got != 0) ++counters;
    }
  }
  EXPECT_EQ(Stats().hit_counters, counters);
}

// Readers never see part of a batch: every batch restates all hashes, spread
// over all shards, with one new mask and token count.
TEST_F(RobinBackendTest, ConcurrentReadersSeeWholeBatchesOnly) {
  ReadersSeeWholeBatchesWhileWriting();
}

// The same while every apply is followed by a merge, which installs new base
// tables in both copies and frees the old ones.
TEST_F(RobinBackendTest, ConcurrentReadersSeeWholeBatchesAcrossMerges) {
  backend_.SetMergePolicy(0, kHugeRatio);
  ReadersSeeWholeBatchesWhileWriting();
  EXPECT_GT(RobinBackendTesting::Merges(backend_), 100u);
}

// Readers scan while batches spill blocks into arrays, change arrays, shrink
// them back and delete blocks (tombstones over the base), with a merge after
// every apply freeing replaced base arrays and old tables under the readers.
TEST_F(RobinBackendTest,
       ConcurrentReadersSeeWholeBatchesWithSpillsAndDeletions) {
  backend_.SetMergePolicy(0, kHugeRatio);
  constexpr int kHashes = 256;
  std::vector<int64_t> hashes(kHashes);
  for (int i = 0; i < kHashes; ++i) hashes[i] = i * 104729 + 1;
  // A cycle of four batches: w1 reports (new blocks, or a changed mask in a
  // spilled array), w2 reports (blocks spill), w1 revokes (arrays shrink to
  // one placement), w2 revokes (blocks deleted).
  ScanWhileWriting(
      hashes,
      [&](const RecordingVisitor& v) {
        ASSERT_EQ(v.blocks.size(), size_t{kHashes});
        for (const auto& b : v.blocks) {
          ASSERT_EQ(b.placements, v.blocks[0].placements) << "a torn batch";
        }
      },
      [&](uint32_t step) {
        Batch b(step % 2 == 0 ? "w1" : "w2", step % 2 == 0 ? "a" : "b");
        switch (step % 4) {
          case 0:
            b.Report(kTierHbm, hashes, std::vector<uint32_t>(kHashes, step));
            break;
          case 1:
            b.Report(kTierDram, hashes);
            break;
          case 2:
            b.Revoke(kTierHbm, hashes);
            break;
          case 3:
            b.Revoke(kTierDram, hashes);
            break;
        }
        return b;
      });
  EXPECT_GE(RobinBackendTesting::Merges(backend_), 400u);  // one per apply
  EXPECT_EQ(RobinBackendTesting::SpillArrays(backend_), 0u);
}

void RobinBackendTest::ReadersSeeWholeBatchesWhileWriting() {
  constexpr int kHashes = 512;
  std::vector<int64_t> hashes(kHashes);
  for (int i = 0; i < kHashes; ++i) hashes[i] = i * 7919;
  Apply(Batch("w", "a").Report(kTierHbm, hashes,
                               std::vector<uint32_t>(kHashes, 1),
                               std::vector<uint32_t>(kHashes, 1)));
  // Every batch sets one value as both mask and token count on all blocks.
  ScanWhileWriting(
      hashes,
      [](const RecordingVisitor& v) {
        std::set<std::pair<uint32_t, uint32_t>> states;
        for (const auto& b : v.blocks) {
          ASSERT_EQ(b.placements.size(), 1u);
          states.insert({b.token_count, b.placements.begin()->second});
        }
        ASSERT_EQ(states.size(), 1u) << "a torn batch";
        ASSERT_EQ(states.begin()->first, states.begin()->second);
      },
      [&](uint32_t step) {
        Batch b("w", "a");
        b.Report(kTierHbm, hashes, std::vector<uint32_t>(kHashes, step + 2),
                 std::vector<uint32_t>(kHashes, step + 2));
        return b;
      });
}

void RobinBackendTest::ScanWhileWriting(
    const std::vector<int64_t>& hashes,
    const std::function<void(const RecordingVisitor&)>& check,
    const std::function<Batch(uint32_t)>& batch) {
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        RecordingVisitor v;
        EXPECT_TRUE(Ok(
            backend_.PrefixScan(HashSpan{hashes.data(), hashes.size()}, &v)));
        EXPECT_TRUE(v.errors.empty()) << v.errors.front();
        check(v);
        ++reads;
      }
    });
  }
  // Keep writing until the readers have overlapped with plenty of batches.
  for (uint32_t step = 0; step < 200000 && (step < 400 || reads.load() < 200);
       ++step) {
    Batch b = batch(step);
    const BackendStatus s = backend_.Apply(test_support::BatchView(b).view());
    EXPECT_TRUE(Ok(s)) << s.message;
    if (!Ok(s)) break;
  }
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
}

TEST_F(RobinBackendTest, StatsAndMemoryFollowTheIndex) {
  // No minimum delta: with the default one, each shard's delta keeps buckets
  // for 1,024 blocks between merges (2 copies x 64 shards x 48 KiB), which
  // would dominate an index this small.
  backend_.SetMergePolicy(0, RobinShardedSnapshotBackend::kMergeBaseRatio);
  // Every tier keeps its holdings log (the next test drops them).
  RobinBackendTesting::SetScanThreshold(backend_, 0, 0);
  const BackendStats empty = Stats();
  EXPECT_EQ(empty.blocks, 0u);
  EXPECT_GT(empty.memory_bytes, 0u);
  std::vector<int64_t> hashes(100000);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) * 31;
  Apply(Batch("w1", "a").Report(kTierHbm, hashes));
  const BackendStats one = Stats();
  EXPECT_EQ(one.blocks, 100000u);
  EXPECT_EQ(one.placements, 100000u);
  // The batch went into the base tables: a 20-byte entry and at most two bytes
  // of directory per block, 8 bytes of holdings log and 8 bytes of the writer's
  // list of changed blocks, with the deltas empty again.
  EXPECT_GE(RobinBackendTesting::Merges(backend_), 1u);
  const double per_block =
      double(one.memory_bytes - empty.memory_bytes) / one.placements;
  EXPECT_GE(per_block, 20 + 8 + 8);
  EXPECT_LE(per_block, 20 + 2 + 8 + 8 + 4);
  Apply(Batch("w2", "b").Report(kTierDram, hashes));
  const BackendStats two = Stats();
  EXPECT_EQ(two.placements, 200000u);
  // The second placement spills into one 32-byte array per block (8-byte
  // header, two 12-byte placements) and adds 8 bytes of log; the merge that
  // follows leaves the base table's size as it was.
  EXPECT_GE(two.memory_bytes - one.memory_bytes, 100000u * (32 + 8));
  EXPECT_LE(two.memory_bytes - one.memory_bytes, 100000u * (32 + 8) * 1.2);
  printf("memory: %.1f bytes/placement at 1 per block, %.1f at 2 per block\n",
         double(one.memory_bytes) / one.placements,
         double(two.memory_bytes) / two.placements);
  Apply(Batch("w1", "a").Clear(kTierHbm));
  Apply(Batch("w2", "b").Clear(kTierDram));
  const BackendStats cleared = Stats();
  EXPECT_EQ(cleared.blocks, 0u);
  EXPECT_EQ(cleared.placements, 0u);
  EXPECT_EQ(cleared.workers, 2u);
  // The tombstones were merged away with the blocks they hid: what is left
  // is the capacity of the writer's list of changed blocks (2^17 entries of
  // 8 bytes after a batch that changed 100,000), a spare spill slab or two,
  // the page mappings cached for the next merges (a shard's table of
  // 100,000 / 64 blocks is about 32 KiB) and 64 empty tables (filter and
  // directory, under 1 KiB each).
  EXPECT_LE(cleared.memory_bytes - empty.memory_bytes,
            (uint64_t{1} << 17) * 8 + 2 * 65536 + MappingPool::kCached * 40960 +
                64 * 1024);
}

// A tier holding a large share of the index drops its holdings log (8 bytes
// per placement) and its CLEAR scans the index instead; a small holder
// keeps its log; a scanned tier that holds nothing is logged again.
TEST_F(RobinBackendTest, LargeHoldersClearByScanWithoutALog) {
  backend_.SetMergePolicy(0, RobinShardedSnapshotBackend::kMergeBaseRatio);
  std::vector<int64_t> hashes(100000);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) * 31 + 7;
  std::vector<int64_t> few(1000);
  for (size_t i = 0; i < few.size(); ++i) few[i] = int64_t(i) * 31 + 7;
  const BackendStats empty = Stats();
  Apply(Batch("big", "a").Report(kTierHbm, hashes));
  Apply(Batch("small", "b").Report(kTierDram, few));
  EXPECT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), 1u << kTierHbm);
  EXPECT_EQ(RobinBackendTesting::ScannedTiers(backend_, "small"), 0u);
  const BackendStats held = Stats();
  // No log for the 100,000: the logs hold small's 1,000 (8 bytes each, in
  // 4 KiB chunks) and nothing of big's.
  EXPECT_LT(RobinBackendTesting::HoldingsBytes(backend_), 100000u);
  // Entry, directory and changed-block list: about 35 bytes a placement
  // (the keyed hash spreads blocks over shards differently in each process,
  // which moves it by a few tenths), well under the 43 with a log.
  EXPECT_LT(double(held.memory_bytes - empty.memory_bytes) / held.placements,
            38.0);

  // Half revoked, some re-reported after a merge: the scan finds the
  // placements wherever they live (base, delta, spilled next to small's).
  Apply(Batch("big", "a")
            .Revoke(kTierHbm, std::vector<int64_t>(hashes.begin(),
                                                   hashes.begin() + 50000)));
  Apply(Batch("big", "a")
            .Report(kTierHbm,
                    std::vector<int64_t>(hashes.begin(), hashes.begin() + 10)));
  Apply(Batch("big", "a").Report(kTierDram, {5, 6}));
  EXPECT_EQ(Stats().placements, 50010u + 2 + 1000);
  Apply(Batch("big", "a").Clear(kTierHbm));
  BackendStats after = Stats();
  EXPECT_EQ(after.placements, 2u + 1000u);
  EXPECT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), 0u);
  RecordingVisitor v;
  ASSERT_TRUE(Ok(backend_.PrefixScan(HashSpan{few.data(), few.size()}, &v)));
  ASSERT_EQ(v.blocks.size(), few.size());
  for (const auto& block : v.blocks) {
    ASSERT_EQ(block.placements.size(), 1u) << few[block.index];
    EXPECT_EQ(block.placements.begin()->first,
              std::make_pair(std::string("small"), uint32_t{kTierDram}));
  }

  // Logged again: a small report to the emptied tier keeps a log, and a
  // clear through it works as before.
  Apply(Batch("big", "a").Report(kTierHbm, {1, 2, 3}));
  EXPECT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), 0u);
  Apply(Batch("big", "a").Clear(kTierHbm));
  EXPECT_EQ(Stats().placements, 2u + 1000u);

  // RemoveWorker of a scanned worker takes every placement.
  Apply(Batch("big", "a").Report(kTierHbm, hashes));
  ASSERT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), 1u << kTierHbm);
  uint32_t existed = 0;
  ASSERT_TRUE(Ok(backend_.RemoveWorker(StringView{"big", 3}, &existed)));
  EXPECT_EQ(existed, 1u);
  after = Stats();
  EXPECT_EQ(after.placements, 1000u);
  EXPECT_EQ(after.workers, 1u);
}

// A run of CLEARs in one batch and RemoveWorker scan the index once for all
// the scanned tiers they clear; a clear after a REPORT in the same batch
// scans again and so also takes what that REPORT added.
TEST_F(RobinBackendTest, ClearsOfScannedTiersShareOneScan) {
  RobinBackendTesting::SetScanThreshold(backend_, 1000, UINT64_MAX);
  std::vector<int64_t> hbm(5000);
  std::vector<int64_t> dram(4000);
  std::vector<int64_t> ssd(3000);
  for (size_t i = 0; i < hbm.size(); ++i) hbm[i] = int64_t(i) * 31 + 7;
  // Half of DRAM's blocks are HBM's too, so placements share arrays.
  for (size_t i = 0; i < dram.size(); ++i) dram[i] = int64_t(i) * 62 + 7;
  for (size_t i = 0; i < ssd.size(); ++i) ssd[i] = int64_t(i) * 93 + 1000003;
  const std::vector<int64_t> shared(hbm.begin(), hbm.begin() + 1500);
  const auto load = [&] {
    Apply(Batch("big", "a")
              .Report(kTierHbm, hbm)
              .Report(kTierDram, dram)
              .Report(kTierSsd, ssd));
  };
  Apply(Batch("other", "b").Report(kTierHbm, shared));
  load();
  const uint32_t all_three =
      (1u << kTierHbm) | (1u << kTierDram) | (1u << kTierSsd);
  ASSERT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), all_three);
  const auto counts = [&](const char* id) {
    std::array<uint64_t, kMaxTier + 1> by_tier{};
    uint32_t existed = 0;
    EXPECT_TRUE(Ok(backend_.CountPlacements(StringView{id, std::strlen(id)},
                                            by_tier.data(), &existed)));
    return by_tier;
  };

  uint64_t scans = RobinBackendTesting::Scans(backend_);
  Apply(Batch("big", "a").Clear(kTierHbm).Clear(kTierDram));
  EXPECT_EQ(RobinBackendTesting::Scans(backend_), scans + 1);
  EXPECT_EQ(counts("big"), (std::array<uint64_t, kMaxTier + 1>{0, 0, 0, 3000}));
  EXPECT_EQ(counts("other")[kTierHbm], shared.size());
  EXPECT_EQ(Stats().placements, shared.size() + ssd.size());

  // A REPORT between two CLEARs ends the run: the second clear scans again
  // and takes the placements the REPORT made.
  load();
  scans = RobinBackendTesting::Scans(backend_);
  Apply(Batch("big", "a")
            .Clear(kTierHbm)
            .Report(kTierDram, {11, 12, 13})
            .Clear(kTierDram));
  EXPECT_EQ(RobinBackendTesting::Scans(backend_), scans + 2);
  EXPECT_EQ(counts("big"), (std::array<uint64_t, kMaxTier + 1>{0, 0, 0, 3000}));
  for (const auto& block : Match({11, 12, 13}).blocks) {
    EXPECT_TRUE(block.placements.empty()) << block.index;
  }

  // RemoveWorker: one scan for its three scanned tiers.
  load();
  ASSERT_EQ(RobinBackendTesting::ScannedTiers(backend_, "big"), all_three);
  scans = RobinBackendTesting::Scans(backend_);
  uint32_t existed = 0;
  ASSERT_TRUE(Ok(backend_.RemoveWorker(StringView{"big", 3}, &existed)));
  EXPECT_EQ(existed, 1u);
  EXPECT_EQ(RobinBackendTesting::Scans(backend_), scans + 1);
  const BackendStats after = Stats();
  EXPECT_EQ(after.placements, shared.size());
  EXPECT_EQ(after.workers, 1u);
  const RecordingVisitor v = Match(shared);
  ASSERT_EQ(v.blocks.size(), shared.size());
  for (const auto& block : v.blocks) {
    ASSERT_EQ(block.placements.size(), 1u);
    EXPECT_EQ(block.placements.begin()->first,
              std::make_pair(std::string("other"), uint32_t{kTierHbm}));
  }
}

// Blocks read the same through the delta over a base and after the merge:
// blocks moved from the base into the delta (a placement revoked, one added
// to a spilled block), a block deleted from the base (tombstone) and one
// re-created after its deletion.
TEST_F(RobinBackendTest, MergesKeepEveryBlockAsTheDeltaSaysIt) {
  backend_.SetMergePolicy(0, kHugeRatio);
  std::vector<int64_t> hashes;
  for (int64_t h = 1; h <= 300; ++h) hashes.push_back(h * 7777);
  Apply(Batch("w1", "a").Report(kTierHbm, hashes));
  Apply(Batch("w2", "b").Report(kTierDram, {hashes[0], hashes[1]}));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 2u);  // all in the base now

  // Changes that stay in the delta.
  backend_.SetMergePolicy(kNeverMerge, kHugeRatio);
  Apply(Batch("w1", "a").Revoke(kTierHbm, {hashes[0], hashes[2]}));
  Apply(Batch("w3", "c").Report(kTierHbm, {hashes[1], hashes[3]}));
  Apply(Batch("w4", "d").Report(kTierHbm, {hashes[4]}));
  Apply(Batch("w4", "d").Revoke(kTierHbm, {hashes[4]}));
  Apply(Batch("w1", "a").Revoke(kTierHbm, {hashes[5]}));
  Apply(Batch("w5", "e").Report(kTierSsd, {hashes[5]}));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 2u);
  auto check = [&](const char* when) {
    SCOPED_TRACE(when);
    RecordingVisitor v = Match({hashes[0], hashes[1], hashes[2], hashes[3],
                                hashes[4], hashes[5], hashes[6]});
    ASSERT_EQ(v.blocks.size(), 7u);
    using Key = std::pair<std::string, uint32_t>;
    using Placements = std::map<Key, uint32_t>;
    EXPECT_EQ(v.blocks[0].placements, (Placements{{{"w2", kTierDram}, 0}}));
    EXPECT_EQ(v.blocks[1].placements, (Placements{{{"w1", kTierHbm}, 0},
                                                  {{"w2", kTierDram}, 0},
                                                  {{"w3", kTierHbm}, 0}}));
    EXPECT_TRUE(v.blocks[2].placements.empty());  // deleted from the base
    EXPECT_EQ(v.blocks[3].placements,
              (Placements{{{"w1", kTierHbm}, 0}, {{"w3", kTierHbm}, 0}}));
    EXPECT_EQ(v.blocks[4].placements, (Placements{{{"w1", kTierHbm}, 0}}));
    EXPECT_EQ(v.blocks[5].placements, (Placements{{{"w5", kTierSsd}, 0}}));
    EXPECT_EQ(v.blocks[6].placements, (Placements{{{"w1", kTierHbm}, 0}}));
    const BackendStats stats = Stats();
    EXPECT_EQ(stats.blocks, 299u);
    EXPECT_EQ(stats.placements, 302u);
  };
  check("through the delta");
  // Any apply that changes something now merges.
  backend_.SetMergePolicy(0, kHugeRatio);
  Apply(Batch("w6", "f").Report(kTierHbm, {int64_t{-1}}));
  Apply(Batch("w6", "f").Revoke(kTierHbm, {int64_t{-1}}));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 4u);
  check("after the merge");
}

// One apply's merges stop at the budget, the shards furthest over their limit
// first, and later applies merge the rest.
TEST_F(RobinBackendTest, MergesStopAtTheBudget) {
  std::vector<int64_t> hashes(64 * 64);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) * 29 + 3;
  // Every shard due, and a budget of one shard's entries: one shard each.
  backend_.SetMergePolicy(0, kHugeRatio, /*budget=*/1);
  Apply(Batch("w", "a").Report(kTierHbm, hashes));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 1u);
  const uint64_t one_merge = Stats().memory_bytes;
  for (int i = 0; i < 100; ++i) {
    // A change in one block: every apply merges the most overdue shard.
    Apply(Batch("v", "b").Report(kTierHbm, {int64_t{i} * 1000003}));
  }
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 101u);
  // All shards are merged now, so the deltas are nearly empty.
  EXPECT_LT(Stats().memory_bytes, one_merge);
  RecordingVisitor v = Match(hashes);
  for (const auto& block : v.blocks) {
    EXPECT_EQ(block.placements.size(), 1u) << block.index;
  }
  EXPECT_EQ(Stats().placements, hashes.size() + 100);
}

// A merge that cannot get pages is skipped; blocks stay as they were and the
// next merge folds everything in.
TEST_F(RobinBackendTest, AMergeThatCannotAllocateIsSkipped) {
  backend_.SetMergePolicy(0, kHugeRatio);
  std::vector<int64_t> hashes(1000);
  for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = int64_t(i) * 31 + 7;
  Apply(Batch("w1", "a").Report(kTierHbm, hashes));
  const uint64_t merges = RobinBackendTesting::Merges(backend_);
  RobinBackendTesting::FailMergeMappingsAfter(backend_,
                                              3);  // fails in the 4th shard
  Apply(Batch("w2", "b").Report(kTierDram, hashes));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), merges);
  RecordingVisitor v = Match(hashes);
  for (const auto& block : v.blocks) {
    EXPECT_EQ(block.placements.size(), 2u) << block.index;
  }
  RobinBackendTesting::FailMergeMappingsAfter(backend_, -1);
  Apply(Batch("w3", "c").Report(kTierSsd, {hashes[0]}));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), merges + 1);
  v = Match(hashes);
  for (const auto& block : v.blocks) {
    EXPECT_EQ(block.placements.size(), block.index == 0 ? 3u : 2u)
        << block.index;
  }
}

// A delta below the default threshold stays a delta; one past it is merged.
TEST_F(RobinBackendTest, TheDefaultPolicyMergesOnlyLargeDeltas) {
  std::vector<int64_t> few(64 * 8), many(64 * 4096);
  for (size_t i = 0; i < few.size(); ++i) few[i] = int64_t(i) * 13 + 1;
  for (size_t i = 0; i < many.size(); ++i) many[i] = -int64_t(i) * 17 - 1;
  Apply(Batch("w", "a").Report(kTierHbm, few));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 0u);
  Apply(Batch("w", "a").Report(kTierHbm, many));
  EXPECT_EQ(RobinBackendTesting::Merges(backend_), 1u);
  EXPECT_EQ(Stats().placements, few.size() + many.size());
}

// An allocation failure in the middle of a batch leaves no trace: the batch
// is rolled back in the non-live copy, and later batches (including CLEAR,
// which depends on the writer's holdings) behave as if it never happened.
TEST_F(RobinBackendTest, AnAllocationFailureMidBatchChangesNothing) {
  AllocationFailuresChangeNothing();
}

// The same with every block in the base tables before each batch, so that the
// failing allocations include the delta's copies of base arrays.
TEST_F(RobinBackendTest, AnAllocationFailureAfterMergesChangesNothing) {
  backend_.SetMergePolicy(0, kHugeRatio);
  AllocationFailuresChangeNothing();
  EXPECT_GE(RobinBackendTesting::Merges(backend_), 5u);
}

void RobinBackendTest::AllocationFailuresChangeNothing() {
  std::vector<int64_t> hundred, fifty;
  for (int64_t h = 1; h <= 100; ++h) hundred.push_back(h * 977);
  for (int64_t h = 1; h <= 50; ++h) fifty.push_back(h * 977);
  Apply(Batch("w1", "a").Report(kTierHbm, hundred));
  Apply(Batch("w2", "b").Report(kTierDram, fifty, {}, {}));
  Match(fifty, true);
  // What readers, hit counts and stats see, and the spill arrays held (a
  // rolled-back batch must free every array it allocated).
  auto observe = [&] {
    RecordingVisitor v = Match(hundred);
    std::vector<std::map<std::pair<std::string, uint32_t>, uint32_t>> blocks;
    for (const auto& b : v.blocks) blocks.push_back(b.placements);
    const BackendStats st = Stats();
    return std::make_tuple(blocks, Hits(hundred), st.blocks, st.placements,
                           st.workers, st.hit_counters,
                           RobinBackendTesting::SpillArrays(backend_));
  };
  const auto before = observe();

  // w3 joins every block (each needs a new array) and w2 loses its DRAM
  // copies; the 11th array allocation fails.
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, 10);
  Batch failing("w3", "c");
  failing.Report(kTierSsd, hundred).Revoke(kTierDram, fifty);
  EXPECT_EQ(backend_.Apply(test_support::BatchView(failing).view()).code,
            BackendCode::kResourceExhausted);
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, -1);
  EXPECT_EQ(observe(), before);

  // Now for real; blocks 1..50 then have three placements, so removing one
  // needs a new array.
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, -1);
  Apply(Batch("w3", "c").Report(kTierSsd, hundred));
  const auto with_w3 = observe();
  EXPECT_EQ(std::get<3>(with_w3), 250u);

  // w1 fails halfway through a CLEAR, then clears for real.
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, 5);
  Batch clear_fails("w1", "a");
  clear_fails.Clear(kTierHbm);
  EXPECT_EQ(backend_.Apply(test_support::BatchView(clear_fails).view()).code,
            BackendCode::kResourceExhausted);
  RobinBackendTesting::FailSpillAllocationsAfter(backend_, -1);
  EXPECT_EQ(observe(), with_w3);
  Apply(Batch("w1", "a").Clear(kTierHbm));
  EXPECT_EQ(Stats().placements, 150u);
  Apply(Batch("w2", "b").Clear(kTierDram));
  Apply(Batch("w3", "c").Clear(kTierSsd));
  EXPECT_EQ(Stats().blocks, 0u);
  EXPECT_EQ(Stats().placements, 0u);
  EXPECT_EQ(Stats().hit_counters, 0u);
}

TEST_F(RobinBackendTest, NoOpBatchesDoNotPublish) {
  int publishes = 0;
  RobinBackendTesting::SetWriterHook(backend_, [&](Phase phase) {
    if (phase == Phase::kPublished) ++publishes;
  });
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(publishes, 1);
  Apply(Batch("w", "a").Report(kTierHbm, {1}));   // same state
  Apply(Batch("w", "a").Revoke(kTierDram, {1}));  // nothing to revoke
  Apply(Batch("w", "a"));
  EXPECT_EQ(publishes, 1);
  Apply(Batch("w", "b"));  // address change
  EXPECT_EQ(publishes, 2);
  RobinBackendTesting::SetWriterHook(backend_, nullptr);
}

TEST_F(RobinBackendTest, RejectsMalformedBatchesWithoutChanges) {
  Batch bad("w", "a");
  bad.Report(0, {1});
  EXPECT_EQ(backend_.Apply(test_support::BatchView(bad).view()).code,
            BackendCode::kInvalidArgument);
  Batch sides("w", "a");
  sides.Report(kTierHbm, {1, 2}, {1});
  EXPECT_EQ(backend_.Apply(test_support::BatchView(sides).view()).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(Stats().workers, 0u);
}

}  // namespace
}  // namespace kvindexer::robin
