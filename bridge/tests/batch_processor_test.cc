// One message end to end against a fake applier: RPC order, chunk failure
// handling (docs/bridge-events.md, "Chunking" rule 4), no RPC for empty
// batches ("Chunking" rule 5, P2, B23) and
// skip accounting.
#include "bridge/batch_processor.h"

#include <string>
#include <vector>

#include "bridge/tests/action_text.h"
#include "bridge/tests/golden_payloads.h"
#include "bridge/tests/msgpack_builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::ClearEvent;
using ::kvindexer::bridge::testing::FromHex;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::RemoveEvent;
using ::kvindexer::bridge::testing::SeqFrame;
using ::kvindexer::bridge::testing::StoreEvent;
using ::testing::IsEmpty;

class FakeApplier : public KvApplier {
 public:
  absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override {
    requests.push_back(request);
    if (fail_at >= 0 && static_cast<int>(requests.size()) - 1 == fail_at) {
      return failure;
    }
    response->set_applied_seq(request.seq());
    return absl::OkStatus();
  }
  absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest&,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse*) override {
    return absl::UnimplementedError("not used by these tests");
  }
  std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> requests;
  int fail_at = -1;
  absl::Status failure = absl::UnavailableError("down");
};

BridgeConfig Config() {
  BridgeConfig config;
  config.worker_id = "worker-1";
  config.worker_address = "http://127.0.0.1:30000";
  return config;
}

absl::Status Send(BatchProcessor& processor, KvApplier& applier, uint64_t seq,
                  const std::string& payload, std::string topic = "kv") {
  const std::string seq_frame = SeqFrame(seq);
  std::vector<std::string_view> frames = {topic, seq_frame, payload};
  return processor.HandleMessage(frames, &applier);
}

TEST(BatchProcessor, ForwardsActionsWithHeader) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  ASSERT_TRUE(Send(processor, applier, 42, FromHex(testing::kGoldenG1)).ok());
  ASSERT_EQ(applier.requests.size(), 1u);
  const auto& r = applier.requests[0];
  EXPECT_EQ(r.worker_id(), "worker-1");
  EXPECT_EQ(r.seq(), 42u);
  EXPECT_EQ(r.worker_address(), "http://127.0.0.1:30000");
  EXPECT_FALSE(r.has_cache_spec());
  EXPECT_EQ(testing::DescribeActions(r),
            (std::vector<std::string>{"REPORT HBM [1234567890123,-987654321]",
                                      "REVOKE SSD [100,200]", "CLEAR HBM",
                                      "CLEAR DRAM", "CLEAR SSD"}));
  EXPECT_EQ(stats.batches_received, 1u);
  EXPECT_EQ(stats.events_received, 3u);
  EXPECT_EQ(stats.rpcs_sent, 1u);
  EXPECT_EQ(stats.actions_applied, 5u);
  EXPECT_EQ(stats.hashes_applied, 4u);
}

TEST(BatchProcessor, NoRpcForBatchesWithoutActions) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  EXPECT_TRUE(Send(processor, applier, 0, PackBatch({})).ok());  // barrier
  EXPECT_TRUE(Send(processor, applier, 1, FromHex(testing::kGoldenG3)).ok());
  EXPECT_THAT(applier.requests, IsEmpty());
  EXPECT_EQ(stats.batches_received, 2u);
  EXPECT_EQ(
      stats
          .events_skipped[static_cast<size_t>(EventSkipReason::kMissingMedium)],
      2u);
}

TEST(BatchProcessor, EmptyClearTiersMakeClearANoOp) {
  BridgeConfig config = Config();
  config.clear_tiers.clear();
  BridgeStats stats;
  BatchProcessor processor(config, &stats);
  FakeApplier applier;
  EXPECT_TRUE(Send(processor, applier, 0, PackBatch({ClearEvent()})).ok());
  EXPECT_THAT(applier.requests, IsEmpty());
}

TEST(BatchProcessor, StopsAtFirstFailedChunk) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  applier.fail_at = 1;
  std::vector<int64_t> hashes(40000);
  for (size_t i = 0; i < hashes.size(); ++i)
    hashes[i] = static_cast<int64_t>(i);
  absl::Status status =
      Send(processor, applier, 3, PackBatch({StoreEvent(hashes, "GPU", 1)}));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(applier.requests.size(), 2u);  // the third chunk is never sent
  EXPECT_EQ(stats.rpcs_sent, 1u);
  EXPECT_EQ(stats.rpcs_failed, 1u);
  // The next batch is handled normally.
  applier.fail_at = -1;
  EXPECT_TRUE(
      Send(processor, applier, 4, PackBatch({RemoveEvent({1}, "GPU")})).ok());
  EXPECT_EQ(applier.requests.size(), 3u);
  EXPECT_EQ(applier.requests[2].seq(), 4u);
}

TEST(BatchProcessor, PermanentStatusIsReturnedUnchanged) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  applier.fail_at = 0;
  applier.failure = absl::InvalidArgumentError("worker_id must not be empty");
  absl::Status status =
      Send(processor, applier, 0, PackBatch({StoreEvent({1}, "GPU")}));
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

TEST(BatchProcessor, MalformedMessagesAreSkipped) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  const std::string payload = PackBatch({StoreEvent({1}, "GPU")});
  std::vector<std::string_view> one = {payload};
  EXPECT_TRUE(processor.HandleMessage(one, &applier).ok());
  const std::string short_seq("\0\0\0\1", 4);
  std::vector<std::string_view> bad_seq = {"kv", short_seq, payload};
  EXPECT_TRUE(processor.HandleMessage(bad_seq, &applier).ok());
  EXPECT_TRUE(Send(processor, applier, 0, "\xc1").ok());
  EXPECT_TRUE(Send(processor, applier, 1, PackBatch({})).ok());
  EXPECT_THAT(applier.requests, IsEmpty());
  EXPECT_EQ(stats.messages_received, 4u);
  EXPECT_EQ(stats.messages_skipped[0], 1u);  // frame count
  EXPECT_EQ(stats.messages_skipped[1], 1u);  // seq length
  EXPECT_EQ(stats.messages_skipped[2], 1u);  // bad batch
  EXPECT_EQ(stats.batches_received, 1u);
}

TEST(BatchProcessor, SequenceAnomaliesCountedButForwarded) {
  BridgeStats stats;
  BatchProcessor processor(Config(), &stats);
  FakeApplier applier;
  const std::string payload = PackBatch({StoreEvent({1}, "GPU")});
  for (uint64_t seq : {0u, 1u, 5u, 5u, 2u}) {
    EXPECT_TRUE(Send(processor, applier, seq, payload).ok());
  }
  EXPECT_EQ(applier.requests.size(), 5u);
  EXPECT_EQ(stats.seq_gaps, 1u);
  EXPECT_EQ(stats.seq_missing, 3u);
  EXPECT_EQ(stats.seq_duplicates, 1u);
  EXPECT_EQ(stats.seq_reorders, 1u);
}

TEST(BatchProcessor, TopicFrameIsNeverCompared) {
  BridgeConfig config = Config();
  config.event_topic = "kv-events";
  BridgeStats stats;
  BatchProcessor processor(config, &stats);
  FakeApplier applier;
  const std::string topic = std::string("kv-events") + '\0' +
                            "sgl-kv-epoch=0123456789abcdef0123456789abcdef";
  EXPECT_TRUE(
      Send(processor, applier, 0, PackBatch({StoreEvent({1}, "GPU")}), topic)
          .ok());
  EXPECT_TRUE(Send(processor, applier, 1, PackBatch({StoreEvent({2}, "GPU")}),
                   "something-else")
                  .ok());
  EXPECT_EQ(applier.requests.size(), 2u);
}

}  // namespace
}  // namespace kvindexer::bridge
