// Worker removal in the Indexer (docs/contract.md, "Recovery > Worker
// liveness and removal"): RemoveWorker and the removals of
// ConfigureExpectedWorkers, over an ABI 1.1 backend (IndexBackend::RemoveWorker
// frees the backend's record) and an ABI 1.0 one (CLEAR batches; the backend
// keeps its record).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "core/indexer.h"
#include "core/stream_key.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/removable_model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace indexer_removal_test {
namespace {

using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::MakeBackendStatus;
using test_support::MatchRequest;
using test_support::RemovableModelBackend;
using test_support::Snapshot;
using test_support::Spec;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

struct Line {
  spdlog::level::level_enum level;
  std::string text;
};

// Parameter: the backend's ABI minor.
class IndexerRemovalTest : public ::testing::TestWithParam<uint32_t> {
 protected:
  bool abi_1_1() const { return GetParam() >= 1; }

  void Apply(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = ops_.Apply(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status Configure(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    return ops_.Configure(req, &resp).Wait();
  }
  void Replace(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s = ops_.Replace(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  // The workers holding any of 1..9.
  std::set<std::string> Holders() {
    v1::MatchExternalKvResponse resp;
    const absl::Status s =
        ops_.Match(MatchRequest({1, 2, 3, 4, 5, 6, 7, 8, 9}), &resp);
    EXPECT_TRUE(s.ok()) << s;
    std::set<std::string> holders;
    for (const auto& match : resp.matches()) holders.insert(match.worker_id());
    return holders;
  }
  // The CLEAR_ALL_AT_TIER batches the host sent, by worker.
  std::vector<std::string> ClearedBy() const {
    std::vector<std::string> ids;
    for (const auto& batch : backend_.inner().applies) {
      if (batch.actions.size() == 3 &&
          batch.actions[0].type == kActionClearAllAtTier) {
        ids.push_back(batch.worker_id);
      }
    }
    return ids;
  }

  RemovableModelBackend backend_;
  std::vector<Line> lines_;
  WorkerLifecycleLog log_{
      [this](spdlog::level::level_enum level, std::string_view text) {
        lines_.push_back({level, std::string(text)});
      }};
  Indexer indexer_{&backend_,         /*gate_log=*/nullptr,
                   RequestLimits{},   GetParam(),
                   /*clock=*/nullptr, &log_};
  IndexOperations& ops_ = indexer_.operations();
  OperatorView& view_ = indexer_.operator_view();
};

INSTANTIATE_TEST_SUITE_P(Abi, IndexerRemovalTest, ::testing::Values(0u, 1u),
                         [](const ::testing::TestParamInfo<uint32_t>& param) {
                           return "minor" + std::to_string(param.param);
                         });

TEST_P(IndexerRemovalTest, ConfigureRemovesUnlistedWorkers) {
  ASSERT_TRUE(Configure(ExpectedWorkers()
                            .Worker("ready", "a")
                            .Worker("idle", "b")
                            .Worker("kept", "c"))
                  .ok());
  Replace(Snapshot("ready", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Tier(kTierHbm, {1}));
  Replace(Snapshot("kept", "c").Tier(kTierHbm, {2}));
  ASSERT_TRUE(Configure(ExpectedWorkers().Worker("kept", "c")).ok());

  EXPECT_EQ(Holders(), std::set<std::string>{"kept"});
  EXPECT_FALSE(view_.WorkerState("ready").has_value());
  EXPECT_FALSE(view_.WorkerState("idle").has_value());
  if (abi_1_1()) {
    // Every removed worker's backend record goes, whether or not it held
    // anything; no batch is composed.
    EXPECT_THAT(backend_.removed, UnorderedElementsAre("ready", "idle"));
    EXPECT_THAT(ClearedBy(), IsEmpty());
  } else {
    // The fallback: one CLEAR batch for the worker that may hold placements,
    // carrying its stored record; RemoveWorker is never called.
    EXPECT_THAT(backend_.removed, IsEmpty());
    EXPECT_THAT(ClearedBy(), ElementsAre("ready"));
    EXPECT_TRUE(backend_.inner().applies.back().spec.has_value());
  }
}

TEST_P(IndexerRemovalTest, RemoveWorkerTakesPlacementsAndRecord) {
  Apply(Batch("w", "a").Report(kTierHbm, {1, 2}));
  Apply(Batch("v", "b").Report(kTierHbm, {2}));
  ASSERT_TRUE(view_.RemoveWorker("w", RemovalReason::kAdmin).ok());
  EXPECT_EQ(Holders(), std::set<std::string>{"v"});
  EXPECT_FALSE(view_.WorkerState("w").has_value());
  EXPECT_EQ(backend_.removed.size(), abi_1_1() ? 1u : 0u);
  EXPECT_EQ(ClearedBy().size(), abi_1_1() ? 0u : 1u);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].level, spdlog::level::info);
  EXPECT_EQ(lines_[0].text, "worker removed worker=w reason=admin");
  // A removed worker starts over.
  Apply(Batch("w", "a"));
  EXPECT_EQ(view_.WorkerState("w")->state(), SequenceState::kUnsequenced);
  EXPECT_FALSE(view_.WorkerState("w")->configured);
}

TEST_P(IndexerRemovalTest, RemovingAnUnknownWorkerIsNotFound) {
  const absl::Status s = view_.RemoveWorker("nobody", RemovalReason::kAdmin);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "worker nobody has no record");
  EXPECT_THAT(backend_.removed, IsEmpty());
  EXPECT_EQ(backend_.inner().calls(), 0u);
}

// A stream other than the legacy one is named by its fields, in the log
// line and in the NOT_FOUND message.
TEST_P(IndexerRemovalTest, RemovingAStreamNamesItsFields) {
  v1::ApplyExternalKvBatchRequest req =
      Batch("w", "a").Report(kTierHbm, {1}).request();
  req.mutable_stream_id()->set_namespace_("ns");
  req.mutable_stream_id()->set_worker_id("w");
  req.mutable_stream_id()->set_dp_rank(2);
  Apply(req);
  const std::string id = EncodeStreamKey({"ns", "w", 2});
  ASSERT_TRUE(view_.RemoveWorker(id, RemovalReason::kAdmin).ok());
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].text,
            "worker removed worker=w namespace=ns dp_rank=2 reason=admin");
  const absl::Status s = view_.RemoveWorker(id, RemovalReason::kAdmin);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "stream ns/w/2 has no record");
}

// A failed removal changes nothing in the host: the worker keeps its record
// and placements, the failure is INTERNAL and logged.
TEST_P(IndexerRemovalTest, ABackendFailureKeepsTheRecord) {
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  const BackendStatus down = MakeBackendStatus(BackendCode::kUnavailable, "no");
  backend_.fail_removals_with = down;
  backend_.inner().fail_with = down;
  const absl::Status s = view_.RemoveWorker("w", RemovalReason::kAdmin);
  backend_.inner().fail_with.reset();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "cannot remove worker w from the index backend: no");
  EXPECT_EQ(Holders(), std::set<std::string>{"w"});
  ASSERT_TRUE(view_.WorkerState("w").has_value());
  EXPECT_TRUE(view_.WorkerState("w")->ready);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].level, spdlog::level::err);
  EXPECT_EQ(lines_[0].text,
            "the backend failed to remove a worker; its record is kept "
            "worker=w reason=admin error=no");

  // Configure stops at the failure; the failing worker keeps its record.
  backend_.fail_removals_with = down;
  backend_.inner().fail_with = down;
  EXPECT_EQ(Configure(ExpectedWorkers()).code(), absl::StatusCode::kInternal);
  backend_.inner().fail_with.reset();
  backend_.fail_removals_with.reset();
  EXPECT_TRUE(view_.WorkerState("w").has_value());
  ASSERT_TRUE(Configure(ExpectedWorkers()).ok());
  EXPECT_FALSE(view_.WorkerState("w").has_value());
  EXPECT_THAT(Holders(), IsEmpty());
}

TEST_P(IndexerRemovalTest, ConfigurationMarksWorkersAsConfigured) {
  Apply(Batch("seed", "a"));
  EXPECT_FALSE(view_.WorkerState("seed")->configured);
  ASSERT_TRUE(
      Configure(ExpectedWorkers().Worker("seed", "a").Worker("new")).ok());
  EXPECT_TRUE(view_.WorkerState("seed")->configured);
  EXPECT_TRUE(view_.WorkerState("new")->configured);
}

}  // namespace
}  // namespace indexer_removal_test
}  // namespace kvindexer
