// Streams keyed by (namespace, worker_id, dp_rank), line-A rules and
// coverage-aware prefix answers (docs/contract.md, "Streams").
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "core/indexer.h"
#include "core/stream_key.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace indexer_streams_test {

namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::ModelBackend;

struct Entry {
  v1::StreamId stream;
  std::string address;
  std::string generation;
};

v1::ConfigureExpectedWorkersRequest Configure(const std::vector<Entry>& es) {
  v1::ConfigureExpectedWorkersRequest req;
  for (const Entry& e : es) {
    v1::ExpectedWorker* w = req.add_workers();
    *w->mutable_stream_id() = e.stream;
    w->set_worker_address(e.address);
    w->set_worker_generation(e.generation);
  }
  return req;
}

v1::ReplaceExternalKvSnapshotRequest Replace(const v1::StreamId& stream,
                                             const std::string& address,
                                             const std::string& generation,
                                             const std::vector<int64_t>& hbm) {
  v1::ReplaceExternalKvSnapshotRequest req;
  *req.mutable_stream_id() = stream;
  req.set_worker_address(address);
  req.set_worker_epoch("e1");
  req.set_applied_seq(10);
  req.set_worker_generation(generation);
  v1::TierHashes* tier = req.add_hashes_by_tier();
  tier->set_tier(v1::TIER_HBM);
  for (int64_t h : hbm) tier->add_hashes(h);
  return req;
}

v1::ApplyExternalKvBatchRequest GatedApply(const v1::StreamId& stream,
                                           const std::string& generation,
                                           uint64_t seq, int64_t hash) {
  v1::ApplyExternalKvBatchRequest req =
      Batch("").Report(kTierHbm, {hash}).Gated("e1", seq).request();
  *req.mutable_stream_id() = stream;
  req.set_worker_generation(generation);
  return req;
}

class IndexerStreamsTest : public ::testing::Test {
 protected:
  absl::Status Configure(const v1::ConfigureExpectedWorkersRequest& req,
                         v1::ConfigureExpectedWorkersResponse* resp = nullptr) {
    v1::ConfigureExpectedWorkersResponse own;
    return ops_.Configure(req, resp != nullptr ? resp : &own).Wait();
  }
  absl::Status Replace(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    return ops_.Replace(req, &resp).Wait();
  }
  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    return ops_.Apply(req, &resp).Wait();
  }
  absl::Status Invalidate(const v1::StreamId& stream,
                          v1::InvalidateWorkerResponse* resp = nullptr) {
    v1::InvalidateWorkerRequest req;
    *req.mutable_stream_id() = stream;
    v1::InvalidateWorkerResponse own;
    return ops_.Invalidate(req, resp != nullptr ? resp : &own).Wait();
  }
  v1::MatchExternalKvResponse Match(const std::vector<int64_t>& hashes) {
    v1::MatchExternalKvResponse resp;
    EXPECT_TRUE(ops_.Match(test_support::MatchRequest(hashes), &resp).ok());
    return resp;
  }
  v1::MatchExternalKvPrefixResponse Prefix(
      const std::vector<int64_t>& hashes,
      const std::vector<std::string>& addresses,
      const std::vector<v1::StreamId>& streams = {}) {
    v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest(hashes);
    for (const std::string& a : addresses) req.add_eligible_worker_addresses(a);
    for (const v1::StreamId& s : streams) *req.add_eligible_streams() = s;
    v1::MatchExternalKvPrefixResponse resp;
    const absl::Status s = test_support::MatchPrefix(ops_, req, &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp;
  }
  // Two covered namespaced streams holding block 1 (a: blocks 1-3; b: 1).
  void TwoCoveredStreams() {
    ASSERT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                              {{a_, "http://a", "g1"}, {b_, "http://b", "g2"}}))
                    .ok());
    ASSERT_TRUE(Replace(::kvindexer::indexer_streams_test::Replace(
                            a_, "http://a", "g1", {1, 2, 3}))
                    .ok());
    ASSERT_TRUE(Replace(::kvindexer::indexer_streams_test::Replace(
                            b_, "http://b", "g2", {1}))
                    .ok());
  }

  const v1::StreamId a_ = test_support::StreamIdOf("ns", "w", 0);
  const v1::StreamId b_ = test_support::StreamIdOf("ns", "w", 1);
  ModelBackend backend_;
  Indexer indexer_{&backend_};
  IndexOperations& ops_ = indexer_.operations();
};

TEST_F(IndexerStreamsTest, WorkerIdAndStreamWorkerIdMustAgree) {
  v1::ApplyExternalKvBatchRequest req =
      Batch("w1").Report(kTierHbm, {5}).request();
  *req.mutable_stream_id() = test_support::StreamIdOf("", "w2", 0);
  const absl::Status s = Apply(req);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "worker_id and stream_id.worker_id differ");
  EXPECT_EQ(Match({5}).matches_size(), 0);
}

TEST_F(IndexerStreamsTest, TheLegacyKeyIsTheSeedEraWorker) {
  ASSERT_TRUE(
      Configure(::kvindexer::indexer_streams_test::Configure(
                    {{test_support::StreamIdOf("", "w", 0), "http://a", ""}}))
          .ok());
  ASSERT_TRUE(
      Replace(::kvindexer::indexer_streams_test::Replace(
                  test_support::StreamIdOf("", "w", 0), "http://a", "", {1}))
          .ok());
  ASSERT_TRUE(Apply(Batch("w", "http://a").Report(kTierHbm, {2})).ok());
  const v1::MatchExternalKvResponse resp = Match({1, 2});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(resp.matches(0).worker_id(), "w");
  EXPECT_EQ(indexer_.operator_view().CountWorkers().total, 1u);
}

TEST_F(IndexerStreamsTest, RanksOfOneWorkerAreTwoStreams) {
  v1::ConfigureExpectedWorkersResponse resp;
  ASSERT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                            {{a_, "http://a", ""}, {b_, "http://b", ""}}),
                        &resp)
                  .ok());
  EXPECT_EQ(resp.total_workers(), 2u);
  EXPECT_EQ(resp.indexer_epoch(), ops_.IndexerEpoch());
  EXPECT_EQ(resp.indexer_epoch().size(), 36u);
  std::vector<StreamKey> keys;
  for (const WorkerSnapshot& w :
       indexer_.operator_view().ListWorkers(/*placement_counts=*/false)) {
    keys.push_back(DecodeStreamKey(w.worker_id));
  }
  EXPECT_EQ(keys, (std::vector<StreamKey>{{"ns", "w", 0}, {"ns", "w", 1}}));
}

TEST_F(IndexerStreamsTest, ASeedEraConfigureAnswersWithoutAnEpoch) {
  v1::ConfigureExpectedWorkersResponse resp;
  ASSERT_TRUE(
      Configure(test_support::ExpectedWorkers().Worker("w", "http://a"), &resp)
          .ok());
  EXPECT_TRUE(resp.indexer_epoch().empty());
}

// ConfigureIfUnchanged answers only a valid Configure the records already
// hold, as Configure would (counts, and the epoch on line A); anything else
// is left to Configure, with nothing changed.
TEST_F(IndexerStreamsTest, OnlyAnUnchangedConfigureIsAnsweredAtOnce) {
  TwoCoveredStreams();
  const v1::ConfigureExpectedWorkersRequest same =
      ::kvindexer::indexer_streams_test::Configure(
          {{a_, "http://a", "g1"}, {b_, "http://b", "g2"}});
  v1::ConfigureExpectedWorkersResponse resp;
  std::optional<PendingAck> ack = ops_.ConfigureIfUnchanged(same, &resp);
  ASSERT_TRUE(ack.has_value());
  EXPECT_TRUE(ack->Wait().ok());
  v1::ConfigureExpectedWorkersResponse full;
  ASSERT_TRUE(Configure(same, &full).ok());
  EXPECT_EQ(resp.SerializeAsString(), full.SerializeAsString());
  EXPECT_EQ(resp.total_workers(), 2u);
  EXPECT_EQ(resp.ready_workers(), 2u);
  EXPECT_EQ(resp.indexer_epoch(), ops_.IndexerEpoch());

  // A new address, a stream left out, a new generation, an invalid list:
  // declined, and nothing changed (both streams still answer for block 1).
  const std::vector<v1::ConfigureExpectedWorkersRequest> declined = {
      ::kvindexer::indexer_streams_test::Configure(
          {{a_, "http://moved", "g1"}, {b_, "http://b", "g2"}}),
      ::kvindexer::indexer_streams_test::Configure({{a_, "http://a", "g1"}}),
      ::kvindexer::indexer_streams_test::Configure(
          {{a_, "http://a", "g9"}, {b_, "http://b", "g2"}}),
      ::kvindexer::indexer_streams_test::Configure(
          {{a_, "http://a", "g1"}, {a_, "http://a", "g1"}}),
  };
  for (const auto& req : declined) {
    v1::ConfigureExpectedWorkersResponse untouched;
    EXPECT_FALSE(ops_.ConfigureIfUnchanged(req, &untouched).has_value())
        << req.ShortDebugString();
    EXPECT_EQ(untouched.ByteSizeLong(), 0u);
  }
  EXPECT_EQ(Match({1}).matches_size(), 2);
  EXPECT_EQ(indexer_.operator_view().CountWorkers().total, 2u);

  // Seed era: the same answer without an epoch.
  ASSERT_TRUE(
      Configure(test_support::ExpectedWorkers().Worker("w", "http://a")).ok());
  v1::ConfigureExpectedWorkersResponse seed_era;
  ack = ops_.ConfigureIfUnchanged(
      test_support::ExpectedWorkers().Worker("w", "http://a"), &seed_era);
  ASSERT_TRUE(ack.has_value());
  EXPECT_EQ(seed_era.total_workers(), 1u);
  EXPECT_TRUE(seed_era.indexer_epoch().empty());
}

TEST_F(IndexerStreamsTest, DuplicateStreamsAreNamedByKey) {
  const absl::Status s = Configure(::kvindexer::indexer_streams_test::Configure(
      {{a_, "http://a", ""}, {a_, "http://b", ""}}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "duplicate stream ns/w/0");
  // The same worker id in two namespaces is two streams.
  EXPECT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                            {{a_, "http://a", ""},
                             {test_support::StreamIdOf("other", "w", 0),
                              "http://a", ""}}))
                  .ok());
}

TEST_F(IndexerStreamsTest, BlankWorkerIdsAreRefusedOnlyOnLineA) {
  const absl::Status line_a =
      Configure(::kvindexer::indexer_streams_test::Configure(
          {{test_support::StreamIdOf("", " \t", 0), "", ""}}));
  EXPECT_EQ(line_a.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(line_a.message(), "worker_id must not be empty");
  EXPECT_TRUE(Apply(Batch(" ").Report(kTierHbm, {1})).ok());
}

TEST_F(IndexerStreamsTest, AnAddressNoStreamHasIsUncovered) {
  TwoCoveredStreams();
  const v1::MatchExternalKvPrefixResponse resp =
      Prefix({1, 2}, {"http://a", "http://none"});
  EXPECT_FALSE(resp.complete_coverage());
  ASSERT_EQ(resp.uncovered_worker_addresses_size(), 1);
  EXPECT_EQ(resp.uncovered_worker_addresses(0), "http://none");
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(resp.matches(0).worker_address(), "http://a");
}

TEST_F(IndexerStreamsTest,
       CoveredAddressesGiveCompleteCoverageAndStreamMatches) {
  TwoCoveredStreams();
  const v1::MatchExternalKvPrefixResponse resp =
      Prefix({1, 2, 3}, {"http://b", "http://a", "http://a"});
  EXPECT_TRUE(resp.complete_coverage());
  ASSERT_EQ(resp.coverage_size(), 2);
  EXPECT_EQ(resp.coverage(0).stream_id().dp_rank(), 0u);
  EXPECT_EQ(resp.coverage(0).worker_address(), "http://a");
  EXPECT_TRUE(resp.coverage(0).ready());
  EXPECT_EQ(resp.coverage(0).worker_epoch(), "e1");
  EXPECT_EQ(resp.coverage(0).watermark(), 10u);
  EXPECT_EQ(resp.coverage(0).worker_generation(), "g1");
  EXPECT_EQ(resp.coverage(1).stream_id().dp_rank(), 1u);
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(resp.matches(0).worker_id(), "w");
  EXPECT_EQ(resp.matches(0).stream_id().namespace_(), "ns");
  EXPECT_EQ(resp.matches(0).stream_id().dp_rank(), 0u);
  EXPECT_EQ(resp.matches(0).worker_generation(), "g1");
  EXPECT_EQ(resp.matches(1).worker_generation(), "g2");
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);
}

TEST_F(IndexerStreamsTest, AStreamNamedButUnknownIsShownNotReady) {
  TwoCoveredStreams();
  const v1::StreamId ghost = test_support::StreamIdOf("ns", "ghost", 0);
  const v1::MatchExternalKvPrefixResponse resp =
      Prefix({1}, {}, {ghost, a_, ghost});
  EXPECT_FALSE(resp.complete_coverage());
  ASSERT_EQ(resp.coverage_size(), 2);
  EXPECT_EQ(resp.coverage(0).stream_id().worker_id(), "ghost");
  EXPECT_FALSE(resp.coverage(0).ready());
  EXPECT_TRUE(resp.coverage(0).worker_address().empty());
  EXPECT_TRUE(resp.coverage(1).ready());
  EXPECT_EQ(resp.matches_size(), 1);
}

TEST_F(IndexerStreamsTest, EligibleStreamsWinOverAddresses) {
  TwoCoveredStreams();
  const v1::MatchExternalKvPrefixResponse resp =
      Prefix({1}, {"http://a"}, {b_});
  ASSERT_EQ(resp.coverage_size(), 1);
  EXPECT_EQ(resp.coverage(0).stream_id().dp_rank(), 1u);
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(resp.matches(0).worker_address(), "http://b");
  EXPECT_TRUE(resp.complete_coverage());
}

TEST_F(IndexerStreamsTest, AnInvalidatedStreamIsNeitherMatchedNorCovered) {
  TwoCoveredStreams();
  v1::InvalidateWorkerResponse inv;
  ASSERT_TRUE(Invalidate(a_, &inv).ok());
  EXPECT_EQ(inv.total_workers(), 2u);
  EXPECT_EQ(inv.ready_workers(), 1u);
  EXPECT_EQ(inv.indexer_epoch(), ops_.IndexerEpoch());
  const v1::MatchExternalKvPrefixResponse resp = Prefix({1}, {}, {a_});
  EXPECT_EQ(resp.matches_size(), 0);
  ASSERT_EQ(resp.coverage_size(), 1);
  EXPECT_FALSE(resp.coverage(0).ready());
  EXPECT_TRUE(resp.coverage(0).worker_generation().empty());
  EXPECT_TRUE(resp.coverage(0).worker_epoch().empty());
  // Its placements are gone from the index.
  const v1::MatchExternalKvResponse held = Match({1, 2, 3});
  for (const auto& m : held.matches()) {
    EXPECT_NE(m.address(), "http://a");
  }
}

TEST_F(IndexerStreamsTest, InvalidateNeedsAConfiguredStream) {
  ASSERT_TRUE(Apply(Batch("w").Report(kTierHbm, {1})).ok());
  const absl::Status unknown =
      Invalidate(test_support::StreamIdOf("ns", "w", 0));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(unknown.message(), "stream ns/w/0 is not configured");
  // A record a seed-era apply created was never configured.
  EXPECT_EQ(Invalidate(test_support::StreamIdOf("", "w", 0)).code(),
            absl::StatusCode::kNotFound);
}

TEST_F(IndexerStreamsTest, ANamespacedStreamWithoutGenerationIsNotCovered) {
  ASSERT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                            {{a_, "http://a", ""}}))
                  .ok());
  v1::ApplyExternalKvBatchRequest seed =
      Batch("w", "http://a").Report(kTierHbm, {1}).request();
  *seed.mutable_stream_id() = a_;
  ASSERT_TRUE(Apply(seed).ok());
  const v1::MatchExternalKvPrefixResponse resp = Prefix({1}, {"http://a"});
  ASSERT_EQ(resp.coverage_size(), 1);
  EXPECT_FALSE(resp.coverage(0).ready());
  EXPECT_FALSE(resp.complete_coverage());
  EXPECT_EQ(resp.matches_size(), 0);
  // A seed-era query still finds the worker.
  v1::MatchExternalKvPrefixResponse seed_answer;
  ASSERT_TRUE(test_support::MatchPrefix(ops_, test_support::PrefixRequest({1}),
                                        &seed_answer)
                  .ok());
  ASSERT_EQ(seed_answer.matches_size(), 1);
  EXPECT_EQ(seed_answer.matches(0).worker_id(), "w");
  EXPECT_FALSE(seed_answer.matches(0).has_stream_id());
  EXPECT_EQ(seed_answer.coverage_size(), 0);
}

TEST_F(IndexerStreamsTest, ALineAGatedApplyNeedsAConfiguredRecord) {
  v1::ApplyExternalKvBatchRequest seed =
      Batch("w", "http://a").Report(kTierHbm, {1}).request();
  *seed.mutable_stream_id() = a_;
  ASSERT_TRUE(Apply(seed).ok());
  const absl::Status s = Apply(GatedApply(a_, "", 1, 2));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  // The seed-era gate lets a record of a seed-era apply through G1.
  v1::ApplyExternalKvBatchRequest gated =
      Batch("w").Report(kTierHbm, {2}).Gated("e1", 1).request();
  EXPECT_EQ(Apply(gated).code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(IndexerStreamsTest, AnotherGenerationIsFencedAtG2) {
  TwoCoveredStreams();
  const absl::Status s = Apply(GatedApply(a_, "g-old", 11, 9));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "stream has no READY snapshot for this generation and epoch");
  EXPECT_EQ(Prefix({1, 2, 3}, {}, {a_}).matches(0).matched_prefix_blocks(), 3u);
  EXPECT_TRUE(Apply(GatedApply(a_, "g1", 11, 9)).ok());
}

TEST_F(IndexerStreamsTest, AnEmptyGenerationKeepsTheStoredOne) {
  TwoCoveredStreams();
  ASSERT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                            {{a_, "http://a", ""}, {b_, "http://b", ""}}))
                  .ok());
  const v1::MatchExternalKvPrefixResponse resp = Prefix({1}, {}, {a_});
  ASSERT_EQ(resp.coverage_size(), 1);
  EXPECT_EQ(resp.coverage(0).worker_generation(), "g1");
}

TEST_F(IndexerStreamsTest, AnInvalidateThatFindsNothingToClearCallsNoBackend) {
  ASSERT_TRUE(Configure(::kvindexer::indexer_streams_test::Configure(
                            {{a_, "http://a", ""}}))
                  .ok());
  const size_t batches = backend_.applies.size();
  ASSERT_TRUE(Invalidate(a_).ok());
  EXPECT_EQ(backend_.applies.size(), batches);
}

}  // namespace indexer_streams_test
}  // namespace kvindexer
