#include "core/sequence_gate_log.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <vector>

namespace kvindexer {
namespace sequence_gate_log_test {
namespace {

struct Line {
  spdlog::level::level_enum level;
  std::string text;
};

class SequenceGateLogTest : public ::testing::Test {
 protected:
  SequenceGateLog log_{
      [this](spdlog::level::level_enum level, std::string_view text) {
        std::lock_guard<std::mutex> lock(mu_);
        lines_.push_back({level, std::string(text)});
      }};
  std::mutex mu_;
  std::vector<Line> lines_;
};

TEST_F(SequenceGateLogTest, RefusalsLogAtInfoAtPowersOfTwo) {
  for (int i = 0; i < 5; ++i) log_.RecordUnconfigured("w");
  for (int i = 0; i < 2; ++i) log_.RecordNotReady("v", "e1");
  ASSERT_EQ(lines_.size(), 5u);  // 1, 2, 4 and 1, 2
  for (const Line& line : lines_) EXPECT_EQ(line.level, spdlog::level::info);
  EXPECT_EQ(lines_[0].text,
            "refusing gated apply: worker is not configured worker=w "
            "refused_total=1");
  EXPECT_EQ(lines_[2].text,
            "refusing gated apply: worker is not configured worker=w "
            "refused_total=4");
  EXPECT_EQ(lines_[4].text,
            "refusing gated apply: worker has no ready snapshot for this epoch "
            "worker=v epoch=e1 refused_total=2");
  EXPECT_EQ(log_.unconfigured_total(), 5u);
  EXPECT_EQ(log_.not_ready_total(), 2u);
}

TEST_F(SequenceGateLogTest, EveryGapLogsAWarning) {
  for (int i = 0; i < 3; ++i) log_.RecordGap("w", 4, 6);
  ASSERT_EQ(lines_.size(), 3u);
  for (const Line& line : lines_) {
    EXPECT_EQ(line.level, spdlog::level::warn);
    EXPECT_EQ(line.text,
              "event sequence gap; placements cleared until a snapshot is "
              "installed worker=w expected=4 received=6");
  }
}

}  // namespace
}  // namespace sequence_gate_log_test
}  // namespace kvindexer
