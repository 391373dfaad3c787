// The Indexer under docs/contract.md, "Limits > Bounds": the worker limit,
// the byte limits of ids and addresses, the prefix answer ceiling and
// duplicate-claim logging, each checked with the state before and after, so
// that a refused request is seen to change nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "core/indexer.h"
#include "core/request_limits.h"
#include "core/worker_claims.h"
#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::MatchRequest;
using test_support::ModelBackend;
using test_support::PrefixRequest;
using test_support::Snapshot;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

void ExpectStatus(const absl::Status& status, absl::StatusCode code,
                  const std::string& message) {
  EXPECT_EQ(status.code(), code) << status;
  EXPECT_EQ(std::string(status.message()), message);
}

// Captures spdlog's default logger for the test's lifetime.
class CapturedLog {
 public:
  CapturedLog()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(64)),
        previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink_));
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }

  // The WARN lines so far.
  std::vector<std::string> warnings() const {
    std::vector<std::string> out;
    for (const auto& msg : sink_->last_raw()) {
      if (msg.level == spdlog::level::warn) {
        out.emplace_back(msg.payload.data(), msg.payload.size());
      }
    }
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

class IndexerBoundsTest : public ::testing::Test {
 protected:
  void Start(const RequestLimits& limits) {
    indexer_ = std::make_unique<Indexer>(&backend_, nullptr, limits);
  }
  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     std::string_view peer = {}) {
    v1::ApplyExternalKvBatchResponse resp;
    return indexer_->operations().Apply(req, &resp, {.peer = peer}).Wait();
  }
  absl::Status Replace(const v1::ReplaceExternalKvSnapshotRequest& req,
                       std::string_view peer = {}) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    return indexer_->operations().Replace(req, &resp, {.peer = peer}).Wait();
  }
  absl::Status Configure(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    return indexer_->operations().Configure(req, &resp).Wait();
  }
  // MatchExternalKv over `hashes`, serialized: a whole-state fingerprint.
  std::string Placements(const std::vector<int64_t>& hashes) {
    v1::MatchExternalKvResponse resp;
    EXPECT_TRUE(indexer_->operations().Match(MatchRequest(hashes), &resp).ok());
    return resp.SerializeAsString();
  }

  ModelBackend backend_;
  std::unique_ptr<Indexer> indexer_;
};

TEST_F(IndexerBoundsTest, WorkerLimitRefusesOnlyNewRecords) {
  RequestLimits limits;
  limits.max_workers = 2;
  Start(limits);
  ASSERT_TRUE(Apply(Batch("w1", "a1").Report(kTierHbm, {1})).ok());
  ASSERT_TRUE(Apply(Batch("w2", "a2").Report(kTierHbm, {2})).ok());
  const std::string before = Placements({1, 2, 3});
  const size_t backend_calls = backend_.applies.size();

  ExpectStatus(Apply(Batch("w3", "a3").Report(kTierHbm, {3})),
               absl::StatusCode::kResourceExhausted,
               "cannot add a worker: the server holds 2 workers; maximum is 2 "
               "(KV_INDEXER_MAX_WORKERS)");
  EXPECT_EQ(backend_.applies.size(), backend_calls);  // never reached
  EXPECT_FALSE(indexer_->operator_view().WorkerState("w3").has_value());
  EXPECT_EQ(Placements({1, 2, 3}), before);

  // Workers with a record keep working.
  EXPECT_TRUE(Apply(Batch("w1", "a1").Report(kTierHbm, {4})).ok());
  // A gated apply never creates a record: G1 as always.
  EXPECT_EQ(Apply(Batch("w3", "a3").Gated("e", 1)).code(),
            absl::StatusCode::kFailedPrecondition);

  // Once a record goes, a new worker fits again.
  ASSERT_TRUE(Configure(ExpectedWorkers().Worker("w1", "a1")).ok());
  EXPECT_TRUE(Apply(Batch("w3", "a3").Report(kTierHbm, {3})).ok());
}

TEST_F(IndexerBoundsTest, ConfigureOverTheWorkerLimitChangesNothing) {
  RequestLimits limits;
  limits.max_workers = 2;
  Start(limits);
  ASSERT_TRUE(Apply(Batch("w1", "a1").Report(kTierHbm, {1})).ok());
  ASSERT_TRUE(Apply(Batch("w9", "a9").Report(kTierHbm, {9})).ok());
  const std::string before = Placements({1, 9});

  ExpectStatus(Configure(ExpectedWorkers()
                             .Worker("w1", "new")
                             .Worker("w2", "a2")
                             .Worker("w3", "a3")),
               absl::StatusCode::kResourceExhausted,
               "request contains 3 workers; maximum is 2 "
               "(KV_INDEXER_MAX_WORKERS)");
  EXPECT_EQ(Placements({1, 9}), before);  // w9 was not removed
  EXPECT_EQ(indexer_->operator_view().WorkerState("w1")->address, "a1");
  EXPECT_FALSE(indexer_->operator_view().WorkerState("w2").has_value());

  // The result size counts, not the records now held: replacing both
  // workers by two others is within the limit.
  EXPECT_TRUE(
      Configure(ExpectedWorkers().Worker("w2", "a2").Worker("w3", "a3")).ok());
}

TEST_F(IndexerBoundsTest, LongIdOrAddressChangesNothing) {
  RequestLimits limits;
  limits.max_worker_id_bytes = 8;
  limits.max_worker_address_bytes = 16;
  Start(limits);
  ASSERT_TRUE(Apply(Batch("w1", "http://a:1").Report(kTierHbm, {1, 2})).ok());
  ASSERT_TRUE(
      Replace(Snapshot("w1", "http://a:1").Epoch("e").Tier(kTierHbm, {1, 2}))
          .ok());
  const std::string before = Placements({1, 2, 3});
  const size_t backend_calls = backend_.applies.size();

  const std::string long_address(17, 'x');
  ExpectStatus(Apply(Batch("w1", long_address).Revoke(kTierHbm, {1})),
               absl::StatusCode::kInvalidArgument,
               "worker_address is 17 bytes; maximum is 16 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
  EXPECT_EQ(Apply(Batch("w1", long_address).Gated("e", 1).Revoke(kTierHbm, {1}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  ExpectStatus(Replace(Snapshot("w1", long_address).Epoch("e2")),
               absl::StatusCode::kInvalidArgument,
               "worker_address is 17 bytes; maximum is 16 "
               "(KV_INDEXER_MAX_WORKER_ADDRESS_BYTES)");
  ExpectStatus(Apply(Batch("worker-10", "a").Report(kTierHbm, {3})),
               absl::StatusCode::kInvalidArgument,
               "worker_id is 9 bytes; maximum is 8 "
               "(KV_INDEXER_MAX_WORKER_ID_BYTES)");
  EXPECT_EQ(Configure(ExpectedWorkers().Worker("w1", long_address)).code(),
            absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(backend_.applies.size(), backend_calls);
  EXPECT_EQ(Placements({1, 2, 3}), before);
  const auto state = indexer_->operator_view().WorkerState("w1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->address, "http://a:1");
  ASSERT_TRUE(state->checkpoint.has_value());
  EXPECT_EQ(state->checkpoint->epoch, "e");
  EXPECT_FALSE(indexer_->operator_view().WorkerState("worker-10").has_value());
}

TEST_F(IndexerBoundsTest, LongEpochChangesNothing) {
  RequestLimits limits;
  limits.max_worker_epoch_bytes = 8;
  Start(limits);
  ASSERT_TRUE(Apply(Batch("w1", "http://a:1").Report(kTierHbm, {1, 2})).ok());
  ASSERT_TRUE(Replace(Snapshot("w1", "http://a:1")
                          .Epoch("e")
                          .AppliedSeq(5)
                          .Tier(kTierHbm, {1, 2}))
                  .ok());
  const std::string before = Placements({1, 2, 3});
  const size_t backend_calls = backend_.applies.size();
  const std::string message =
      "worker_epoch is 9 bytes; maximum is 8 "
      "(KV_INDEXER_MAX_WORKER_EPOCH_BYTES)";
  const std::string long_epoch(9, 'e');

  // Gated: not even a gap (seq 9 after 5) or a claim is recorded.
  ExpectStatus(
      Apply(
          Batch("w1", "http://b:1").Gated(long_epoch, 9).Revoke(kTierHbm, {1})),
      absl::StatusCode::kInvalidArgument, message);
  ExpectStatus(Replace(Snapshot("w1", "http://b:1").Epoch(long_epoch)),
               absl::StatusCode::kInvalidArgument, message);
  // The seed-era path, for a worker with a record and for a new one.
  Batch seed_era("w1", "http://b:1");
  seed_era.Revoke(kTierHbm, {1});
  seed_era.mutable_request()->set_worker_epoch(long_epoch);
  ExpectStatus(Apply(seed_era), absl::StatusCode::kInvalidArgument, message);
  Batch new_worker("w2", "http://c:1");
  new_worker.Report(kTierHbm, {3});
  new_worker.mutable_request()->set_worker_epoch(long_epoch);
  ExpectStatus(Apply(new_worker), absl::StatusCode::kInvalidArgument, message);

  EXPECT_EQ(backend_.applies.size(), backend_calls);
  EXPECT_EQ(Placements({1, 2, 3}), before);
  const auto state = indexer_->operator_view().WorkerState("w1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->address, "http://a:1");
  EXPECT_TRUE(state->ready);
  ASSERT_TRUE(state->checkpoint.has_value());
  EXPECT_EQ(state->checkpoint->epoch, "e");
  EXPECT_EQ(state->checkpoint->seq, 5u);
  EXPECT_EQ(state->claims.runs(), 2u);  // the two accepted calls only
  EXPECT_FALSE(indexer_->operator_view().WorkerState("w2").has_value());
  // An epoch at the limit is accepted.
  EXPECT_TRUE(
      Replace(Snapshot("w1", "http://a:1").Epoch(std::string(8, 'f'))).ok());
}

// The case in small: three applies with long addresses made every
// prefix answer on their shared block larger than a router accepts.
TEST_F(IndexerBoundsTest, PrefixAnswerOverTheCeilingIsRefused) {
  RequestLimits limits;
  limits.max_prefix_answer_bytes = 2000;
  Start(limits);
  for (const char* id : {"w1", "w2", "w3"}) {
    ASSERT_TRUE(
        Apply(Batch(id, std::string(1000, id[1])).Report(kTierHbm, {7})).ok());
  }
  v1::MatchExternalKvPrefixResponse resp;
  const absl::Status s = test_support::MatchPrefix(
      indexer_->operations(), PrefixRequest({7, 8}), &resp);
  // Three entries of 1 + 2 + (3 + 1000) + 2 + 4 bytes, best and blocks_read.
  ExpectStatus(s, absl::StatusCode::kResourceExhausted,
               "prefix answer is 3040 bytes; maximum is 2000 "
               "(KV_INDEXER_MAX_PREFIX_ANSWER_BYTES)");
  EXPECT_THAT(resp.matches(), IsEmpty());

  // Another block, held by one worker, still answers.
  ASSERT_TRUE(
      Apply(Batch("w1", std::string(1000, '1')).Report(kTierHbm, {9})).ok());
  EXPECT_TRUE(test_support::MatchPrefix(indexer_->operations(),
                                        PrefixRequest({9}), &resp)
                  .ok());
  EXPECT_EQ(resp.matches_size(), 1);
}

TEST_F(IndexerBoundsTest, OneAddressChangeDoesNotWarnAlternationDoes) {
  Start(RequestLimits{});
  CapturedLog log;
  // The worker restarts on a new address, behind a new bridge connection.
  ASSERT_TRUE(Apply(Batch("w1", "http://a:1").Report(kTierHbm, {1}),
                    "ipv4:10.0.0.5:40000")
                  .ok());
  ASSERT_TRUE(Apply(Batch("w1", "http://b:1").Report(kTierHbm, {1}),
                    "ipv4:10.0.0.5:40100")
                  .ok());
  ASSERT_TRUE(Apply(Batch("w1", "http://b:1").Report(kTierHbm, {2}),
                    "ipv4:10.0.0.5:40100")
                  .ok());
  EXPECT_THAT(log.warnings(), IsEmpty());
  EXPECT_EQ(
      indexer_->operator_view().WorkerState("w1")->claims.conflicts_total(),
      0u);

  // The old bridge was not gone after all: it and the new one alternate.
  // Applies are still applied (the last one wins), and the log says so.
  ASSERT_TRUE(Apply(Batch("w1", "http://a:1").Report(kTierHbm, {3}),
                    "ipv4:10.0.0.5:40000")
                  .ok());
  ASSERT_TRUE(Apply(Batch("w1", "http://b:1").Report(kTierHbm, {4}),
                    "ipv4:10.0.0.5:40100")
                  .ok());
  ASSERT_TRUE(Apply(Batch("w1", "http://a:1").Report(kTierHbm, {5}),
                    "ipv4:10.0.0.5:40000")
                  .ok());
  const std::vector<std::string> warnings = log.warnings();
  ASSERT_EQ(warnings.size(), 2u);  // conflicts 1 and 2; 3 is throttled
  EXPECT_EQ(warnings[0],
            "worker claimed by two bridges with different addresses or epochs "
            "worker=w1 peer=ipv4:10.0.0.5:40000 address=http://a:1 epoch= "
            "other_peer=ipv4:10.0.0.5:40100 other_address=http://b:1 "
            "other_epoch= conflicts_total=1");
  EXPECT_THAT(warnings[1], HasSubstr("conflicts_total=2"));
  EXPECT_EQ(
      indexer_->operator_view().WorkerState("w1")->claims.conflicts_total(),
      3u);
  EXPECT_EQ(indexer_->operator_view().WorkerState("w1")->address, "http://a:1");
}

TEST_F(IndexerBoundsTest, ReplacesAndGatedAppliesAreClaimsToo) {
  Start(RequestLimits{});
  CapturedLog log;
  ASSERT_TRUE(Configure(ExpectedWorkers().Worker("w1", "http://a:1")).ok());
  // Two bridges with different epochs take turns installing snapshots; the
  // refused gated apply of the first is a claim as well.
  ASSERT_TRUE(
      Replace(Snapshot("w1", "http://a:1").Epoch("e1").AppliedSeq(1), "p1")
          .ok());
  ASSERT_TRUE(
      Replace(Snapshot("w1", "http://a:1").Epoch("e2").AppliedSeq(1), "p2")
          .ok());
  EXPECT_EQ(Apply(Batch("w1", "http://a:1").Gated("e1", 2), "p1").code(),
            absl::StatusCode::kFailedPrecondition);  // G2: other epoch
  ASSERT_EQ(log.warnings().size(), 1u);
  EXPECT_THAT(log.warnings()[0],
              HasSubstr("peer=p1 address=http://a:1 epoch=e1 other_peer=p2 "
                        "other_address=http://a:1 other_epoch=e2"));
}

TEST_F(IndexerBoundsTest, ClaimsGoWithTheWorkerRecord) {
  Start(RequestLimits{});
  CapturedLog log;
  for (const char* peer : {"p1", "p2", "p1"}) {
    ASSERT_TRUE(
        Apply(Batch("w1", std::string("addr-") + peer).Report(kTierHbm, {1}),
              peer)
            .ok());
  }
  EXPECT_EQ(
      indexer_->operator_view().WorkerState("w1")->claims.conflicts_total(),
      1u);
  // Scale-in deletes the record and its claims; a new record starts clean.
  ASSERT_TRUE(Configure(ExpectedWorkers()).ok());
  EXPECT_FALSE(indexer_->operator_view().WorkerState("w1").has_value());
  ASSERT_TRUE(Apply(Batch("w1", "addr-p2").Report(kTierHbm, {1}), "p2").ok());
  const auto state = indexer_->operator_view().WorkerState("w1");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->claims.conflicts_total(), 0u);
  EXPECT_EQ(state->claims.runs(), 1u);
}

TEST_F(IndexerBoundsTest, WithoutPeersNothingIsDetected) {
  // Direct callers that pass no peer (tests, tools) never conflict.
  Start(RequestLimits{});
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        Apply(Batch("w1", i % 2 == 0 ? "a" : "b").Report(kTierHbm, {1})).ok());
  }
  EXPECT_EQ(
      indexer_->operator_view().WorkerState("w1")->claims.conflicts_total(),
      0u);
}

}  // namespace
}  // namespace kvindexer
