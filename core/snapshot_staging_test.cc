// SnapshotStaging (core/snapshot_staging.h): the table's share of
// fleet-protocol.md, sections 6.2 and 6.3, and of F18-F20 and F24-F26:
// Append's and Commit's checks, the limits, the reservation accounting,
// the idle timeout on a fake clock, and a 10,000,000-placement transaction.
#include "core/snapshot_staging.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"
#include "tests/support/sanitized_build.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer::snapshot_staging_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using BeginInfo = SnapshotStaging::BeginInfo;
using std::chrono::milliseconds;

constexpr milliseconds kIdle{60'000};

StagingLimits Limits(uint32_t max_placements = 1000,
                     uint32_t max_transactions = 8) {
  return StagingLimits{.max_placements = max_placements,
                       .max_transactions = max_transactions,
                       .idle_timeout_ms = static_cast<uint32_t>(kIdle.count())};
}

BeginInfo Info(uint64_t applied_seq = 7, uint64_t record_token = 1) {
  BeginInfo info;
  info.worker_address = "http://10.0.0.1:30000";
  info.worker_epoch = "epoch-a";
  info.applied_seq = applied_seq;
  info.metadata.model = "m";
  info.metadata.worker_generation = "g1";
  info.metadata.page_size = 16;
  info.record_token = record_token;
  return info;
}

PlacementInput P(int64_t hash, int32_t tier = 1, uint32_t mask = 1,
                 uint32_t size = 16) {
  return PlacementInput{.block_hash = hash,
                        .tier = tier,
                        .component_mask = mask,
                        .block_size = size};
}

// An Append's answer: OK with `n` placements staged in all.
MATCHER_P(Staged, n, "") {
  if (!arg.ok()) {
    *result_listener << arg.status();
    return false;
  }
  *result_listener << *arg << " staged";
  return *arg == static_cast<uint64_t>(n);
}

absl::Status NoStreamCheck(std::string_view, const BeginInfo&) {
  return absl::OkStatus();
}

// Lowercase, hyphenated, version 4, variant 10.
bool IsUuidV4(const std::string& id) {
  if (id.size() != 36) return false;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return false;
    }
  }
  return id[14] == '4' &&
         std::string_view("89ab").find(id[19]) != std::string_view::npos;
}

class SnapshotStagingTest : public ::testing::Test {
 protected:
  explicit SnapshotStagingTest(StagingLimits limits = Limits())
      : staging_(limits, clock_) {}

  std::string MustBegin(std::string_view stream, uint64_t expected,
                        BeginInfo info = Info()) {
    auto id = staging_.Begin(stream, expected, std::move(info));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : std::string();
  }

  absl::StatusOr<uint64_t> Append(std::string_view id,
                                  std::vector<PlacementInput> placements) {
    return staging_.Append(id, placements);
  }

  absl::StatusCode CommitCode(std::string_view id) {
    return staging_.PrepareCommit(id, NoStreamCheck).status().code();
  }

  FakeMonotonicClock clock_;
  SnapshotStaging staging_;
};

TEST_F(SnapshotStagingTest, BeginReturnsDistinctUuidV4Ids) {
  const std::string a = MustBegin("a", 1);
  const std::string b = MustBegin("b", 1);
  EXPECT_TRUE(IsUuidV4(a)) << a;
  EXPECT_TRUE(IsUuidV4(b)) << b;
  EXPECT_NE(a, b);
  // A re-Begin of the same stream gets a new id too.
  EXPECT_NE(MustBegin("a", 1), a);
}

TEST_F(SnapshotStagingTest, AppendStagesInOrderAndCounts) {
  const std::string id = MustBegin("s", 5);
  EXPECT_THAT(Append(id, {P(3), P(1, 2)}), Staged(2u));
  EXPECT_THAT(Append(id, {}), Staged(2u));  // an empty Append is fine
  EXPECT_THAT(Append(id, {P(2, 3, 5, 32), P(9), P(1)}), Staged(5u));
  EXPECT_THAT(staging_.StagedPlacements("s"), Optional(5u));
  EXPECT_EQ(staging_.StagedPlacements("other"), std::nullopt);
  // Appending up to exactly the declared count leaves no room.
  EXPECT_EQ(Append(id, {P(4)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// F18: an unknown id is NOT_FOUND; Abort of one is OK.
TEST_F(SnapshotStagingTest, UnknownTransactionIsNotFoundAndAbortIsOk) {
  auto appended = Append("no-such-transaction", {P(1)});
  EXPECT_EQ(appended.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(appended.status().message(), HasSubstr("no-such-transaction"));
  EXPECT_EQ(CommitCode("no-such-transaction"), absl::StatusCode::kNotFound);
  staging_.Abort("no-such-transaction");
  // Ids are bytes: one that is not text is echoed escaped and cut.
  const std::string odd = std::string("\0\xff", 2) + std::string(1000, 'x');
  auto odd_append = Append(odd, {});
  EXPECT_EQ(odd_append.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(odd_append.status().message(), HasSubstr("\\x00\\xff"));
  EXPECT_LT(odd_append.status().message().size(), 400u);
}

// F18 and P3: beyond expected_placements is INVALID_ARGUMENT and stages
// nothing of that Append.
TEST_F(SnapshotStagingTest, AppendBeyondExpectedStagesNothing) {
  const std::string id = MustBegin("s", 3);
  ASSERT_THAT(Append(id, {P(1), P(2)}), Staged(2u));
  auto over = Append(id, {P(3), P(4)});
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(),
              HasSubstr("expects 3 placements; 2 are staged and this Append "
                        "adds 2"));
  EXPECT_THAT(staging_.StagedPlacements("s"), Optional(2u));
  // The transaction is still open and usable.
  EXPECT_THAT(Append(id, {P(3)}), Staged(3u));
  auto plan = staging_.PrepareCommit(id, NoStreamCheck);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->placements().size(), 3u);
}

// P2: a tier outside 1..3, anywhere in the Append, refuses all of it with
// Replace's message; P2 is checked before P3.
TEST_F(SnapshotStagingTest, AppendBadTierStagesNothing) {
  const std::string id = MustBegin("s", 4);
  const struct {
    int32_t tier;
    const char* message;
  } cases[] = {{0, "tier must not be TIER_UNKNOWN"},
               {4, "tier is not supported"},
               {-1, "tier is not supported"}};
  for (const auto& c : cases) {
    auto refused = Append(id, {P(1), P(2, c.tier), P(3)});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument)
        << c.tier;
    EXPECT_EQ(refused.status().message(), c.message) << c.tier;
    EXPECT_THAT(staging_.StagedPlacements("s"), Optional(0u));
  }
  // Too many and a bad tier: the tier wins.
  auto both = Append(id, {P(1), P(2), P(3), P(4), P(5, 0)});
  EXPECT_EQ(both.status().message(), "tier must not be TIER_UNKNOWN");
  EXPECT_THAT(Append(id, {P(1, 1), P(1, 2), P(1, 3)}), Staged(3u));
}

// F19 and M2: fewer staged than declared is FAILED_PRECONDITION and ends
// the transaction, before the stream is looked at.
TEST_F(SnapshotStagingTest, CommitShortOfDeclaredEndsTransaction) {
  const std::string id = MustBegin("s", 3);
  ASSERT_TRUE(Append(id, {P(1), P(2)}).ok());
  bool checked = false;
  auto plan =
      staging_.PrepareCommit(id, [&](std::string_view, const BeginInfo&) {
        checked = true;
        return absl::OkStatus();
      });
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("declared 3 placements but 2 are staged"));
  EXPECT_FALSE(checked);
  EXPECT_EQ(staging_.Stats(), StagingStats{});
  EXPECT_EQ(Append(id, {P(3)}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kNotFound);
}

// F20 and M5: one (block_hash, tier) twice is INVALID_ARGUMENT and ends
// the transaction; one hash at two tiers is fine.
TEST_F(SnapshotStagingTest, CommitWithPlacementStagedTwiceEndsTransaction) {
  const std::string fine = MustBegin("fine", 3);
  ASSERT_TRUE(Append(fine, {P(5, 1), P(5, 2), P(5, 3)}).ok());
  EXPECT_TRUE(staging_.PrepareCommit(fine, NoStreamCheck).ok());

  const std::string id = MustBegin("s", 4);
  ASSERT_TRUE(Append(id, {P(5, 2), P(-3, 1), P(8, 2)}).ok());
  ASSERT_TRUE(Append(id, {P(5, 2, 2, 64)}).ok());
  auto plan = staging_.PrepareCommit(id, NoStreamCheck);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(),
              HasSubstr("stages block_hash 5 at tier 2 more than once"));
  EXPECT_EQ(staging_.StagedPlacements("s"), std::nullopt);
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kNotFound);
  EXPECT_EQ(staging_.Stats().reserved_placements, 3u);  // "fine" only
}

// M3 and M4 run between M2 and M5, on Begin's info; their failure is
// returned as it is and ends the transaction.
TEST_F(SnapshotStagingTest, StreamCheckRunsAfterM2AndBeforeM5) {
  const std::string id = MustBegin("s", 2, Info(/*applied_seq=*/9, 42));
  ASSERT_TRUE(Append(id, {P(1), P(1)}).ok());  // a duplicate, for M5
  uint64_t seen_token = 0;
  auto plan =
      staging_.PrepareCommit(id, [&](std::string_view, const BeginInfo& info) {
        seen_token = info.record_token;
        EXPECT_EQ(info.applied_seq, 9u);
        EXPECT_EQ(info.worker_epoch, "epoch-a");
        EXPECT_EQ(info.metadata.worker_generation, "g1");
        return absl::FailedPreconditionError("stream s was replaced");
      });
  EXPECT_EQ(seen_token, 42u);
  EXPECT_EQ(plan.status(), absl::FailedPreconditionError("stream s was "
                                                         "replaced"));
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kNotFound);
  EXPECT_EQ(staging_.Stats(), StagingStats{});
}

// The plan: placements sorted by (tier, hash), per-tier runs, Begin's info.
TEST_F(SnapshotStagingTest, PlanHoldsSortedPlacementsAndBeginInfo) {
  BeginInfo info = Info(/*applied_seq=*/11);
  info.cache_spec = CacheSpec{.version = 1,
                              .components = 1,
                              .swa_window_tokens = 0,
                              .full_tier_mask = 2,
                              .swa_tier_mask = 0,
                              .mamba_tier_mask = 0};
  const std::string id = MustBegin("s", 5, info);
  ASSERT_TRUE(Append(id, {P(9, 3, 1, 8), P(4, 1, 2, 16), P(-2, 3)}).ok());
  ASSERT_TRUE(Append(id, {P(1, 1, 3, 32), P(4, 3, 4, 64)}).ok());
  auto plan = staging_.PrepareCommit(id, NoStreamCheck);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->already_committed());
  EXPECT_EQ(plan->stream_key(), "s");
  EXPECT_EQ(plan->applied_seq(), 11u);
  EXPECT_EQ(plan->info().worker_address, "http://10.0.0.1:30000");
  ASSERT_TRUE(plan->info().cache_spec.has_value());
  EXPECT_EQ(plan->info().cache_spec->full_tier_mask, 2u);
  using SP = StagedPlacement;
  EXPECT_THAT(plan->placements(),
              ElementsAre(SP{1, 3, 32, 1}, SP{4, 2, 16, 1}, SP{-2, 1, 16, 3},
                          SP{4, 4, 64, 3}, SP{9, 1, 8, 3}));
  EXPECT_THAT(plan->placements_at_tier(1),
              ElementsAre(SP{1, 3, 32, 1}, SP{4, 2, 16, 1}));
  EXPECT_THAT(plan->placements_at_tier(2), IsEmpty());
  EXPECT_EQ(plan->placements_at_tier(3).size(), 3u);
}

// F24: a repeated Commit of a committed transaction answers OK with the
// same applied_seq and changes nothing, within the idle timeout.
TEST_F(SnapshotStagingTest, RepeatedCommitAnswersTheSameAppliedSeq) {
  const std::string id = MustBegin("s", 1, Info(/*applied_seq=*/123));
  ASSERT_TRUE(Append(id, {P(1)}).ok());
  {
    auto plan = staging_.PrepareCommit(id, NoStreamCheck);
    ASSERT_TRUE(plan.ok());
    staging_.FinishCommit(*plan);
  }
  EXPECT_EQ(staging_.Stats(), StagingStats{});
  EXPECT_EQ(staging_.StagedPlacements("s"), std::nullopt);
  for (int i = 0; i < 2; ++i) {
    clock_.Advance(kIdle / 2 - milliseconds(1));
    bool checked = false;
    auto again =
        staging_.PrepareCommit(id, [&](std::string_view, const BeginInfo&) {
          checked = true;
          return absl::OkStatus();
        });
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->already_committed());
    EXPECT_EQ(again->applied_seq(), 123u);
    EXPECT_EQ(again->stream_key(), "s");
    EXPECT_FALSE(checked);
  }
  // An Append after the commit is refused, the transaction being over.
  auto late = Append(id, {});
  EXPECT_EQ(late.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(late.status().message(), HasSubstr("already committed"));
  // A later Begin for the stream leaves the committed answer alone.
  MustBegin("s", 1);
  EXPECT_TRUE(staging_.PrepareCommit(id, NoStreamCheck).ok());
  // One idle timeout after the commit the id is forgotten.
  clock_.Advance(milliseconds(2));
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kNotFound);
}

// A transient failure after PrepareCommit (the caller's log or backend)
// keeps the transaction for a retried Commit.
TEST_F(SnapshotStagingTest, TransactionStaysOpenUntilFinishCommit) {
  const std::string id = MustBegin("s", 3);
  ASSERT_TRUE(Append(id, {P(3), P(1), P(2)}).ok());
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto plan = staging_.PrepareCommit(id, NoStreamCheck);
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_FALSE(plan->already_committed());
    EXPECT_EQ(plan->placements().front().block_hash, 1);
    EXPECT_EQ(staging_.Stats().open_transactions, 1u);
  }
  // Still open: an empty Append restarts its timer, a non-empty one is P3.
  EXPECT_THAT(Append(id, {}), Staged(3u));
  EXPECT_EQ(Append(id, {P(4)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto plan = staging_.PrepareCommit(id, NoStreamCheck);
  ASSERT_TRUE(plan.ok());
  // The plan stays valid whatever the table does afterwards.
  staging_.Abort(id);
  EXPECT_EQ(plan->placements().size(), 3u);
  // FinishCommit after the id stopped being open still records the commit.
  staging_.FinishCommit(*plan);
  auto again = staging_.PrepareCommit(id, NoStreamCheck);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_committed());
}

// F24: a second Begin for a stream forgets the first transaction.
TEST_F(SnapshotStagingTest, SecondBeginSupersedesTheFirst) {
  const std::string first = MustBegin("s", 400);
  ASSERT_TRUE(Append(first, {P(1)}).ok());
  const std::string second = MustBegin("s", 300);
  EXPECT_EQ(Append(first, {P(2)}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CommitCode(first), absl::StatusCode::kNotFound);
  EXPECT_THAT(staging_.StagedPlacements("s"), Optional(0u));
  EXPECT_EQ(staging_.Stats(), (StagingStats{.open_transactions = 1,
                                            .reserved_placements = 300,
                                            .staged_placements = 0,
                                            .allocated_placements = 300}));
  EXPECT_THAT(Append(second, {P(2)}), Staged(1u));
}

// F26: the placement budget, with section 6.3's message verbatim.
TEST_F(SnapshotStagingTest, BeginBeyondBudgetIsResourceExhausted) {
  MustBegin("a", 600);
  MustBegin("b", 300);
  auto refused = staging_.Begin("c", 101, Info());
  EXPECT_EQ(refused.status(),
            absl::ResourceExhaustedError(
                "snapshot staging needs 101 placements; 900 of 1000 are "
                "reserved (KV_INDEXER_STAGING_MAX_PLACEMENTS)"));
  auto huge = staging_.Begin("c", uint64_t{1} << 63, Info());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(huge.status().message(),
              HasSubstr("needs 9223372036854775808 placements"));
  // Exactly the rest fits.
  MustBegin("c", 100);
  EXPECT_EQ(staging_.Stats().reserved_placements, 1000u);
  // Zero placements fit even a full budget.
  MustBegin("d", 0);
}

// A refused Begin leaves every transaction as it was, the stream's own
// earlier one included; the limits count the earlier one as freed.
TEST_F(SnapshotStagingTest, RefusedBeginLeavesTheEarlierTransaction) {
  const std::string other = MustBegin("other", 300);
  const std::string earlier = MustBegin("s", 600);
  ASSERT_TRUE(Append(earlier, {P(1), P(2)}).ok());
  auto refused = staging_.Begin("s", 701, Info());
  EXPECT_EQ(refused.status(),
            absl::ResourceExhaustedError(
                "snapshot staging needs 701 placements; 300 of 1000 are "
                "reserved (KV_INDEXER_STAGING_MAX_PLACEMENTS)"));
  EXPECT_THAT(staging_.StagedPlacements("s"), Optional(2u));
  EXPECT_THAT(Append(earlier, {P(3)}), Staged(3u));
  EXPECT_EQ(staging_.Stats().reserved_placements, 900u);
  // 700 fits only because the earlier 600 are freed by this Begin.
  const std::string replacement = MustBegin("s", 700);
  EXPECT_EQ(Append(earlier, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(staging_.Stats().reserved_placements, 1000u);
  EXPECT_THAT(Append(other, {P(1)}), Staged(1u));
  EXPECT_THAT(Append(replacement, {P(1)}), Staged(1u));
}

class SnapshotStagingCapTest : public SnapshotStagingTest {
 protected:
  SnapshotStagingCapTest() : SnapshotStagingTest(Limits(1000, 2)) {}
};

// F26: the transaction cap; a re-Begin of a stream at the cap replaces its
// own transaction and fits.
TEST_F(SnapshotStagingCapTest, BeginBeyondTransactionCapIsResourceExhausted) {
  MustBegin("a", 1);
  const std::string b = MustBegin("b", 1);
  auto refused = staging_.Begin("c", 1, Info());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("2 open transactions; maximum is 2 "
                        "(KV_INDEXER_STAGING_MAX_TRANSACTIONS)"));
  EXPECT_THAT(Append(b, {P(1)}), Staged(1u));
  MustBegin("b", 1);
  EXPECT_EQ(staging_.Stats().open_transactions, 2u);
  staging_.Abort(MustBegin("a", 1));
  MustBegin("c", 1);
}

// The reservation follows every way a transaction ends.
TEST_F(SnapshotStagingTest, ReservationAccounting) {
  const std::string a = MustBegin("a", 100);
  const std::string b = MustBegin("b", 200);
  const std::string c = MustBegin("c", 300);
  MustBegin("d", 50);
  ASSERT_TRUE(Append(a, {P(1), P(2)}).ok());
  ASSERT_TRUE(Append(b, {P(1)}).ok());
  EXPECT_EQ(staging_.Stats(), (StagingStats{.open_transactions = 4,
                                            .reserved_placements = 650,
                                            .staged_placements = 3,
                                            .allocated_placements = 650}));
  staging_.Abort(a);
  staging_.Abort(a);  // twice is harmless
  EXPECT_EQ(staging_.Stats().reserved_placements, 550u);
  EXPECT_TRUE(staging_.Cancel("b"));
  EXPECT_FALSE(staging_.Cancel("b"));
  EXPECT_EQ(staging_.Stats().reserved_placements, 350u);
  MustBegin("c", 10);  // supersedes c's 300
  EXPECT_EQ(staging_.Stats().reserved_placements, 60u);
  staging_.Abort(c);  // superseded: nothing left to free
  EXPECT_EQ(staging_.Stats().reserved_placements, 60u);
  clock_.Advance(kIdle);
  EXPECT_EQ(staging_.ExpireIdle(), 2u);
  EXPECT_EQ(staging_.Stats(), StagingStats{});
  // The whole budget is free again.
  MustBegin("e", 1000);
}

// Removing or invalidating a stream cancels its transaction: Append and
// Commit are FAILED_PRECONDITION for one idle timeout, then NOT_FOUND.
TEST_F(SnapshotStagingTest, CancelledTransactionAnswersFailedPrecondition) {
  const std::string id = MustBegin("s", 2);
  ASSERT_TRUE(Append(id, {P(1), P(2)}).ok());
  ASSERT_TRUE(staging_.Cancel("s"));
  EXPECT_EQ(staging_.StagedPlacements("s"), std::nullopt);
  EXPECT_EQ(staging_.Stats(), StagingStats{});
  auto append = Append(id, {});
  EXPECT_EQ(append.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(append.status().message(), HasSubstr("cancelled"));
  auto commit = staging_.PrepareCommit(id, NoStreamCheck);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition);
  staging_.Abort(id);  // OK, and the answer stays
  clock_.Advance(kIdle - milliseconds(1));
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kFailedPrecondition);
  clock_.Advance(milliseconds(1));
  EXPECT_EQ(CommitCode(id), absl::StatusCode::kNotFound);
  EXPECT_EQ(Append(id, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(staging_.Cancel("never-begun"));
}

// F25: no Begin or Append for the idle timeout expires a transaction;
// each Append restarts the timer; the expiry is logged at INFO.
TEST_F(SnapshotStagingTest, IdleTransactionExpires) {
  durable::TestLogCapture log;
  const std::string id = MustBegin("s", 3);
  const std::string idle = MustBegin("idle", 5);
  clock_.Advance(kIdle - milliseconds(1));
  ASSERT_THAT(Append(id, {P(1)}), Staged(1u));
  // "idle" reaches its timeout; "s" was just touched.
  clock_.Advance(milliseconds(1));
  EXPECT_EQ(staging_.Stats().open_transactions, 1u);
  EXPECT_EQ(Append(idle, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CommitCode(idle), absl::StatusCode::kNotFound);
  // Each Append restarts the timer.
  clock_.Advance(kIdle - milliseconds(2));
  ASSERT_THAT(Append(id, {P(2)}), Staged(2u));
  clock_.Advance(kIdle - milliseconds(1));
  ASSERT_THAT(Append(id, {P(3)}), Staged(3u));
  clock_.Advance(kIdle - milliseconds(1));
  EXPECT_TRUE(staging_.PrepareCommit(id, NoStreamCheck).ok());
  // Preparing a Commit does not restart it.
  clock_.Advance(milliseconds(1));
  EXPECT_EQ(staging_.ExpireIdle(), 1u);
  auto commit = staging_.PrepareCommit(id, NoStreamCheck);
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(commit.status().message(),
              HasSubstr("KV_INDEXER_STAGING_IDLE_TIMEOUT_MS"));
  EXPECT_EQ(staging_.Stats(), StagingStats{});
  const auto lines = log.Lines(spdlog::level::info);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("snapshot staging: 1 transaction(s) "
                                  "expired after 60000 ms"));
  EXPECT_THAT(lines[0], HasSubstr("5 reserved placements freed"));
  EXPECT_THAT(lines[1], HasSubstr("3 reserved placements freed"));
}

// Several transactions expiring at once are one line, with their count.
TEST_F(SnapshotStagingTest, ExpiryLogsOneLineWithTheCount) {
  durable::TestLogCapture log;
  MustBegin("a", 1);
  MustBegin("b", 2);
  clock_.Advance(milliseconds(10));
  MustBegin("c", 4);
  clock_.Advance(kIdle - milliseconds(10));
  EXPECT_EQ(staging_.ExpireIdle(), 2u);
  EXPECT_EQ(staging_.ExpireIdle(), 0u);
  EXPECT_THAT(staging_.StagedPlacements("c"), Optional(0u));
  const auto lines = log.Lines(spdlog::level::info);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("2 transaction(s) expired"));
  EXPECT_THAT(lines[0], HasSubstr("3 reserved placements freed"));
}

// Stream keys are bytes: 0x00 and 0xFF included, prefixes distinct.
TEST_F(SnapshotStagingTest, StreamKeysAreOpaqueBytes) {
  const std::string k1("w\0a", 3);
  const std::string k2("w\0b", 3);
  const std::string k3 = "\xff" + std::string("\0\0\0\x01", 4);
  const std::string k4("w", 1);
  const std::string i1 = MustBegin(k1, 1);
  const std::string i2 = MustBegin(k2, 2);
  const std::string i3 = MustBegin(k3, 3);
  const std::string i4 = MustBegin(k4, 4);
  ASSERT_TRUE(Append(i2, {P(1)}).ok());
  EXPECT_THAT(staging_.StagedPlacements(k1), Optional(0u));
  EXPECT_THAT(staging_.StagedPlacements(k2), Optional(1u));
  EXPECT_TRUE(staging_.Cancel(k3));
  EXPECT_EQ(staging_.Stats().open_transactions, 3u);
  EXPECT_THAT(Append(i1, {P(1)}), Staged(1u));
  EXPECT_THAT(Append(i4, {P(1)}), Staged(1u));
  EXPECT_EQ(Append(i3, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// Threads on distinct streams: every call is serialised, and the totals
// come out exact.
TEST_F(SnapshotStagingTest, ConcurrentCallsKeepTheTotals) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string stream = "stream-" + std::to_string(t);
      for (int r = 0; r < kRounds; ++r) {
        auto id = staging_.Begin(stream, 2, Info());
        if (!id.ok() || !staging_.Append(*id, {{P(r), P(r, 2)}}).ok()) {
          ++failures;
          continue;
        }
        if (r % 2 == 0) {
          staging_.Abort(*id);
        } else if (auto plan = staging_.PrepareCommit(*id, NoStreamCheck);
                   plan.ok()) {
          staging_.FinishCommit(*plan);
        } else {
          ++failures;
        }
      }
      auto last = staging_.Begin(stream, 3, Info());
      if (!last.ok()) ++failures;
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(staging_.Stats(),
            (StagingStats{.open_transactions = kThreads,
                          .reserved_placements = 3 * kThreads,
                          .staged_placements = 0,
                          .allocated_placements = 3 * kThreads}));
}

// Ten million placements (a tenth under the sanitizers), and a budget of
// two such transfers: the default one for the full size.
constexpr uint64_t kLargeTotal =
    test_support::kSanitizedBuild ? 1'000'000 : 10'000'000;

static_assert(test_support::kSanitizedBuild ||
              2 * kLargeTotal == kDefaultStagingMaxPlacements);

class SnapshotStagingLargeTest : public SnapshotStagingTest {
 protected:
  SnapshotStagingLargeTest()
      : SnapshotStagingTest(Limits(2 * kLargeTotal, 4)) {}
};

// F23 at the table's level: 10,000,000 placements in Appends of 16,384
// stage into the buffer Begin reserved, which never grows, and commit in
// (tier, hash) order.
TEST_F(SnapshotStagingLargeTest, TenMillionPlacementsStayWithinTheReservation) {
  constexpr uint64_t kTotal = kLargeTotal;
  constexpr size_t kPerAppend = 16'384;
  const std::string id = MustBegin("big", kTotal);
  EXPECT_EQ(staging_.Stats().allocated_placements, kTotal);
  // A second transfer of the same size fits the budget; a third does not.
  MustBegin("second", kTotal);
  EXPECT_EQ(staging_.Begin("third", 1, Info()).status().code(),
            absl::StatusCode::kResourceExhausted);
  uint64_t staged = 0;
  size_t appends = 0;
  while (staged < kTotal) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(kPerAppend, kTotal - staged));
    const uint64_t base = staged;
    // Hashes descend so that the commit has real sorting to do; tiers
    // cycle through 1..3.
    auto appended = staging_.Append(id, n, [base](size_t i) {
      const uint64_t k = base + i;
      return PlacementInput{.block_hash = static_cast<int64_t>(kTotal - k),
                            .tier = static_cast<int32_t>(1 + k % 3),
                            .component_mask = 1,
                            .block_size = 16};
    });
    ASSERT_TRUE(appended.ok()) << appended.status();
    staged = *appended;
    ++appends;
  }
  EXPECT_EQ(appends, (kTotal + kPerAppend - 1) / kPerAppend);
  const StagingStats stats = staging_.Stats();
  EXPECT_EQ(stats.staged_placements, kTotal);
  EXPECT_EQ(stats.reserved_placements, 2 * kTotal);
  EXPECT_EQ(stats.allocated_placements, 2 * kTotal);
  auto plan = staging_.PrepareCommit(id, NoStreamCheck);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->placements().size(), kTotal);
  EXPECT_TRUE(std::is_sorted(
      plan->placements().begin(), plan->placements().end(),
      [](const StagedPlacement& a, const StagedPlacement& b) {
        return a.tier != b.tier ? a.tier < b.tier : a.block_hash < b.block_hash;
      }));
  EXPECT_EQ(plan->placements_at_tier(1).size(), (kTotal + 2) / 3);
  EXPECT_EQ(plan->placements_at_tier(2).size(), (kTotal + 1) / 3);
  EXPECT_EQ(plan->placements_at_tier(3).size(), kTotal / 3);
  staging_.FinishCommit(*plan);
  EXPECT_EQ(staging_.Stats().reserved_placements, kTotal);
}

}  // namespace
}  // namespace kvindexer::snapshot_staging_test
