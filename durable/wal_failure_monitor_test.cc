#include "durable/wal_failure_monitor.h"

#include <cerrno>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"

namespace kvindexer::durable {
namespace wal_failure_monitor_test {

using ::testing::ElementsAre;
using ::testing::Pair;

// The lines a monitor emits, with their levels.
class RecordingSink {
 public:
  WalFailureMonitor::Sink sink() {
    return [this](spdlog::level::level_enum level, std::string_view line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.emplace_back(level, std::string(line));
    };
  }
  std::vector<std::pair<spdlog::level::level_enum, std::string>> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<spdlog::level::level_enum, std::string>> lines_;
};

TEST(WalRefusalTest, ErrnoValuesMapToReasons) {
  EXPECT_EQ(WalRefusalForErrno(ENOSPC), WalRefusal::kNoSpace);
  EXPECT_EQ(WalRefusalForErrno(EDQUOT), WalRefusal::kNoSpace);
  EXPECT_EQ(WalRefusalForErrno(EFBIG), WalRefusal::kFileTooLarge);
  EXPECT_EQ(WalRefusalForErrno(EIO), WalRefusal::kIoError);
  EXPECT_EQ(WalRefusalForErrno(EBADF), WalRefusal::kIoError);
  EXPECT_EQ(WalRefusalName(WalRefusal::kNoSpace), "no_space");
  EXPECT_EQ(WalRefusalName(WalRefusal::kFileTooLarge), "file_too_large");
  EXPECT_EQ(WalRefusalName(WalRefusal::kIoError), "io_error");
  EXPECT_EQ(WalRefusalName(WalRefusal::kPoisoned), "poisoned");
  EXPECT_EQ(WalRefusalName(WalRefusal::kInvalidRecord), "invalid_record");
}

// Every refusal counts; the log gets the first of each reason, then one
// line per reason and interval with what was left out.
TEST(WalFailureMonitorTest, CountsEveryRefusalAndThrottlesLinesPerReason) {
  FakeMonotonicClock clock;
  RecordingSink sink;
  WalFailureMonitor monitor(&clock, sink.sink(), std::chrono::seconds(10));
  constexpr int kFlood = 1000;
  for (int i = 0; i < kFlood; ++i) {
    monitor.Refused(WalRefusal::kNoSpace, "state log write failed: full");
  }
  monitor.Refused(WalRefusal::kIoError, "state log write failed: eio");
  EXPECT_EQ(monitor.counts().of(WalRefusal::kNoSpace), uint64_t{kFlood});
  EXPECT_EQ(monitor.counts().of(WalRefusal::kIoError), 1u);
  EXPECT_EQ(monitor.counts().of(WalRefusal::kPoisoned), 0u);
  EXPECT_THAT(sink.lines(),
              ElementsAre(Pair(spdlog::level::err,
                               "state log append refused reason=no_space "
                               "error=state log write failed: full"),
                          Pair(spdlog::level::err,
                               "state log append refused reason=io_error "
                               "error=state log write failed: eio")));

  clock.Advance(std::chrono::seconds(9));
  monitor.Refused(WalRefusal::kNoSpace, "state log write failed: full");
  EXPECT_EQ(sink.lines().size(), 2u);
  clock.Advance(std::chrono::seconds(1));
  monitor.Refused(WalRefusal::kNoSpace, "state log write failed: full");
  ASSERT_EQ(sink.lines().size(), 3u);
  EXPECT_EQ(sink.lines()[2].second,
            "state log append refused reason=no_space "
            "suppressed_since_last_line=1000 "
            "error=state log write failed: full");
  EXPECT_EQ(monitor.counts().of(WalRefusal::kNoSpace), uint64_t{kFlood + 2});
}

// The failure is kept and logged once at ERROR; refusals because of it are
// WARN (the ERROR line says what happened).
TEST(WalFailureMonitorTest, TheFirstPoisoningIsKeptLoggedAndHandedOnOnce) {
  FakeMonotonicClock clock;
  RecordingSink sink;
  WalFailureMonitor monitor(&clock, sink.sink());
  std::vector<std::string> calls;
  monitor.SetOnFailure(
      [&calls](const std::string& failure) { calls.push_back(failure); });
  EXPECT_FALSE(monitor.poisoned());
  EXPECT_EQ(monitor.Failure(), std::nullopt);

  monitor.Poisoned("fdatasync: Input/output error (/d/wal-1.log)");
  monitor.Poisoned("a later one");
  EXPECT_TRUE(monitor.poisoned());
  EXPECT_EQ(monitor.Failure(), "fdatasync: Input/output error (/d/wal-1.log)");
  EXPECT_THAT(calls,
              ElementsAre("fdatasync: Input/output error (/d/wal-1.log)"));
  monitor.Refused(WalRefusal::kPoisoned, "state log write failed: fdatasync");
  EXPECT_THAT(
      sink.lines(),
      ElementsAre(
          Pair(spdlog::level::err,
               std::string(kWalFailedLogMessage) +
                   " error=fdatasync: Input/output error (/d/wal-1.log)"),
          Pair(spdlog::level::warn,
               "state log append refused reason=poisoned "
               "error=state log write failed: fdatasync")));

  // A callback set afterwards hears of it at once; null clears.
  std::vector<std::string> late;
  monitor.SetOnFailure(
      [&late](const std::string& failure) { late.push_back(failure); });
  EXPECT_THAT(late,
              ElementsAre("fdatasync: Input/output error (/d/wal-1.log)"));
  monitor.SetOnFailure(nullptr);
  EXPECT_EQ(calls.size(), 1u);
}

}  // namespace wal_failure_monitor_test
}  // namespace kvindexer::durable
