// Request validation (docs/contract.md, "Apply validation",
// "Match validation", "GetExternalKvHitCounts" and
// "MatchExternalKvPrefix > Order of checks"; behaviours 3 and 34–42 of
// "Reference behaviours"): the status code, the message, and that a rejected
// request
// changes nothing observable.
#include <string>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"

namespace kvindexer::conformance {
namespace {

class ValidationTest : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (HasFatalFailure()) return;
    // A state in which address, spec, placements, sizes and counters of the
    // target worker "w1" are all observable.
    ApplyOk(Batch("w1", "10.0.0.1:1")
                .Spec(Spec(kComponentFull | kComponentSwa, 100,
                           kTierBitHbm | kTierBitDram, kTierBitHbm))
                .Report(kTierHbm, {1, 2, 3}, {3, 3, 3}, {64, 64, 64})
                .Report(kTierDram, {4}, {1}, {16}));
    ApplyOk(Batch("w2", "10.0.0.2:1").Report(kTierHbm, {1, 5}));
    Match({1, 5}, true);
    before_ = Observe(kUniverse);
  }

  // Applies `req`, expects `code` and `message`, and expects the state to be
  // unchanged.
  void ExpectRejected(const v1::ApplyExternalKvBatchRequest& req,
                      absl::StatusCode code, const std::string& message) {
    const absl::Status s = Apply(req);
    EXPECT_EQ(s.code(), code) << s;
    EXPECT_EQ(s.message(), message);
    EXPECT_EQ(Observe(kUniverse), before_) << "a rejected apply changed state";
  }
  void ExpectAccepted(const v1::ApplyExternalKvBatchRequest& req) {
    const absl::Status s = Apply(req);
    EXPECT_TRUE(s.ok()) << s;
  }

  // A batch for w1 that would change everything if it were applied.
  static Batch Disruptive() {
    return Batch("w1", "changed").Revoke(kTierHbm, {1}).Report(kTierHbm, {6});
  }

  const Hashes kUniverse = {1, 2, 3, 4, 5, 6, 7};
  std::string before_;
};
KVINDEXER_INSTANTIATE_CONFORMANCE(ValidationTest);

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;
constexpr auto kExhausted = absl::StatusCode::kResourceExhausted;

// Step 1; behaviours 3 and 42.
TEST_P(ValidationTest, EmptyWorkerId) {
  ExpectRejected(Batch("").Report(kTierHbm, {6}), kInvalid,
                 "worker_id must not be empty");
  // First failure wins: also over too many actions.
  Batch many("");
  for (int i = 0; i < 257; ++i) many.Clear(kTierHbm);
  ExpectRejected(many, kInvalid, "worker_id must not be empty");
  ExpectAccepted(Batch("worker-1").Report(kTierHbm, {9}));
}

// Step 2; behaviour 41.
TEST_P(ValidationTest, TooManyActions) {
  Batch batch = Disruptive();
  for (int i = 0; i < 255; ++i) batch.Clear(kTierSsd);
  ExpectRejected(batch, kExhausted,
                 "batch contains 257 actions; maximum is 256");
  Batch clears("w1", "10.0.0.1:1");
  for (int i = 0; i < 257; ++i) clears.Clear(kTierSsd);
  ExpectRejected(clears, kExhausted,
                 "batch contains 257 actions; maximum is 256");
  // Step 2 comes before the per-action checks.
  Batch bad = clears;
  bad.Action(999, 0, {});
  ExpectRejected(bad, kExhausted, "batch contains 258 actions; maximum is 256");
  Batch ok("w3", "c");
  for (int i = 0; i < 256; ++i) ok.Clear(kTierSsd);
  ExpectAccepted(ok);
}

// Step 3; behaviours 39 and 40.
TEST_P(ValidationTest, TooManyHashesInTotal) {
  ExpectRejected(Batch("w1", "changed")
                     .Report(kTierHbm, Range(100, 8193))
                     .Report(kTierDram, Range(100, 8193)),
                 kExhausted, "batch contains 16386 hashes; maximum is 16384");
  ExpectRejected(Batch("w1", "changed").Report(kTierHbm, Range(100, 16385)),
                 kExhausted, "batch contains 16385 hashes; maximum is 16384");
  // CLEAR's ignored hashes still count.
  ExpectRejected(Batch("w1", "changed")
                     .Report(kTierHbm, {6})
                     .Clear(kTierHbm, Range(0, 16384)),
                 kExhausted, "batch contains 16385 hashes; maximum is 16384");
  // Step 3 comes before the per-action checks.
  ExpectRejected(Batch("w1", "changed").Action(999, 0, Range(0, 16385)),
                 kExhausted, "batch contains 16385 hashes; maximum is 16384");
  ExpectAccepted(Batch("w3", "c")
                     .Report(kTierHbm, Range(100, 8192))
                     .Report(kTierDram, Range(100, 8192)));
}

// Step 4a; behaviour 36.
TEST_P(ValidationTest, UnknownTier) {
  ExpectRejected(Disruptive().Report(0, {6}), kInvalid,
                 "tier must not be TIER_UNKNOWN");
  ExpectRejected(Disruptive().Clear(0), kInvalid,
                 "tier must not be TIER_UNKNOWN");
  ExpectRejected(Disruptive().Revoke(0, {1}), kInvalid,
                 "tier must not be TIER_UNKNOWN");
  for (int tier : {4, 5, 1000, -1, -2147483647 - 1}) {
    SCOPED_TRACE(absl::StrCat("tier ", tier));
    ExpectRejected(Disruptive().Report(tier, {6}), kInvalid,
                   "tier is not supported");
    ExpectRejected(Disruptive().Clear(tier), kInvalid, "tier is not supported");
  }
  // The tier is checked before the action type.
  ExpectRejected(Disruptive().Action(999, 0, {6}), kInvalid,
                 "tier must not be TIER_UNKNOWN");
  ExpectRejected(Disruptive().Action(0, 7, {}), kInvalid,
                 "tier is not supported");
}

// Step 4b; behaviours 3, 35 and 38.
TEST_P(ValidationTest, ActionTypeAndEmptyHashes) {
  ExpectRejected(Disruptive().Action(0, kTierHbm, {6}), kInvalid,
                 "action type is not supported");
  ExpectRejected(Disruptive().Action(999, kTierHbm, {1}), kInvalid,
                 "action type is not supported");
  ExpectRejected(Disruptive().Action(-1, kTierHbm, {1}), kInvalid,
                 "action type is not supported");
  ExpectRejected(Disruptive().Action(4, kTierDram, {}), kInvalid,
                 "action type is not supported");
  ExpectRejected(Disruptive().Report(kTierHbm, {}), kInvalid,
                 "hashes must not be empty");
  ExpectRejected(Disruptive().Revoke(kTierDram, {}), kInvalid,
                 "hashes must not be empty");
  // Actions are checked in order: the first bad one decides.
  ExpectRejected(Disruptive().Revoke(kTierHbm, {}).Action(999, 0, {1}),
                 kInvalid, "hashes must not be empty");
  ExpectAccepted(Batch("w3", "c").Clear(kTierHbm));
}

// Step 4c; behaviour 37.
TEST_P(ValidationTest, SideArrayLengths) {
  ExpectRejected(Disruptive().Report(kTierHbm, {6, 7}, {1}), kInvalid,
                 "component_masks has 1 entries but must be empty or match 2 "
                 "hashes");
  ExpectRejected(Disruptive().Report(kTierHbm, {6, 7}, {}, {1}), kInvalid,
                 "block_sizes has 1 entries but must be empty or match 2 "
                 "hashes");
  ExpectRejected(Disruptive().Report(kTierHbm, {6, 7}, {1, 1, 1}, {1, 1}),
                 kInvalid,
                 "component_masks has 3 entries but must be empty or match 2 "
                 "hashes");
  // Masks are checked before sizes.
  ExpectRejected(Disruptive().Report(kTierHbm, {6}, {1, 1}, {1, 1}), kInvalid,
                 "component_masks has 2 entries but must be empty or match 1 "
                 "hashes");
  // Every action type is checked, REVOKE and CLEAR included.
  ExpectRejected(Disruptive().Action(kActionRevoke, kTierHbm, {2, 3}, {1}),
                 kInvalid,
                 "component_masks has 1 entries but must be empty or match 2 "
                 "hashes");
  ExpectRejected(
      Disruptive().Action(kActionClearAllAtTier, kTierHbm, {}, {}, {5}),
      kInvalid,
      "block_sizes has 1 entries but must be empty or match 0 hashes");
  ExpectAccepted(Batch("w3", "c").Report(kTierHbm, {6, 7}));
  ExpectAccepted(Batch("w3", "c").Report(kTierHbm, {6, 7}, {1, 1}, {2, 2}));
  ExpectAccepted(Batch("w3", "c").Report(kTierHbm, {6, 7}, {1, 1}));
  ExpectAccepted(Batch("w3", "c").Report(kTierHbm, {6, 7}, {}, {2, 2}));
  ExpectAccepted(Batch("w3", "c").Action(kActionClearAllAtTier, kTierHbm,
                                         {6, 7}, {1, 1}, {2, 2}));
}

// Behaviour 34.
TEST_P(ValidationTest, EmptyActionListIsValid) {
  ExpectAccepted(Batch("w9", "z"));
}

TEST_P(ValidationTest, ValidActionsBeforeAnInvalidOneAreNotApplied) {
  ExpectRejected(Batch("w1", "changed")
                     .Clear(kTierHbm)
                     .Report(kTierDram, {6, 7}, {1, 1}, {8, 8})
                     .Action(999, kTierHbm, {1}),
                 kInvalid, "action type is not supported");
  ExpectRejected(Batch("w-new", "new").Report(kTierHbm, {1}).Report(0, {2}),
                 kInvalid, "tier must not be TIER_UNKNOWN");
}

// MatchExternalKv and GetExternalKvHitCounts validation; behaviour 39.
TEST_P(ValidationTest, MatchAndHitCountBounds) {
  v1::MatchExternalKvResponse match;
  absl::Status s = indexer().operations().Match(MatchRequest({}), &match);
  EXPECT_EQ(s.code(), kInvalid) << s;
  EXPECT_EQ(s.message(), "hashes must not be empty");
  s = indexer().operations().Match(MatchRequest(Range(0, 16385), true), &match);
  EXPECT_EQ(s.code(), kExhausted) << s;
  EXPECT_EQ(s.message(), "request contains 16385 hashes; maximum is 16384");
  // The bound is on the request as sent, before collapsing repeats.
  Hashes repeated(16385, 1);
  s = indexer().operations().Match(MatchRequest(repeated, true), &match);
  EXPECT_EQ(s.code(), kExhausted) << s;

  v1::GetExternalKvHitCountsResponse hits;
  s = indexer().operations().HitCounts(HitCountsRequest({}), &hits);
  EXPECT_EQ(s.code(), kInvalid) << s;
  EXPECT_EQ(s.message(), "hashes must not be empty");
  s = indexer().operations().HitCounts(HitCountsRequest(Range(0, 16385)),
                                       &hits);
  EXPECT_EQ(s.code(), kExhausted) << s;
  EXPECT_EQ(s.message(), "request contains 16385 hashes; maximum is 16384");

  EXPECT_EQ(Observe(kUniverse), before_) << "a rejected match counted hits";
  EXPECT_TRUE(
      indexer().operations().Match(MatchRequest(Range(0, 16384)), &match).ok());
  EXPECT_TRUE(indexer()
                  .operations()
                  .HitCounts(HitCountsRequest(Range(0, 16384)), &hits)
                  .ok());
}

// Prefix validation ("MatchExternalKvPrefix > Order of checks", step 3);
// behaviour 39: prefix queries have no upper bound.
TEST_P(ValidationTest, PrefixQueryBounds) {
  v1::MatchExternalKvPrefixResponse resp;
  absl::Status s =
      MatchPrefix(indexer().operations(), PrefixRequest({}), &resp);
  EXPECT_EQ(s.code(), kInvalid) << s;
  EXPECT_EQ(s.message(), "hashes must not be empty");
  s = MatchPrefix(indexer().operations(), PrefixRequest({}, 5), &resp);
  EXPECT_EQ(s.code(), kInvalid) << s;

  Hashes big = {1, 2, 3};
  const Hashes tail = Range(1000, 100000);
  big.insert(big.end(), tail.begin(), tail.end());
  s = MatchPrefix(indexer().operations(), PrefixRequest(big), &resp);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);
  EXPECT_EQ(resp.blocks_read(), big.size());
  s = MatchPrefix(indexer().operations(), PrefixRequest(Range(0, 16385)),
                  &resp);
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace kvindexer::conformance
