// DurableStore after its log failed (a failed fdatasync poisons the
// writer): what the running store reports, what a reader sees of the
// mutation whose sync failed, and what the next start does with the file
// whose writeback failed (docs/durability.md, "Write failures").
#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "durable/data_dir.h"
#include "durable/durable_store.h"
#include "durable/record_framing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/durable_store_fixture.h"
#include "tests/support/requests.h"
#include "tests/support/test_file_io.h"
#include "tests/support/test_files.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer::durable {
namespace failed_log_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FailedLogTest : public DurableStoreTest {
 protected:
  // Starts on `io`, runs the workload (its gated w1 is at seq 12), then
  // makes every sync fail and sends w1's seq 13, which must be refused;
  // syncs work again afterwards. Returns the state after that apply.
  std::string PoisonAfterWorkload(TestFileIo& io) {
    DurableOptions options = Options();
    options.io = &io;
    StartOk(options);
    Workload();
    io.FailSyncs(EIO);
    const absl::Status s = Apply(Unacknowledged());
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("fdatasync"));
    io.FailSyncs(0);
    return State();
  }
  static v1::ApplyExternalKvBatchRequest Unacknowledged() {
    return Batch("w1", "addr-1").Gated("e1", 13).Report(kTierHbm, {50});
  }
  uint64_t FileSize(const std::string& name) const {
    return static_cast<uint64_t>(fs::file_size(Path(name)));
  }
};

// The running store reports the failure once, keeps it, and counts every
// later refusal; the mutation whose sync failed took effect and stays
// visible to readers although its caller got UNAVAILABLE.
TEST_F(FailedLogTest, TheStoreReportsTheFailureAndReadsSeeTheMutation) {
  TestFileIo io;
  const auto close_store = CloseOnExit();
  DurableOptions options = Options();
  options.io = &io;
  StartOk(options);
  Workload();
  std::vector<std::string> failures;
  store().SetOnLogFailure(
      [&failures](const std::string& failure) { failures.push_back(failure); });
  EXPECT_EQ(store().LogFailure(), std::nullopt);
  EXPECT_FALSE(store().figures().log_failed);

  io.FailSyncs(EIO);
  EXPECT_EQ(Apply(Unacknowledged()).code(), absl::StatusCode::kUnavailable);
  io.FailSyncs(0);
  const std::string failure =
      "fdatasync: Input/output error (" + Path(WalFileName(1)) + ")";
  EXPECT_THAT(failures, ElementsAre(failure));
  EXPECT_EQ(store().LogFailure(), failure);
  EXPECT_TRUE(TestFileExists(Path(PoisonMarkerFileName(1))));

  v1::MatchExternalKvResponse match;
  ASSERT_TRUE(indexer()
                  .operations()
                  .Match(test_support::MatchRequest({50}), &match)
                  .ok());
  EXPECT_EQ(match.matches_size(), 1) << match.ShortDebugString();

  // Every later mutation is refused, whatever it is, and counted.
  EXPECT_EQ(Apply(Batch("w1", "addr-1").Gated("e1", 14).Report(kTierHbm, {51}))
                .code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Apply(Batch("s9", "addr-s9").Report(kTierHbm, {52})).code(),
            absl::StatusCode::kUnavailable);
  const DurableFigures figures = store().figures();
  EXPECT_TRUE(figures.log_failed);
  EXPECT_EQ(figures.append_refusals.of(WalRefusal::kPoisoned), 2u);
  EXPECT_EQ(failures.size(), 1u);
  store().SetOnLogFailure(nullptr);
}

// The next start does not continue the file whose writeback failed. It
// closes it behind a new checkpoint built from what the files hold, and the
// log goes on in a new file; the file that failed is never written again.
TEST_F(FailedLogTest, TheNextStartClosesTheFailedLogBehindACheckpoint) {
  TestFileIo io;
  const auto close_store = CloseOnExit();
  const std::string before_crash = PoisonAfterWorkload(io);
  Crash();
  const uint64_t failed_size = FileSize(WalFileName(1));
  ASSERT_TRUE(TestFileExists(Path(PoisonMarkerFileName(1))));

  TestLogCapture log;
  StartOk(Options());
  EXPECT_TRUE(store().recovery().failed_log_closed);
  EXPECT_TRUE(
      Logged(log, spdlog::level::warn,
             "the previous run's log " + Path(WalFileName(1)) + " failed"));
  // The failed sync lost nothing here, so the file still holds seq 13 and
  // it comes back: the caller's UNAVAILABLE meant "outcome unknown".
  EXPECT_EQ(State(), before_crash);
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(1), WalFileName(1),
                                   CheckpointFileName(2), WalFileName(2)}));
  EXPECT_EQ(store().figures().checkpoint_generation, 2u);
  EXPECT_EQ(FileSize(WalFileName(2)), kFileHeaderBytes);

  ApplyOk(Batch("w1", "addr-1").Gated("e1", 14).Report(kTierHbm, {51}));
  EXPECT_EQ(FileSize(WalFileName(1)), failed_size);
  EXPECT_GT(FileSize(WalFileName(2)), kFileHeaderBytes);
  const std::string after = State();

  // An ordinary restart after that continues wal-2 from checkpoint 2.
  Crash();
  StartOk(Options());
  EXPECT_FALSE(store().recovery().failed_log_closed);
  EXPECT_EQ(store().recovery().checkpoint_generation, 2u);
  EXPECT_EQ(State(), after);
  EXPECT_EQ(Probe("w1", "e1"), 14u);
  EXPECT_EQ(FileSize(WalFileName(1)), failed_size);
}

// A start that cannot write the checkpoint that closes a failed log stops
// (exit 1 in the server) rather than continue that log; its marker stays,
// so the start after that tries again.
TEST_F(FailedLogTest, AStartThatCannotCloseTheFailedLogFails) {
  TestFileIo io;
  const auto close_store = CloseOnExit();
  const std::string before_crash = PoisonAfterWorkload(io);
  Crash();

  TestFileIo full;
  const auto close_store_too = CloseOnExit();
  full.FailWritesAfter(0, ENOSPC);
  DurableOptions options = Options();
  options.io = &full;
  const absl::Status refused = Start(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.message()),
              HasSubstr(Path(WalFileName(1)) + " failed and must not be "
                                               "continued"));
  EXPECT_THAT(std::string(refused.message()), HasSubstr("No space left"));
  Crash();
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(1), WalFileName(1),
                                   PoisonMarkerFileName(1)}));

  StartOk(Options());
  EXPECT_TRUE(store().recovery().failed_log_closed);
  EXPECT_EQ(State(), before_crash);
  EXPECT_FALSE(TestFileExists(Path(PoisonMarkerFileName(1))));
}

// A marker for a generation that the checkpoint already covers (or that
// recovery set aside) is left over from an earlier start: it is deleted and
// the newest log is continued as usual.
TEST_F(FailedLogTest, AStaleMarkerIsDeleted) {
  StartOk(Options());
  Workload();
  const std::string before = State();
  Crash();
  WriteTestFile(Path(PoisonMarkerFileName(7)), "from elsewhere\n");

  StartOk(Options());
  EXPECT_FALSE(store().recovery().failed_log_closed);
  EXPECT_EQ(State(), before);
  EXPECT_EQ(Files(),
            (std::set<std::string>{CheckpointFileName(1), WalFileName(1)}));
}

// Refusals that do not fail the log are counted by reason, and the log is
// not failed by them.
TEST_F(FailedLogTest, AFullDiskIsCountedButDoesNotFailTheLog) {
  TestFileIo io;
  const auto close_store = CloseOnExit();
  DurableOptions options = Options();
  options.io = &io;
  StartOk(options);
  Workload();
  io.FailWritesAfter(0, ENOSPC);
  EXPECT_EQ(Apply(Unacknowledged()).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Apply(Unacknowledged()).code(), absl::StatusCode::kUnavailable);
  io.HealWrites();
  const DurableFigures figures = store().figures();
  EXPECT_EQ(figures.append_refusals.of(WalRefusal::kNoSpace), 2u);
  EXPECT_FALSE(figures.log_failed);
  EXPECT_EQ(store().LogFailure(), std::nullopt);
  ApplyOk(Unacknowledged());
}

}  // namespace failed_log_test
}  // namespace kvindexer::durable
