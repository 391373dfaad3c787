// What a client can put in the Indexer's log lines (docs/security.md, "Log
// lines"): worker ids, epochs and addresses are escaped and cut
// (common/log_text.h), and the lines that name a worker a client chose share
// one budget (common/log_budget.h), so that cycling through worker ids
// cannot flood the log.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "common/heartbeat_header.h"
#include "common/log_budget.h"
#include "common/log_text.h"
#include "core/indexer.h"
#include "core/request_limits.h"
#include "core/sequence_gate_log.h"
#include "core/worker_claims.h"
#include "core/worker_lifecycle_log.h"
#include "tests/support/fake_clock.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_log_capture.h"

namespace kvindexer {
namespace indexer_log_safety_test {

using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::ModelBackend;
using test_support::Snapshot;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using Level = spdlog::level::level_enum;

constexpr size_t kMiB = 1 << 20;

// A mebibyte that tries to end the line, forge another, recolour a terminal
// and close a quoted field.
std::string Hostile(char fill) {
  std::string s = "x\n2030-01-01 [error] forged line\x1b[31m\"\r";
  s.resize(kMiB, fill);
  return s;
}

// Limits that let hostile strings through validation, so that they reach
// the log lines.
RequestLimits Wide() {
  RequestLimits limits;
  limits.max_worker_id_bytes = 2 * kMiB;
  limits.max_worker_address_bytes = 2 * kMiB;
  limits.max_worker_epoch_bytes = 2 * kMiB;
  return limits;
}

void ExpectSafe(const std::string& line) {
  EXPECT_THAT(line, AllOf(Not(HasSubstr("\n")), Not(HasSubstr("\r")),
                          Not(HasSubstr("\x1b")), HasSubstr("x\\x0a2030")))
      << line.substr(0, 200);
  // A few cut values and the fixed text: far below the mebibyte.
  EXPECT_LT(line.size(), 8u * 4 * kLogTextBytes);
  EXPECT_THAT(line, HasSubstr("...(+"));
}

TEST(IndexerLogSafetyTest, GateLinesEscapeAndCutIdAndEpoch) {
  durable::TestLogCapture capture;
  ModelBackend backend;
  Indexer indexer(&backend, nullptr, Wide());
  const std::string id = Hostile('i');
  v1::ApplyExternalKvBatchResponse resp;
  // G1: no record.
  ASSERT_EQ(indexer.operations()
                .Apply(Batch(id, "a").Gated("e", 1), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  // G2: a record without a snapshot for this epoch.
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(indexer.operations()
                  .Configure(ExpectedWorkers().Worker(id, "a"), &configured)
                  .Wait()
                  .ok());
  ASSERT_EQ(indexer.operations()
                .Apply(Batch(id, "a").Gated(Hostile('e'), 1), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);

  const std::vector<std::string> lines = capture.Lines(spdlog::level::info);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) ExpectSafe(line);
  EXPECT_THAT(lines[0], HasSubstr(" worker=x\\x0a2030-01-01 [error] forged "
                                  "line\\x1b[31m\\x22\\x0d"));
  EXPECT_THAT(lines[1], HasSubstr(" epoch=x\\x0a2030"));
  EXPECT_THAT(lines[1], HasSubstr(fmt::format("...(+{} bytes) refused_total=",
                                              kMiB - kLogTextBytes)));
}

TEST(IndexerLogSafetyTest, ClaimConflictLineEscapesEveryValue) {
  durable::TestLogCapture capture;
  ModelBackend backend;
  Indexer indexer(&backend, nullptr, Wide());
  const std::string id = Hostile('i');
  v1::ApplyExternalKvBatchResponse resp;
  // Peer P, then Q with another address and epoch, then P again.
  for (const auto& [peer, address] :
       {std::pair<std::string, std::string>{"p\n1", Hostile('a')},
        {"p2", "b"},
        {"p\n1", Hostile('a')}}) {
    Batch batch(id, address);
    batch.Report(kTierHbm, {1});
    batch.mutable_request()->set_worker_epoch(Hostile('e'));
    ASSERT_TRUE(
        indexer.operations().Apply(batch, &resp, {.peer = peer}).Wait().ok());
  }
  const std::vector<std::string> warnings = capture.Lines(spdlog::level::warn);
  ASSERT_EQ(warnings.size(), 1u);
  ExpectSafe(warnings[0]);
  EXPECT_THAT(warnings[0], AllOf(HasSubstr(kClaimConflictLogMessage),
                                 HasSubstr(" peer=p\\x0a1 address=x\\x0a2030"),
                                 HasSubstr(" other_peer=p2 other_address=b ")));
}

TEST(IndexerLogSafetyTest, MalformedHeaderValuesAreEscaped) {
  std::vector<std::string> lines;
  WorkerLifecycleLog log(
      [&](Level, std::string_view line) { lines.emplace_back(line); });
  ModelBackend backend;
  Indexer indexer(&backend, nullptr, Wide(), kBackendAbiMinor, nullptr, &log);
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(indexer.operations()
                  .Apply(Batch(Hostile('i'), "a").Report(kTierHbm, {1}), &resp,
                         {.heartbeat = HeartbeatHeader::Parse("5\"\n")})
                  .Wait()
                  .ok());
  ASSERT_EQ(lines.size(), 1u);
  ExpectSafe(lines[0]);
  EXPECT_THAT(lines[0], HasSubstr(" value=\"5\\x22\\x0a\""));
}

// A client cycling through worker ids, each with a malformed heartbeat
// header (logged once per worker), gets no more lines than the budget
// holds; the rest are counted and reported with the next line logged. Gaps
// draw on the same budget.
TEST(IndexerLogSafetyTest, PerWorkerLinesShareOneBudget) {
  FakeMonotonicClock clock;
  LogBudget budget(&clock, 5, std::chrono::seconds(1));
  std::vector<std::pair<Level, std::string>> lines;
  const auto sink = [&](Level level, std::string_view line) {
    lines.emplace_back(level, std::string(line));
  };
  WorkerLifecycleLog lifecycle_log(sink, &budget);
  SequenceGateLog gate_log(sink, &budget);
  ModelBackend backend;
  Indexer indexer(&backend, &gate_log, RequestLimits{}, kBackendAbiMinor,
                  &clock, &lifecycle_log);
  // "g" is SEQUENCED at e@1, for a gap later.
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(indexer.operations()
                  .Configure(ExpectedWorkers().Worker("g", "a"), &configured)
                  .Wait()
                  .ok());
  v1::ReplaceExternalKvSnapshotResponse replaced;
  ASSERT_TRUE(
      indexer.operations()
          .Replace(Snapshot("g", "a").Epoch("e").AppliedSeq(1), &replaced)
          .Wait()
          .ok());

  v1::ApplyExternalKvBatchResponse resp;
  const HeartbeatHeader bad = HeartbeatHeader::Parse("soon");
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(
        indexer.operations()
            .Apply(
                Batch("w" + std::to_string(i), "a").Report(kTierHbm, {i + 1}),
                &resp, {.heartbeat = bad})
            .Wait()
            .ok());
  }
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_THAT(lines[4].second, AllOf(HasSubstr(kMalformedHeartbeatLogMessage),
                                     HasSubstr("worker=w4 ")));

  // A gap meanwhile is dropped too.
  ASSERT_EQ(indexer.operations()
                .Apply(Batch("g", "a").Gated("e", 9), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(lines.size(), 5u);
  EXPECT_EQ(budget.suppressed_total(), 996u);

  // A second later one line fits again, after the count of what was dropped.
  clock.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(indexer.operations()
                  .Apply(Batch("late", "a").Report(kTierHbm, {1}), &resp,
                         {.heartbeat = bad})
                  .Wait()
                  .ok());
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[5].first, spdlog::level::warn);
  EXPECT_THAT(lines[5].second, HasSubstr("996 similar lines suppressed"));
  EXPECT_THAT(lines[6].second, HasSubstr("worker=late "));
}

}  // namespace indexer_log_safety_test
}  // namespace kvindexer
