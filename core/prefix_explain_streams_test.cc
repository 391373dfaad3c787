// ExplainPrefix of a coverage query (core/prefix_explain.h): the streams it
// selects are the candidates MatchExternalKvPrefix has, its answer is that
// query's answer, and a named stream the selection leaves out or does not
// cover says so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/indexer.h"
#include "core/prefix_explain.h"
#include "core/stream_key.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace prefix_explain_streams_test {

namespace v1 = ::kv_indexer::v1;
using test_support::Batch;
using test_support::ModelBackend;

std::string IdOf(const v1::StreamId& stream) {
  return EncodeStreamKey(StreamKeyOf(stream));
}

class ExplainStreamsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two covered streams at their own addresses, one namespaced stream
    // that is ready but not covered (no generation), and a legacy worker.
    v1::ConfigureExpectedWorkersRequest configure;
    for (const auto& [stream, address, generation] :
         std::vector<std::tuple<v1::StreamId, std::string, std::string>>{
             {a_, "http://a", "g1"},
             {b_, "http://b", "g2"},
             {c_, "http://c", ""}}) {
      v1::ExpectedWorker* w = configure.add_workers();
      *w->mutable_stream_id() = stream;
      w->set_worker_address(address);
      w->set_worker_generation(generation);
    }
    v1::ConfigureExpectedWorkersResponse configured;
    ASSERT_TRUE(ops_.Configure(configure, &configured).Wait().ok());
    ASSERT_TRUE(Replace(a_, "http://a", "g1", {1, 2, 3}).ok());
    ASSERT_TRUE(Replace(b_, "http://b", "g2", {1}).ok());
    v1::ApplyExternalKvBatchRequest seed =
        Batch("x", "http://c").Report(kTierHbm, {1, 2}).request();
    *seed.mutable_stream_id() = c_;
    v1::ApplyExternalKvBatchResponse applied;
    ASSERT_TRUE(ops_.Apply(seed, &applied).Wait().ok());
    ASSERT_TRUE(
        ops_.Apply(
                Batch("l", "http://l").Report(kTierHbm, {1, 2, 3, 4}).request(),
                &applied)
            .Wait()
            .ok());
  }

  absl::Status Replace(const v1::StreamId& stream, const std::string& address,
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
    v1::ReplaceExternalKvSnapshotResponse resp;
    return ops_.Replace(req, &resp).Wait();
  }

  // Explains `req` naming `named` (backend ids) and checks that its answer
  // is exactly MatchExternalKvPrefix's.
  PrefixExplanation Explain(const v1::MatchExternalKvPrefixRequest& req,
                            const std::vector<std::string>& named) {
    PrefixExplanation out;
    const absl::Status s =
        indexer_.operator_view().ExplainPrefix(req, named, &out);
    EXPECT_TRUE(s.ok()) << s;
    v1::MatchExternalKvPrefixResponse production;
    EXPECT_TRUE(test_support::MatchPrefix(ops_, req, &production).ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out.answer,
                                                                   production))
        << out.answer.DebugString() << "\nvs production\n"
        << production.DebugString();
    return out;
  }

  static WorkerExplanation Find(const PrefixExplanation& e,
                                const std::string& id) {
    for (const WorkerExplanation& w : e.workers) {
      if (w.worker_id == id) return w;
    }
    ADD_FAILURE() << "no explanation for "
                  << StreamKeyText(DecodeStreamKey(id));
    return WorkerExplanation{};
  }

  const v1::StreamId a_ = test_support::StreamIdOf("ns", "w", 0);
  const v1::StreamId b_ = test_support::StreamIdOf("ns", "w", 1);
  const v1::StreamId c_ = test_support::StreamIdOf("ns", "x", 0);
  ModelBackend backend_;
  Indexer indexer_{&backend_};
  IndexOperations& ops_ = indexer_.operations();
};

TEST_F(ExplainStreamsTest, AnAddressSelectsItsStreamsOnly) {
  v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest({1, 2, 3});
  req.add_eligible_worker_addresses("http://a");
  const PrefixExplanation e = Explain(req, {IdOf(b_), "l"});
  ASSERT_EQ(e.workers.size(), 3u);
  // The selected, covered stream is the only candidate.
  EXPECT_EQ(e.workers[0].worker_id, IdOf(a_));
  EXPECT_TRUE(e.workers[0].candidate);
  EXPECT_EQ(e.workers[0].matched, 3u);
  EXPECT_EQ(e.workers[0].stop_reason, StopReason::kWindowEnd);
  // Both hold block 0, but the query did not select them.
  for (const std::string& id : {IdOf(b_), std::string("l")}) {
    const WorkerExplanation w = Find(e, id);
    EXPECT_FALSE(w.candidate);
    EXPECT_TRUE(w.excluded);
    EXPECT_EQ(w.stop_reason, StopReason::kNotSelected);
    EXPECT_EQ(w.excluded_reason, "not selected");
  }
  ASSERT_EQ(e.answer.matches_size(), 1);
  EXPECT_EQ(e.answer.matches(0).worker_id(), "w");
  EXPECT_EQ(e.answer.matches(0).stream_id().dp_rank(), 0u);
  EXPECT_TRUE(e.answer.complete_coverage());
}

TEST_F(ExplainStreamsTest, ASelectedStreamThatIsNotCoveredIsNotReady) {
  v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest({1, 2, 3});
  *req.add_eligible_streams() = b_;
  *req.add_eligible_streams() = c_;
  *req.add_eligible_streams() = test_support::StreamIdOf("ns", "nobody", 0);
  const PrefixExplanation e = Explain(
      req,
      {IdOf(c_), IdOf(test_support::StreamIdOf("ns", "nobody", 0)), IdOf(a_)});
  ASSERT_EQ(e.workers.size(), 4u);
  EXPECT_EQ(e.workers[0].worker_id, IdOf(b_));
  EXPECT_EQ(e.workers[0].matched, 1u);
  EXPECT_EQ(e.workers[0].stop_reason, StopReason::kBlockMissing);
  const WorkerExplanation c = e.workers[1];
  EXPECT_EQ(c.worker_id, IdOf(c_));
  EXPECT_EQ(c.stop_reason, StopReason::kNotReady);
  EXPECT_EQ(c.address, "http://c");
  EXPECT_EQ(e.workers[2].stop_reason, StopReason::kUnknownWorker);
  EXPECT_EQ(e.workers[3].worker_id, IdOf(a_));
  EXPECT_EQ(e.workers[3].stop_reason, StopReason::kNotSelected);
  EXPECT_FALSE(e.answer.complete_coverage());
  EXPECT_EQ(e.answer.coverage_size(), 3);
}

TEST_F(ExplainStreamsTest, ASelectedStreamWithoutBlockZeroIsNotACandidate) {
  v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest({2, 3});
  req.add_eligible_worker_addresses("http://b");
  req.add_eligible_worker_addresses("http://l");
  const PrefixExplanation e = Explain(req, {IdOf(b_)});
  // "l" holds block 0 and is selected by its address (a legacy stream is
  // covered once ready); b does not hold block 0.
  ASSERT_EQ(e.workers.size(), 2u);
  EXPECT_EQ(e.workers[0].worker_id, "l");
  EXPECT_EQ(e.workers[1].worker_id, IdOf(b_));
  EXPECT_EQ(e.workers[1].stop_reason, StopReason::kNotCandidate);
}

TEST_F(ExplainStreamsTest, NoSelectedHolderOfBlockZeroIsAFirstBlockMiss) {
  v1::MatchExternalKvPrefixRequest req = test_support::PrefixRequest({1, 2, 3});
  req.add_eligible_worker_addresses("http://c");
  req.add_eligible_worker_addresses("http://none");
  const PrefixExplanation e = Explain(req, {IdOf(c_)});
  EXPECT_EQ(e.answer.blocks_read(), 1u);
  EXPECT_EQ(e.answer.matches_size(), 0);
  ASSERT_EQ(e.answer.uncovered_worker_addresses_size(), 1);
  ASSERT_EQ(e.workers.size(), 1u);
  EXPECT_EQ(e.workers[0].stop_reason, StopReason::kNotReady);
}

TEST_F(ExplainStreamsTest, ASeedEraQueryKeepsEveryHolderACandidate) {
  const PrefixExplanation e =
      Explain(test_support::PrefixRequest({1, 2, 3}), {});
  // a, b, c and l all hold block 0.
  EXPECT_EQ(e.workers.size(), 4u);
  for (const WorkerExplanation& w : e.workers) EXPECT_TRUE(w.candidate);
  EXPECT_EQ(e.answer.coverage_size(), 0);
}

}  // namespace prefix_explain_streams_test
}  // namespace kvindexer
