// kvindexer/backend_kit.h: statuses, the defensive checks, SetStat and the
// entry helpers.
#include "kvindexer/backend_kit.h"

#include <stddef.h>
#include <string.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kvindexer/backend.h"

namespace kvindexer::kit {
namespace {

::testing::AssertionResult Rejected(const BackendStatus& status,
                                    const std::string& mentions) {
  if (status.code != BackendCode::kInvalidArgument) {
    return ::testing::AssertionFailure()
           << "code " << static_cast<int>(status.code) << " (" << status.message
           << ")";
  }
  if (std::string(status.message).find(mentions) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "\"" << status.message << "\" does not mention \"" << mentions
           << "\"";
  }
  return ::testing::AssertionSuccess();
}

TEST(BackendKitStatus, OkHasNoMessage) {
  const BackendStatus ok = OkStatus();
  EXPECT_EQ(ok.code, BackendCode::kOk);
  EXPECT_EQ(ok.message[0], '\0');
  EXPECT_TRUE(IsOk(ok));
}

TEST(BackendKitStatus, ErrorFormatsItsMessage) {
  const BackendStatus s =
      ErrorStatus(BackendCode::kResourceExhausted, "out of %s (%d)", "x", 7);
  EXPECT_EQ(s.code, BackendCode::kResourceExhausted);
  EXPECT_STREQ(s.message, "out of x (7)");
  EXPECT_FALSE(IsOk(s));
}

TEST(BackendKitStatus, LongMessagesAreTruncatedAndTerminated) {
  const std::string long_text(1000, 'y');
  const BackendStatus s =
      ErrorStatus(BackendCode::kInternal, "%s", long_text.c_str());
  EXPECT_EQ(strlen(s.message), sizeof(s.message) - 1);
}

// An owning ApplyBatchView with one action, for the checks below.
struct OneAction {
  OneAction() {
    action.type = kActionReport;
    action.tier = kTierHbm;
    action.hashes = {hashes.data(), hashes.size()};
    action.component_masks = {nullptr, 0};
    action.block_sizes = {nullptr, 0};
    batch.worker_id = {worker.data(), worker.size()};
    batch.worker_address = {address.data(), address.size()};
    batch.actions = &action;
    batch.action_count = 1;
  }
  std::string worker = "w";
  std::string address = "a";
  std::vector<int64_t> hashes = {1, 2};
  std::vector<uint32_t> two = {3, 4};
  ActionView action{};
  ApplyBatchView batch{};
};

TEST(BackendKitChecks, AcceptsWellFormedBatches) {
  OneAction b;
  EXPECT_TRUE(IsOk(CheckApplyBatch(b.batch)));
  b.action.component_masks = {b.two.data(), 2};
  b.action.block_sizes = {b.two.data(), 2};
  EXPECT_TRUE(IsOk(CheckApplyBatch(b.batch)));
  b.batch.worker_address = {nullptr, 0};
  EXPECT_TRUE(IsOk(CheckApplyBatch(b.batch)));
  b.batch.actions = nullptr;
  b.batch.action_count = 0;
  EXPECT_TRUE(IsOk(CheckApplyBatch(b.batch)));
}

TEST(BackendKitChecks, RejectsMalformedWorkers) {
  OneAction b;
  b.batch.worker_id = {b.worker.data(), 0};
  EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "worker_id"));
  b.batch.worker_id = {nullptr, 1};
  EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "worker_id"));
  OneAction c;
  c.batch.worker_address = {nullptr, 3};
  EXPECT_TRUE(Rejected(CheckApplyBatch(c.batch), "worker_address"));
  OneAction d;
  d.batch.actions = nullptr;
  EXPECT_TRUE(Rejected(CheckApplyBatch(d.batch), "no action array"));
}

TEST(BackendKitChecks, RejectsUnknownTypesAndTiers) {
  for (uint32_t type : {0u, 4u, 999u}) {
    OneAction b;
    b.action.type = type;
    EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "type"));
  }
  for (uint32_t tier : {0u, kMaxTier + 1}) {
    OneAction b;
    b.action.tier = tier;
    EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "tier"));
    b.action.type = kActionClearAllAtTier;
    EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "tier"));
  }
}

TEST(BackendKitChecks, RejectsHashesWithoutData) {
  for (uint32_t type : {kActionReport, kActionRevoke}) {
    OneAction b;
    b.action.type = type;
    b.action.hashes = {nullptr, 2};
    EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "hashes"));
  }
  OneAction clear;  // CLEAR's hashes are never read
  clear.action.type = kActionClearAllAtTier;
  clear.action.hashes = {nullptr, 2};
  EXPECT_TRUE(IsOk(CheckApplyBatch(clear.batch)));
}

TEST(BackendKitChecks, RejectsMisalignedSideArrays) {
  OneAction masks;
  masks.action.component_masks = {masks.two.data(), 1};
  EXPECT_TRUE(Rejected(CheckApplyBatch(masks.batch), "component_masks"));
  OneAction sizes;
  sizes.action.block_sizes = {sizes.two.data(), 3};
  EXPECT_TRUE(Rejected(CheckApplyBatch(sizes.batch), "block_sizes"));
  OneAction null_data;
  null_data.action.block_sizes = {nullptr, 2};
  EXPECT_TRUE(Rejected(CheckApplyBatch(null_data.batch), "block_sizes"));
  OneAction revoke;  // REVOKE's side arrays are never read
  revoke.action.type = kActionRevoke;
  revoke.action.block_sizes = {nullptr, 7};
  EXPECT_TRUE(IsOk(CheckApplyBatch(revoke.batch)));
}

TEST(BackendKitChecks, ChecksTheActionThatIsWrong) {
  OneAction b;
  ActionView actions[2] = {b.action, b.action};
  actions[1].tier = 9;
  b.batch.actions = actions;
  b.batch.action_count = 2;
  EXPECT_TRUE(Rejected(CheckApplyBatch(b.batch), "action 1"));
}

class NullVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView&) noexcept override {}
  bool OnBlock(const BlockView&) noexcept override { return true; }
};

TEST(BackendKitChecks, VisitAndHitCountArguments) {
  const int64_t hash = 1;
  uint64_t count = 0;
  NullVisitor visitor;
  EXPECT_TRUE(IsOk(CheckHashes({nullptr, 0})));
  EXPECT_TRUE(Rejected(CheckHashes({nullptr, 1}), "hashes"));
  EXPECT_TRUE(IsOk(CheckVisit({&hash, 1}, &visitor)));
  EXPECT_TRUE(Rejected(CheckVisit({&hash, 1}, nullptr), "visitor"));
  EXPECT_TRUE(Rejected(CheckVisit({nullptr, 1}, &visitor), "hashes"));
  EXPECT_TRUE(IsOk(CheckHitCounts({&hash, 1}, &count)));
  EXPECT_TRUE(IsOk(CheckHitCounts({nullptr, 0}, nullptr)));
  EXPECT_TRUE(Rejected(CheckHitCounts({&hash, 1}, nullptr), "counts"));
  EXPECT_TRUE(Rejected(CheckHitCounts({nullptr, 1}, &count), "hashes"));
}

TEST(BackendKitChecks, RemoveWorkerArguments) {
  EXPECT_TRUE(IsOk(CheckRemoveWorker({"w1", 2})));
  // An empty id is no worker's: removing it is a valid no-op.
  EXPECT_TRUE(IsOk(CheckRemoveWorker({nullptr, 0})));
  EXPECT_TRUE(IsOk(CheckRemoveWorker({"", 0})));
  EXPECT_TRUE(Rejected(CheckRemoveWorker({nullptr, 4}), "worker_id has 4"));
}

TEST(BackendKitChecks, CountPlacementsArguments) {
  uint64_t counts[kMaxTier + 1] = {};
  EXPECT_TRUE(IsOk(CheckCountPlacements({"w1", 2}, counts)));
  EXPECT_TRUE(IsOk(CheckCountPlacements({nullptr, 0}, counts)));
  EXPECT_TRUE(Rejected(CheckCountPlacements({"w1", 2}, nullptr),
                       "counts_by_tier is null"));
  EXPECT_TRUE(
      Rejected(CheckCountPlacements({nullptr, 4}, counts), "worker_id has 4"));
}

TEST(BackendKitStats, WritesOnlyTheFieldsTheCallerHasRoomFor) {
  BackendStats stats;
  memset(&stats, 0xab, sizeof(stats));
  const uint64_t untouched = stats.workers;
  stats.struct_size = offsetof(BackendStats, workers);  // an older host
  SetStat(&stats, &BackendStats::blocks, 1);
  SetStat(&stats, &BackendStats::placements, 2);
  SetStat(&stats, &BackendStats::workers, 3);
  SetStat(&stats, &BackendStats::memory_bytes, 4);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.placements, 2u);
  EXPECT_EQ(stats.workers, untouched);
  EXPECT_EQ(stats.memory_bytes, untouched);
  stats.struct_size = sizeof(stats);
  SetStat(&stats, &BackendStats::memory_bytes, 4);
  EXPECT_EQ(stats.memory_bytes, 4u);
}

class TrivialBackend final : public IndexBackend {
 public:
  TrivialBackend() noexcept = default;
  BackendStatus Apply(const ApplyBatchView&) noexcept override {
    return OkStatus();
  }
  BackendStatus Match(HashSpan, bool, BlockVisitor*) noexcept override {
    return OkStatus();
  }
  BackendStatus PrefixScan(HashSpan, BlockVisitor*) noexcept override {
    return OkStatus();
  }
  BackendStatus HitCounts(HashSpan, uint64_t*) noexcept override {
    return OkStatus();
  }
  void GetStats(BackendStats*) noexcept override {}
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override {
    if (existed != nullptr) *existed = 0;
    return CheckRemoveWorker(worker_id);
  }
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts,
                                uint32_t* existed) noexcept override {
    if (existed != nullptr) *existed = 0;
    return CheckCountPlacements(worker_id, counts);
  }
};

constexpr char kBuildInfo[] = KVINDEXER_KIT_BUILD_INFO "; kit test";
constexpr BackendDescriptor kDescriptor =
    MakeDescriptor("kit_test", "1.2.3", kBuildInfo,
                   &CreateBackend<TrivialBackend>, &DestroyBackend);

TEST(BackendKitEntry, MakeDescriptorFillsTheAbiFields) {
  EXPECT_EQ(kDescriptor.abi_major, kBackendAbiMajor);
  EXPECT_EQ(kDescriptor.abi_minor, kBackendAbiMinor);
  EXPECT_EQ(kDescriptor.struct_size, sizeof(BackendDescriptor));
  EXPECT_STREQ(kDescriptor.name, "kit_test");
  EXPECT_STREQ(kDescriptor.version, "1.2.3");
  EXPECT_NE(std::string(kDescriptor.build_info).find("compiler "),
            std::string::npos);
  char error[64] = "unchanged";
  IndexBackend* backend = kDescriptor.create(error, sizeof(error));
  ASSERT_NE(backend, nullptr);
  EXPECT_STREQ(error, "unchanged");
  kDescriptor.destroy(backend);
}

TEST(BackendKitEntry, WriteCreateErrorTruncatesAndToleratesNull) {
  char error[8];
  WriteCreateError(error, sizeof(error), "bad value %d", 123456);
  EXPECT_STREQ(error, "bad val");
  WriteCreateError(nullptr, 0, "ignored %d", 1);
  char one[1] = {'x'};
  WriteCreateError(one, 0, "ignored");
  EXPECT_EQ(one[0], 'x');
}

}  // namespace
}  // namespace kvindexer::kit
