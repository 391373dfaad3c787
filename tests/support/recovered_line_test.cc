#include "tests/support/recovered_line.h"

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace kvindexer::test_support {
namespace {

TEST(RecoveredLineTest, ReadsEveryFieldOfTheServersLine) {
  const std::string output =
      "[info] listening soon\n"
      "[2026-12-07 10:00:00.000] [info] recovered 3 workers, 120 placements "
      "from checkpoint 7 plus 42 log records (65536 bytes) in 812 ms "
      "(checkpoint 500 ms, log 300 ms: 0.2 MB/s)\n"
      "[info] listening on 127.0.0.1:1\n";
  const std::optional<RecoveredLine> line = FindRecoveredLine(output);
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->workers, 3u);
  EXPECT_EQ(line->placements, 120u);
  EXPECT_EQ(line->checkpoint, 7u);
  EXPECT_EQ(line->log_records, 42u);
  EXPECT_EQ(line->log_bytes, 65536u);
  EXPECT_EQ(line->ms, 812u);
  EXPECT_EQ(line->checkpoint_ms, 500u);
  EXPECT_EQ(line->log_ms, 300u);
  EXPECT_EQ(line->text,
            "[2026-12-07 10:00:00.000] [info] recovered 3 workers, 120 "
            "placements from checkpoint 7 plus 42 log records (65536 bytes) "
            "in 812 ms (checkpoint 500 ms, log 300 ms: 0.2 MB/s)");
}

TEST(RecoveredLineTest, ALineWithoutThePartsLeavesThemZero) {
  const std::optional<RecoveredLine> line = FindRecoveredLine(
      "recovered 1 workers, 2 placements from checkpoint 0 plus 0 log "
      "records (0 bytes) in 5 ms");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->placements, 2u);
  EXPECT_EQ(line->ms, 5u);
  EXPECT_EQ(line->checkpoint_ms, 0u);
  EXPECT_EQ(line->log_ms, 0u);
}

TEST(RecoveredLineTest, SkipsOtherUsesOfTheWordAndFindsNone) {
  EXPECT_FALSE(FindRecoveredLine("").has_value());
  EXPECT_FALSE(FindRecoveredLine("recovered the stream\nrecovered 3 workers\n")
                   .has_value());
  const std::optional<RecoveredLine> line = FindRecoveredLine(
      "worker recovered quickly; recovered 4 workers, 9 placements from "
      "checkpoint 2 plus 1 log records (10 bytes) in 3 ms\n");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(line->workers, 4u);
  EXPECT_EQ(line->checkpoint, 2u);
}

}  // namespace
}  // namespace kvindexer::test_support
