// The Indexer's restart-safe state (docs/durability.md): what it appends to
// its MutationLog and when, what it does when the log fails, and that the
// log (Replay) and a checkpoint (ExportHost, an ImageBackend's placements,
// Restore) each rebuild the state the live Indexer had.
//
// The randomised tests are deterministic by seed; a failure names its seed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/indexer.h"
#include "core/mutation_log.h"
#include "durable/image_backend.h"
#include "fmt/format.h"
#include "kv_indexer_state.pb.h"
#include "tests/support/fake_clock.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/model_backend.h"
#include "tests/support/random_workload.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using namespace std::chrono_literals;
using state::v1::CheckpointChunk;
using state::v1::WalRecord;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::MakeBackendStatus;
using test_support::ModelBackend;
using test_support::RandomWorkload;
using test_support::Snapshot;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A MutationLog that keeps every record in memory and records every call.
// Offsets grow by each record's size plus a fixed framing, like a file's.
class RecordingLog final : public MutationLog {
 public:
  std::vector<WalRecord> records;
  std::vector<uint64_t> ends;  // ends[i]: the offset past records[i]
  std::vector<uint64_t> retracted;
  std::vector<uint64_t> waits;
  int append_calls = 0;
  // When set, Append fails with it and keeps nothing.
  std::optional<absl::Status> fail_appends;
  absl::Status wait_status;
  // Called by WaitDurable, after it records the call.
  std::function<void()> on_wait;

  size_t calls() const {
    return static_cast<size_t>(append_calls) + retracted.size() + waits.size();
  }

  absl::StatusOr<uint64_t> Append(const WalRecord& record) override {
    ++append_calls;
    if (fail_appends.has_value()) return *fail_appends;
    end_ += record.ByteSizeLong() + 8;
    records.push_back(record);
    ends.push_back(end_);
    return end_;
  }
  void Retract(uint64_t end) override {
    retracted.push_back(end);
    EXPECT_FALSE(ends.empty());
    if (ends.empty()) return;
    EXPECT_EQ(end, ends.back()) << "only the last record can be retracted";
    records.pop_back();
    ends.pop_back();
    end_ = ends.empty() ? 0 : ends.back();
  }
  uint64_t end() const override { return end_; }
  absl::Status WaitDurable(uint64_t offset) override {
    waits.push_back(offset);
    EXPECT_LE(offset, end_);
    if (on_wait) on_wait();
    return wait_status;
  }

 private:
  uint64_t end_ = 0;
};

WorkerLifecycleLog* QuietLifecycleLog() {
  static WorkerLifecycleLog* log = new WorkerLifecycleLog(
      [](spdlog::level::level_enum, std::string_view) {});
  return log;
}

SequenceGateLog* QuietGateLog() {
  static SequenceGateLog* log =
      new SequenceGateLog([](spdlog::level::level_enum, std::string_view) {});
  return log;
}

// An Indexer with its own backend, over a shared clock.
struct Node {
  explicit Node(const FakeMonotonicClock* clock, IndexBackend* backend_in)
      : indexer(backend_in, QuietGateLog(), RequestLimits{},
                /*backend_abi_minor=*/1, clock, QuietLifecycleLog()) {}
  Indexer indexer;
};

// --- Comparable forms of an Indexer's state ---

std::string Describe(const std::optional<WorkerRecord>& record) {
  if (!record.has_value()) return "no record";
  std::string spec = "none";
  if (record->spec.has_value()) {
    const CacheSpec& s = *record->spec;
    spec = fmt::format("{}/{}/{}/{}/{}/{}", s.version, s.components,
                       s.swa_window_tokens, s.full_tier_mask, s.swa_tier_mask,
                       s.mamba_tier_mask);
  }
  std::string checkpoint = "none";
  if (record->checkpoint.has_value()) {
    checkpoint = fmt::format("{}@{}", record->checkpoint->epoch,
                             record->checkpoint->seq);
  }
  return fmt::format("ready={} configured={} address='{}' spec={} cp={}",
                     record->ready, record->configured, record->address, spec,
                     checkpoint);
}

struct HostState {
  std::map<std::string, std::string> records;   // every id of the universe
  std::map<std::string, uint32_t> marker_ttls;  // from ExportHost
  std::set<std::string> marked;                 // HeartbeatDeadline set
  size_t worker_count = 0;

  bool operator==(const HostState&) const = default;
};

void PrintTo(const HostState& s, std::ostream* os) {
  for (const auto& [id, text] : s.records) *os << "\n  " << id << ": " << text;
  for (const auto& [id, ttl] : s.marker_ttls) {
    *os << "\n  marker " << id << " ttl " << ttl;
  }
  *os << "\n  workers " << s.worker_count;
}

HostState HostOf(Indexer& indexer, const std::vector<std::string>& universe) {
  HostState state;
  for (const std::string& id : universe) {
    state.records[id] = Describe(indexer.operator_view().WorkerState(id));
    if (indexer.operator_view().HeartbeatDeadline(id).has_value())
      state.marked.insert(id);
  }
  indexer.durable_state().ExportHost([&](const CheckpointChunk& chunk) {
    if (chunk.has_marker()) {
      state.marker_ttls[chunk.marker().worker_id()] = chunk.marker().ttl_ms();
    }
  });
  state.worker_count = indexer.durable_state().worker_count();
  return state;
}

// Placements as the backend holds them: hash -> (token count, (worker,
// tier) -> mask), and the address and spec the backend stores for every
// worker that holds something.
struct BackendState {
  std::map<
      int64_t,
      std::pair<uint32_t, std::map<std::pair<std::string, uint32_t>, uint32_t>>>
      blocks;
  std::map<std::string, std::string> holders;

  bool operator==(const BackendState&) const = default;
};

void PrintTo(const BackendState& s, std::ostream* os) {
  for (const auto& [hash, block] : s.blocks) {
    *os << "\n  " << hash << " tokens " << block.first << ":";
    for (const auto& [key, mask] : block.second) {
      *os << " " << key.first << "/" << key.second << "=" << mask;
    }
  }
  for (const auto& [id, text] : s.holders) *os << "\n  " << id << " " << text;
}

BackendState BackendOf(const ModelBackend& backend) {
  BackendState state;
  const test_support::ReferenceModel& model = backend.model();
  for (const auto& [hash, block] : model.blocks()) {
    auto& out = state.blocks[hash];
    out.first = block.token_count;
    for (const auto& [key, mask] : block.placements) {
      out.second[key] = mask;
      const auto& worker = model.workers().at(key.first);
      std::string spec = "none";
      if (worker.spec.has_value()) {
        spec = fmt::format("{}/{}", worker.spec->components,
                           worker.spec->full_tier_mask);
      }
      state.holders[key.first] = worker.address + " spec " + spec;
    }
  }
  return state;
}

// A checkpoint as a compaction builds it: the records replayed into an
// Indexer over an ImageBackend, then the host's part and the placements.
std::vector<CheckpointChunk> CheckpointOf(const std::vector<WalRecord>& records,
                                          const FakeMonotonicClock* clock) {
  durable::ImageBackend image;
  Node compactor(clock, &image);
  for (const WalRecord& record : records) {
    const absl::Status s = compactor.indexer.durable_state().Replay(record);
    EXPECT_TRUE(s.ok()) << s << " replaying " << record.ShortDebugString();
  }
  std::vector<CheckpointChunk> chunks;
  compactor.indexer.durable_state().ExportHost(
      [&](const CheckpointChunk& chunk) { chunks.push_back(chunk); });
  image.ForEachTier(3, [&](const durable::ImageBackend::TierView& view) {
    CheckpointChunk chunk;
    state::v1::TierPlacements* part = chunk.mutable_placements();
    part->set_worker_id(std::string(view.worker_id));
    part->set_tier(view.tier);
    part->mutable_hashes()->Add(view.hashes.data,
                                view.hashes.data + view.hashes.size);
    part->mutable_component_masks()->Add(
        view.component_masks.data,
        view.component_masks.data + view.component_masks.size);
    part->mutable_block_sizes()->Add(
        view.block_sizes.data, view.block_sizes.data + view.block_sizes.size);
    chunks.push_back(std::move(chunk));
  });
  return chunks;
}

// Replays `log` into a fresh Indexer (a) and restores a checkpoint built
// from it into another (b); both must equal `live` and its backend.
void ExpectRebuilt(Indexer& live, const ModelBackend& live_backend,
                   const RecordingLog& log,
                   const std::vector<std::string>& universe,
                   const FakeMonotonicClock& clock) {
  const HostState expected_host = HostOf(live, universe);
  const BackendState expected_backend = BackendOf(live_backend);

  ModelBackend replayed_backend;
  Node replayed(&clock, &replayed_backend);
  for (const WalRecord& record : log.records) {
    const absl::Status s = replayed.indexer.durable_state().Replay(record);
    ASSERT_TRUE(s.ok()) << s << " replaying " << record.ShortDebugString();
  }
  EXPECT_EQ(HostOf(replayed.indexer, universe), expected_host);
  EXPECT_EQ(BackendOf(replayed_backend), expected_backend);
  // A replay is not a heartbeat.
  EXPECT_EQ(replayed.indexer.operator_view().liveness_stats().heartbeats, 0u);

  ModelBackend restored_backend;
  Node restored(&clock, &restored_backend);
  for (const CheckpointChunk& chunk : CheckpointOf(log.records, &clock)) {
    const absl::Status s = restored.indexer.durable_state().Restore(chunk);
    ASSERT_TRUE(s.ok()) << s << " restoring " << chunk.ShortDebugString();
  }
  EXPECT_EQ(HostOf(restored.indexer, universe), expected_host);
  EXPECT_EQ(BackendOf(restored_backend), expected_backend);
}

TEST(IndexerDurabilityTest, ReplayAndCheckpointRebuildTheLiveState) {
  RandomWorkload::Tally tally;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    FakeMonotonicClock clock;
    ModelBackend live_backend;
    Node live(&clock, &live_backend);
    RecordingLog log;
    live.indexer.durable_state().AttachLog(&log);
    RandomWorkload workload(seed, &live.indexer, &clock, &tally);
    for (int step = 1; step <= 150; ++step) {
      workload.Step();
      // Compared along the way too: a later mutation may hide an earlier
      // difference.
      if (step % 10 != 0) continue;
      SCOPED_TRACE(fmt::format("seed {} after step {}", seed, step));
      ExpectRebuilt(live.indexer, live_backend, log, workload.ids(), clock);
      if (HasFailure()) return;
    }
    // Every live answer waited for the log: nothing is ever retracted here.
    EXPECT_THAT(log.retracted, IsEmpty());
  }
  // The workload reached every outcome the log has to reproduce.
  EXPECT_GT(tally.accepted, 200);
  EXPECT_GT(tally.duplicates, 10);
  EXPECT_GT(tally.gaps, 50);
  EXPECT_GT(tally.refused, 10);
  EXPECT_GT(tally.replaced, 10);
  EXPECT_GT(tally.scale_ins, 10);
  EXPECT_GT(tally.removed, 10);
  EXPECT_GT(tally.sweep_clears, 10);
}

// --- When and what the Indexer logs ---

class IndexerLogTest : public ::testing::Test {
 protected:
  IndexerLogTest() { node_.indexer.durable_state().AttachLog(&log_); }

  absl::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     const HeartbeatHeader& heartbeat = {}) {
    return node_.indexer.operations()
        .Apply(req, &apply_resp_, {.heartbeat = heartbeat})
        .Wait();
  }
  absl::Status Replace(const v1::ReplaceExternalKvSnapshotRequest& req) {
    v1::ReplaceExternalKvSnapshotResponse resp;
    return node_.indexer.operations().Replace(req, &resp).Wait();
  }
  absl::Status Configure(const v1::ConfigureExpectedWorkersRequest& req) {
    v1::ConfigureExpectedWorkersResponse resp;
    return node_.indexer.operations().Configure(req, &resp).Wait();
  }
  // w: configured and SEQUENCED at e@5, holding 1 and 2.
  void Sequenced(const std::string& id) {
    ASSERT_TRUE(Configure(ExpectedWorkers().Worker(id, "a")).ok());
    ASSERT_TRUE(Replace(Snapshot(id, "a").Epoch("e").AppliedSeq(5).Tier(
                            kTierHbm, {1, 2}))
                    .ok());
  }
  std::vector<WalRecord::OpCase> Ops() const {
    std::vector<WalRecord::OpCase> ops;
    for (const WalRecord& r : log_.records) ops.push_back(r.op_case());
    return ops;
  }
  std::string Held(const std::string& id) {
    return Describe(node_.indexer.operator_view().WorkerState(id)) + " " +
           std::to_string(backend_.model().placement_count());
  }

  FakeMonotonicClock clock_;
  ModelBackend backend_;
  Node node_{&clock_, &backend_};
  RecordingLog log_;
  v1::ApplyExternalKvBatchResponse apply_resp_;
};

TEST_F(IndexerLogTest, EveryMutationIsLoggedBeforeItIsAcknowledged) {
  Sequenced("w");
  ASSERT_TRUE(Apply(Batch("s", "a").Report(kTierHbm, {9})).ok());
  EXPECT_EQ(log_.waits.back(), log_.end());
  ASSERT_TRUE(Apply(Batch("w", "a").Gated("e", 6).Report(kTierHbm, {3})).ok());
  ASSERT_TRUE(node_.indexer.operator_view()
                  .RemoveWorker("s", RemovalReason::kAdmin)
                  .ok());
  EXPECT_THAT(Ops(), ElementsAre(WalRecord::kConfigure, WalRecord::kReplace,
                                 WalRecord::kApply, WalRecord::kApply,
                                 WalRecord::kRemoval));
  EXPECT_EQ(log_.records.back().removal().worker_id(), "s");
  EXPECT_EQ(log_.records.back().removal().reason(),
            static_cast<uint32_t>(RemovalReason::kAdmin));
  // Each call waited for the end the log had when it finished.
  EXPECT_THAT(log_.waits, ElementsAre(log_.ends[0], log_.ends[1], log_.ends[2],
                                      log_.ends[3], log_.ends[4]));
}

TEST_F(IndexerLogTest, RefusalsDuplicatesAndProbesLogNothing) {
  Sequenced("w");
  const size_t logged = log_.records.size();
  // G1, G2, G3 and a probe; an invalid request; a removal of nobody.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Apply(Batch("nobody").Gated("e", 1).Report(kTierHbm, {1}))));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Apply(Batch("w").Gated("f", 6).Report(kTierHbm, {1}))));
  EXPECT_TRUE(absl::IsInvalidArgument(Apply(Batch("w").Report(0, {1}))));
  EXPECT_TRUE(absl::IsNotFound(node_.indexer.operator_view().RemoveWorker(
      "nobody", RemovalReason::kAdmin)));
  EXPECT_EQ(log_.records.size(), logged);
  EXPECT_EQ(log_.append_calls, static_cast<int>(logged));

  // A duplicate and a probe change nothing but are acknowledged only once
  // everything before them is durable.
  const size_t waits = log_.waits.size();
  ASSERT_TRUE(Apply(Batch("w").Gated("e", 5).Report(kTierHbm, {7})).ok());
  EXPECT_TRUE(apply_resp_.duplicate());
  ASSERT_TRUE(Apply(Batch("w").Gated("e", 0)).ok());
  EXPECT_EQ(log_.records.size(), logged);
  EXPECT_THAT(
      std::vector<uint64_t>(log_.waits.begin() + waits, log_.waits.end()),
      ElementsAre(log_.end(), log_.end()));
}

TEST_F(IndexerLogTest, AConfigurationAlreadyHeldLogsNothingAndCallsNoBackend) {
  const auto two = [](const std::string& addr_b) {
    return ExpectedWorkers().Worker("a", "addr-a").Worker("b", addr_b);
  };
  ASSERT_TRUE(Configure(two("addr-b")).ok());
  ASSERT_TRUE(Apply(Batch("a", "addr-a").Report(kTierHbm, {1})).ok());
  clock_.Advance(std::chrono::seconds(3));
  const size_t logged = log_.records.size();
  const size_t backend_calls = backend_.applies.size();
  const auto last_apply = node_.indexer.operator_view().WorkerState("a");

  // The same list again, as a bridge's heartbeat sends it: answered once
  // the log is durable to where it was, with today's counts.
  const size_t waits = log_.waits.size();
  v1::ConfigureExpectedWorkersResponse resp;
  ASSERT_TRUE(
      node_.indexer.operations().Configure(two("addr-b"), &resp).Wait().ok());
  EXPECT_EQ(resp.total_workers(), 2u);
  EXPECT_EQ(resp.ready_workers(), 1u);
  EXPECT_EQ(log_.records.size(), logged);
  EXPECT_EQ(backend_.applies.size(), backend_calls);
  EXPECT_THAT(
      std::vector<uint64_t>(log_.waits.begin() + waits, log_.waits.end()),
      ElementsAre(log_.end()));
  ASSERT_TRUE(last_apply.has_value());
  EXPECT_EQ(node_.indexer.operator_view().WorkerState("a")->last_apply,
            last_apply->last_apply);

  // Each kind of change is a configuration of its own, logged as today: an
  // address, a spec, a new worker, a worker left out, a self-registered
  // worker listed for the first time.
  ASSERT_TRUE(Configure(two("addr-b2")).ok());
  ASSERT_TRUE(
      Configure(two("addr-b2").Worker("c", "addr-c",
                                      test_support::Spec(kComponentFull, 0, 2)))
          .ok());
  ASSERT_TRUE(Configure(ExpectedWorkers()
                            .Worker("a", "addr-a")
                            .Worker("b", "addr-b2")
                            .Worker("c", "addr-c",
                                    test_support::Spec(kComponentFull, 0, 6)))
                  .ok());
  ASSERT_TRUE(Configure(two("addr-b2")).ok());
  ASSERT_TRUE(Apply(Batch("s", "addr-s").Report(kTierHbm, {5})).ok());
  ASSERT_TRUE(Configure(two("addr-b2").Worker("s", "addr-s")).ok());
  const std::vector<WalRecord::OpCase> ops = Ops();
  EXPECT_THAT(std::vector<WalRecord::OpCase>(ops.begin() + logged, ops.end()),
              ElementsAre(WalRecord::kConfigure, WalRecord::kConfigure,
                          WalRecord::kConfigure, WalRecord::kRemoval,
                          WalRecord::kConfigure, WalRecord::kApply,
                          WalRecord::kConfigure));
  // And the same list once more is quiet again.
  const size_t settled = log_.records.size();
  ASSERT_TRUE(Configure(two("addr-b2").Worker("s", "addr-s")).ok());
  EXPECT_EQ(log_.records.size(), settled);
  EXPECT_TRUE(node_.indexer.operator_view().WorkerState("s")->configured);
}

TEST_F(IndexerLogTest, ALongEpochIsRefusedBeforeTheLog) {
  Sequenced("w");
  const size_t logged = log_.records.size();
  const std::string before = Held("w");
  const std::string long_epoch(RequestLimits{}.max_worker_epoch_bytes + 1, 'e');
  EXPECT_TRUE(absl::IsInvalidArgument(
      Apply(Batch("w", "a").Gated(long_epoch, 6).Report(kTierHbm, {3}))));
  EXPECT_TRUE(absl::IsInvalidArgument(
      Replace(Snapshot("w", "a").Epoch(long_epoch).AppliedSeq(9))));
  Batch seed_era("w", "a");
  seed_era.Report(kTierHbm, {3});
  seed_era.mutable_request()->set_worker_epoch(long_epoch);
  EXPECT_TRUE(absl::IsInvalidArgument(Apply(seed_era)));
  EXPECT_EQ(log_.append_calls, static_cast<int>(logged));
  EXPECT_EQ(Held("w"), before);
}

TEST_F(IndexerLogTest, AGapIsLoggedAsItsRequestAndReplaysAsAGap) {
  Sequenced("w");
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Apply(Batch("w", "a").Gated("e", 9).Report(kTierHbm, {4}))));
  ASSERT_EQ(log_.records.back().op_case(), WalRecord::kApply);
  EXPECT_EQ(log_.records.back().apply().seq(), 9u);
  // The refusal is answered only once the gap's record is durable: a crash
  // must not bring back a worker the client was told is invalid.
  EXPECT_EQ(log_.waits.size(), 3u);
  EXPECT_EQ(log_.waits.back(), log_.end());

  ModelBackend backend;
  Node fresh(&clock_, &backend);
  for (const WalRecord& record : log_.records) {
    ASSERT_TRUE(fresh.indexer.durable_state().Replay(record).ok());
  }
  EXPECT_EQ(Describe(fresh.indexer.operator_view().WorkerState("w")),
            Describe(node_.indexer.operator_view().WorkerState("w")));
  EXPECT_EQ(backend.model().placement_count(), 0u);
}

TEST_F(IndexerLogTest, MarkersAreLoggedWhenTheyAppearOrChangeTheirTtl) {
  ASSERT_TRUE(Apply(Batch("w"), HeartbeatHeader::Valid(100ms)).ok());
  ASSERT_TRUE(Apply(Batch("w"), HeartbeatHeader::Valid(100ms)).ok());
  ASSERT_TRUE(Apply(Batch("w"), HeartbeatHeader::Valid(300ms)).ok());
  // A refused gated heartbeat of a worker without a record marks it too.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Apply(Batch("x").Gated("e", 0), HeartbeatHeader::Valid(100ms))));
  std::vector<std::pair<std::string, uint32_t>> markers;
  for (const WalRecord& r : log_.records) {
    if (r.has_marker()) {
      markers.emplace_back(r.marker().worker_id(), r.marker().ttl_ms());
    }
  }
  EXPECT_THAT(markers, ElementsAre(std::pair<std::string, uint32_t>{"w", 100},
                                   std::pair<std::string, uint32_t>{"w", 300},
                                   std::pair<std::string, uint32_t>{"x", 100}));
  EXPECT_EQ(node_.indexer.operator_view().liveness_stats().heartbeats, 4u);
}

TEST_F(IndexerLogTest, SweepsLogEachClearAndEachDroppedMarkerAndWait) {
  ASSERT_TRUE(Apply(Batch("a", "a").Report(kTierHbm, {1}),
                    HeartbeatHeader::Valid(100ms))
                  .ok());
  ASSERT_TRUE(Apply(Batch("b", "b").Report(kTierHbm, {2}),
                    HeartbeatHeader::Valid(500ms))
                  .ok());
  // A marker without a record.
  EXPECT_FALSE(
      Apply(Batch("c").Gated("e", 0), HeartbeatHeader::Valid(100ms)).ok());
  const size_t logged = log_.records.size();
  clock_.Advance(200ms);
  const OperatorView::SweepResult result =
      node_.indexer.operator_view().SweepLiveness(clock_.Now());
  ASSERT_TRUE(result.status.ok()) << result.status;
  EXPECT_EQ(result.cleared, 1u);
  ASSERT_EQ(log_.records.size(), logged + 2);
  std::set<std::string> cleared;
  for (size_t i = logged; i < log_.records.size(); ++i) {
    ASSERT_TRUE(log_.records[i].has_liveness_clear());
    cleared.insert(log_.records[i].liveness_clear().worker_id());
  }
  EXPECT_EQ(cleared, (std::set<std::string>{"a", "c"}));
  EXPECT_EQ(log_.waits.back(), log_.end());
  EXPECT_FALSE(
      node_.indexer.operator_view().HeartbeatDeadline("c").has_value());
}

TEST_F(IndexerLogTest, AFailedAppendChangesNothingAndIsUnavailable) {
  Sequenced("w");
  ASSERT_TRUE(Apply(Batch("m"), HeartbeatHeader::Valid(100ms)).ok());
  const std::string before = Held("w");
  const size_t applies = backend_.applies.size();
  log_.fail_appends = absl::UnavailableError("state log write failed: full");

  EXPECT_TRUE(absl::IsUnavailable(Apply(Batch("n").Report(kTierHbm, {5}))));
  EXPECT_FALSE(node_.indexer.operator_view().WorkerState("n").has_value());
  EXPECT_TRUE(absl::IsUnavailable(
      Apply(Batch("w", "a").Gated("e", 6).Report(kTierHbm, {5}))));
  EXPECT_TRUE(absl::IsUnavailable(
      Apply(Batch("w", "a").Gated("e", 8).Report(kTierHbm, {5}))));  // a gap
  EXPECT_TRUE(absl::IsUnavailable(
      Replace(Snapshot("w", "a").Epoch("f").AppliedSeq(1))));
  EXPECT_TRUE(absl::IsUnavailable(Configure(ExpectedWorkers())));
  EXPECT_TRUE(absl::IsUnavailable(
      node_.indexer.operator_view().RemoveWorker("w", RemovalReason::kAdmin)));
  // A heartbeat that would mark a worker: neither marked nor applied.
  EXPECT_TRUE(absl::IsUnavailable(
      Apply(Batch("w2").Report(kTierHbm, {6}), HeartbeatHeader::Valid(50ms))));
  EXPECT_FALSE(
      node_.indexer.operator_view().HeartbeatDeadline("w2").has_value());
  // A sweep that would clear m: it stays marked, with its record.
  clock_.Advance(1s);
  const OperatorView::SweepResult sweep =
      node_.indexer.operator_view().SweepLiveness(clock_.Now());
  EXPECT_TRUE(absl::IsUnavailable(sweep.status)) << sweep.status;
  EXPECT_EQ(sweep.cleared, 0u);
  EXPECT_TRUE(node_.indexer.operator_view().HeartbeatDeadline("m").has_value());
  EXPECT_TRUE(node_.indexer.operator_view().WorkerState("m").has_value());

  EXPECT_EQ(Held("w"), before);
  EXPECT_EQ(backend_.applies.size(), applies);
  EXPECT_THAT(backend_.removed_workers, IsEmpty());
  EXPECT_THAT(log_.retracted, IsEmpty());
}

TEST_F(IndexerLogTest, ABackendRefusalRetractsTheRecord) {
  Sequenced("w");
  const size_t logged = log_.records.size();
  backend_.fail_with = MakeBackendStatus(BackendCode::kResourceExhausted, "no");
  EXPECT_TRUE(
      absl::IsResourceExhausted(Apply(Batch("n").Report(kTierHbm, {5}))));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Apply(Batch("w", "a").Gated("e", 6).Report(kTierHbm, {5}))));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Apply(Batch("w", "a").Gated("e", 9).Report(kTierHbm, {5}))));
  EXPECT_TRUE(absl::IsResourceExhausted(
      Replace(Snapshot("w", "a").Epoch("f").AppliedSeq(1))));
  EXPECT_TRUE(absl::IsInternal(
      node_.indexer.operator_view().RemoveWorker("w", RemovalReason::kAdmin)));
  EXPECT_EQ(log_.retracted.size(), 5u);
  EXPECT_EQ(log_.records.size(), logged);
  // A configure's removals are records of their own, taken back like any
  // other; the configure itself is logged only after them, so a removal that
  // failed leaves no configure record that replay would complete.
  EXPECT_FALSE(Configure(ExpectedWorkers()).ok());
  EXPECT_EQ(log_.retracted.size(), 6u);
  EXPECT_EQ(log_.records.size(), logged);
}

TEST_F(IndexerLogTest, AFailedWaitIsUnavailable) {
  log_.wait_status = absl::UnavailableError("state log write failed: EIO");
  const absl::Status s = Apply(Batch("w").Report(kTierHbm, {1}));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(
      absl::IsUnavailable(Configure(ExpectedWorkers().Worker("w", "a"))));
  EXPECT_TRUE(absl::IsUnavailable(
      node_.indexer.operator_view().RemoveWorker("w", RemovalReason::kAdmin)));
  EXPECT_TRUE(absl::IsUnavailable(
      node_.indexer.operator_view().SweepLiveness(clock_.Now()).status));
}

TEST_F(IndexerLogTest, TheWaitHappensWithoutTheMutationMutex) {
  int checked = 0;
  // Kept until the end of the test: a future still waiting for the mutex
  // must not be destroyed (which blocks) while the mutex is held.
  std::vector<std::future<size_t>> others;
  log_.on_wait = [&] {
    // From another thread, which blocks for as long as the mutex is held.
    others.push_back(std::async(std::launch::async, [&] {
      return node_.indexer.durable_state().worker_count();
    }));
    EXPECT_EQ(others.back().wait_for(30s), std::future_status::ready);
    ++checked;
  };
  ASSERT_TRUE(Apply(Batch("w").Report(kTierHbm, {1})).ok());
  ASSERT_TRUE(Configure(ExpectedWorkers().Worker("w")).ok());
  (void)node_.indexer.operator_view().SweepLiveness(clock_.Now());
  EXPECT_EQ(checked, 3);
}

// Detaching is for shutdown: a mutation now could not be logged, so every
// one is refused, changes nothing and never reaches the old log.
TEST_F(IndexerLogTest, ADetachedLogIsNeverCalledAndMutationsAreRefused) {
  ASSERT_TRUE(Apply(Batch("w").Report(kTierHbm, {1})).ok());
  const size_t calls = log_.calls();
  node_.indexer.durable_state().AttachLog(nullptr);
  EXPECT_TRUE(absl::IsUnavailable(
      Apply(Batch("w").Report(kTierHbm, {2}), HeartbeatHeader::Valid(10ms))));
  EXPECT_TRUE(absl::IsUnavailable(Configure(ExpectedWorkers().Worker("w"))));
  EXPECT_TRUE(
      absl::IsUnavailable(Replace(Snapshot("w").Epoch("e").AppliedSeq(1))));
  clock_.Advance(1s);
  EXPECT_TRUE(absl::IsUnavailable(
      node_.indexer.operator_view().SweepLiveness(clock_.Now()).status));
  EXPECT_TRUE(absl::IsUnavailable(
      node_.indexer.operator_view().RemoveWorker("w", RemovalReason::kAdmin)));
  EXPECT_EQ(log_.calls(), calls);
  EXPECT_FALSE(
      node_.indexer.operator_view().HeartbeatDeadline("w").has_value());
  EXPECT_TRUE(node_.indexer.operator_view().WorkerState("w").has_value());
}

// An Indexer that never had a log is not affected by a null AttachLog.
TEST(IndexerWithoutLogTest, NullAttachWithoutALogChangesNothing) {
  ModelBackend backend;
  Indexer indexer(&backend);
  indexer.durable_state().AttachLog(nullptr);
  v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id("w");
  v1::ApplyExternalKvBatchResponse resp;
  EXPECT_TRUE(indexer.operations().Apply(req, &resp).Wait().ok());
}

// --- Malformed state ---

TEST(IndexerReplayTest, MalformedRecordsAreRefusedAndChangeNothing) {
  FakeMonotonicClock clock;
  ModelBackend backend;
  Node node(&clock, &backend);
  EXPECT_TRUE(absl::IsInvalidArgument(
      node.indexer.durable_state().Replay(WalRecord{})));
  WalRecord bad_apply;
  *bad_apply.mutable_apply() = Batch("w").Report(0, {1}).request();
  EXPECT_THAT(node.indexer.durable_state().Replay(bad_apply).message(),
              HasSubstr("apply"));
  WalRecord bad_marker;
  bad_marker.mutable_marker()->set_worker_id("w");
  EXPECT_TRUE(
      absl::IsInvalidArgument(node.indexer.durable_state().Replay(bad_marker)));
  WalRecord bad_removal;
  bad_removal.mutable_removal()->set_worker_id("w");
  bad_removal.mutable_removal()->set_reason(99);
  EXPECT_TRUE(absl::IsInvalidArgument(
      node.indexer.durable_state().Replay(bad_removal)));

  CheckpointChunk orphan;
  orphan.mutable_placements()->set_worker_id("nobody");
  orphan.mutable_placements()->set_tier(kTierHbm);
  orphan.mutable_placements()->add_hashes(1);
  EXPECT_THAT(node.indexer.durable_state().Restore(orphan).message(),
              HasSubstr("no record"));
  CheckpointChunk worker;
  worker.mutable_worker()->set_worker_id("w");
  ASSERT_TRUE(node.indexer.durable_state().Restore(worker).ok());
  CheckpointChunk misaligned = orphan;
  misaligned.mutable_placements()->set_worker_id("w");
  misaligned.mutable_placements()->add_block_sizes(1);
  misaligned.mutable_placements()->add_block_sizes(2);
  EXPECT_TRUE(absl::IsInvalidArgument(
      node.indexer.durable_state().Restore(misaligned)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      node.indexer.durable_state().Restore(CheckpointChunk{})));
  EXPECT_THAT(backend.applies, IsEmpty());
  EXPECT_EQ(node.indexer.durable_state().worker_count(), 1u);
}

// Bounds are for requests as they arrive: a log or a checkpoint written by a
// binary without the epoch bound (or under a larger one) restores as it was.
TEST(IndexerReplayTest, ALongEpochFromAnOlderBinaryStillReplays) {
  const std::string long_epoch(7 * 1024 * 1024, 'e');
  ASSERT_GT(long_epoch.size(), RequestLimits{}.max_worker_epoch_bytes);
  FakeMonotonicClock clock;
  ModelBackend backend;
  Node node(&clock, &backend);
  WalRecord configure;
  *configure.mutable_configure() = ExpectedWorkers().Worker("w", "a").request();
  WalRecord replace;
  *replace.mutable_replace() =
      Snapshot("w", "a").Epoch(long_epoch).AppliedSeq(5).request();
  WalRecord apply;
  *apply.mutable_apply() =
      Batch("w", "a").Gated(long_epoch, 6).Report(kTierHbm, {1}).request();
  for (const WalRecord* record : {&configure, &replace, &apply}) {
    ASSERT_TRUE(node.indexer.durable_state().Replay(*record).ok());
  }
  std::optional<WorkerRecord> state =
      node.indexer.operator_view().WorkerState("w");
  ASSERT_TRUE(state.has_value() && state->checkpoint.has_value());
  EXPECT_EQ(state->checkpoint->epoch, long_epoch);
  EXPECT_EQ(state->checkpoint->seq, 6u);
  EXPECT_EQ(backend.model().placement_count(), 1u);

  // Its checkpoint restores too.
  std::vector<CheckpointChunk> chunks;
  node.indexer.durable_state().ExportHost(
      [&](const CheckpointChunk& chunk) { chunks.push_back(chunk); });
  ModelBackend restored_backend;
  Node restored(&clock, &restored_backend);
  for (const CheckpointChunk& chunk : chunks) {
    ASSERT_TRUE(restored.indexer.durable_state().Restore(chunk).ok());
  }
  state = restored.indexer.operator_view().WorkerState("w");
  ASSERT_TRUE(state.has_value() && state->checkpoint.has_value());
  EXPECT_EQ(state->checkpoint->epoch, long_epoch);
}

TEST(IndexerReplayTest, RestoredMarkersAreReArmedFromNow) {
  FakeMonotonicClock clock;
  ModelBackend backend;
  Node node(&clock, &backend);
  CheckpointChunk marker;
  marker.mutable_marker()->set_worker_id("w");
  marker.mutable_marker()->set_ttl_ms(400);
  ASSERT_TRUE(node.indexer.durable_state().Restore(marker).ok());
  EXPECT_EQ(node.indexer.operator_view().HeartbeatDeadline("w"),
            clock.Now() + 400ms);
  EXPECT_EQ(node.indexer.operator_view().liveness_stats().heartbeats, 0u);
}

}  // namespace
}  // namespace kvindexer
