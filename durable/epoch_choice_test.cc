// durable/epoch_choice.h: which recoveries keep the previous epoch.
#include "durable/epoch_choice.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace kvindexer::durable {
namespace {

constexpr char kOld[] = "11111111-2222-4333-8444-555555555555";
constexpr char kFresh[] = "99999999-8888-4777-8666-555555555555";
constexpr char kBoot[] = "boot-a";

// A recovery that loaded checkpoint 3 and replayed its log whole.
RecoveryReport Exact() {
  RecoveryReport report;
  report.checkpoint_generation = 3;
  report.log_records = 10;
  return report;
}

std::optional<EpochFile> Previous(std::string boot = kBoot) {
  return EpochFile{kOld, std::move(boot)};
}

EpochChoice Choose(const std::optional<EpochFile>& previous,
                   const RecoveryReport& report,
                   WalSync sync = WalSync::kAlways,
                   const std::string& boot = kBoot) {
  return ChooseEpoch(previous, report, sync, boot, kFresh);
}

TEST(EpochChoiceTest, AnExactRecoveryKeepsThePreviousEpoch) {
  const EpochChoice choice = Choose(Previous(), Exact());
  EXPECT_TRUE(choice.kept);
  EXPECT_EQ(choice.epoch, kOld);
  EXPECT_EQ(choice.reason, "kept");
}

TEST(EpochChoiceTest, ATornTailOfTheNewestLogAndAFallbackCheckpointAreExact) {
  RecoveryReport report = Exact();
  report.torn_tail = true;
  report.cut_bytes = 7;
  report.checkpoint_fallback = true;
  report.failed_log_closed = true;
  EXPECT_TRUE(Choose(Previous(), report).kept);
}

TEST(EpochChoiceTest, EveryLossChoosesTheFreshEpoch) {
  struct Case {
    const char* name;
    std::optional<EpochFile> previous;
    RecoveryReport report;
    const char* reason_part;
  };
  RecoveryReport no_checkpoint = Exact();
  no_checkpoint.checkpoint_generation = 0;
  RecoveryReport started_empty = Exact();
  started_empty.started_empty = true;
  RecoveryReport set_aside = Exact();
  set_aside.logs_set_aside = true;
  RecoveryReport damaged = Exact();
  damaged.log_damaged = true;
  const Case cases[] = {
      {"no file", std::nullopt, Exact(), "no previous epoch"},
      {"fresh directory", Previous(), no_checkpoint, "no checkpoint"},
      {"state lost", Previous(), started_empty, "no checkpoint"},
      {"log set aside", Previous(), set_aside, "set aside"},
      {"damage cut", Previous(), damaged, "damaged"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const EpochChoice choice = Choose(c.previous, c.report);
    EXPECT_FALSE(choice.kept);
    EXPECT_EQ(choice.epoch, kFresh);
    EXPECT_NE(choice.reason.find(c.reason_part), std::string::npos)
        << choice.reason;
  }
}

TEST(EpochChoiceTest, WithoutSyncOnlyTheSameBootKeepsTheEpoch) {
  EXPECT_TRUE(Choose(Previous(), Exact(), WalSync::kNone).kept);
  const EpochChoice rebooted =
      Choose(Previous(), Exact(), WalSync::kNone, "boot-b");
  EXPECT_FALSE(rebooted.kept);
  EXPECT_NE(rebooted.reason.find("KV_INDEXER_WAL_SYNC=none"),
            std::string::npos);
  // An unknown boot id matches nothing, not even an unknown one.
  EXPECT_FALSE(Choose(Previous(""), Exact(), WalSync::kNone, "").kept);
  // With syncs a reboot loses nothing acknowledged.
  EXPECT_TRUE(Choose(Previous(), Exact(), WalSync::kAlways, "boot-b").kept);
  EXPECT_TRUE(Choose(Previous(""), Exact(), WalSync::kAlways, "").kept);
}

}  // namespace
}  // namespace kvindexer::durable
