// Recovery through the host and each backend (docs/contract.md, "Recovery"):
// the sequence gate, ReplaceExternalKvSnapshot and ConfigureExpectedWorkers,
// whose backend side is the host's own batches (CLEAR at every tier, a
// snapshot as one batch) and, for a removed worker, RemoveWorker (ABI 1.1).
// Every test ends by checking that a worker that is not ready holds nothing
// ("Recovery > Per-worker state").
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <latch>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "core/worker_sequence_table.h"

namespace kvindexer::conformance {
namespace {

using test_support::ExpectedWorkers;
using test_support::Snapshot;

constexpr uint64_t kMaxSeq = std::numeric_limits<uint64_t>::max();

class RecoveryTest : public ConformanceTest {
 protected:
  void TearDown() override {
    CheckOnlyReadyWorkersHoldPlacements();
    ConformanceTest::TearDown();
  }

  // Every worker in a match over the universe has a ready record.
  void CheckOnlyReadyWorkersHoldPlacements() {
    for (const v1::MatchExternalKvResponse& resp : MatchUniverse()) {
      for (const auto& m : resp.matches()) {
        const std::optional<WorkerRecord> state =
            indexer().operator_view().WorkerState(m.worker_id());
        EXPECT_TRUE(state.has_value() && state->ready)
            << "worker " << m.worker_id()
            << " holds placements without being ready: " << Text(m);
      }
    }
  }

  // Non-counting matches over the universe, in chunks a match accepts.
  std::vector<v1::MatchExternalKvResponse> MatchUniverse() {
    std::vector<v1::MatchExternalKvResponse> out;
    for (size_t i = 0; i < universe_.size(); i += kMaxHashesPerRequest) {
      const size_t end = std::min(universe_.size(), i + kMaxHashesPerRequest);
      out.push_back(
          Match(Hashes(universe_.begin() + static_cast<ptrdiff_t>(i),
                       universe_.begin() + static_cast<ptrdiff_t>(end))));
    }
    return out;
  }

  v1::ApplyExternalKvBatchResponse ApplyResp(const Batch& batch) {
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s = indexer().operations().Apply(batch, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << Text(batch.request());
    return resp;
  }

  // The checkpoint a probe (gated, seq 0, no actions) reports.
  absl::Status Probe(const std::string& worker, const std::string& epoch,
                     uint64_t* checkpoint) {
    v1::ApplyExternalKvBatchResponse resp;
    absl::Status s =
        indexer()
            .operations()
            .Apply(Batch(worker, "probe-address").Gated(epoch, 0), &resp)
            .Wait();
    if (s.ok()) {
      EXPECT_TRUE(resp.duplicate());
      *checkpoint = resp.applied_seq();
    }
    return s;
  }

  absl::Status Replace(const Snapshot& snapshot) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    absl::Status s = indexer().operations().Replace(snapshot, &resp).Wait();
    if (s.ok()) {
      EXPECT_EQ(resp.applied_seq(), snapshot.request().applied_seq());
    }
    return s;
  }
  void ReplaceOk(const Snapshot& snapshot) {
    const absl::Status s = Replace(snapshot);
    EXPECT_TRUE(s.ok()) << s << " for " << Text(snapshot.request());
  }

  // (ready_workers, total_workers).
  std::pair<uint32_t, uint32_t> Configure(const ExpectedWorkers& workers) {
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s =
        indexer().operations().Configure(workers, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s << " for " << Text(workers.request());
    return {resp.ready_workers(), resp.total_workers()};
  }

  // hash -> tiers at which `worker` holds it, over the universe.
  std::map<int64_t, std::vector<int>> Held(const std::string& worker) {
    std::map<int64_t, std::vector<int>> held;
    for (const v1::MatchExternalKvResponse& resp : MatchUniverse()) {
      for (const auto& m : resp.matches()) {
        if (m.worker_id() != worker) continue;
        for (const auto& t : m.hashes_by_tier()) {
          for (int64_t h : t.hashes()) {
            held[h].push_back(static_cast<int>(t.tier()));
          }
        }
      }
    }
    return held;
  }
  std::set<int64_t> HeldHashes(const std::string& worker) {
    std::set<int64_t> hashes;
    for (const auto& [h, tiers] : Held(worker)) hashes.insert(h);
    return hashes;
  }
  // The address a match reports for `worker` on `hash`.
  std::string AddressOn(int64_t hash, const std::string& worker) {
    const v1::MatchExternalKvResponse resp = Match({hash});
    for (const auto& m : resp.matches()) {
      if (m.worker_id() == worker) return m.address();
    }
    ADD_FAILURE() << worker << " does not hold " << hash;
    return "";
  }
  uint32_t TokenCount(int64_t hash) {
    const v1::MatchExternalKvResponse resp = Match({hash});
    for (const auto& m : resp.matches()) {
      for (const auto& t : m.hashes_by_tier()) {
        if (t.block_sizes_size() > 0) return At(t.block_sizes(), 0);
      }
    }
    return 0;
  }
  // The worker records the backend holds (BackendStats.workers).
  uint64_t BackendWorkers() {
    BackendStats stats{};
    stats.struct_size = sizeof(BackendStats);
    backend()->GetStats(&stats);
    return stats.workers;
  }
  // From ABI 1.1 a removed worker's backend record goes with it
  // (IndexBackend::RemoveWorker); an ABI 1.0 backend keeps it.
  bool FreesRemovedWorkers() const { return SupportsAbiMinor(1); }
  SequenceState StateOf(const std::string& worker) {
    const std::optional<WorkerRecord> state =
        indexer().operator_view().WorkerState(worker);
    EXPECT_TRUE(state.has_value()) << worker << " has no record";
    return state.has_value() ? state->state() : SequenceState::kInvalid;
  }

  Hashes universe_ = Range(-4, 48);
};
KVINDEXER_INSTANTIATE_CONFORMANCE(RecoveryTest);

void ExpectStatus(const absl::Status& s, absl::StatusCode code,
                  const std::string& message) {
  EXPECT_EQ(s.code(), code) << s;
  EXPECT_EQ(std::string(s.message()), message);
}

// --- The sequence gate ---

// Exact acceptance, duplicate, probe and gap, in one worker's life.
TEST_P(RecoveryTest, GateAcceptsDeduplicatesAndInvalidatesOnAGap) {
  Configure(ExpectedWorkers().Worker("w", "addr-w"));
  ReplaceOk(Snapshot("w", "addr-w").Epoch("e").AppliedSeq(2));

  // Exact acceptance: seq 3 after checkpoint 2.
  const Batch three = Batch("w", "addr-w").Gated("e", 3).Report(kTierHbm, {2});
  auto resp = ApplyResp(three);
  EXPECT_EQ(resp.applied_seq(), 3u);
  EXPECT_FALSE(resp.duplicate());
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({2}));

  // The same request again is acknowledged as a duplicate.
  const std::string before = Observe(universe_);
  resp = ApplyResp(three);
  EXPECT_EQ(resp.applied_seq(), 3u);
  EXPECT_TRUE(resp.duplicate());
  // A duplicate's actions and address are not applied.
  resp = ApplyResp(
      Batch("w", "other-address").Gated("e", 3).Revoke(kTierHbm, {2}));
  EXPECT_TRUE(resp.duplicate());
  resp = ApplyResp(
      Batch("w", "other-address").Gated("e", 1).Report(kTierDram, {5}));
  EXPECT_TRUE(resp.duplicate());
  EXPECT_EQ(resp.applied_seq(), 3u);
  EXPECT_EQ(Observe(universe_), before);
  EXPECT_EQ(AddressOn(2, "w"), "addr-w");

  // A probe reports the checkpoint and changes nothing.
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 3u);
  EXPECT_EQ(Observe(universe_), before);

  // A gap: every placement goes, the worker is INVALID.
  ApplyOk(Batch("w", "addr-w")
              .Gated("e", 4)
              .Report(kTierDram, {7})
              .Report(kTierSsd, {8}));
  ExpectStatus(indexer()
                   .operations()
                   .Apply(Batch("w", "addr-w").Gated("e", 6), &resp)
                   .Wait(),
               absl::StatusCode::kFailedPrecondition,
               "event sequence gap: expected 5, got 6");
  EXPECT_TRUE(Held("w").empty());
  EXPECT_EQ(StateOf("w"), SequenceState::kInvalid);
  // The next sequence number fails at G2: no checkpoint to follow.
  ExpectStatus(
      indexer()
          .operations()
          .Apply(Batch("w", "addr-w").Gated("e", 7).Report(kTierHbm, {1}),
                 &resp)
          .Wait(),
      absl::StatusCode::kFailedPrecondition,
      "stream has no READY snapshot for this generation and epoch");
  EXPECT_TRUE(Held("w").empty());
}

TEST_P(RecoveryTest, GapWithTheRequestExample) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(2));
  ApplyOk(Batch("w", "a").Gated("e", 3).Report(kTierHbm, {2}));
  v1::ApplyExternalKvBatchResponse resp;
  ExpectStatus(
      indexer().operations().Apply(Batch("w", "a").Gated("e", 5), &resp).Wait(),
      absl::StatusCode::kFailedPrecondition,
      "event sequence gap: expected 4, got 5");
  EXPECT_TRUE(Held("w").empty());
  ExpectStatus(
      indexer().operations().Apply(Batch("w", "a").Gated("e", 6), &resp).Wait(),
      absl::StatusCode::kFailedPrecondition,
      "stream has no READY snapshot for this generation and epoch");
}

TEST_P(RecoveryTest, GapDropsHitCountersWithTheBlocks) {
  Configure(ExpectedWorkers().Worker("w", "a").Worker("other", "b"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(0).Tier(kTierHbm, {1, 2}));
  ReplaceOk(
      Snapshot("other", "b").Epoch("e").AppliedSeq(0).Tier(kTierHbm, {2}));
  Match({1, 2}, /*count_as_hit=*/true);
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_FALSE(indexer()
                   .operations()
                   .Apply(Batch("w", "a").Gated("e", 9), &resp)
                   .Wait()
                   .ok());
  EXPECT_EQ(Hits({1, 2}), (std::map<int64_t, uint64_t>{{2, 1}}));
  EXPECT_EQ(HeldHashes("other"), std::set<int64_t>({2}));
}

TEST_P(RecoveryTest, UnknownWorkerIsRefusedAtG1) {
  v1::ApplyExternalKvBatchResponse resp;
  ExpectStatus(
      indexer()
          .operations()
          .Apply(Batch("nobody", "a").Gated("e", 1).Report(kTierHbm, {1}),
                 &resp)
          .Wait(),
      absl::StatusCode::kFailedPrecondition,
      "stream must be configured before recovery-aware apply");
  EXPECT_FALSE(indexer().operator_view().WorkerState("nobody").has_value());
  EXPECT_TRUE(Held("nobody").empty());
}

TEST_P(RecoveryTest, OtherEpochIsRefusedWithoutChangingAnything) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(4).Tier(kTierHbm, {1}));
  const std::string before = Observe(universe_);
  v1::ApplyExternalKvBatchResponse resp;
  for (const char* epoch : {"f", "", "e "}) {
    for (uint64_t seq : {uint64_t{0}, uint64_t{5}, uint64_t{9}}) {
      ExpectStatus(
          indexer()
              .operations()
              .Apply(Batch("w", "a").Gated(epoch, seq).Report(kTierHbm, {2}),
                     &resp)
              .Wait(),
          absl::StatusCode::kFailedPrecondition,
          "stream has no READY snapshot for this generation and epoch");
    }
  }
  EXPECT_EQ(Observe(universe_), before);
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 4u);
  EXPECT_EQ(StateOf("w"), SequenceState::kSequenced);
}

TEST_P(RecoveryTest, EmptyEpochMatchesOnlyAnInstalledEmptyEpoch) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  v1::ApplyExternalKvBatchResponse resp;
  // No checkpoint: "" matches nothing.
  EXPECT_EQ(indexer()
                .operations()
                .Apply(Batch("w", "a").Gated("", 1), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  ReplaceOk(Snapshot("w", "a").Epoch("").AppliedSeq(0));
  resp = ApplyResp(Batch("w", "a").Gated("", 1).Report(kTierHbm, {1}));
  EXPECT_EQ(resp.applied_seq(), 1u);
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({1}));
}

TEST_P(RecoveryTest, ValidationPrecedesTheGate) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(1).Tier(kTierHbm, {1}));
  v1::ApplyExternalKvBatchResponse resp;
  // A gap whose action has tier 0.
  ExpectStatus(indexer()
                   .operations()
                   .Apply(Batch("w", "a").Gated("e", 9).Report(0, {2}), &resp)
                   .Wait(),
               absl::StatusCode::kInvalidArgument,
               "tier must not be TIER_UNKNOWN");
  // An unknown worker with too many actions.
  Batch big = Batch("nobody", "a").Gated("e", 1);
  for (int i = 0; i < 257; ++i) big.Clear(kTierHbm);
  EXPECT_EQ(indexer().operations().Apply(big, &resp).Wait().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(StateOf("w"), SequenceState::kSequenced);
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({1}));
}

TEST_P(RecoveryTest, UnsequencedAndInvalidWorkersRefuseGatedApplies) {
  // Seed-era worker: ready, no checkpoint.
  ApplyOk(Batch("seed", "a").Report(kTierHbm, {1}));
  EXPECT_EQ(StateOf("seed"), SequenceState::kUnsequenced);
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_EQ(indexer()
                .operations()
                .Apply(Batch("seed", "a").Gated("", 0), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(HeldHashes("seed"), std::set<int64_t>({1}));

  // Invalid (configured, never installed): a seed-era apply makes it ready,
  // but gated applies still fail at G2.
  Configure(ExpectedWorkers().Worker("seed", "a").Worker("fresh", "b"));
  EXPECT_EQ(StateOf("fresh"), SequenceState::kInvalid);
  ApplyOk(Batch("fresh", "b").Report(kTierHbm, {2}));
  EXPECT_EQ(StateOf("fresh"), SequenceState::kUnsequenced);
  EXPECT_EQ(HeldHashes("fresh"), std::set<int64_t>({2}));
  ExpectStatus(indexer()
                   .operations()
                   .Apply(Batch("fresh", "b").Gated("", 1), &resp)
                   .Wait(),
               absl::StatusCode::kFailedPrecondition,
               "stream has no READY snapshot for this generation and epoch");
}

TEST_P(RecoveryTest, EmptyGatedApplyAdvancesTheCheckpoint) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(10));
  for (uint64_t seq = 11; seq <= 13; ++seq) {
    const auto resp = ApplyResp(Batch("w", "a").Gated("e", seq));
    EXPECT_EQ(resp.applied_seq(), seq);
    EXPECT_FALSE(resp.duplicate());
  }
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 13u);
}

TEST_P(RecoveryTest, SequenceNumbersSaturateAtTheTop) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(kMaxSeq - 1));
  auto resp =
      ApplyResp(Batch("w", "a").Gated("e", kMaxSeq).Report(kTierHbm, {1}));
  EXPECT_EQ(resp.applied_seq(), kMaxSeq);
  EXPECT_FALSE(resp.duplicate());
  // checkpoint + 1 does not wrap to 0: every seq is now a duplicate.
  for (uint64_t seq : {uint64_t{0}, uint64_t{1}, kMaxSeq - 1, kMaxSeq}) {
    resp = ApplyResp(Batch("w", "a").Gated("e", seq).Revoke(kTierHbm, {1}));
    EXPECT_TRUE(resp.duplicate()) << seq;
    EXPECT_EQ(resp.applied_seq(), kMaxSeq);
  }
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({1}));
}

// --- The seed-era path ---

TEST_P(RecoveryTest, SeedEraAppliesEchoSeqAndNeverCompareIt) {
  auto resp = ApplyResp(Batch("w", "a").Seq(41).Report(kTierHbm, {1}));
  EXPECT_EQ(resp.applied_seq(), 41u);
  EXPECT_FALSE(resp.duplicate());
  // An older or repeated seq is applied all the same.
  resp = ApplyResp(Batch("w", "a").Seq(3).Report(kTierHbm, {2}));
  EXPECT_EQ(resp.applied_seq(), 3u);
  resp = ApplyResp(Batch("w", "a").Seq(3).Revoke(kTierHbm, {1}));
  EXPECT_FALSE(resp.duplicate());
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({2}));
  // worker_epoch is ignored on this path.
  Batch with_epoch = Batch("w", "a").Seq(1).Report(kTierHbm, {3});
  with_epoch.mutable_request()->set_worker_epoch("x");
  ApplyOk(with_epoch);
  EXPECT_EQ(StateOf("w"), SequenceState::kUnsequenced);
}

TEST_P(RecoveryTest, SeedEraApplyKeepsASequencedWorkersCheckpoint) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(5));
  ApplyOk(Batch("w", "b").Seq(100).Report(kTierHbm, {1}));
  EXPECT_EQ(StateOf("w"), SequenceState::kSequenced);
  EXPECT_EQ(AddressOn(1, "w"), "b");
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 5u);
}

// --- ReplaceExternalKvSnapshot ---

TEST_P(RecoveryTest, ReplaceInstallsExactlyTheSnapshot) {
  Configure(ExpectedWorkers().Worker("w", "old"));
  ApplyOk(Batch("w", "old")
              .Spec(Spec(kComponentFull, 0, kTierBitHbm))
              .Report(kTierHbm, {1, 2})
              .Report(kTierDram, {3})
              .Report(kTierSsd, {4}));
  ReplaceOk(Snapshot("w", "new")
                .Epoch("e")
                .AppliedSeq(7)
                .Tier(kTierHbm, {2, 5}, {kComponentFull, 0}, {16, 32})
                .Tier(kTierSsd, {6}));
  EXPECT_EQ(Held("w"), (std::map<int64_t, std::vector<int>>{
                           {2, {kTierHbm}}, {5, {kTierHbm}}, {6, {kTierSsd}}}));
  EXPECT_EQ(AddressOn(2, "w"), "new");
  EXPECT_EQ(TokenCount(2), 16u);
  EXPECT_EQ(TokenCount(5), 32u);
  // The spec was absent: the stored one is cleared, so the worker is legacy
  // and its whole-block placement of 5 serves (under the old spec, mask 0
  // would never make FULL available).
  EXPECT_EQ(Prefixes(Prefix({5})), (std::map<std::string, uint32_t>{{"w", 1}}));
  EXPECT_EQ(StateOf("w"), SequenceState::kSequenced);
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 7u);
}

TEST_P(RecoveryTest, ReplaceSetsSpecAndEmptyAddress) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "")
                .Epoch("e")
                .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                .Tier(kTierHbm, {1}, {kComponentFull}));
  EXPECT_EQ(AddressOn(1, "w"), "");
  ReplaceOk(Snapshot("w", "b")
                .Epoch("e")
                .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                .Tier(kTierHbm, {1}, {kComponentFull}));
  EXPECT_EQ(Prefixes(Prefix({1})), (std::map<std::string, uint32_t>{{"w", 1}}));
}

TEST_P(RecoveryTest, RepeatedHashesCountOnlyAtTheirLastOccurrence) {
  Configure(ExpectedWorkers().Worker("w", "a").Worker("other", "b"));
  ApplyOk(Batch("other", "b").Report(kTierHbm, {9}, {}, {90}));
  ReplaceOk(Snapshot("w", "a")
                .Epoch("e")
                // Across two entries of one tier: the last mask and size.
                .Tier(kTierHbm, {1, 2, 9}, {kComponentFull, 0, 0}, {10, 20, 99})
                .Tier(kTierDram, {3})
                .Tier(kTierHbm, {1, 2, 9}, {kComponentSwa, kComponentFull, 0},
                      {11, 0, 0})
                .Tier(kTierHbm, {}));
  EXPECT_EQ(Held("w"), (std::map<int64_t, std::vector<int>>{{1, {kTierHbm}},
                                                            {2, {kTierHbm}},
                                                            {3, {kTierDram}},
                                                            {9, {kTierHbm}}}));
  EXPECT_EQ(TokenCount(1), 11u);
  // The last size of 2 was 0 and no other worker set one: unknown.
  EXPECT_EQ(TokenCount(2), 0u);
  // The last size of 9 was 0: the count another worker set stays.
  EXPECT_EQ(TokenCount(9), 90u);
  const auto resp = Match({1, 2});
  for (const auto& m : resp.matches()) {
    for (const auto& t : m.hashes_by_tier()) {
      EXPECT_EQ(Masks(t.component_masks().begin(), t.component_masks().end()),
                (Masks{kComponentSwa, kComponentFull}));
    }
  }
}

TEST_P(RecoveryTest, ReplaceSizesFollowRequestOrderAcrossTiers) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a")
                .Epoch("e")
                .Tier(kTierHbm, {1}, {}, {5})
                .Tier(kTierDram, {1}, {}, {7})
                .Tier(kTierHbm, {1}, {}, {9})
                .Tier(kTierDram, {2}, {}, {4})
                .Tier(kTierHbm, {2}, {}, {0}));
  // 1: the occurrences that count are DRAM 7 and then HBM 9.
  EXPECT_EQ(TokenCount(1), 9u);
  // 2: DRAM 4, then HBM 0, which erases nothing.
  EXPECT_EQ(TokenCount(2), 4u);
}

TEST_P(RecoveryTest, ASnapshotLargerThanOneApplyIsOneInstall) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  universe_ = Range(1, 16385);
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierHbm, universe_));
  EXPECT_EQ(HeldHashes("w").size(), 16385u);
  const auto prefix = Prefix(universe_);
  EXPECT_EQ(prefix.best_prefix_blocks(), 16385u);
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierDram, Range(1, 10)));
  EXPECT_EQ(HeldHashes("w").size(), 10u);
}

TEST_P(RecoveryTest, EmptySnapshotClearsAndSequences) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}).Report(kTierSsd, {2}));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(3));
  EXPECT_TRUE(Held("w").empty());
  EXPECT_EQ(StateOf("w"), SequenceState::kSequenced);
  const auto resp =
      ApplyResp(Batch("w", "a").Gated("e", 4).Report(kTierHbm, {5}));
  EXPECT_EQ(resp.applied_seq(), 4u);
}

TEST_P(RecoveryTest, ReplaceCheckpointIsAuthoritative) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(7));
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 7u);
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_EQ(indexer()
                .operations()
                .Apply(Batch("w", "a").Gated("e", 9), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);  // a gap
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(7));
  EXPECT_EQ(ApplyResp(Batch("w", "a").Gated("e", 8)).applied_seq(), 8u);
  // Lower, and another epoch.
  ReplaceOk(Snapshot("w", "a").Epoch("f").AppliedSeq(2));
  EXPECT_EQ(indexer()
                .operations()
                .Apply(Batch("w", "a").Gated("e", 9), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Probe("w", "f", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 2u);
  EXPECT_EQ(ApplyResp(Batch("w", "a").Gated("f", 3)).applied_seq(), 3u);
}

TEST_P(RecoveryTest, ReplaceDropsCountersOfBlocksHeldOnlyByTheWorker) {
  Configure(ExpectedWorkers().Worker("w", "a").Worker("other", "b"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierHbm, {1, 2}));
  ReplaceOk(Snapshot("other", "b").Epoch("e").Tier(kTierDram, {2}));
  Match({1, 2}, /*count_as_hit=*/true);
  Match({1, 2}, /*count_as_hit=*/true);
  ASSERT_EQ(Hits({1, 2}), (std::map<int64_t, uint64_t>{{1, 2}, {2, 2}}));
  // The same placement again: block 1's counter dies all the same, block
  // 2 is still held by "other" and keeps its counter.
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierHbm, {1, 2}));
  EXPECT_EQ(Hits({1, 2}), (std::map<int64_t, uint64_t>{{2, 2}}));
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({1, 2}));
}

TEST_P(RecoveryTest, RepeatingAReplaceIsIdempotent) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  const Snapshot snapshot = Snapshot("w", "a")
                                .Epoch("e")
                                .AppliedSeq(5)
                                .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                                .Tier(kTierHbm, {1, 2}, {1, 1}, {8, 8});
  ReplaceOk(snapshot);
  const std::string once = Observe(universe_);
  ReplaceOk(snapshot);
  EXPECT_EQ(Observe(universe_), once);
}

TEST_P(RecoveryTest, ReplaceValidation) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(1).Tier(kTierHbm, {1}));
  const std::string before = Observe(universe_);
  ExpectStatus(Replace(Snapshot("", "a").Tier(0, {1})),
               absl::StatusCode::kInvalidArgument,
               "worker_id must not be empty");
  ExpectStatus(Replace(Snapshot("w", "a").Tier(kTierHbm, {2}).Tier(0, {3})),
               absl::StatusCode::kInvalidArgument,
               "tier must not be TIER_UNKNOWN");
  ExpectStatus(Replace(Snapshot("w", "a").Tier(4, {3})),
               absl::StatusCode::kInvalidArgument, "tier is not supported");
  ExpectStatus(Replace(Snapshot("w", "a").Tier(kTierHbm, {3, 4}, {1})),
               absl::StatusCode::kInvalidArgument,
               "component_masks has 1 entries but must be empty or match 2 "
               "hashes");
  ExpectStatus(Replace(Snapshot("w", "a").Tier(kTierHbm, {3}, {}, {1, 2})),
               absl::StatusCode::kInvalidArgument,
               "block_sizes has 2 entries but must be empty or match 1 "
               "hashes");
  // V2 before V3 within an entry; entries in request order.
  ExpectStatus(
      Replace(Snapshot("w", "a").Tier(kTierHbm, {3}, {1, 2}).Tier(0, {1})),
      absl::StatusCode::kInvalidArgument,
      "component_masks has 2 entries but must be empty or match 1 hashes");
  ExpectStatus(Replace(Snapshot("w", "a").Tier(0, {3}, {1, 2})),
               absl::StatusCode::kInvalidArgument,
               "tier must not be TIER_UNKNOWN");
  ExpectStatus(Replace(Snapshot("nobody", "a").Tier(kTierHbm, {1})),
               absl::StatusCode::kFailedPrecondition,
               "stream must be configured before snapshot replacement");
  EXPECT_FALSE(indexer().operator_view().WorkerState("nobody").has_value());
  EXPECT_EQ(Observe(universe_), before);
}

TEST_P(RecoveryTest, SeedEraWorkersCanBeReplaced) {
  // A seed-era apply creates the record that Replace needs.
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1}));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(1).Tier(kTierHbm, {2}));
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({2}));
}

// Readers never see a worker between two snapshots: each Replace moves it
// from one complete set to a disjoint one in one backend batch.
TEST_P(RecoveryTest, ConcurrentReadersSeeWholeSnapshots) {
  constexpr int64_t kSetSize = 40;
  const Hashes sets[2] = {Range(1000, kSetSize), Range(2000, kSetSize)};
  Hashes both = sets[0];
  both.insert(both.end(), sets[1].begin(), sets[1].end());
  constexpr int kMinReplaces = 2000;
  constexpr int kMaxReplaces = 100000;
  constexpr long kMinReads = 2000;
  constexpr long kMaxReads = 1000000;
  constexpr int kReaders = 2;

  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierHbm, sets[0]));

  std::atomic<long> violations{0};
  std::mutex first_mu;
  std::string first;
  const auto report = [&](const std::string& what) {
    if (violations.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> lock(first_mu);
      first = what;
    }
  };
  std::latch start(1 + kReaders);
  std::atomic<bool> writing{true};
  std::atomic<long> reads{0};
  std::vector<std::thread> threads;
  threads.emplace_back([&] {
    start.arrive_and_wait();
    for (int i = 1; i <= kMaxReplaces; ++i) {
      v1::ReplaceExternalKvSnapshotResponse resp;
      const absl::Status s =
          indexer()
              .operations()
              .Replace(
                  Snapshot("w", "a")
                      .Epoch("e")
                      .AppliedSeq(static_cast<uint64_t>(i))
                      .Tier(kTierHbm, sets[i % 2], {}, Masks(kSetSize, 16)),
                  &resp)
              .Wait();
      if (!s.ok()) report(absl::StrCat("replace failed: ", s.ToString()));
      if (i >= kMinReplaces && reads.load() >= kMinReads * kReaders) break;
    }
    writing.store(false);
  });
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      start.arrive_and_wait();
      for (long round = 0; round < kMaxReads && writing.load(); ++round) {
        v1::MatchExternalKvResponse match;
        if (!indexer()
                 .operations()
                 .Match(MatchRequest(both, r == 0), &match)
                 .ok()) {
          report("match failed");
        }
        if (match.matches_size() != 1 ||
            At(match.matches(), 0).hashes_by_tier_size() != 1) {
          report(absl::StrCat("not one worker at one tier: ", Text(match)));
        } else {
          const auto& t = At(At(match.matches(), 0).hashes_by_tier(), 0);
          const Hashes got(t.hashes().begin(), t.hashes().end());
          if (got != sets[0] && got != sets[1]) {
            report(absl::StrCat("mixed snapshot seen: ", Text(match)));
          }
        }
        const Hashes& probe = sets[round % 2];
        v1::MatchExternalKvPrefixResponse prefix;
        if (!MatchPrefix(indexer().operations(), PrefixRequest(probe), &prefix)
                 .ok()) {
          report("prefix failed");
        }
        if (prefix.best_prefix_blocks() != 0 &&
            prefix.best_prefix_blocks() != kSetSize) {
          report(absl::StrCat("torn prefix: ", Text(prefix)));
        }
        reads.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0) << "first: " << first;
  EXPECT_GE(reads.load(), kMinReads * kReaders);
  universe_ = both;
}

// --- ConfigureExpectedWorkers ---

TEST_P(RecoveryTest, WorkersBecomeReadyOnlyThroughSnapshots) {
  const ExpectedWorkers both =
      ExpectedWorkers().Worker("w1", "a1").Worker("w2", "a2");
  EXPECT_EQ(Configure(both), std::make_pair(0u, 2u));
  ReplaceOk(Snapshot("w1", "a1").Epoch("e").Tier(kTierHbm, {1}));
  EXPECT_EQ(Configure(both), std::make_pair(1u, 2u));
  ReplaceOk(Snapshot("w2", "a2").Epoch("e").Tier(kTierHbm, {2}));
  EXPECT_EQ(Configure(both), std::make_pair(2u, 2u));
}

TEST_P(RecoveryTest, ScaleInRemovesTheWorkerAndItsCounters) {
  Configure(ExpectedWorkers().Worker("w1", "a1").Worker("w2", "a2"));
  ReplaceOk(Snapshot("w1", "a1").Epoch("e").Tier(kTierHbm, {1}));
  ReplaceOk(
      Snapshot("w2", "a2").Epoch("e").Tier(kTierHbm, {2}).Tier(kTierSsd, {3}));
  Match({1, 2, 3}, /*count_as_hit=*/true);
  EXPECT_EQ(BackendWorkers(), 2u);
  EXPECT_EQ(Configure(ExpectedWorkers().Worker("w1", "a1")),
            std::make_pair(1u, 1u));
  EXPECT_EQ(BackendWorkers(), FreesRemovedWorkers() ? 1u : 2u);
  EXPECT_FALSE(indexer().operator_view().WorkerState("w2").has_value());
  EXPECT_TRUE(Held("w2").empty());
  EXPECT_EQ(Hits({1, 2, 3}), (std::map<int64_t, uint64_t>{{1, 1}}));
  EXPECT_EQ(HeldHashes("w1"), std::set<int64_t>({1}));
  // The removed worker's gated applies now fail at G1, its Replace at V4.
  v1::ApplyExternalKvBatchResponse resp;
  ExpectStatus(indexer()
                   .operations()
                   .Apply(Batch("w2", "a2").Gated("e", 1), &resp)
                   .Wait(),
               absl::StatusCode::kFailedPrecondition,
               "stream must be configured before recovery-aware apply");
  ExpectStatus(Replace(Snapshot("w2", "a2").Epoch("e")),
               absl::StatusCode::kFailedPrecondition,
               "stream must be configured before snapshot replacement");
}

TEST_P(RecoveryTest, EmptyConfigurationRemovesEveryWorker) {
  ApplyOk(Batch("seed", "a").Report(kTierHbm, {1}));
  Configure(ExpectedWorkers().Worker("seed", "a").Worker("w", "b"));
  ReplaceOk(Snapshot("w", "b").Epoch("e").Tier(kTierDram, {2}));
  EXPECT_EQ(Configure(ExpectedWorkers()), std::make_pair(0u, 0u));
  EXPECT_EQ(Match(universe_).matches_size(), 0);  // universe < 16,384
  if (FreesRemovedWorkers()) {
    EXPECT_EQ(BackendWorkers(), 0u);
  }
  EXPECT_FALSE(indexer().operator_view().WorkerState("seed").has_value());
  EXPECT_FALSE(indexer().operator_view().WorkerState("w").has_value());
}

TEST_P(RecoveryTest, RepeatedConfigurationChangesNoSequenceState) {
  const ExpectedWorkers listed =
      ExpectedWorkers().Worker("w", "a").Worker("idle", "b");
  Configure(listed);
  ReplaceOk(Snapshot("w", "a")
                .Epoch("e")
                .AppliedSeq(3)
                .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                .Tier(kTierHbm, {1}, {kComponentFull}));
  const std::string before = Observe(universe_);
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(Configure(listed), std::make_pair(1u, 2u));
  EXPECT_EQ(Observe(universe_), before);
  // The spec a snapshot set survives configurations without one: the
  // worker is still judged by the component rules.
  EXPECT_EQ(Prefixes(Prefix({1})), (std::map<std::string, uint32_t>{{"w", 1}}));
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 3u);
  EXPECT_EQ(StateOf("idle"), SequenceState::kInvalid);
}

TEST_P(RecoveryTest, ConfigurationUpdatesAddressAndGivenSpec) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a")
                .Epoch("e")
                .Spec(Spec(kComponentFull, 0, kTierBitHbm))
                .Tier(kTierHbm, {1}, {kComponentFull}));
  // A new address reaches query results; the stored spec stays.
  Configure(ExpectedWorkers().Worker("w", "moved"));
  EXPECT_EQ(AddressOn(1, "w"), "moved");
  EXPECT_EQ(Prefixes(Prefix({1})), (std::map<std::string, uint32_t>{{"w", 1}}));
  // A given spec replaces it: SSD-only FULL serves nothing.
  Configure(ExpectedWorkers().Worker("w", "moved",
                                     Spec(kComponentFull, 0, kTierBitSsd)));
  EXPECT_TRUE(Prefixes(Prefix({1})).empty());
  // An empty address overwrites too.
  Configure(ExpectedWorkers().Worker("w", ""));
  EXPECT_EQ(AddressOn(1, "w"), "");
  uint64_t checkpoint = 0;
  ASSERT_TRUE(Probe("w", "e", &checkpoint).ok());
  EXPECT_EQ(checkpoint, 0u);
}

TEST_P(RecoveryTest, RemovedWorkersComeBackFresh) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").AppliedSeq(5).Tier(kTierHbm, {1}));
  Configure(ExpectedWorkers());
  if (FreesRemovedWorkers()) {
    EXPECT_EQ(BackendWorkers(), 0u);
  }
  // A seed-era apply: a fresh ready, unsequenced record.
  ApplyOk(Batch("w", "a").Report(kTierHbm, {2}));
  EXPECT_EQ(StateOf("w"), SequenceState::kUnsequenced);
  EXPECT_EQ(HeldHashes("w"), std::set<int64_t>({2}));
  // Removed and configured again: a fresh record that is not ready.
  Configure(ExpectedWorkers());
  EXPECT_EQ(Configure(ExpectedWorkers().Worker("w", "a")),
            std::make_pair(0u, 1u));
  EXPECT_EQ(StateOf("w"), SequenceState::kInvalid);
  EXPECT_TRUE(Held("w").empty());
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_EQ(indexer()
                .operations()
                .Apply(Batch("w", "a").Gated("e", 6), &resp)
                .Wait()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_P(RecoveryTest, ConfigureValidation) {
  Configure(ExpectedWorkers().Worker("w", "a"));
  ReplaceOk(Snapshot("w", "a").Epoch("e").Tier(kTierHbm, {1}));
  const std::string before = Observe(universe_);
  v1::ConfigureExpectedWorkersResponse resp;
  ExpectedWorkers too_many;
  for (int i = 0; i < 4097; ++i) too_many.Worker(absl::StrCat("w", i));
  ExpectStatus(indexer().operations().Configure(too_many, &resp).Wait(),
               absl::StatusCode::kResourceExhausted,
               "request contains 4097 workers; maximum is 4096");
  ExpectStatus(
      indexer()
          .operations()
          .Configure(ExpectedWorkers().Worker("x").Worker("x").Worker(""),
                     &resp)
          .Wait(),
      absl::StatusCode::kInvalidArgument, "worker_id must not be empty");
  ExpectStatus(
      indexer()
          .operations()
          .Configure(ExpectedWorkers().Worker("x").Worker("y").Worker("x"),
                     &resp)
          .Wait(),
      absl::StatusCode::kInvalidArgument, "duplicate worker_id x");
  EXPECT_EQ(Observe(universe_), before);
  EXPECT_FALSE(indexer().operator_view().WorkerState("x").has_value());
  // 4,096 workers are accepted.
  ExpectedWorkers most;
  most.Worker("w", "a");
  for (int i = 1; i < 4096; ++i) most.Worker(absl::StrCat("w", i));
  EXPECT_EQ(Configure(most), std::make_pair(1u, 4096u));
}

}  // namespace
}  // namespace kvindexer::conformance
