#include "core/request_validation.h"

#include <gtest/gtest.h>

#include <string>

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

v1::ExternalKvAction* AddAction(v1::ApplyExternalKvBatchRequest* req, int type,
                                int tier, int hashes) {
  v1::ExternalKvAction* action = req->add_actions();
  action->set_type(static_cast<v1::ExternalKvActionType>(type));
  action->set_tier(static_cast<v1::TierType>(tier));
  for (int i = 0; i < hashes; ++i) action->add_hashes(i);
  return action;
}

v1::ApplyExternalKvBatchRequest Batch() {
  v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id("worker-1");
  return req;
}

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
  EXPECT_TRUE(ValidateApply(Batch()).ok());
}

TEST(ValidateApply, EmptyWorkerIdWinsOverEverything) {
  v1::ApplyExternalKvBatchRequest req;
  for (int i = 0; i < 300; ++i) AddAction(&req, 0, 0, 0);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
}

TEST(ValidateApply, TooManyActions) {  // 41
  auto req = Batch();
  for (int i = 0; i < 256; ++i) AddAction(&req, kClear, kHbm, 0);
  EXPECT_TRUE(ValidateApply(req).ok());
  AddAction(&req, kClear, kHbm, 0);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 257 actions; maximum is 256");
}

TEST(ValidateApply, TooManyActionsCheckedBeforeActionContents) {
  auto req = Batch();
  for (int i = 0; i < 257; ++i) AddAction(&req, 999, 0, 0);
  EXPECT_EQ(ValidateApply(req).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidateApply, TotalHashesOverAllActions) {  // 39, 40
  auto req = Batch();
  AddAction(&req, kReport, kHbm, 8193);
  AddAction(&req, kReport, kHbm, 8193);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 16386 hashes; maximum is 16384");

  auto single = Batch();
  AddAction(&single, kReport, kHbm, 16385);
  ExpectStatus(ValidateApply(single), absl::StatusCode::kResourceExhausted,
               "batch contains 16385 hashes; maximum is 16384");

  auto exact = Batch();
  AddAction(&exact, kReport, kHbm, 8192);
  AddAction(&exact, kRevoke, kHbm, 8192);
  EXPECT_TRUE(ValidateApply(exact).ok());
}

TEST(ValidateApply, ClearHashesCountTowardTheTotal) {
  auto req = Batch();
  AddAction(&req, kReport, kHbm, 16384);
  AddAction(&req, kClear, kHbm, 1);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kResourceExhausted,
               "batch contains 16385 hashes; maximum is 16384");
}

TEST(ValidateApply, TotalHashesCheckedBeforeActionContents) {
  auto req = Batch();
  AddAction(&req, 999, 0, 16385);
  EXPECT_EQ(ValidateApply(req).code(), absl::StatusCode::kResourceExhausted);
}

TEST(ValidateApply, TierUnknownRejectedForEveryType) {  // 36
  for (int type : {kReport, kRevoke, kClear, 0, 999}) {
    auto req = Batch();
    AddAction(&req, type, 0, 1);
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "tier must not be TIER_UNKNOWN");
  }
}

TEST(ValidateApply, TierOutsideRangeNotSupported) {
  for (int tier : {-1, 4, 5, 1000, -2147483647 - 1}) {
    auto req = Batch();
    AddAction(&req, kReport, tier, 1);
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "tier is not supported");
  }
  for (int tier : {1, 2, 3}) {
    auto req = Batch();
    AddAction(&req, kReport, tier, 1);
    EXPECT_TRUE(ValidateApply(req).ok()) << tier;
  }
}

TEST(ValidateApply, TierCheckedBeforeType) {
  auto req = Batch();
  AddAction(&req, 999, 7, 1);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "tier is not supported");
}

TEST(ValidateApply, ReportAndRevokeNeedHashesClearDoesNot) {  // 38
  for (int type : {kReport, kRevoke}) {
    auto req = Batch();
    AddAction(&req, type, kHbm, 0);
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "hashes must not be empty");
  }
  auto clear = Batch();
  AddAction(&clear, kClear, kHbm, 0);
  EXPECT_TRUE(ValidateApply(clear).ok());
  auto clear_with_hashes = Batch();
  AddAction(&clear_with_hashes, kClear, kHbm, 3);
  EXPECT_TRUE(ValidateApply(clear_with_hashes).ok());
}

TEST(ValidateApply, UnknownActionTypes) {  // 35, 3
  for (int type : {0, 4, 999, -1}) {
    auto req = Batch();
    AddAction(&req, type, kHbm, 1);
    ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
                 "action type is not supported");
  }
}

TEST(ValidateApply, UnknownTypeCheckedBeforeSideArrays) {
  auto req = Batch();
  AddAction(&req, 999, kHbm, 2)->add_component_masks(1);
  ExpectStatus(ValidateApply(req), absl::StatusCode::kInvalidArgument,
               "action type is not supported");
}

TEST(ValidateApply, SideArraysForReport) {  // 37
  auto plain = Batch();
  AddAction(&plain, kReport, kHbm, 2);
  EXPECT_TRUE(ValidateApply(plain).ok());

  auto aligned = Batch();
  auto* a = AddAction(&aligned, kReport, kHbm, 2);
  a->add_component_masks(1);
  a->add_component_masks(3);
  a->add_block_sizes(16);
  a->add_block_sizes(16);
  EXPECT_TRUE(ValidateApply(aligned).ok());

  auto one_mask = Batch();
  AddAction(&one_mask, kReport, kHbm, 2)->add_component_masks(1);
  ExpectStatus(ValidateApply(one_mask), absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 2 "
               "hashes");

  auto one_size = Batch();
  AddAction(&one_size, kReport, kHbm, 2)->add_block_sizes(16);
  ExpectStatus(ValidateApply(one_size), absl::StatusCode::kInvalidArgument,
               "block_sizes has 1 entries but must be empty or match 2 hashes");
}

TEST(ValidateApply, SideArraysCheckedForEveryType) {
  auto revoke = Batch();
  auto* r = AddAction(&revoke, kRevoke, kHbm, 1);
  r->add_block_sizes(1);
  r->add_block_sizes(2);
  ExpectStatus(ValidateApply(revoke), absl::StatusCode::kInvalidArgument,
               "block_sizes has 2 entries but must be empty or match 1 hashes");

  auto clear = Batch();
  AddAction(&clear, kClear, kHbm, 0)->add_component_masks(1);
  ExpectStatus(ValidateApply(clear), absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 0 "
               "hashes");

  // Aligned side arrays on REVOKE and CLEAR are accepted.
  auto aligned = Batch();
  AddAction(&aligned, kRevoke, kHbm, 1)->add_component_masks(1);
  AddAction(&aligned, kClear, kHbm, 1)->add_block_sizes(1);
  EXPECT_TRUE(ValidateApply(aligned).ok());
}

TEST(ValidateApply, MasksCheckedBeforeSizes) {
  auto req = Batch();
  auto* a = AddAction(&req, kReport, kHbm, 3);
  a->add_component_masks(1);
  a->add_block_sizes(1);
  EXPECT_EQ(std::string(ValidateApply(req).message()),
            "component_masks has 1 entries but must be empty or match 3 "
            "hashes");
}

TEST(ValidateApply, FirstFailingActionWins) {
  auto req = Batch();
  AddAction(&req, kReport, kHbm, 1);
  AddAction(&req, kRevoke, kHbm, 0);
  AddAction(&req, 999, kHbm, 1);
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

}  // namespace
}  // namespace kvindexer
