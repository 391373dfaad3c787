#include "core/indexer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/backend_status.h"
#include "core/match_assembler.h"
#include "core/sequence_gate_log.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using test_support::BackendOk;
using test_support::Batch;
using test_support::HitCountsRequest;
using test_support::MakeBackendStatus;
using test_support::MatchRequest;
using test_support::ModelBackend;
using test_support::Spec;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

class IndexerTest : public ::testing::Test {
 protected:
  void Apply(const v1::ApplyExternalKvBatchRequest& req) {
    const absl::Status s = TryApply(req);
    ASSERT_TRUE(s.ok()) << s;
  }
  absl::Status TryApply(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    return ops_.Apply(req, &resp).Wait();
  }

  v1::MatchExternalKvResponse Match(const std::vector<int64_t>& hashes,
                                    bool count = false) {
    v1::MatchExternalKvResponse resp;
    const absl::Status s = ops_.Match(MatchRequest(hashes, count), &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp;
  }

  // hash -> tiers holding it, over all workers, from MatchExternalKv.
  std::map<int64_t, std::vector<int>> Held(const std::vector<int64_t>& hashes) {
    std::map<int64_t, std::vector<int>> held;
    const v1::MatchExternalKvResponse resp = Match(hashes);
    for (const auto& m : resp.matches()) {
      for (const auto& t : m.hashes_by_tier()) {
        for (int64_t h : t.hashes()) held[h].push_back(t.tier());
      }
    }
    return held;
  }

  std::vector<std::pair<int64_t, uint64_t>> Hits(
      const std::vector<int64_t>& hashes) {
    v1::GetExternalKvHitCountsResponse resp;
    const absl::Status s = ops_.HitCounts(HitCountsRequest(hashes), &resp);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<std::pair<int64_t, uint64_t>> out;
    for (const auto& e : resp.entries()) {
      out.emplace_back(e.hash(), e.hit_count_total());
    }
    return out;
  }

  ModelBackend backend_;
  Indexer indexer_{&backend_};
  IndexOperations& ops_ = indexer_.operations();
};

// --- Validation never reaches the backend (behaviours 34-42 of
// docs/contract.md, "Reference behaviours"). ---

TEST_F(IndexerTest, FailedValidationNeverReachesTheBackend) {
  std::vector<Batch> bad;
  bad.push_back(Batch("", "a"));  // 42
  bad.push_back(Batch("w", "a"));
  bad.back().Action(0, kTierHbm, {1});  // 35
  bad.push_back(Batch("w", "a"));
  bad.back().Report(0, {1});  // 36
  bad.push_back(Batch("w", "a"));
  bad.back().Report(kTierHbm, {1, 2}, {kComponentFull});  // 37
  bad.push_back(Batch("w", "a"));
  bad.back().Action(kActionRevoke, kTierHbm, {});  // 38
  bad.push_back(Batch("w", "a"));
  for (int i = 0; i < 2; ++i) {  // 40
    bad.back().Report(kTierHbm, std::vector<int64_t>(8193, i));
  }
  bad.push_back(Batch("w", "a"));
  for (int i = 0; i < 257; ++i) {  // 41
    bad.back().Action(kActionClearAllAtTier, kTierHbm, {});
  }
  // A bad action after a good one: nothing of the batch is applied.
  bad.push_back(Batch("w", "a"));
  bad.back().Report(kTierHbm, {1});
  bad.back().Action(999, kTierHbm, {1});
  for (const auto& req : bad) EXPECT_FALSE(TryApply(req).ok());

  std::vector<int64_t> too_many(16385);
  for (size_t i = 0; i < too_many.size(); ++i) too_many[i] = int64_t(i);
  v1::MatchExternalKvResponse match;
  EXPECT_EQ(ops_.Match(MatchRequest({}), &match).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ops_.Match(MatchRequest(too_many), &match).code(),
            absl::StatusCode::kResourceExhausted);
  v1::GetExternalKvHitCountsResponse hits;
  EXPECT_EQ(ops_.HitCounts(HitCountsRequest({}), &hits).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ops_.HitCounts(HitCountsRequest(too_many), &hits).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(backend_.calls(), 0u);

  // 39: the prefix query accepts 16,385 hashes.
  v1::MatchExternalKvPrefixResponse prefix;
  v1::MatchExternalKvPrefixRequest prefix_req;
  for (int64_t h : too_many) prefix_req.add_hashes(h);
  EXPECT_TRUE(test_support::MatchPrefix(ops_, prefix_req, &prefix).ok());
  EXPECT_EQ(backend_.prefix_scans.size(), 1u);
}

TEST_F(IndexerTest, BackendStatsAreTheBackendsOwn) {
  Apply(Batch("w1", "a").Report(kTierHbm, {1, 2, 3}));
  Apply(Batch("w2", "b").Report(kTierDram, {3}));
  BackendStats direct{};
  direct.struct_size = sizeof(BackendStats);
  backend_.GetStats(&direct);
  const BackendStats stats = indexer_.operator_view().ReadBackendStats();
  EXPECT_EQ(stats.struct_size, sizeof(BackendStats));
  EXPECT_EQ(stats.blocks, 3u);
  EXPECT_EQ(stats.placements, 4u);
  EXPECT_EQ(stats.workers, 2u);
  EXPECT_EQ(stats.blocks, direct.blocks);
  EXPECT_EQ(stats.placements, direct.placements);
  EXPECT_EQ(stats.workers, direct.workers);
  EXPECT_EQ(stats.hit_counters, direct.hit_counters);
  EXPECT_EQ(stats.memory_bytes, direct.memory_bytes);
}

TEST_F(IndexerTest, ValidBatchesReachTheBackend) {
  Apply(Batch("worker-1", "a"));  // 34, 42
  Batch side("worker-1", "a");
  side.Report(kTierHbm, {1, 2});
  side.Report(kTierHbm, {1, 2}, {kComponentFull, kComponentFull}, {8, 8});
  side.Action(kActionClearAllAtTier, kTierDram, {});  // 38
  Apply(side);
  EXPECT_EQ(backend_.applies.size(), 2u);
}

// --- What the backend receives. ---

TEST_F(IndexerTest, ApplyPassesWorkerAddressAndSpec) {
  Apply(Batch("w", "http://x:1")
            .Spec(Spec(kComponentFull | kComponentSwa, 64, 6, 2, 0, 0)));
  Apply(Batch("w", ""));
  ASSERT_EQ(backend_.applies.size(), 2u);
  const auto& first = backend_.applies[0];
  EXPECT_EQ(first.worker_id, "w");
  EXPECT_EQ(first.worker_address, "http://x:1");
  ASSERT_TRUE(first.spec.has_value());
  EXPECT_EQ(first.spec->version, 0u);
  EXPECT_EQ(first.spec->components, kComponentFull | kComponentSwa);
  EXPECT_EQ(first.spec->swa_window_tokens, 64u);
  EXPECT_EQ(first.spec->full_tier_mask, 6u);
  EXPECT_EQ(first.spec->swa_tier_mask, 2u);
  EXPECT_EQ(first.spec->mamba_tier_mask, 0u);
  EXPECT_FALSE(backend_.applies[1].spec.has_value());
  EXPECT_EQ(backend_.applies[1].worker_address, "");

  // A present spec with every field zero is still present.
  Batch zero("w", "a");
  zero.mutable_request()->mutable_cache_spec();
  Apply(zero);
  EXPECT_TRUE(backend_.applies[2].spec.has_value());
}

TEST_F(IndexerTest, ReportKeepsLastOccurrenceRevokeAndClearCarryNoExtras) {
  Batch req("w", "a");
  req.Report(kTierHbm, {5, 6, 5}, {3, 1, 1}, {80, 16, 0});
  req.Action(kActionRevoke, kTierDram, {7, 7}, {1, 1}, {2, 2});
  req.Action(kActionClearAllAtTier, kTierSsd, {8}, {1}, {1});
  req.Report(kTierDram, {9, 10});
  Apply(req);
  ASSERT_EQ(backend_.applies.size(), 1u);
  const auto& actions = backend_.applies[0].actions;
  ASSERT_EQ(actions.size(), 4u);
  EXPECT_EQ(actions[0].type, kActionReport);
  EXPECT_EQ(actions[0].tier, kTierHbm);
  EXPECT_THAT(actions[0].hashes, ElementsAre(6, 5));
  EXPECT_THAT(actions[0].masks, ElementsAre(1u, 1u));
  EXPECT_THAT(actions[0].sizes, ElementsAre(16u, 0u));
  EXPECT_EQ(actions[1].type, kActionRevoke);
  EXPECT_EQ(actions[1].tier, kTierDram);
  EXPECT_THAT(actions[1].hashes, ElementsAre(7, 7));
  EXPECT_THAT(actions[1].masks, IsEmpty());
  EXPECT_THAT(actions[1].sizes, IsEmpty());
  EXPECT_EQ(actions[2].type, kActionClearAllAtTier);
  EXPECT_EQ(actions[2].tier, kTierSsd);
  EXPECT_THAT(actions[2].hashes, IsEmpty());
  EXPECT_THAT(actions[2].masks, IsEmpty());
  EXPECT_THAT(actions[2].sizes, IsEmpty());
  EXPECT_THAT(actions[3].hashes, ElementsAre(9, 10));
  EXPECT_THAT(actions[3].masks, IsEmpty());
  EXPECT_THAT(actions[3].sizes, IsEmpty());
}

TEST_F(IndexerTest, ManyReportsWithRepeatsKeepTheirOwnBuffers) {
  Batch req("w", "a");
  for (int i = 0; i < 256; ++i) {
    req.Report(kTierHbm, {i, i, i + 1000}, {1, 2, 3},
               {uint32_t(i), uint32_t(i + 1), 9});
  }
  Apply(req);
  const auto& actions = backend_.applies.at(0).actions;
  ASSERT_EQ(actions.size(), 256u);
  for (int i = 0; i < 256; ++i) {
    EXPECT_THAT(actions[i].hashes, ElementsAre(i, i + 1000));
    EXPECT_THAT(actions[i].masks, ElementsAre(2u, 3u));
    EXPECT_THAT(actions[i].sizes, ElementsAre(uint32_t(i + 1), 9u));
  }
}

TEST_F(IndexerTest, MatchAndHitCountsCollapseKeepingFirst) {
  Apply(Batch("w", "a").Report(kTierHbm, {1, -2, 3}));
  const auto resp = Match({1, -2, 1, 3}, true);
  EXPECT_THAT(backend_.matches.back(), ElementsAre(1, -2, 3));
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_THAT(resp.matches(0).hashes_by_tier(0).hashes(),
              ElementsAre(1, -2, 3));
  EXPECT_THAT(Hits({3, 3, 1, -2, 1}),
              ElementsAre(std::make_pair(int64_t{3}, uint64_t{1}),
                          std::make_pair(int64_t{1}, uint64_t{1}),
                          std::make_pair(int64_t{-2}, uint64_t{1})));
  EXPECT_THAT(backend_.hit_count_calls.back(), ElementsAre(3, 1, -2));
}

// --- MatchExternalKv assembly (docs/contract.md, "MatchExternalKv"). ---

TEST_F(IndexerTest, MatchOrdersWorkersTiersAndHashes) {
  // w2 is first met on hash 10; w1 on hash 20; w3 (empty address) on 30.
  Batch w1("w1", "addr-1");
  w1.Report(kTierSsd, {20, 40}, {0, 1}, {5, 7});
  w1.Report(kTierHbm, {40, 20}, {5, 3}, {0, 0});
  Apply(w1);
  Batch w2("w2", "addr-2");
  w2.Report(kTierDram, {10, 20}, {}, {16, 0});
  Apply(w2);
  Apply(Batch("w3", "").Report(kTierHbm, {30}));

  const auto resp = Match({10, 20, 30, 40, 50});
  ASSERT_EQ(resp.matches_size(), 3);
  EXPECT_EQ(resp.matches(0).worker_id(), "w2");
  EXPECT_EQ(resp.matches(0).address(), "addr-2");
  EXPECT_EQ(resp.matches(1).worker_id(), "w1");
  EXPECT_EQ(resp.matches(1).address(), "addr-1");
  EXPECT_EQ(resp.matches(2).worker_id(), "w3");
  EXPECT_EQ(resp.matches(2).address(), "");  // empty addresses included

  const auto& w2_tiers = resp.matches(0).hashes_by_tier();
  ASSERT_EQ(w2_tiers.size(), 1);
  EXPECT_EQ(w2_tiers[0].tier(), v1::TIER_DRAM);
  EXPECT_THAT(w2_tiers[0].hashes(), ElementsAre(10, 20));
  EXPECT_THAT(w2_tiers[0].component_masks(), ElementsAre(0u, 0u));
  EXPECT_THAT(w2_tiers[0].block_sizes(), ElementsAre(16u, 5u));  // shared

  // w1: SSD was met first, but tiers come out ascending.
  const auto& w1_tiers = resp.matches(1).hashes_by_tier();
  ASSERT_EQ(w1_tiers.size(), 2);
  EXPECT_EQ(w1_tiers[0].tier(), v1::TIER_HBM);
  EXPECT_THAT(w1_tiers[0].hashes(), ElementsAre(20, 40));
  EXPECT_THAT(w1_tiers[0].component_masks(), ElementsAre(3u, 5u));
  EXPECT_THAT(w1_tiers[0].block_sizes(), ElementsAre(5u, 7u));
  EXPECT_EQ(w1_tiers[1].tier(), v1::TIER_SSD);
  EXPECT_THAT(w1_tiers[1].hashes(), ElementsAre(20, 40));
  EXPECT_THAT(w1_tiers[1].component_masks(), ElementsAre(0u, 1u));
  EXPECT_THAT(w1_tiers[1].block_sizes(), ElementsAre(5u, 7u));
}

TEST_F(IndexerTest, MatchWithNothingMatchedIsEmpty) {
  EXPECT_THAT(Match({404}).matches(), IsEmpty());  // 17
}

// --- Backend-semantics behaviours through the glue (9-23). ---

TEST_F(IndexerTest, Behaviour9And10) {
  Apply(Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}));
  const auto resp = Match({1, 2, 3});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(resp.matches(0).address(), "10.0.0.1:9000");
  EXPECT_THAT(resp.matches(0).hashes_by_tier(0).hashes(), ElementsAre(1, 2));

  std::vector<int64_t> many(300);
  for (int i = 0; i < 300; ++i) many[i] = i;
  Apply(Batch("w2", "b").Report(kTierHbm, many));
  const auto big = Match(many);
  ASSERT_EQ(big.matches_size(), 2);
  EXPECT_EQ(big.matches(0).worker_id(), "w2");  // hash 0 is met first
  EXPECT_THAT(big.matches(0).hashes_by_tier(0).hashes(),
              ElementsAreArray(many));
}

TEST_F(IndexerTest, Behaviour12And14And16And19And23) {
  Batch b12("w", "a");
  b12.Report(kTierHbm, {9});
  b12.Action(kActionRevoke, kTierHbm, {9});
  b12.Report(kTierHbm, {9});
  Apply(b12);
  Apply(b12);
  EXPECT_THAT(Held({9})[9], ElementsAre(v1::TIER_HBM));

  Batch b16("w", "a");
  b16.Report(kTierHbm, {1});
  b16.Report(kTierDram, {1});
  b16.Action(kActionRevoke, kTierHbm, {1});
  Apply(b16);
  EXPECT_THAT(Held({1})[1], ElementsAre(v1::TIER_DRAM));

  Batch b19("x", "a");
  b19.Report(kTierHbm, {11, 12, 13});
  b19.Report(kTierDram, {11});
  Apply(b19);
  Batch clear("x", "a");
  clear.Action(kActionClearAllAtTier, kTierHbm, {});
  Apply(clear);
  auto held = Held({11, 12, 13});
  EXPECT_THAT(held[11], ElementsAre(v1::TIER_DRAM));
  EXPECT_EQ(held.count(12), 0u);
  EXPECT_EQ(held.count(13), 0u);

  Batch b23("y", "a");
  b23.Action(kActionRevoke, kTierHbm, {5});
  b23.Report(kTierHbm, {5});
  b23.Report(kTierHbm, {6});
  b23.Action(kActionRevoke, kTierHbm, {6});
  Apply(b23);
  held = Held({5, 6});
  EXPECT_EQ(held.count(5), 1u);
  EXPECT_EQ(held.count(6), 0u);
}

TEST_F(IndexerTest, Behaviour20To22HitCounting) {
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  Match({1, 2});
  EXPECT_THAT(Hits({1, 2}), IsEmpty());
  Match({1, 2, 1}, true);
  EXPECT_THAT(Hits({1, 2}),
              ElementsAre(std::make_pair(int64_t{1}, uint64_t{1})));
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  EXPECT_THAT(Hits({1}), ElementsAre(std::make_pair(int64_t{1}, uint64_t{1})));

  Batch revoke("w", "a");
  revoke.Action(kActionRevoke, kTierHbm, {1});
  Apply(revoke);
  EXPECT_THAT(Match({1}).matches(), IsEmpty());
  EXPECT_THAT(Hits({1}), IsEmpty());
}

TEST_F(IndexerTest, BackendStatusesMapOneToOne) {
  for (BackendCode code :
       {BackendCode::kInvalidArgument, BackendCode::kResourceExhausted,
        BackendCode::kFailedPrecondition, BackendCode::kInternal,
        BackendCode::kUnavailable}) {
    backend_.fail_with = MakeBackendStatus(code, "boom");
    const absl::Status s = TryApply(Batch("w", "a"));
    EXPECT_EQ(static_cast<int>(s.code()), static_cast<int>(code));
    EXPECT_EQ(std::string(s.message()), "boom");
    v1::MatchExternalKvResponse match;
    EXPECT_EQ(static_cast<int>(ops_.Match(MatchRequest({1}), &match).code()),
              static_cast<int>(code));
    v1::GetExternalKvHitCountsResponse hits;
    EXPECT_EQ(
        static_cast<int>(ops_.HitCounts(HitCountsRequest({1}), &hits).code()),
        static_cast<int>(code));
  }
}

// --- Recovery: what reaches the backend (docs/contract.md, "Recovery > How
// the host maps recovery onto the backend"). The scenarios themselves run
// against every backend in tests/conformance/recovery_test.cc. ---

class IndexerRecoveryTest : public IndexerTest {
 protected:
  struct Line {
    spdlog::level::level_enum level;
    std::string text;
  };

  v1::ApplyExternalKvBatchResponse ApplyResp(
      const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = recovering_.operations().Apply(req, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s;
    return resp;
  }
  absl::Status TryGated(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    return recovering_.operations().Apply(req, &resp).Wait();
  }
  void Replace(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s = recovering_.operations().Replace(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  void Configure(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s =
        recovering_.operations().Configure(req, &resp).Wait();
    ASSERT_TRUE(s.ok()) << s;
  }
  static void ExpectClearAll(const ModelBackend::RecordedBatch& batch) {
    ASSERT_EQ(batch.actions.size(), 3u);
    for (uint32_t i = 0; i < 3; ++i) {
      EXPECT_EQ(batch.actions[i].type, kActionClearAllAtTier);
      EXPECT_EQ(batch.actions[i].tier, kTierHbm + i);
    }
  }

  std::vector<Line> lines_;
  SequenceGateLog gate_log_{
      [this](spdlog::level::level_enum level, std::string_view text) {
        lines_.push_back({level, std::string(text)});
      }};
  // As for an ABI 1.0 backend, so that removals are batches too: ABI 1.1
  // removals are tested in indexer_removal_test.cc.
  Indexer recovering_{&backend_, &gate_log_, RequestLimits{},
                      /*backend_abi_minor=*/0};
};

TEST_F(IndexerRecoveryTest, RefusalsAndDuplicatesNeverReachTheBackend) {
  EXPECT_EQ(
      TryGated(Batch("w", "a").Gated("e", 1).Report(kTierHbm, {1})).code(),
      absl::StatusCode::kFailedPrecondition);  // G1
  Configure(test_support::ExpectedWorkers().Worker("w", "a"));
  EXPECT_EQ(
      TryGated(Batch("w", "a").Gated("e", 1).Report(kTierHbm, {1})).code(),
      absl::StatusCode::kFailedPrecondition);  // G2
  EXPECT_EQ(backend_.calls(), 0u);
  Replace(test_support::Snapshot("w", "a").Epoch("e").AppliedSeq(5));
  ASSERT_EQ(backend_.applies.size(), 1u);
  const auto resp =
      ApplyResp(Batch("w", "b").Gated("e", 5).Revoke(kTierHbm, {1}));  // G3
  EXPECT_TRUE(resp.duplicate());
  EXPECT_EQ(backend_.applies.size(), 1u);
}

TEST_F(IndexerRecoveryTest, AGapIsOneClearOfEveryTierWithTheStoredRecord) {
  Configure(test_support::ExpectedWorkers().Worker("w", "a"));
  Replace(test_support::Snapshot("w", "http://w:1")
              .Epoch("e")
              .AppliedSeq(1)
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Tier(kTierHbm, {1}, {kComponentFull}));
  EXPECT_EQ(TryGated(Batch("w", "other").Gated("e", 3)).code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(backend_.applies.size(), 2u);
  const auto& clear = backend_.applies[1];
  ExpectClearAll(clear);
  EXPECT_EQ(clear.worker_address, "http://w:1");
  ASSERT_TRUE(clear.spec.has_value());
  EXPECT_EQ(clear.spec->full_tier_mask, kTierBitHbm);
  ASSERT_EQ(lines_.size(), 1u);
  EXPECT_EQ(lines_[0].level, spdlog::level::warn);
  EXPECT_EQ(lines_[0].text,
            "event sequence gap; placements cleared until a snapshot is "
            "installed worker=w expected=2 received=3");
  const auto state = recovering_.operator_view().WorkerState("w");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->state(), SequenceState::kInvalid);
  EXPECT_EQ(state->address, "http://w:1");
}

TEST_F(IndexerRecoveryTest, AFailedClearLeavesTheWorkerSequenced) {
  Configure(test_support::ExpectedWorkers().Worker("w", "a"));
  Replace(test_support::Snapshot("w", "a").Epoch("e").AppliedSeq(1));
  backend_.fail_with = MakeBackendStatus(BackendCode::kUnavailable, "down");
  const absl::Status s = TryGated(Batch("w", "a").Gated("e", 3));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  backend_.fail_with.reset();
  EXPECT_EQ(recovering_.operator_view().WorkerState("w")->state(),
            SequenceState::kSequenced);
  EXPECT_TRUE(lines_.empty());
  // A failed accept or Replace changes no sequence state either.
  backend_.fail_with = MakeBackendStatus(BackendCode::kInternal, "boom");
  EXPECT_EQ(TryGated(Batch("w", "a").Gated("e", 2)).code(),
            absl::StatusCode::kInternal);
  v1::ReplaceExternalKvSnapshotResponse replace;
  EXPECT_EQ(recovering_.operations()
                .Replace(test_support::Snapshot("w", "a").Epoch("f"), &replace)
                .Wait()
                .code(),
            absl::StatusCode::kInternal);
  backend_.fail_with.reset();
  EXPECT_EQ(recovering_.operator_view().WorkerState("w")->checkpoint,
            (SequenceCheckpoint{"e", 1}));
}

TEST_F(IndexerRecoveryTest, RefusalsAreLoggedThrottled) {
  for (int i = 0; i < 3; ++i) {
    EXPECT_FALSE(TryGated(Batch("nobody", "a").Gated("e", 1)).ok());
  }
  ApplyResp(Batch("seed", "a"));
  for (int i = 0; i < 2; ++i) {
    EXPECT_FALSE(TryGated(Batch("seed", "a").Gated("e", 1)).ok());
  }
  ASSERT_EQ(lines_.size(), 4u);  // G1 at 1 and 2, G2 at 1 and 2
  for (const Line& line : lines_) EXPECT_EQ(line.level, spdlog::level::info);
  EXPECT_EQ(gate_log_.unconfigured_total(), 3u);
  EXPECT_EQ(gate_log_.not_ready_total(), 2u);
}

TEST_F(IndexerRecoveryTest, ReplaceIsOneBatchWhateverItsSize) {
  Configure(test_support::ExpectedWorkers().Worker("w", "a"));
  Replace(test_support::Snapshot("w", "a")
              .Tier(kTierHbm, test_support::Range(0, 20000))
              .Tier(kTierDram, test_support::Range(0, 20000)));
  ASSERT_EQ(backend_.applies.size(), 1u);
  const auto& batch = backend_.applies[0];
  ASSERT_EQ(batch.actions.size(), 5u);
  EXPECT_FALSE(batch.spec.has_value());
  EXPECT_EQ(batch.actions[3].hashes.size(), 20000u);
  EXPECT_EQ(batch.actions[4].hashes.size(), 20000u);
}

TEST_F(IndexerRecoveryTest, ConfigureClearsOnlyReadyRemovedWorkers) {
  Configure(
      test_support::ExpectedWorkers().Worker("ready", "a").Worker("idle", "b"));
  EXPECT_EQ(backend_.calls(), 0u);  // new records need no backend call
  Replace(test_support::Snapshot("ready", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Tier(kTierHbm, {1}));
  Configure(test_support::ExpectedWorkers());
  // One clear for the ready worker, with its stored record; none for the
  // worker that never held anything.
  ASSERT_EQ(backend_.applies.size(), 2u);
  ExpectClearAll(backend_.applies[1]);
  EXPECT_EQ(backend_.applies[1].worker_id, "ready");
  EXPECT_TRUE(backend_.applies[1].spec.has_value());
}

TEST_F(IndexerRecoveryTest, ConfigureRefreshesTheBackendOnlyWhenItMatters) {
  Configure(test_support::ExpectedWorkers().Worker("w", "a").Worker("idle"));
  Replace(test_support::Snapshot("w", "a")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Tier(kTierHbm, {1}));
  // Same address, no spec: nothing to tell the backend.
  Configure(
      test_support::ExpectedWorkers().Worker("w", "a").Worker("idle", "x"));
  EXPECT_EQ(backend_.applies.size(), 1u);
  // A new address: an empty batch that carries the stored spec on.
  Configure(
      test_support::ExpectedWorkers().Worker("w", "moved").Worker("idle"));
  ASSERT_EQ(backend_.applies.size(), 2u);
  const auto& refresh = backend_.applies[1];
  EXPECT_TRUE(refresh.actions.empty());
  EXPECT_EQ(refresh.worker_address, "moved");
  ASSERT_TRUE(refresh.spec.has_value());
  EXPECT_EQ(refresh.spec->full_tier_mask, kTierBitHbm);
  // A new spec.
  Configure(test_support::ExpectedWorkers()
                .Worker("w", "moved", Spec(kComponentFull, 0, kTierBitDram))
                .Worker("idle"));
  ASSERT_EQ(backend_.applies.size(), 3u);
  EXPECT_EQ(backend_.applies[2].spec->full_tier_mask, kTierBitDram);
  EXPECT_EQ(recovering_.operator_view().WorkerState("idle")->address, "");
}

TEST_F(IndexerRecoveryTest, SeedEraApplyCreatesAReadyRecord) {
  const auto resp = ApplyResp(
      Batch("w", "a").Seq(9).Spec(Spec(kComponentFull, 0, kTierBitHbm)));
  EXPECT_EQ(resp.applied_seq(), 9u);
  EXPECT_FALSE(resp.duplicate());
  const auto state = recovering_.operator_view().WorkerState("w");
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->state(), SequenceState::kUnsequenced);
  EXPECT_EQ(state->address, "a");
  EXPECT_TRUE(state->spec.has_value());
  // A failed validation creates nothing.
  EXPECT_FALSE(TryGated(Batch("v", "a").Report(0, {1})).ok());
  EXPECT_FALSE(recovering_.operator_view().WorkerState("v").has_value());
}

TEST(BackendStatus, Conversion) {
  EXPECT_TRUE(ToAbslStatus(BackendOk()).ok());
  const absl::Status unknown =
      ToAbslStatus(MakeBackendStatus(static_cast<BackendCode>(77), "odd"));
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInternal);
  EXPECT_NE(std::string(unknown.message()).find("77"), std::string::npos);
  const absl::Status silent =
      ToAbslStatus(MakeBackendStatus(BackendCode::kUnavailable, ""));
  EXPECT_EQ(silent.code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(silent.message().empty());
}

TEST(MatchAssembler, RejectsInconsistentBackendOutput) {
  const int64_t hashes[] = {1};
  v1::MatchExternalKvResponse resp;
  MatchAssembler unknown_worker(HashSpan{hashes, 1}, &resp);
  const Placement p{3, kTierHbm, 0};
  unknown_worker.OnBlock(BlockView{0, 0, &p, 1});
  EXPECT_EQ(unknown_worker.Finish().code(), absl::StatusCode::kInternal);

  MatchAssembler bad_index(HashSpan{hashes, 1}, &resp);
  bad_index.OnWorker(WorkerView{3, {"w", 1}, {"a", 1}, 0, CacheSpec{}});
  bad_index.OnBlock(BlockView{5, 0, &p, 1});
  EXPECT_EQ(bad_index.Finish().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace kvindexer
