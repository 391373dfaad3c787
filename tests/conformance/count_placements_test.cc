// IndexBackend::CountPlacements (ABI 1.2, include/kvindexer/backend.h;
// docs/backend-abi.md, "ABI 1.2: counting a worker's placements"): per tier,
// the blocks with a placement of the worker, in one snapshot, through every
// kind of change (report, re-report, revoke, clear, removal); unknown ids
// count zeros. Skipped for a backend built against an older minor (the host
// then reports the counts as unknown; loader_test.cc checks that side).
#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "conformance_fixture.h"
#include "remove_worker_fixture.h"

namespace kvindexer::conformance {
namespace {

inline constexpr uint32_t kCountPlacementsAbiMinor = 2;

using Counts = std::array<uint64_t, kMaxTier + 1>;

class CountPlacementsTest : public ConformanceTest {
 protected:
  void SetUp() override {
    if (!SupportsAbiMinor(kCountPlacementsAbiMinor)) {
      GTEST_SKIP() << "backend \"" << descriptor().name
                   << "\" is used as backend " << AbiInUse()
                   << ", which has no CountPlacements (added in 1."
                   << kCountPlacementsAbiMinor << ")";
    }
    ConformanceTest::SetUp();
  }

  // CountPlacements through the raw ABI; EXPECTs OK. *existed_out gets
  // the backend's existed flag.
  Counts Count(const std::string& id, uint32_t* existed_out = nullptr) {
    Counts counts;
    counts.fill(99);  // the backend must write every slot
    uint32_t existed = 7;
    const BackendStatus s = backend()->CountPlacements(
        StringView{id.data(), id.size()}, counts.data(), &existed);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message << " counting " << id;
    EXPECT_TRUE(existed == 0 || existed == 1) << "existed = " << existed;
    if (existed_out != nullptr) *existed_out = existed;
    return counts;
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(CountPlacementsTest);

TEST_P(CountPlacementsTest, CountsEachTierSeparately) {
  ApplyOk(Batch("w1", "a1")
              .Report(kTierHbm, {1, 2, 3})
              .Report(kTierDram, {2, 4})
              .Report(kTierSsd, {5}));
  ApplyOk(Batch("w2", "a2").Report(kTierHbm, {3}));
  uint32_t existed = 0;
  EXPECT_EQ(Count("w1", &existed), (Counts{0, 3, 2, 1}));
  EXPECT_EQ(existed, 1u);
  EXPECT_EQ(Count("w2"), (Counts{0, 1, 0, 0}));
}

TEST_P(CountPlacementsTest, UnknownWorkerCountsZeros) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1}));
  uint32_t existed = 1;
  EXPECT_EQ(Count("nobody", &existed), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(existed, 0u);
  EXPECT_EQ(Count("", &existed), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(existed, 0u);
}

TEST_P(CountPlacementsTest, FollowsReportsRevokesAndClears) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2, 3}));
  // A re-report replaces a mask; it adds no placement.
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2}, {1, 1}));
  EXPECT_EQ(Count("w1"), (Counts{0, 3, 0, 0}));
  ApplyOk(Batch("w1", "a1").Revoke(kTierHbm, {2, 9}).Report(kTierDram, {7}));
  EXPECT_EQ(Count("w1"), (Counts{0, 2, 1, 0}));
  ApplyOk(Batch("w1", "a1").Clear(kTierHbm));
  EXPECT_EQ(Count("w1"), (Counts{0, 0, 1, 0}));
  // A worker holding nothing still has its record.
  ApplyOk(Batch("w1", "a1").Clear(kTierDram));
  uint32_t existed = 0;
  EXPECT_EQ(Count("w1", &existed), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(existed, 1u);
}

TEST_P(CountPlacementsTest, ARemovedWorkerIsUnknown) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2}).Report(kTierSsd, {3}));
  uint32_t existed = 0;
  ASSERT_EQ(backend()->RemoveWorker(StringView{"w1", 2}, &existed).code,
            BackendCode::kOk);
  EXPECT_EQ(Count("w1", &existed), (Counts{0, 0, 0, 0}));
  EXPECT_EQ(existed, 0u);
}

TEST_P(CountPlacementsTest, NeverChangesState) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2}));
  BackendStats before{};
  before.struct_size = sizeof(before);
  backend()->GetStats(&before);
  (void)Count("w1");
  (void)Count("w2");
  BackendStats after{};
  after.struct_size = sizeof(after);
  backend()->GetStats(&after);
  EXPECT_EQ(before.blocks, after.blocks);
  EXPECT_EQ(before.placements, after.placements);
  EXPECT_EQ(before.workers, after.workers);
}

// One snapshot: while a writer moves a fixed set of blocks between HBM and
// DRAM in single batches, every count sees all of a batch or none of it, so
// the two tiers always add up to the set's size.
TEST_P(CountPlacementsTest, ACountSeesAllOfABatchOrNone) {
  constexpr int kBlocks = 64;
  Hashes hashes;
  for (int64_t h = 1; h <= kBlocks; ++h) hashes.push_back(h);
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, hashes));
  std::thread writer([&] {
    for (int round = 0; round < 200; ++round) {
      const int from = round % 2 == 0 ? kTierHbm : kTierDram;
      const int to = round % 2 == 0 ? kTierDram : kTierHbm;
      ApplyOk(Batch("w1", "a1").Revoke(from, hashes).Report(to, hashes));
    }
  });
  // EXPECT and break rather than ASSERT: the writer must be joined even
  // when a count is wrong (a broken backend must fail, not abort the run).
  for (int i = 0; i < 400; ++i) {
    const Counts counts = Count("w1");
    EXPECT_EQ(counts[kTierHbm] + counts[kTierDram], uint64_t{kBlocks})
        << "HBM " << counts[kTierHbm] << " DRAM " << counts[kTierDram];
    if (counts[kTierHbm] + counts[kTierDram] != uint64_t{kBlocks}) break;
  }
  writer.join();
}

}  // namespace
}  // namespace kvindexer::conformance
