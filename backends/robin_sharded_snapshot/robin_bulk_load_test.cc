// SetWriteMode (ABI 1.4) in robin_sharded_snapshot (DESIGN.md, "Bulk
// loading"): readers running throughout a load that merges see the empty
// index until it ends and the whole load after; holdings compaction and
// the scan threshold read the copy the load fills, not the live one; an
// allocation failure during a load poisons the backend while readers go
// on. The conformance suite (tests/conformance/bulk_load_test.cc) checks the
// contract itself; robin_model_test.cc compares loads with a model.
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "robin_backend.h"
#include "robin_backend_testing.h"
#include "tests/support/requests.h"

namespace kvindexer::robin {
namespace {

using test_support::Batch;
using testing::Ok;
using testing::RecordingVisitor;

BackendStatus Apply(RobinShardedSnapshotBackend& backend, const Batch& batch) {
  const test_support::BatchView view(batch);
  return backend.Apply(view.view());
}

std::array<uint64_t, kMaxTier + 1> Counts(RobinShardedSnapshotBackend& backend,
                                          const std::string& id) {
  std::array<uint64_t, kMaxTier + 1> counts{};
  EXPECT_TRUE(Ok(backend.CountPlacements(StringView{id.data(), id.size()},
                                         counts.data(), nullptr)));
  return counts;
}

// Hash i of the load; batch b reports hashes [b * kPerBatch, (b+1) *
// kPerBatch) for worker b % 3 at HBM, and worker (b + 1) % 3 reports the
// first tenth of them too, so that blocks have spilled placement arrays.
constexpr int kBatches = 120;
constexpr int64_t kPerBatch = 500;
int64_t HashOf(int64_t i) { return i * 2654435761 + 7; }

Batch LoadBatch(int b, int worker_shift) {
  Batch batch("w" + std::to_string((b + worker_shift) % 3), "a");
  std::vector<int64_t> hashes;
  const int64_t n = worker_shift == 0 ? kPerBatch : kPerBatch / 10;
  for (int64_t i = 0; i < n; ++i) hashes.push_back(HashOf(b * kPerBatch + i));
  batch.Report(kTierHbm, hashes);
  return batch;
}

TEST(RobinBulkLoadTest, ReadersSeeTheEmptyIndexThenTheWholeLoad) {
  RobinShardedSnapshotBackend backend;
  backend.SetMergePolicy(64, 4);  // merges all through the load
  std::vector<int64_t> universe;
  for (int64_t i = 0; i < kBatches * kPerBatch; i += 97) {
    universe.push_back(HashOf(i));
  }
  ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kBulkLoad)));
  std::atomic<bool> ended{false};
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<int> scans_after_end{0};
  auto reader = [&] {
    while (!stop.load()) {
      // Read before the scan: a scan that starts after the end sees it all.
      const bool after_end = ended.load();
      RecordingVisitor v;
      if (!Ok(backend.PrefixScan(HashSpan{universe.data(), universe.size()},
                                 &v)) ||
          !v.errors.empty()) {
        ++bad;
        continue;
      }
      size_t held = 0;
      for (const auto& block : v.blocks)
        held += block.placements.empty() ? 0 : 1;
      if (!after_end && held != 0 && held != universe.size()) ++bad;
      if (after_end) {
        if (held != universe.size()) ++bad;
        ++scans_after_end;
      }
      BackendStats stats{};
      stats.struct_size = sizeof(stats);
      backend.GetStats(&stats);
    }
  };
  std::thread r1(reader);
  std::thread r2(reader);
  // The readers stop whatever the writer's checks find.
  const auto join = [&] {
    stop.store(true);
    r1.join();
    r2.join();
  };
  uint64_t merges_in_load = 0;
  [&] {
    for (int b = 0; b < kBatches; ++b) {
      ASSERT_TRUE(Ok(Apply(backend, LoadBatch(b, 0))));
      ASSERT_TRUE(Ok(Apply(backend, LoadBatch(b, 1))));
      if (b == kBatches / 4) {
        // A fourth worker on blocks the others hold too, removed below.
        ASSERT_TRUE(Ok(Apply(backend, Batch("w3", "a").Report(
                                          kTierDram, {HashOf(0), HashOf(1)}))));
      }
      if (b == kBatches / 2) {
        uint32_t existed = 0;
        ASSERT_TRUE(Ok(backend.RemoveWorker(StringView{"w3", 2}, &existed)));
        EXPECT_EQ(existed, 1u);
      }
    }
    merges_in_load = RobinBackendTesting::Merges(backend);
    ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kServing)));
    ended.store(true);
    // Bounded: until the readers have made a few scans after the end.
    for (int i = 0; i < 1000000 && scans_after_end.load() < 8; ++i) {
      std::this_thread::yield();
    }
    // In service again, with the readers still running: these applies
    // catch up the copy the end of the load filled.
    for (int b = 0; b < 10; ++b) {
      ASSERT_TRUE(Ok(Apply(backend, LoadBatch(b, 2))));
    }
  }();
  join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GE(scans_after_end.load(), 8);
  EXPECT_GT(merges_in_load, 10u);
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, uint64_t{kBatches} * kPerBatch);
  EXPECT_EQ(stats.workers, 3u);
}

// Holdings compaction during a load finds the live placements in the
// filled copy: a CLEAR after it still revokes every one. And the scan
// threshold counts the filled copy's placements.
TEST(RobinBulkLoadTest, HoldingsAndScansFollowTheFilledCopy) {
  RobinShardedSnapshotBackend backend;
  // Scanned from max(3, placements): against the filled copy's placements
  // w1 stays logged; against the live copy's 0 it would be scanned.
  RobinBackendTesting::SetScanThreshold(backend, 3, 1);
  ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kBulkLoad)));
  std::vector<int64_t> others;
  for (int64_t i = 0; i < 1000; ++i) others.push_back(HashOf(1'000'000 + i));
  ASSERT_TRUE(Ok(Apply(backend, Batch("w0", "a").Report(kTierHbm, others))));
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < 100; ++i) kept.push_back(HashOf(i));
  ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Report(kTierHbm, kept))));
  // Report and revoke 3,000 more, three times: the log passes twice the
  // live count plus 4,096 and is compacted.
  const uint64_t bytes_before = RobinBackendTesting::HoldingsBytes(backend);
  for (int round = 0; round < 3; ++round) {
    std::vector<int64_t> churn;
    for (int64_t i = 0; i < 3000; ++i) {
      churn.push_back(HashOf(10'000 + round * 3000 + i));
    }
    ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Report(kTierHbm, churn))));
    ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Revoke(kTierHbm, churn))));
  }
  EXPECT_EQ(RobinBackendTesting::ScannedTiers(backend, "w1"), 0u);
  EXPECT_LT(RobinBackendTesting::HoldingsBytes(backend),
            bytes_before + 9000 * sizeof(int64_t))
      << "the log was never compacted";
  EXPECT_EQ(Counts(backend, "w1")[kTierHbm], 100u);
  ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Clear(kTierHbm))));
  EXPECT_EQ(Counts(backend, "w1")[kTierHbm], 0u);
  ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kServing)));
  RecordingVisitor v;
  ASSERT_TRUE(Ok(backend.PrefixScan(HashSpan{kept.data(), kept.size()}, &v)));
  for (const auto& block : v.blocks) EXPECT_TRUE(block.placements.empty());
}

TEST(RobinBulkLoadTest, AnAllocationFailureDuringALoadPoisonsTheBackend) {
  RobinShardedSnapshotBackend backend;
  ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kBulkLoad)));
  ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Report(kTierHbm, {1, 2}))));
  RobinBackendTesting::FailSpillAllocationsAfter(backend, 0);
  // A second placement on block 1 needs a spill array.
  EXPECT_EQ(Apply(backend, Batch("w2", "a").Report(kTierHbm, {1})).code,
            BackendCode::kInternal);
  RobinBackendTesting::FailSpillAllocationsAfter(backend, -1);
  EXPECT_EQ(Apply(backend, Batch("w3", "a").Report(kTierHbm, {5})).code,
            BackendCode::kInternal);
  EXPECT_EQ(backend.SetWriteMode(WriteMode::kServing).code,
            BackendCode::kInternal);
  // Readers go on, on the copy they had.
  const std::vector<int64_t> hashes = {1, 2, 5};
  RecordingVisitor v;
  EXPECT_TRUE(
      Ok(backend.PrefixScan(HashSpan{hashes.data(), hashes.size()}, &v)));
}

// Service asked of a backend in service is a no-op; a load asked of a
// backend that served and was emptied (its base tables remain) is taken as
// in service: readers see its mutations at once.
TEST(RobinBulkLoadTest, ALoadOfABackendThatServedIsTakenAsInService) {
  RobinShardedSnapshotBackend backend;
  backend.SetMergePolicy(0, size_t{1} << 40);  // a base table at once
  ASSERT_TRUE(Ok(Apply(backend, Batch("w1", "a").Report(kTierHbm, {1}))));
  EXPECT_TRUE(Ok(backend.SetWriteMode(WriteMode::kServing)));
  uint32_t existed = 0;
  ASSERT_TRUE(Ok(backend.RemoveWorker(StringView{"w1", 2}, &existed)));
  ASSERT_TRUE(Ok(backend.SetWriteMode(WriteMode::kBulkLoad)));
  ASSERT_TRUE(Ok(Apply(backend, Batch("w2", "a").Report(kTierHbm, {7}))));
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_TRUE(Ok(backend.SetWriteMode(WriteMode::kServing)));
}

}  // namespace
}  // namespace kvindexer::robin
