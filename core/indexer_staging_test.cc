// Staged snapshots through the Indexer (docs/contract.md, "Recovery >
// Staged snapshots"): Begin's checks, Append and Commit over the staging table,
// the install as one Replace, cancellation by InvalidateWorker and removal,
// and the commit's log record and its replay (docs/durability.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/indexer.h"
#include "core/mutation_log.h"
#include "core/stream_key.h"
#include "kv_indexer_state.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/sanitized_build.h"

namespace kvindexer {
// Named, not anonymous: the unity build joins test files.
namespace indexer_staging_test {

using namespace std::chrono_literals;
using state::v1::WalRecord;
using test_support::ModelBackend;
using ::testing::HasSubstr;

const StreamKey kStream{"ns", "w", 1};
constexpr uint32_t kPageSize = 16;

// Keeps every record in memory; Retract drops the last.
class MemoryLog final : public MutationLog {
 public:
  std::vector<WalRecord> records;
  std::vector<uint64_t> ends;

  absl::StatusOr<uint64_t> Append(const WalRecord& record) override {
    end_ += record.ByteSizeLong() + 8;
    records.push_back(record);
    ends.push_back(end_);
    return end_;
  }
  void Retract(uint64_t end) override {
    ASSERT_FALSE(ends.empty());
    ASSERT_EQ(end, ends.back());
    records.pop_back();
    ends.pop_back();
    end_ = ends.empty() ? 0 : ends.back();
  }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t) override { return absl::OkStatus(); }

 private:
  uint64_t end_ = 0;
};

WorkerLifecycleLog* QuietLifecycle() {
  static WorkerLifecycleLog* log = new WorkerLifecycleLog(
      [](spdlog::level::level_enum, std::string_view) {});
  return log;
}

SequenceGateLog* QuietGate() {
  static SequenceGateLog* log =
      new SequenceGateLog([](spdlog::level::level_enum, std::string_view) {});
  return log;
}

v1::ConfigureExpectedWorkersRequest ConfigureStream(
    const StreamKey& key, uint32_t page_size = kPageSize) {
  v1::ConfigureExpectedWorkersRequest req;
  v1::ExpectedWorker* w = req.add_workers();
  SetStreamId(key, w->mutable_stream_id());
  w->set_worker_address("10.0.0.1:9000");
  w->set_page_size(page_size);
  return req;
}

v1::BeginExternalKvSnapshotRequest BeginRequest(
    uint64_t expected, const StreamKey& key = kStream,
    uint32_t page_size = kPageSize) {
  v1::BeginExternalKvSnapshotRequest req;
  SetStreamId(key, req.mutable_stream_id());
  req.set_worker_address("10.0.0.2:9000");
  req.set_worker_epoch("e1");
  req.set_applied_seq(42);
  req.mutable_metadata()->set_worker_generation("g1");
  req.mutable_metadata()->set_model("m");
  req.mutable_metadata()->set_page_size(page_size);
  req.set_expected_placements(expected);
  return req;
}

struct Placement {
  int64_t hash;
  int tier;
};

v1::AppendExternalKvSnapshotRequest AppendRequest(
    const std::string& tx, const std::vector<Placement>& placements) {
  v1::AppendExternalKvSnapshotRequest req;
  req.set_transaction_id(tx);
  for (const Placement& p : placements) {
    v1::ExternalKvSnapshotPlacement* out = req.add_placements();
    out->set_block_hash(p.hash);
    out->set_tier(static_cast<v1::TierType>(p.tier));
    out->set_component_mask(1);
    out->set_block_size(kPageSize);
  }
  return req;
}

class IndexerStagingTest : public ::testing::Test {
 protected:
  explicit IndexerStagingTest(StagingLimits limits = StagingLimits{},
                              const RequestLimits& request_limits = {})
      : indexer_(&backend_, QuietGate(), request_limits,
                 /*backend_abi_minor=*/2, &clock_, QuietLifecycle(), limits) {}

  IndexOperations& ops() { return indexer_.operations(); }

  absl::Status Configure(const StreamKey& key = kStream,
                         uint32_t page_size = kPageSize) {
    v1::ConfigureExpectedWorkersResponse resp;
    return ops().Configure(ConfigureStream(key, page_size), &resp).Wait();
  }
  absl::StatusOr<std::string> Begin(
      const v1::BeginExternalKvSnapshotRequest& req) {
    v1::BeginExternalKvSnapshotResponse resp;
    if (absl::Status s = ops().Begin(req, &resp).Wait(); !s.ok()) return s;
    EXPECT_EQ(resp.indexer_epoch(), ops().IndexerEpoch());
    return resp.transaction_id();
  }
  absl::StatusOr<uint64_t> Append(const std::string& tx,
                                  const std::vector<Placement>& placements) {
    v1::AppendExternalKvSnapshotResponse resp;
    if (absl::Status s =
            ops().Append(AppendRequest(tx, placements), &resp).Wait();
        !s.ok()) {
      return s;
    }
    return resp.staged_placements();
  }
  absl::StatusOr<uint64_t> Commit(const std::string& tx) {
    v1::CommitExternalKvSnapshotRequest req;
    req.set_transaction_id(tx);
    v1::CommitExternalKvSnapshotResponse resp;
    if (absl::Status s = ops().Commit(req, &resp).Wait(); !s.ok()) return s;
    return resp.applied_seq();
  }
  // Commits `tx`; on success, whether the stream is marked evicted after it.
  absl::StatusOr<bool> CommitEvicted(const std::string& tx) {
    v1::CommitExternalKvSnapshotRequest req;
    req.set_transaction_id(tx);
    v1::CommitExternalKvSnapshotResponse resp;
    bool evicted = false;
    if (absl::Status s = ops().Commit(req, &resp, {.evicted = &evicted}).Wait();
        !s.ok()) {
      return s;
    }
    return evicted;
  }
  absl::Status Abort(const std::string& tx) {
    v1::AbortExternalKvSnapshotRequest req;
    req.set_transaction_id(tx);
    v1::AbortExternalKvSnapshotResponse resp;
    return ops().Abort(req, &resp).Wait();
  }
  // The stream's placements by the backend, as (tier, hash), sorted.
  std::vector<std::pair<int, int64_t>> Held(const std::vector<int64_t>& probe) {
    v1::MatchExternalKvResponse resp;
    EXPECT_TRUE(ops().Match(test_support::MatchRequest(probe), &resp).ok());
    std::vector<std::pair<int, int64_t>> out;
    for (const v1::ExternalKvNodeMatch& m : resp.matches()) {
      for (const v1::TierHashes& t : m.hashes_by_tier()) {
        for (int64_t h : t.hashes()) out.emplace_back(t.tier(), h);
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Installs {1, 2} at HBM by an ordinary Replace.
  void ReplaceWithOld() {
    v1::ReplaceExternalKvSnapshotRequest req =
        test_support::Snapshot("", "10.0.0.1:9000")
            .Epoch("e0")
            .AppliedSeq(5)
            .Tier(kTierHbm, {1, 2})
            .request();
    SetStreamId(kStream, req.mutable_stream_id());
    v1::ReplaceExternalKvSnapshotResponse resp;
    ASSERT_TRUE(ops().Replace(req, &resp).Wait().ok());
  }
  std::optional<WorkerRecord> Record() {
    return indexer_.operator_view().WorkerState(EncodeStreamKey(kStream));
  }

  FakeMonotonicClock clock_;
  ModelBackend backend_;
  Indexer indexer_;
};

// F17
TEST_F(IndexerStagingTest, BeginChecksRequestAndStream) {
  v1::BeginExternalKvSnapshotRequest no_stream = BeginRequest(0);
  no_stream.clear_stream_id();
  EXPECT_EQ(Begin(no_stream).status().code(),
            absl::StatusCode::kInvalidArgument);
  v1::BeginExternalKvSnapshotRequest no_meta = BeginRequest(0);
  no_meta.clear_metadata();
  EXPECT_EQ(Begin(no_meta).status().code(), absl::StatusCode::kInvalidArgument);
  v1::BeginExternalKvSnapshotRequest blank = BeginRequest(0);
  blank.mutable_stream_id()->set_worker_id(" ");
  EXPECT_EQ(Begin(blank).status().code(), absl::StatusCode::kInvalidArgument);
  v1::BeginExternalKvSnapshotRequest long_id = BeginRequest(0);
  long_id.set_snapshot_id(
      std::string(RequestLimits{}.max_worker_id_bytes + 1, 'x'));
  EXPECT_THAT(Begin(long_id).status().message(), HasSubstr("snapshot_id"));

  EXPECT_EQ(Begin(BeginRequest(0)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Configure().ok());
  const absl::Status other_page =
      Begin(BeginRequest(0, kStream, kPageSize * 2)).status();
  EXPECT_EQ(other_page.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(other_page.message(),
            "snapshot metadata differs from the configured stream");
  EXPECT_TRUE(Begin(BeginRequest(0)).ok());
}

// F18
TEST_F(IndexerStagingTest, AppendChecksTransactionAndCount) {
  ASSERT_TRUE(Configure().ok());
  EXPECT_EQ(Append("no-such-id", {{1, kTierHbm}}).status().code(),
            absl::StatusCode::kNotFound);
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(2));
  ASSERT_TRUE(tx.ok());
  EXPECT_EQ(Append(*tx, {{1, kTierHbm}}).value_or(0), 1u);
  EXPECT_EQ(Append(*tx, {{2, kTierHbm}, {3, kTierHbm}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Append(*tx, {{2, 4}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Abort("no-such-id").ok());
  EXPECT_TRUE(Abort(*tx).ok());
  EXPECT_EQ(Append(*tx, {{2, kTierHbm}}).status().code(),
            absl::StatusCode::kNotFound);
}

// F19, F21
TEST_F(IndexerStagingTest, ShortCommitAndOpenTransactionLeaveOldPlacements) {
  ASSERT_TRUE(Configure().ok());
  ReplaceWithOld();
  const std::vector<std::pair<int, int64_t>> old = {{kTierHbm, 1},
                                                    {kTierHbm, 2}};
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(3));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{3, kTierHbm}, {4, kTierDram}}).ok());
  EXPECT_EQ(Held({1, 2, 3, 4}), old);
  const size_t applies = backend_.applies.size();
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(backend_.applies.size(), applies);
  EXPECT_EQ(Held({1, 2, 3, 4}), old);
  EXPECT_EQ(Record()->checkpoint, (SequenceCheckpoint{"e0", 5}));
  // M2 ended the transaction.
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kNotFound);
}

// F20
TEST_F(IndexerStagingTest, CommitRefusesAPlacementStagedTwice) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(3));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{7, kTierHbm}, {7, kTierDram}, {7, kTierHbm}}).ok());
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kInvalidArgument);
}

// F22, and the install as one backend Apply.
TEST_F(IndexerStagingTest, CommitInstallsExactlyTheStagedSet) {
  ASSERT_TRUE(Configure().ok());
  ReplaceWithOld();
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(3));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{9, kTierSsd}, {3, kTierHbm}}).ok());
  ASSERT_TRUE(Append(*tx, {{4, kTierDram}}).ok());
  const size_t applies = backend_.applies.size();
  EXPECT_EQ(Commit(*tx).value_or(0), 42u);
  ASSERT_EQ(backend_.applies.size(), applies + 1);
  const ModelBackend::RecordedBatch& batch = backend_.applies.back();
  EXPECT_EQ(batch.worker_address, "10.0.0.2:9000");
  ASSERT_EQ(batch.actions.size(), 6u);  // three CLEARs, a REPORT per tier
  EXPECT_EQ(batch.actions[3].hashes, std::vector<int64_t>{3});

  EXPECT_EQ(Held({1, 2, 3, 4, 9}),
            (std::vector<std::pair<int, int64_t>>{
                {kTierHbm, 3}, {kTierDram, 4}, {kTierSsd, 9}}));
  const std::optional<WorkerRecord> record = Record();
  ASSERT_TRUE(record.has_value());
  EXPECT_TRUE(record->ready);
  EXPECT_TRUE(record->covered());
  EXPECT_EQ(record->checkpoint, (SequenceCheckpoint{"e1", 42}));
  EXPECT_EQ(record->address, "10.0.0.2:9000");
  EXPECT_FALSE(record->spec.has_value());
  EXPECT_EQ(record->meta.generation, "g1");
  EXPECT_EQ(record->meta.model, "m");
  EXPECT_EQ(record->meta.page_size, kPageSize);

  // A probe in the stream's epoch answers the commit's applied_seq.
  test_support::Batch probe("", "10.0.0.2:9000");
  probe.Gated("e1", 42);
  SetStreamId(kStream, probe.mutable_request()->mutable_stream_id());
  probe.mutable_request()->set_worker_generation("g1");
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(ops().Apply(probe, &resp).Wait().ok());
  EXPECT_EQ(resp.applied_seq(), 42u);
  EXPECT_TRUE(resp.duplicate());
}

// F24
TEST_F(IndexerStagingTest, LaterBeginSupersedesAndCommitRepeats) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> first = Begin(BeginRequest(1));
  ASSERT_TRUE(first.ok());
  const absl::StatusOr<std::string> second = Begin(BeginRequest(1));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(Append(*first, {{1, kTierHbm}}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(Append(*second, {{1, kTierHbm}}).ok());
  EXPECT_EQ(Commit(*second).value_or(0), 42u);
  const size_t applies = backend_.applies.size();
  EXPECT_EQ(Commit(*second).value_or(0), 42u);
  EXPECT_EQ(backend_.applies.size(), applies);
}

// F25
TEST_F(IndexerStagingTest, IdleTransactionExpires) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(1));
  ASSERT_TRUE(tx.ok());
  clock_.Advance(std::chrono::milliseconds(kDefaultStagingIdleTimeoutMs - 1));
  ASSERT_TRUE(Append(*tx, {{1, kTierHbm}}).ok());
  clock_.Advance(std::chrono::milliseconds(kDefaultStagingIdleTimeoutMs));
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(IndexerStagingTest, InvalidateAndRemovalCancel) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(1));
  ASSERT_TRUE(tx.ok());
  v1::InvalidateWorkerRequest invalidate;
  SetStreamId(kStream, invalidate.mutable_stream_id());
  v1::InvalidateWorkerResponse resp;
  // Not ready and no generation, but something staged: it changes that.
  ASSERT_TRUE(ops().Invalidate(invalidate, &resp).Wait().ok());
  EXPECT_EQ(Append(*tx, {{1, kTierHbm}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kFailedPrecondition);

  const absl::StatusOr<std::string> again = Begin(BeginRequest(0));
  ASSERT_TRUE(again.ok());
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops()
                  .Configure(ConfigureStream({"ns", "other", 0}), &configured)
                  .Wait()
                  .ok());
  EXPECT_EQ(Commit(*again).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// M3: a record removed and created again since Begin.
TEST_F(IndexerStagingTest, CommitRefusesARecordReplacedSinceBegin) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(0));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(indexer_.operator_view()
                  .RemoveWorker(EncodeStreamKey(kStream), RemovalReason::kAdmin)
                  .ok());
  ASSERT_TRUE(Configure().ok());
  EXPECT_EQ(Commit(*tx).status().code(), absl::StatusCode::kFailedPrecondition);
}

// M4: the configuration changed since Begin.
TEST_F(IndexerStagingTest, CommitChecksMetadataAgain) {
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(0));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Configure(kStream, kPageSize * 2).ok());
  const absl::Status s = Commit(*tx).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "snapshot metadata differs from the configured stream");
}

TEST_F(IndexerStagingTest, BackendFailureKeepsTheTransaction) {
  MemoryLog log;
  indexer_.durable_state().AttachLog(&log);
  ASSERT_TRUE(Configure().ok());
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(1));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{1, kTierHbm}}).ok());
  const size_t records = log.records.size();
  backend_.fail_with =
      test_support::MakeBackendStatus(BackendCode::kResourceExhausted, "full");
  EXPECT_FALSE(Commit(*tx).ok());
  EXPECT_EQ(log.records.size(), records);  // taken back
  backend_.fail_with.reset();
  EXPECT_EQ(Commit(*tx).value_or(0), 42u);
  EXPECT_EQ(log.records.size(), records + 1);
  indexer_.durable_state().AttachLog(nullptr);
}

// Only Commit is logged (op 8), in REPORT form sorted by tier then hash;
// replaying the log rebuilds the stream.
TEST_F(IndexerStagingTest, CommitIsLoggedAndReplayed) {
  MemoryLog log;
  indexer_.durable_state().AttachLog(&log);
  ASSERT_TRUE(Configure().ok());
  const size_t before = log.records.size();
  const absl::StatusOr<std::string> tx = Begin(BeginRequest(4));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{8, kTierDram}, {5, kTierHbm}}).ok());
  ASSERT_TRUE(Append(*tx, {{2, kTierDram}, {-3, kTierHbm}}).ok());
  EXPECT_EQ(log.records.size(), before);
  ASSERT_TRUE(Commit(*tx).ok());
  ASSERT_EQ(log.records.size(), before + 1);
  const WalRecord& record = log.records.back();
  ASSERT_EQ(record.op_case(), WalRecord::kSnapshotCommit);
  const state::v1::StagedSnapshotCommit& commit = record.snapshot_commit();
  EXPECT_EQ(StreamKeyOf(commit.stream_id()), kStream);
  EXPECT_EQ(commit.transaction_id(), *tx);
  EXPECT_EQ(commit.applied_seq(), 42u);
  EXPECT_EQ(commit.metadata().worker_generation(), "g1");
  ASSERT_EQ(commit.hashes_by_tier_size(), 2);
  EXPECT_EQ(commit.hashes_by_tier(0).tier(), kTierHbm);
  EXPECT_THAT(commit.hashes_by_tier(0).hashes(), ::testing::ElementsAre(-3, 5));
  EXPECT_EQ(commit.hashes_by_tier(1).tier(), kTierDram);
  EXPECT_THAT(commit.hashes_by_tier(1).hashes(), ::testing::ElementsAre(2, 8));
  indexer_.durable_state().AttachLog(nullptr);

  ModelBackend replayed_backend;
  Indexer replayed(&replayed_backend, QuietGate(), RequestLimits{}, 2, &clock_,
                   QuietLifecycle());
  for (const WalRecord& r : log.records) {
    ASSERT_TRUE(replayed.durable_state().Replay(r).ok());
  }
  const std::string id = EncodeStreamKey(kStream);
  const std::optional<WorkerRecord> got =
      replayed.operator_view().WorkerState(id);
  ASSERT_TRUE(got.has_value());
  EXPECT_TRUE(got->ready);
  EXPECT_EQ(got->checkpoint, (SequenceCheckpoint{"e1", 42}));
  EXPECT_EQ(got->meta, Record()->meta);
  EXPECT_EQ(replayed.operator_view().PlacementCounts(id),
            indexer_.operator_view().PlacementCounts(id));
  EXPECT_EQ((*replayed.operator_view().PlacementCounts(id))[kTierHbm], 2u);
}

class IndexerStagingLimitsTest : public IndexerStagingTest {
 protected:
  IndexerStagingLimitsTest()
      : IndexerStagingTest(StagingLimits{.max_placements = 100,
                                         .max_transactions = 1,
                                         .idle_timeout_ms = 60'000}) {}
};

// F26
TEST_F(IndexerStagingLimitsTest, BeginBeyondLimitsIsResourceExhausted) {
  ASSERT_TRUE(Configure().ok());
  const StreamKey other{"ns", "w", 2};
  v1::ConfigureExpectedWorkersRequest both = ConfigureStream(kStream);
  *both.add_workers() = ConfigureStream(other).workers(0);
  v1::ConfigureExpectedWorkersResponse resp;
  ASSERT_TRUE(ops().Configure(both, &resp).Wait().ok());
  EXPECT_EQ(Begin(BeginRequest(101)).status().code(),
            absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(Begin(BeginRequest(100)).ok());
  EXPECT_EQ(Begin(BeginRequest(1, other)).status().code(),
            absl::StatusCode::kResourceExhausted);
  // The stream's own earlier reservation does not count against it.
  EXPECT_TRUE(Begin(BeginRequest(100)).ok());
}

// A backend that only counts what it is given: the host's cost of a large
// commit, without an index behind it.
class CountingBackend final : public IndexBackend {
 public:
  uint64_t reported = 0;
  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    for (size_t i = 0; i < batch.action_count; ++i) {
      if (batch.actions[i].type == kActionReport) {
        reported += batch.actions[i].hashes.size;
      }
    }
    return test_support::BackendOk();
  }
  BackendStatus Match(HashSpan, bool, BlockVisitor*) noexcept override {
    return test_support::BackendOk();
  }
  BackendStatus PrefixScan(HashSpan, BlockVisitor*) noexcept override {
    return test_support::BackendOk();
  }
  BackendStatus HitCounts(HashSpan, uint64_t*) noexcept override {
    return test_support::BackendOk();
  }
  void GetStats(BackendStats*) noexcept override {}
};

// F23 at the core: ten million placements in Appends of 16,384 commit as one
// backend Apply.
TEST(IndexerStagingLargeTest, TenMillionPlacementsCommitAsOneApply) {
  constexpr uint64_t kPlacements =
      test_support::kSanitizedBuild ? 1'000'000 : 10'000'000;
  constexpr uint64_t kChunk = 16'384;
  FakeMonotonicClock clock;
  CountingBackend backend;
  Indexer indexer(&backend, QuietGate(), RequestLimits{}, 2, &clock,
                  QuietLifecycle());
  IndexOperations& ops = indexer.operations();
  v1::ConfigureExpectedWorkersResponse configured;
  ASSERT_TRUE(ops.Configure(ConfigureStream(kStream), &configured).Wait().ok());
  v1::BeginExternalKvSnapshotResponse begun;
  ASSERT_TRUE(ops.Begin(BeginRequest(kPlacements), &begun).Wait().ok());
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  for (uint64_t first = 0; first < kPlacements; first += kChunk) {
    append.clear_placements();
    const uint64_t n = std::min(kChunk, kPlacements - first);
    for (uint64_t i = 0; i < n; ++i) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      // Descending, so that the commit has to sort.
      p->set_block_hash(static_cast<int64_t>(kPlacements - first - i));
      p->set_tier(static_cast<v1::TierType>(1 + (first + i) % 3));
      p->set_component_mask(1);
    }
    v1::AppendExternalKvSnapshotResponse staged;
    ASSERT_TRUE(ops.Append(append, &staged).Wait().ok());
    ASSERT_EQ(staged.staged_placements(), first + n);
  }
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse done;
  ASSERT_TRUE(ops.Commit(commit, &done).Wait().ok());
  EXPECT_EQ(backend.reported, kPlacements);
}

// A commit is a whole snapshot: it clears the stream's evicted mark, and one
// past the stream's bound is evicted as it installs. Commit says which, as
// Replace does, so that the server can tell the bridge.
class BoundedStagingTest : public IndexerStagingTest {
 protected:
  static RequestLimits PerStreamBound(uint64_t placements) {
    RequestLimits limits;
    limits.placement_bound = {.max_placements = 0,
                              .max_per_worker = placements};
    return limits;
  }
  BoundedStagingTest()
      : IndexerStagingTest(StagingLimits{}, PerStreamBound(3)) {}
};

TEST_F(BoundedStagingTest, CommitSaysWhetherTheStreamIsMarkedEvicted) {
  ASSERT_TRUE(Configure().ok());
  absl::StatusOr<std::string> tx = Begin(BeginRequest(4));
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(
      Append(*tx,
             {{1, kTierHbm}, {2, kTierHbm}, {3, kTierDram}, {4, kTierDram}})
          .ok());
  absl::StatusOr<bool> evicted = CommitEvicted(*tx);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_TRUE(*evicted);
  EXPECT_TRUE(Record()->evicted);
  // The same transaction again: its answer, and the mark as it is now.
  evicted = CommitEvicted(*tx);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_TRUE(*evicted);

  v1::BeginExternalKvSnapshotRequest within = BeginRequest(2);
  within.set_applied_seq(43);
  tx = Begin(within);
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE(Append(*tx, {{1, kTierHbm}, {2, kTierHbm}}).ok());
  evicted = CommitEvicted(*tx);
  ASSERT_TRUE(evicted.ok()) << evicted.status();
  EXPECT_FALSE(*evicted);
  EXPECT_FALSE(Record()->evicted);
}

}  // namespace indexer_staging_test
}  // namespace kvindexer
