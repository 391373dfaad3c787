#include "core/pending_ack.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/indexer.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace pending_ack_test {

// A MutationLog that counts its bytes and records every WaitDurable.
class CountingLog final : public MutationLog {
 public:
  std::vector<uint64_t> waits;
  absl::Status wait_status;

  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& record) override {
    end_ += record.ByteSizeLong() + 1;
    return end_;
  }
  void Retract(uint64_t end) override { end_ = end; }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t offset) override {
    waits.push_back(offset);
    return wait_status;
  }

 private:
  uint64_t end_ = 0;
};

TEST(PendingAckTest, WithoutALogTheAnswerIsTheCallsOwn) {
  const PendingAck ack(absl::InvalidArgumentError("bad"));
  EXPECT_FALSE(ack.waits());
  EXPECT_EQ(ack.Wait(), absl::InvalidArgumentError("bad"));
  EXPECT_TRUE(PendingAck(absl::OkStatus(), nullptr, 7).Wait().ok());
}

TEST(PendingAckTest, TheAnswerWaitsForTheLogUpToTheEndItSaw) {
  CountingLog log;
  const PendingAck ack(absl::FailedPreconditionError("gap"), &log, 42);
  EXPECT_TRUE(ack.waits());
  EXPECT_TRUE(log.waits.empty());  // nothing waits before Wait
  // An error answer waits too: a refusal must not be taken back by a crash.
  EXPECT_EQ(ack.Wait(), absl::FailedPreconditionError("gap"));
  EXPECT_EQ(log.waits, std::vector<uint64_t>{42});
}

TEST(PendingAckTest, ALogThatCannotBeMadeDurableAnswersItsError) {
  CountingLog log;
  log.wait_status = absl::UnavailableError("sync failed");
  EXPECT_EQ(PendingAck(absl::OkStatus(), &log, 1).Wait(),
            absl::UnavailableError("sync failed"));
}

TEST(PendingAckTest, AMutationLeavesTheWaitToItsCaller) {
  test_support::ModelBackend backend;
  Indexer indexer(&backend);
  CountingLog log;
  indexer.durable_state().AttachLog(&log);
  IndexOperations& ops = indexer.operations();

  // Refused by validation: it never reached the log.
  v1::ApplyExternalKvBatchResponse resp;
  const PendingAck refused =
      ops.Apply(test_support::Batch("", "a").Report(kTierHbm, {1}), &resp);
  EXPECT_FALSE(refused.waits());
  EXPECT_EQ(refused.Wait().code(), absl::StatusCode::kInvalidArgument);

  const PendingAck applied =
      ops.Apply(test_support::Batch("w", "a").Report(kTierHbm, {1}), &resp);
  ASSERT_TRUE(applied.waits());
  EXPECT_TRUE(log.waits.empty());  // the Indexer did not wait itself
  EXPECT_TRUE(applied.Wait().ok());
  EXPECT_EQ(log.waits, std::vector<uint64_t>{log.end()});
  EXPECT_GT(log.end(), 0u);
  indexer.durable_state().AttachLog(nullptr);
}

}  // namespace pending_ack_test
}  // namespace kvindexer
