#include "core/request_validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/requests.h"

namespace kvindexer {
namespace request_validation_test {
namespace {

namespace v1 = ::kv_indexer::v1;

using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::Range;
using test_support::Snapshot;

void ExpectStatus(const absl::Status& status, absl::StatusCode code,
                  const std::string& message) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_EQ(std::string(status.message()), message);
}

constexpr int kReport = v1::ACTION_REPORT;
constexpr int kRevoke = v1::ACTION_REVOKE;
constexpr int kClear = v1::ACTION_CLEAR_ALL_AT_TIER;
constexpr int kHbm = v1::TIER_HBM;

TEST(ValidateApply, EmptyWorkerIdRejectedNamedWorkerAccepted) {  // 42
  v1::ApplyExternalKvBatchRequest req;
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  req.set_worker_id("worker-1");
  EXPECT_TRUE(ValidateApply(req).ok());
}

TEST(ValidateApply, EmptyActionListIsValid) {  // 34
  EXPECT_TRUE(ValidateApply(Batch("worker-1")).ok());
}

TEST(ValidateApply, EmptyWorkerIdWinsOverEverything) {
  Batch req("");
  for (int i = 0; i < 300; ++i) req.Action(0, 0, {});
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
}

TEST(ValidateApply, TooManyActions) {  // 41
  Batch req("worker-1");
  for (int i = 0; i < 256; ++i) req.Action(kClear, kHbm, {});
  EXPECT_TRUE(ValidateApply(req).ok());
  req.Action(kClear, kHbm, {});
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 257 actions; maximum is 256");
}

TEST(ValidateApply, TooManyActionsCheckedBeforeActionContents) {
  Batch req("worker-1");
  for (int i = 0; i < 257; ++i) req.Action(999, 0, {});
  EXPECT_EQ(ValidateApply(req).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidateApply, TotalHashesOverAllActions) {  // 39, 40
  Batch req("worker-1");
  req.Action(kReport, kHbm, Range(0, 8193));
  req.Action(kReport, kHbm, Range(0, 8193));
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 16386 hashes; maximum is 16384");

  Batch single("worker-1");
  single.Action(kReport, kHbm, Range(0, 16385));
  ExpectStatus(ValidateApply(single), absl::StatusCode::kResourceExhausted,
               "batch contains 16385 hashes; maximum is 16384");

  Batch exact("worker-1");
  exact.Action(kReport, kHbm, Range(0, 8192));
  exact.Action(kRevoke, kHbm, Range(0, 8192));
  EXPECT_TRUE(ValidateApply(exact).ok());
}

TEST(ValidateApply, ClearHashesCountTowardTheTotal) {
  Batch req("worker-1");
  req.Action(kReport, kHbm, Range(0, 16384));
  req.Action(kClear, kHbm, Range(0, 1));
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 16385 hashes; maximum is 16384");
}

TEST(ValidateApply, TotalHashesCheckedBeforeActionContents) {
  Batch req("worker-1");
  req.Action(999, 0, Range(0, 16385));
  EXPECT_EQ(ValidateApply(req).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidateApply, TierUnknownRejectedForEveryType) {  // 36
  for (int type : {kReport, kRevoke, kClear, 0, 999}) {
    Batch req("worker-1");
    req.Action(type, 0, Range(0, 1));
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "tier must not be TIER_UNKNOWN");
  }
}

TEST(ValidateApply, TierOutsideRangeNotSupported) {
  for (int tier : {-1, 4, 5, 1000, -2147483647 - 1}) {
    Batch req("worker-1");
    req.Action(kReport, tier, Range(0, 1));
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "tier is not supported");
  }
  for (int tier : {1, 2, 3}) {
    Batch req("worker-1");
    req.Action(kReport, tier, Range(0, 1));
    EXPECT_TRUE(ValidateApply(req).ok()) << tier;
  }
}

TEST(ValidateApply, TierCheckedBeforeType) {
  Batch req("worker-1");
  req.Action(999, 7, Range(0, 1));
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "tier is not supported");
}

TEST(ValidateApply, ReportAndRevokeNeedHashesClearDoesNot) {  // 38
  for (int type : {kReport, kRevoke}) {
    Batch req("worker-1");
    req.Action(type, kHbm, {});
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "hashes must not be empty");
  }
  Batch clear("worker-1");
  clear.Action(kClear, kHbm, {});
  EXPECT_TRUE(ValidateApply(clear).ok());
  Batch clear_with_hashes("worker-1");
  clear_with_hashes.Action(kClear, kHbm, Range(0, 3));
  EXPECT_TRUE(ValidateApply(clear_with_hashes).ok());
}

TEST(ValidateApply, UnknownActionTypes) {  // 35, 3
  for (int type : {0, 4, 999, -1}) {
    Batch req("worker-1");
    req.Action(type, kHbm, Range(0, 1));
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "action type is not supported");
  }
}

TEST(ValidateApply, UnknownTypeCheckedBeforeSideArrays) {
  Batch req("worker-1");
  req.Action(999, kHbm, Range(0, 2), {1});
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "action type is not supported");
}

TEST(ValidateApply, SideArraysForReport) {  // 37
  Batch plain("worker-1");
  plain.Action(kReport, kHbm, Range(0, 2));
  EXPECT_TRUE(ValidateApply(plain).ok());

  Batch aligned("worker-1");
  aligned.Action(kReport, kHbm, Range(0, 2), {1, 3}, {16, 16});
  EXPECT_TRUE(ValidateApply(aligned).ok());

  Batch one_mask("worker-1");
  one_mask.Action(kReport, kHbm, Range(0, 2), {1});
  ExpectStatus(ValidateApply(one_mask), absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 2 "
               "hashes");

  Batch one_size("worker-1");
  one_size.Action(kReport, kHbm, Range(0, 2), {}, {16});
  ExpectStatus(ValidateApply(one_size), absl::StatusCode::kInvalidArgument,
               "block_sizes has 1 entries but must be empty or match 2 hashes");
}

TEST(ValidateApply, SideArraysCheckedForEveryType) {
  Batch revoke("worker-1");
  revoke.Action(kRevoke, kHbm, Range(0, 1), {}, {1, 2});
  ExpectStatus(ValidateApply(revoke), absl::StatusCode::kInvalidArgument,
               "block_sizes has 2 entries but must be empty or match 1 hashes");

  Batch clear("worker-1");
  clear.Action(kClear, kHbm, {}, {1});
  ExpectStatus(ValidateApply(clear), absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 0 "
               "hashes");

  // Aligned side arrays on REVOKE and CLEAR are accepted.
  Batch aligned("worker-1");
  aligned.Action(kRevoke, kHbm, Range(0, 1), {1});
  aligned.Action(kClear, kHbm, Range(0, 1), {}, {1});
  EXPECT_TRUE(ValidateApply(aligned).ok());
}

TEST(ValidateApply, MasksCheckedBeforeSizes) {
  Batch req("worker-1");
  req.Action(kReport, kHbm, Range(0, 3), {1}, {1});
  EXPECT_EQ(std::string(ValidateApply(req).message()),
            "component_masks has 1 entries but must be empty or match 3 "
            "hashes");
}

TEST(ValidateApply, FirstFailingActionWins) {
  Batch req("worker-1");
  req.Action(kReport, kHbm, Range(0, 1));
  req.Action(kRevoke, kHbm, {});
  req.Action(999, kHbm, Range(0, 1));
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "hashes must not be empty");
}

TEST(ValidateMatch, EmptyAndBound) {  // 39
  v1::MatchExternalKvRequest req;
  ExpectStatus(ValidateMatch(req), absl::StatusCode::kInvalidArgument,
               "hashes must not be empty");
  for (int i = 0; i < 16384; ++i) req.add_hashes(i);
  EXPECT_TRUE(ValidateMatch(req).ok());
  req.add_hashes(-1);
  ExpectStatus(ValidateMatch(req), absl::StatusCode::kResourceExhausted,
               "request contains 16385 hashes; maximum is 16384");
}

TEST(ValidateHitCounts, EmptyAndBound) {  // 39
  v1::GetExternalKvHitCountsRequest req;
  ExpectStatus(ValidateHitCounts(req), absl::StatusCode::kInvalidArgument,
               "hashes must not be empty");
  for (int i = 0; i < 16384; ++i) req.add_hashes(i);
  EXPECT_TRUE(ValidateHitCounts(req).ok());
  req.add_hashes(-1);
  ExpectStatus(ValidateHitCounts(req), absl::StatusCode::kResourceExhausted,
               "request contains 16385 hashes; maximum is 16384");
}

TEST(ValidatePrefix, EmptyRejectedNoUpperBound) {  // 39
  v1::MatchExternalKvPrefixRequest req;
  ExpectStatus(ValidatePrefix(req), absl::StatusCode::kInvalidArgument,
               "hashes must not be empty");
  for (int i = 0; i < 16385; ++i) req.add_hashes(i);
  EXPECT_TRUE(ValidatePrefix(req).ok());
}

// V1 to V3 of docs/contract.md, "Recovery > Replace validation".
TEST(ValidateReplace, StepsInOrder) {
  EXPECT_TRUE(ValidateReplace(Snapshot("w")).ok());
  EXPECT_TRUE(ValidateReplace(Snapshot("w").Tier(kHbm, {})).ok());
  ExpectStatus(ValidateReplace(Snapshot("").Tier(0, {1}, {1, 2})),
               absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(0, {1}, {1, 2})),
               absl::StatusCode::kInvalidArgument,
               "tier must not be TIER_UNKNOWN");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(-1, {1})),
               absl::StatusCode::kInvalidArgument, "tier is not supported");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(4, {1})),
               absl::StatusCode::kInvalidArgument, "tier is not supported");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(kHbm, {1, 2}, {1}, {1})),
               absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 2 "
               "hashes");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(kHbm, {1, 2}, {}, {1})),
               absl::StatusCode::kInvalidArgument,
               "block_sizes has 1 entries but must be empty or match 2 hashes");
  ExpectStatus(ValidateReplace(Snapshot("w").Tier(kHbm, {}, {1})),
               absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 0 "
               "hashes");
  // Entry by entry: the first entry's side arrays before the second's tier.
  ExpectStatus(
      ValidateReplace(Snapshot("w").Tier(kHbm, {1}, {}, {1, 1}).Tier(0, {1})),
      absl::StatusCode::kInvalidArgument,
      "block_sizes has 2 entries but must be empty or match 1 hashes");
}

TEST(ValidateReplace, NoHashBound) {
  EXPECT_TRUE(ValidateReplace(Snapshot("w").Tier(kHbm, Range(0, 40000))).ok());
}

// C1 to C3 of docs/contract.md, "Recovery > Configure validation".
TEST(ValidateConfigure, StepsInOrder) {
  EXPECT_TRUE(ValidateConfigure(ExpectedWorkers()).ok());
  ExpectedWorkers most;
  for (int i = 0; i < 4096; ++i) most.Worker(std::to_string(i));
  EXPECT_TRUE(ValidateConfigure(most).ok());
  ExpectedWorkers too_many = most;
  too_many.Worker("");
  ExpectStatus(ValidateConfigure(too_many),
               absl::StatusCode::kResourceExhausted,
               "request contains 4097 workers; maximum is 4096");
  ExpectStatus(
      ValidateConfigure(ExpectedWorkers().Worker("a").Worker("a").Worker("")),
      absl::StatusCode::kInvalidArgument, "worker_id must not be empty");
  ExpectStatus(
      ValidateConfigure(ExpectedWorkers().Worker("a").Worker("b").Worker("a")),
      absl::StatusCode::kInvalidArgument, "duplicate worker_id a");
}

// docs/contract.md, "Limits > Bounds": worker_id and worker_address lengths,
// steps 1a and 1b of "Apply validation", right after the empty worker_id.
TEST(ValidateApplyBounds, WorkerIdAndAddressBytes) {
  const std::string id_256(256, 'i');
  const std::string address_2048(2048, 'a');
  // At the defaults, exactly the limit is accepted.
  EXPECT_TRUE(ValidateApply(Batch(id_256, address_2048)).ok());
  ExpectStatus(ValidateApply(Batch(std::string(300, 'i'), "a")),
               absl::StatusCode::kInvalidArgument,
               "worker_id is 300 bytes; maximum is 256 "
               "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  ExpectStatus(ValidateApply(Batch("w", std::string(2049, 'a'))),
               absl::StatusCode::kInvalidArgument,
               "worker_address is 2049 bytes; maximum is 2048 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");

  // Configured limits are the ones named.
  RequestLimits limits;
  limits.max_worker_id_bytes = 4;
  limits.max_worker_address_bytes = 10;
  EXPECT_TRUE(ValidateApply(Batch("abcd", "0123456789"), limits).ok());
  ExpectStatus(ValidateApply(Batch("abcde", "x"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_id is 5 bytes; maximum is 4 "
               "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  ExpectStatus(ValidateApply(Batch("w", "0123456789a"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_address is 11 bytes; maximum is 10 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
}

TEST(ValidateApplyBounds, OrderEmptyIdThenIdThenAddressThenActions) {
  RequestLimits limits;
  limits.max_worker_id_bytes = 4;
  limits.max_worker_address_bytes = 4;
  // An empty id wins over a long address.
  ExpectStatus(ValidateApply(Batch("", "long address"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  // A long id wins over a long address.
  EXPECT_EQ(
      std::string(
          ValidateApply(Batch("long id", "long address"), limits).message()),
      "worker_id is 7 bytes; maximum is 4 "
      "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  // A long address wins over too many actions and bad actions.
  Batch req("w", "long address");
  for (int i = 0; i < 300; ++i) req.Action(999, 0, {});
  ExpectStatus(ValidateApply(req, limits), absl::StatusCode::kInvalidArgument,
               "worker_address is 12 bytes; maximum is 4 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
  // Gated or not, the same.
  Batch gated("w", "long address");
  gated.Gated("e", 1);
  EXPECT_EQ(ValidateApply(gated, limits).code(),
            absl::StatusCode::kInvalidArgument);
}

// V1a and V1b of "Recovery > Replace validation".
TEST(ValidateReplaceBounds, WorkerIdAndAddressBytesAfterEmptyId) {
  RequestLimits limits;
  limits.max_worker_id_bytes = 4;
  limits.max_worker_address_bytes = 4;
  EXPECT_TRUE(ValidateReplace(Snapshot("abcd", "abcd"), limits).ok());
  ExpectStatus(ValidateReplace(Snapshot("", "long address"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  ExpectStatus(ValidateReplace(Snapshot("abcde", "long address"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_id is 5 bytes; maximum is 4 "
               "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  // Before the entries' checks.
  ExpectStatus(
      ValidateReplace(Snapshot("w", "abcde").Tier(0, {1}, {1, 2}), limits),
      absl::StatusCode::kInvalidArgument,
      "worker_address is 5 bytes; maximum is 4 "
      "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
  // The defaults.
  ExpectStatus(ValidateReplace(Snapshot(std::string(257, 'i'))),
               absl::StatusCode::kInvalidArgument,
               "worker_id is 257 bytes; maximum is 256 "
               "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
}

// Step 1c of "Apply validation" and V1c of "Replace validation": the
// worker_epoch's length, right after the address, on both apply paths.
TEST(ValidateEpochBounds, DefaultAndConfiguredLimits) {
  const std::string epoch_256(256, 'e');
  EXPECT_TRUE(ValidateApply(Batch("w", "a").Gated(epoch_256, 1)).ok());
  EXPECT_TRUE(ValidateReplace(Snapshot("w", "a").Epoch(epoch_256)).ok());
  const std::string message =
      "worker_epoch is 257 bytes; maximum is 256 "
      "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)";
  ExpectStatus(ValidateApply(Batch("w", "a").Gated(epoch_256 + "e", 1)),
               absl::StatusCode::kInvalidArgument, message);
  ExpectStatus(ValidateReplace(Snapshot("w", "a").Epoch(epoch_256 + "e")),
               absl::StatusCode::kInvalidArgument, message);
  // The seed-era path ignores the epoch but logs the request whole.
  Batch seed_era("w", "a");
  seed_era.Report(kTierHbm, {1});
  seed_era.mutable_request()->set_worker_epoch(epoch_256 + "e");
  ExpectStatus(ValidateApply(seed_era), absl::StatusCode::kInvalidArgument,
               message);

  RequestLimits limits;
  limits.max_worker_epoch_bytes = 3;
  EXPECT_TRUE(ValidateApply(Batch("w", "a").Gated("abc", 1), limits).ok());
  ExpectStatus(ValidateApply(Batch("w", "a").Gated("abcd", 1), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_epoch is 4 bytes; maximum is 3 "
               "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)");
  ExpectStatus(ValidateReplace(Snapshot("w", "a").Epoch("abcd"), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_epoch is 4 bytes; maximum is 3 "
               "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)");
}

TEST(ValidateEpochBounds, OrderAfterIdAndAddressBeforeEverythingElse) {
  RequestLimits limits;
  limits.max_worker_id_bytes = 4;
  limits.max_worker_address_bytes = 4;
  limits.max_worker_epoch_bytes = 4;
  // An empty id, a long id and a long address each win over a long epoch.
  ExpectStatus(ValidateApply(Batch("", "a").Gated("epoch", 1), limits),
               absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  EXPECT_THAT(
      std::string(ValidateApply(Batch("abcde", "a").Gated("epoch", 1), limits)
                      .message()),
      ::testing::HasSubstr("worker_id is 5 bytes"));
  EXPECT_THAT(
      std::string(ValidateReplace(Snapshot("w", "abcde").Epoch("epoch"), limits)
                      .message()),
      ::testing::HasSubstr("worker_address is 5 bytes"));
  // A long epoch wins over too many actions and bad actions or entries.
  Batch req("w", "a");
  req.Gated("epoch", 1);
  for (int i = 0; i < 300; ++i) req.Action(999, 0, {});
  ExpectStatus(ValidateApply(req, limits), absl::StatusCode::kInvalidArgument,
               "worker_epoch is 5 bytes; maximum is 4 "
               "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)");
  ExpectStatus(
      ValidateReplace(Snapshot("w", "a").Epoch("epoch").Tier(0, {1}, {1, 2}),
                      limits),
      absl::StatusCode::kInvalidArgument,
      "worker_epoch is 5 bytes; maximum is 4 "
      "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)");
}

// C1a, C2a and C2b of "Recovery > Configure validation".
TEST(ValidateConfigureBounds, ResultSizeAndEveryWorkersBytes) {
  RequestLimits limits;
  limits.max_workers = 2;
  limits.max_worker_id_bytes = 4;
  limits.max_worker_address_bytes = 4;
  EXPECT_TRUE(
      ValidateConfigure(ExpectedWorkers().Worker("a").Worker("b"), limits)
          .ok());
  // C1a: the list is the resulting worker set; before C2.
  ExpectStatus(
      ValidateConfigure(ExpectedWorkers().Worker("a").Worker("b").Worker(""),
                        limits),
      absl::StatusCode::kResourceExhausted,
      "request contains 3 workers; maximum is 2 (KV_INDEXER_MAX_WORKERS)");
  // C1 (the request cap of 4,096) comes first.
  ExpectedWorkers over_4096;
  for (int i = 0; i < 4097; ++i) over_4096.Worker(std::to_string(i));
  ExpectStatus(ValidateConfigure(over_4096, limits),
               absl::StatusCode::kResourceExhausted,
               "request contains 4097 workers; maximum is 4096");

  limits.max_workers = 10;
  // C2 over the whole list before C2a.
  ExpectStatus(
      ValidateConfigure(
          ExpectedWorkers().Worker("abcde").Worker("").Worker("b"), limits),
      absl::StatusCode::kInvalidArgument, "worker_id must not be empty");
  // C2a over the whole list before C2b: the second worker's id, not the
  // first worker's address.
  ExpectStatus(
      ValidateConfigure(
          ExpectedWorkers().Worker("a", "long address").Worker("abcde", "x"),
          limits),
      absl::StatusCode::kInvalidArgument,
      "worker_id is 5 bytes; maximum is 4 "
      "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  // C2b before C3.
  ExpectStatus(ValidateConfigure(
                   ExpectedWorkers().Worker("a", "x").Worker("a", "x").Worker(
                       "b", "abcde"),
                   limits),
               absl::StatusCode::kInvalidArgument,
               "worker_address is 5 bytes; maximum is 4 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
}

TEST(CheckNewWorkerCapacity, RefusesAtTheLimit) {
  RequestLimits limits;
  limits.max_workers = 3;
  EXPECT_TRUE(CheckNewWorkerCapacity(0, limits).ok());
  EXPECT_TRUE(CheckNewWorkerCapacity(2, limits).ok());
  ExpectStatus(CheckNewWorkerCapacity(3, limits),
               absl::StatusCode::kResourceExhausted,
               "cannot add a worker: the server holds 3 workers; maximum is 3 "
               "(KV_INDEXER_MAX_WORKERS)");
  EXPECT_EQ(CheckNewWorkerCapacity(65535, RequestLimits{}).code(),
            absl::StatusCode::kOk);
  EXPECT_EQ(CheckNewWorkerCapacity(65536, RequestLimits{}).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace request_validation_test
}  // namespace kvindexer
