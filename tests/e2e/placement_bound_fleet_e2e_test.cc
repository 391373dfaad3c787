// The placement bound (docs/contract.md, "Limits > The placement bound") in
// fleet mode (docs/fleet.md): a real nats-server and real kv-indexer-server
// replicas of one log, all with the same small bound. Each replica decides
// per-stream evictions itself while it applies the log; index-wide ones are
// proposed to the log by one replica and applied by all where the proposal
// lies. Either way, replicas that applied the same positions must hold the
// same, tier by tier and mark by mark, and less than was reported. The records
// come in as line-A writes through one replica: seeded ungated applies for
// several streams, and a staged snapshot whose commit alone takes its stream
// over the per-stream bound. A replica started later from the fleet snapshot
// (the log trimmed behind it) must agree too.
//
// No sleeps as synchronisation: effects are awaited in bounded loops.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/e2e/fleet_e2e_harness.h"
#include "tests/e2e/fleet_replicas_fixture.h"
#include "tests/e2e/placement_bound_feed.h"
#include "tests/support/evicted_trailer.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
// Named, not anonymous: the unity build joins test files.
namespace placement_bound_fleet_e2e_test {

using ::kvindexer::e2e::BoundState;
using ::kvindexer::e2e::BoundStateOf;
using ::kvindexer::e2e::PlacementBoundFeed;
using ::kvindexer::e2e::PlacementBoundFeedOptions;
using ::kvindexer::test_support::WaitUntil;
namespace v1 = ::kv_indexer::v1;

constexpr uint64_t kMaxPerWorker = 600;

std::map<std::string, std::string> BoundEnv() {
  return {
      {"KV_INDEXER_MAX_PLACEMENTS_PER_WORKER", std::to_string(kMaxPerWorker)}};
}

std::unique_ptr<grpc::ClientContext> CallContext() {
  auto context = std::make_unique<grpc::ClientContext>();
  // Longer than the replica's own 10 s wait for its reader.
  context->set_deadline(std::chrono::system_clock::now() +
                        std::chrono::seconds(15));
  return context;
}

using test_support::CarriesEvictedTrailer;

std::string EvictionSeries(const std::string& reason) {
  return "kvindexer_placement_bound_tier_clears_total{reason=\"" + reason +
         "\"}";
}

class PlacementBoundFleetTest : public FleetReplicasTest {
 protected:
  // Waits until every replica has applied the log's last position.
  void Converge() {
    absl::StatusOr<uint64_t> end = FleetLogEnd(log_);
    ASSERT_TRUE(end.ok()) << end.status();
    for (const auto& replica : replicas_) {
      const absl::Status applied = WaitForApplied(*replica, *end);
      ASSERT_TRUE(applied.ok()) << applied;
    }
    end_ = *end;
  }

  // Waits until `writer` has written a fleet snapshot at the position
  // Converge last reached, or later.
  void WaitForSnapshotAtEnd(FleetReplica& writer) {
    std::optional<double> snapshot;
    ASSERT_TRUE(WaitUntil(
        [&] {
          snapshot = writer.Metric("kvindexer_fleet_snapshot_last_position");
          return snapshot.value_or(0) >= static_cast<double>(end_);
        },
        kFleetBound, 20ms))
        << "last snapshot at " << snapshot.value_or(-1) << ", log end " << end_;
  }

  std::optional<BoundState> StateOf(FleetReplica& replica) {
    const auto listed = replica.ListWorkers();
    EXPECT_TRUE(listed.has_value());
    if (!listed.has_value()) return std::nullopt;
    absl::StatusOr<BoundState> state = BoundStateOf(*listed);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return std::nullopt;
    return *state;
  }

  // Every replica holds what the first holds, placements included, and
  // no stream of the first holds more than `per_stream`. Returns the
  // first's state.
  BoundState ExpectIdentical(const std::vector<int64_t>& universe,
                             uint64_t per_stream = kMaxPerWorker) {
    const std::optional<BoundState> first = StateOf(*replicas_.front());
    const std::optional<ReplicaDigest> digest =
        replicas_.front()->Digest(universe);
    EXPECT_TRUE(first.has_value());
    EXPECT_TRUE(digest.has_value());
    if (!first.has_value() || !digest.has_value()) return {};
    for (const auto& [key, stream] : first->streams) {
      EXPECT_LE(stream.total(), per_stream) << key;
    }
    for (size_t r = 1; r < replicas_.size(); ++r) {
      const std::optional<BoundState> state = StateOf(*replicas_[r]);
      EXPECT_TRUE(state.has_value()) << "replica " << r;
      if (!state.has_value()) continue;
      EXPECT_EQ(*state, *first) << "replica " << r;
      const std::optional<ReplicaDigest> other = replicas_[r]->Digest(universe);
      EXPECT_TRUE(other.has_value()) << "replica " << r;
      if (!other.has_value()) continue;
      EXPECT_EQ(other->hash, digest->hash)
          << "replica " << r << ": " << FirstDifference(*other, *digest);
    }
    return *first;
  }

  uint64_t end_ = 0;
};

TEST_F(PlacementBoundFleetTest, ReplicasOfOneLogEvictAlike) {
  // The first replica writes a snapshot every second and keeps one, so
  // that the log is trimmed behind it for the third.
  std::map<std::string, std::string> writer = BoundEnv();
  writer["KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS"] = "1000";
  writer["KV_INDEXER_FLEET_SNAPSHOT_KEEP"] = "1";
  FleetReplica* a = StartReplica(writer);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(StartReplica(BoundEnv()), nullptr);

  const PlacementBoundFeed feed(
      PlacementBoundFeedOptions{.seed = 20261207, .line_a = true});
  for (size_t n = 0; n < feed.size(); ++n) {
    std::unique_ptr<grpc::ClientContext> context = CallContext();
    v1::ApplyExternalKvBatchResponse response;
    const grpc::Status s = a->stub().ApplyExternalKvBatch(
        context.get(), feed.request(n), &response);
    ASSERT_TRUE(s.ok()) << "request " << n << ": " << s.error_message();
    // A write-through answer never carries the trailer.
    ASSERT_FALSE(CarriesEvictedTrailer(*context)) << "request " << n;
  }
  ASSERT_NO_FATAL_FAILURE(Converge());
  const BoundState state = ExpectIdentical(feed.universe());
  EXPECT_LT(state.total(), feed.reported());
  EXPECT_GT(state.evicted(), 0u) << state.Text();
  EXPECT_LT(state.evicted(), state.streams.size()) << state.Text();
  for (const auto& replica : replicas_) {
    EXPECT_GT(replica->Metric(EvictionSeries("worker_bound")).value_or(0), 0);
    EXPECT_EQ(replica->Metric(EvictionSeries("index_bound")).value_or(-1), 0);
  }

  // A replica that loads the snapshot image, evicted as the log was.
  ASSERT_NO_FATAL_FAILURE(WaitForSnapshotAtEnd(*a));
  absl::StatusOr<uint64_t> first = FleetLogFirst(log_);
  ASSERT_TRUE(WaitUntil(
      [&] {
        first = FleetLogFirst(log_);
        return first.ok() && *first > 1;
      },
      kFleetBound, 20ms))
      << "the log was not trimmed";
  FleetReplica* joined = StartReplica(BoundEnv());
  ASSERT_NE(joined, nullptr);
  ASSERT_NO_FATAL_FAILURE(Converge());
  EXPECT_GE(
      joined->Metric("kvindexer_fleet_snapshot_loaded_position").value_or(0),
      static_cast<double>(end_));
  EXPECT_EQ(ExpectIdentical(feed.universe()), state);
}

// A staged commit is applied from the log as a restart applies a logged
// one; on a replica it must still be followed by the evictions it calls
// for, as a live Commit on a standalone server is.
TEST_F(PlacementBoundFleetTest, ACommitOverTheBoundIsEvictedOnEveryReplica) {
  FleetReplica* a = StartReplica(BoundEnv());
  ASSERT_NE(a, nullptr);
  ASSERT_NE(StartReplica(BoundEnv()), nullptr);

  v1::StreamId stream;
  stream.set_namespace_("bound-ns");
  stream.set_worker_id("bound-big");
  v1::ConfigureExpectedWorkersRequest configure;
  v1::ExpectedWorker* expected = configure.add_workers();
  *expected->mutable_stream_id() = stream;
  expected->set_worker_address("10.0.9.99:8000");
  expected->set_page_size(16);
  v1::ConfigureExpectedWorkersResponse configured;
  grpc::Status s = a->stub().ConfigureExpectedWorkers(CallContext().get(),
                                                      configure, &configured);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // 300 HBM, 300 DRAM and 200 SSD placements: over the per-stream bound
  // by the SSD tier.
  const std::vector<std::pair<v1::TierType, int>> tiers = {
      {v1::TIER_HBM, 300}, {v1::TIER_DRAM, 300}, {v1::TIER_SSD, 200}};
  v1::BeginExternalKvSnapshotRequest begin;
  *begin.mutable_stream_id() = stream;
  begin.set_worker_address("10.0.9.99:8000");
  begin.set_worker_epoch("e1");
  begin.set_applied_seq(7);
  begin.mutable_metadata()->set_worker_generation("g1");
  begin.mutable_metadata()->set_page_size(16);
  begin.set_expected_placements(800);
  v1::BeginExternalKvSnapshotResponse begun;
  s = a->stub().BeginExternalKvSnapshot(CallContext().get(), begin, &begun);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  std::vector<int64_t> universe;
  int64_t hash = 5'000'000;
  for (const auto& [tier, count] : tiers) {
    for (int i = 0; i < count; ++i) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(hash);
      p->set_tier(tier);
      p->set_component_mask(1);
      p->set_block_size(16);
      universe.push_back(hash++);
    }
  }
  v1::AppendExternalKvSnapshotResponse appended;
  s = a->stub().AppendExternalKvSnapshot(CallContext().get(), append,
                                         &appended);
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse committed;
  s = a->stub().CommitExternalKvSnapshot(CallContext().get(), commit,
                                         &committed);
  ASSERT_TRUE(s.ok()) << s.error_message();

  ASSERT_NO_FATAL_FAILURE(Converge());
  const BoundState state = ExpectIdentical(universe);
  const auto big = state.streams.find("bound-ns/bound-big/0");
  ASSERT_NE(big, state.streams.end()) << state.Text();
  EXPECT_EQ(big->second.tiers[v1::TIER_HBM], 300u);
  EXPECT_EQ(big->second.tiers[v1::TIER_DRAM], 300u);
  EXPECT_EQ(big->second.tiers[v1::TIER_SSD], 0u);
  EXPECT_TRUE(big->second.evicted);
  for (const auto& replica : replicas_) {
    EXPECT_EQ(replica->Metric(EvictionSeries("worker_bound")), 1);
  }
}

// An index-wide bound: no replica evicts index-wide by itself; proposals
// come through the log, every replica (and the snapshot image a later one
// loads) applies them at the same positions, and once the fleet has
// settled the index is within the bound everywhere.
TEST_F(PlacementBoundFleetTest, AnIndexWideBoundIsKeptThroughTheLog) {
  constexpr uint64_t kMaxPlacements = 1200;
  const std::map<std::string, std::string> bound = {
      {"KV_INDEXER_MAX_PLACEMENTS", std::to_string(kMaxPlacements)}};
  std::map<std::string, std::string> writer = bound;
  writer["KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS"] = "1000";
  writer["KV_INDEXER_FLEET_SNAPSHOT_KEEP"] = "1";
  FleetReplica* a = StartReplica(writer);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(StartReplica(bound), nullptr);

  const PlacementBoundFeed feed(
      PlacementBoundFeedOptions{.seed = 20261208, .line_a = true});
  ASSERT_GT(feed.reported(), 2 * kMaxPlacements);
  for (size_t n = 0; n < feed.size(); ++n) {
    v1::ApplyExternalKvBatchResponse response;
    const grpc::Status s = a->stub().ApplyExternalKvBatch(
        CallContext().get(), feed.request(n), &response);
    ASSERT_TRUE(s.ok()) << "request " << n << ": " << s.error_message();
  }
  // Settled: every replica has applied the log's end and is within the
  // bound there, so that no proposal is left to come.
  std::optional<BoundState> state;
  ASSERT_TRUE(WaitUntil(
      [&] {
        absl::StatusOr<uint64_t> end = FleetLogEnd(log_);
        if (!end.ok()) return false;
        for (const auto& replica : replicas_) {
          if (replica->AppliedPosition().value_or(0) < *end) return false;
        }
        state = StateOf(*a);
        return state.has_value() && state->total() <= kMaxPlacements;
      },
      kFleetBound, 20ms))
      << (state.has_value() ? state->Text() : "no state");
  ASSERT_NO_FATAL_FAILURE(Converge());
  const BoundState settled = ExpectIdentical(feed.universe(), kMaxPlacements);
  EXPECT_LE(settled.total(), kMaxPlacements) << settled.Text();
  EXPECT_GT(settled.evicted(), 0u) << settled.Text();
  double appended = 0;
  for (const auto& replica : replicas_) {
    EXPECT_GT(replica->Metric(EvictionSeries("index_bound")).value_or(0), 0);
    EXPECT_EQ(replica->Metric(EvictionSeries("worker_bound")).value_or(-1), 0);
    appended += replica
                    ->Metric(
                        "kvindexer_fleet_eviction_proposals_total{result="
                        "\"appended\"}")
                    .value_or(0);
  }
  EXPECT_GE(appended, 1);

  // A replica that loads the snapshot image holds what the others hold.
  ASSERT_NO_FATAL_FAILURE(WaitForSnapshotAtEnd(*a));
  FleetReplica* joined = StartReplica(bound);
  ASSERT_NE(joined, nullptr);
  ASSERT_NO_FATAL_FAILURE(Converge());
  EXPECT_GE(
      joined->Metric("kvindexer_fleet_snapshot_loaded_position").value_or(0),
      static_cast<double>(end_));
  EXPECT_EQ(ExpectIdentical(feed.universe(), kMaxPlacements), settled);
}

}  // namespace placement_bound_fleet_e2e_test
}  // namespace kvindexer::bridge::testing
