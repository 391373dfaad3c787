// Fleet mode end to end (docs/fleet.md) over real processes:
// FakeSglangPublisher -> kv-indexer-bridge (KV_INDEXER_SINK=jetstream) ->
// the event log on real nats-server processes -> kv-indexer-server replicas
// (KV_INDEXER_EVENT_SOURCE=jetstream).
//
// Every test ends by comparing what the replicas hold: the digest of each
// (fleet_e2e_harness.h: every placement among the hashes the publishers
// named, and every worker's sequence state) must be the same, and its
// placements must be the model's (what the publishers' workers still hold).
// Before that, each replica must have applied the log up to its last
// position.
//
// The faults (docs/fleet.md, "Failures and what happens"): a replica
// killed while the bridges stream and started again; the NATS server
// stopped (SIGSTOP) while the publishers go on publishing; a replica that
// joins after the log was trimmed behind a snapshot; a replica stopped
// (SIGSTOP) while the log was trimmed past it; a node of an R=3 NATS
// cluster killed while the bridges stream and the replicas read.
//
// No sleeps as synchronisation: effects are awaited in bounded loops. The
// traffic thread paces its rounds, which shapes the load only.
#include <chrono>
#include <csignal>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/fleet_e2e_harness.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/nats_server.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::kHealthNotServing;
using ::kvindexer::test_support::kHealthServing;
using ::kvindexer::test_support::NatsCluster;
using ::kvindexer::test_support::NatsServer;
using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;

constexpr int kWorkers = 2;

// The digest's line for `worker_id` (without its newline); empty if none.
std::string WorkerLine(const ReplicaDigest& digest,
                       const std::string& worker_id) {
  const std::string prefix = "worker " + worker_id + " ";
  const size_t begin = digest.text.find(prefix);
  if (begin == std::string::npos) return "";
  return digest.text.substr(begin, digest.text.find('\n', begin) - begin);
}

class FleetE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }

  void TearDown() override {
    if (streamer_ != nullptr) streamer_->Stop();
    if (HasFailure()) {
      for (const auto& w : workers_) {
        if (w->bridge() != nullptr) {
          std::cerr << "--- bridge " << w->id() << "\n"
                    << w->bridge()->Output();
        }
      }
      for (size_t i = 0; i < replicas_.size(); ++i) {
        if (replicas_[i] != nullptr) {
          std::cerr << "--- replica " << i << "\n"
                    << replicas_[i]->process().Output();
        }
      }
      if (nats_ != nullptr) std::cerr << "--- nats\n" << nats_->Output();
    }
  }

  // One standalone NATS server; the log has one replica.
  void StartNats() {
    absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
    ASSERT_TRUE(nats.ok()) << nats.status();
    nats_ = *std::move(nats);
    log_ = FleetLogTarget{.urls = nats_->url(), .replicas = 1};
  }

  // Appends a replica of log_ to replicas_.
  void StartReplica(std::map<std::string, std::string> extra_env = {}) {
    absl::StatusOr<std::unique_ptr<FleetReplica>> replica =
        FleetReplica::Start(log_, std::move(extra_env));
    ASSERT_TRUE(replica.ok()) << replica.status();
    replicas_.push_back(*std::move(replica));
  }

  // kWorkers workers, each with its bridge writing to log_.
  void StartWorkers() {
    for (int i = 0; i < kWorkers; ++i) {
      workers_.push_back(std::make_unique<FleetWorker>(i, 1000 + i));
      absl::Status started = workers_.back()->StartBridge(log_);
      ASSERT_TRUE(started.ok()) << started;
    }
  }

  void StartStreaming() {
    std::vector<FleetWorker*> workers;
    for (const auto& w : workers_) workers.push_back(w.get());
    streamer_ = std::make_unique<TrafficStreamer>(std::move(workers));
  }

  // Waits until the streamer has published `rounds` more rounds.
  ::testing::AssertionResult StreamFor(uint64_t rounds) {
    const uint64_t target = streamer_->rounds() + rounds;
    if (WaitUntil([&] { return streamer_->rounds() >= target; }, kFleetBound)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "the streamer published " << streamer_->rounds() << " of "
           << target << " rounds";
  }

  // Waits until `replica` has applied `records` more records than it had,
  // for `bound` at most.
  ::testing::AssertionResult AppliesMore(
      FleetReplica& replica, uint64_t records,
      std::chrono::milliseconds bound = kFleetBound) {
    const uint64_t target = replica.AppliedPosition().value_or(0) + records;
    std::optional<uint64_t> applied;
    if (WaitUntil(
            [&] {
              applied = replica.AppliedPosition();
              return applied.value_or(0) >= target;
            },
            bound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "the replica applied " << applied.value_or(0) << " of " << target;
  }

  // Stops the traffic, seals every worker, and waits until every replica
  // holds the model and has applied the whole log; returns the log's end.
  uint64_t Converge() {
    if (streamer_ != nullptr) streamer_->Stop();
    absl::StatusOr<uint64_t> end =
        WaitForModel(log_, *replicas_.front(), workers_);
    EXPECT_TRUE(end.ok()) << end.status();
    if (!end.ok()) return 0;
    for (const auto& replica : replicas_) {
      absl::Status applied = WaitForApplied(*replica, *end);
      EXPECT_TRUE(applied.ok()) << applied;
    }
    return *end;
  }

  // Every replica serves the same contents, the model's placements, and
  // has every worker sequenced at its last batch.
  void ExpectIdenticalReplicas(uint64_t log_end) {
    const std::vector<int64_t> universe = Universe(workers_);
    ASSERT_FALSE(universe.empty());
    std::optional<ReplicaDigest> first;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      FleetReplica& replica = *replicas_[i];
      // An idle bridge's probes may have been appended since (they change
      // nothing; docs/fleet.md, "Replicas follow the log").
      EXPECT_GE(replica.AppliedPosition().value_or(0), log_end)
          << "replica " << i;
      // Every record was read and decoded; none went missing.
      EXPECT_EQ(
          replica.Metric("kvindexer_fleet_records_total{result=\"trimmed\"}"),
          0)
          << "replica " << i;
      EXPECT_EQ(replica.Metric(
                    "kvindexer_fleet_records_total{result=\"undecodable\"}"),
                0)
          << "replica " << i;
      const std::optional<ReplicaDigest> digest = replica.Digest(universe);
      ASSERT_TRUE(digest.has_value()) << "replica " << i;
      EXPECT_EQ(PlacementPart(*digest), ModelPlacements(workers_))
          << "replica " << i << " differs from the model";
      // Each worker is sequenced at its publisher's last batch, exact, and
      // holds as many blocks as its model.
      for (const auto& w : workers_) {
        EXPECT_EQ(
            WorkerLine(*digest, w->id()),
            absl::StrCat("worker ", w->id(), " address=", w->address(),
                         " state=SEQUENCE_STATE_SEQUENCED epoch= applied_seq=",
                         w->batches() - 1,
                         " ready=1 configured=0 fidelity=FIDELITY_EXACT "
                         "reason=\"\" heartbeat_marked=0 heartbeat_ttl_ms=0 "
                         "spec= placements=TIER_HBM:",
                         w->model().size(), " counts_known=1"))
            << "replica " << i;
      }
      if (!first.has_value()) {
        first = digest;
        continue;
      }
      EXPECT_EQ(digest->hash, first->hash)
          << "replica " << i << " differs from replica 0 at "
          << FirstDifference(*first, *digest);
    }
  }

  void NodeDiesWhileStreaming(bool leader);

  // Waits until every bridge has made `appends` more successful appends
  // (kvindexer_bridge_apply_rpcs_total) than it had, for `bound` at most
  // each.
  ::testing::AssertionResult BridgesAppendMore(
      double appends, std::chrono::milliseconds bound = kFleetBound) {
    constexpr char kAppends[] = "kvindexer_bridge_apply_rpcs_total";
    for (const auto& w : workers_) {
      const double target = w->BridgeMetric(kAppends).value_or(0) + appends;
      std::optional<double> now;
      if (!WaitUntil(
              [&] {
                now = w->BridgeMetric(kAppends);
                return now.value_or(0) >= target;
              },
              bound, 20ms)) {
        return ::testing::AssertionFailure()
               << w->id() << " made " << now.value_or(-1) << " of " << target
               << " appends";
      }
    }
    return ::testing::AssertionSuccess();
  }

  // For failure messages: /jsz?consumers=true of every cluster node still
  // running, and what every node (the dead one too) logged about leaders,
  // warnings and errors.
  std::string ConsumerReport() {
    std::string out;
    for (int n = 0; n < NatsCluster::kNodes; ++n) {
      NatsServer& node = cluster_->node(n);
      if (node.Running()) {
        absl::StatusOr<test_support::HttpResponse> jsz = test_support::HttpGet(
            node.monitor_port(), "/jsz?consumers=true", 2s);
        absl::StrAppend(&out, "--- n", n + 1, "\n",
                        jsz.ok() ? jsz->body : jsz.status().ToString(), "\n");
      }
      absl::StrAppend(&out, "--- n", n + 1, "'s log (leaders, warnings)\n",
                      NotableLines(node.Output(), 80));
    }
    return out;
  }

  // The last `max` lines of a nats-server log that name a leader or are
  // warnings or errors.
  static std::string NotableLines(const std::string& log, size_t max) {
    std::vector<absl::string_view> lines;
    for (const absl::string_view line : absl::StrSplit(log, '\n')) {
      if (absl::StrContains(line, "[WRN]") ||
          absl::StrContains(line, "[ERR]") ||
          absl::StrContains(line, "leader") ||
          absl::StrContains(line, "Leader")) {
        lines.push_back(line);
      }
    }
    const size_t from = lines.size() > max ? lines.size() - max : 0;
    std::string out;
    for (size_t i = from; i < lines.size(); ++i) {
      absl::StrAppend(&out, lines[i], "\n");
    }
    return out;
  }

  std::unique_ptr<NatsServer> nats_;
  std::unique_ptr<NatsCluster> cluster_;
  FleetLogTarget log_;
  std::vector<std::unique_ptr<FleetReplica>> replicas_;
  std::vector<std::unique_ptr<FleetWorker>> workers_;
  std::unique_ptr<TrafficStreamer> streamer_;  // stopped before the rest go
};

// Two replicas fed by two bridges hold the same contents, the model's.
TEST_F(FleetE2eTest, TwoReplicasOfTwoBridgesHoldTheSame) {
  ASSERT_NO_FATAL_FAILURE(StartNats());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(StreamFor(150));
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
  for (const auto& replica : replicas_) {
    EXPECT_EQ(replica->Health(), kHealthServing);
    // Nothing left to read (an idle bridge's probe may be on its way).
    EXPECT_TRUE(WaitUntil(
        [&] { return replica->Metric("kvindexer_fleet_lag_records") == 0; },
        kFleetBound, 20ms));
  }
}

// A replica killed while the bridges stream, started again, catches up:
// NOT_SERVING until then, SERVING after, and the same contents as the one
// that ran throughout.
TEST_F(FleetE2eTest, AKilledReplicaCatchesUpAfterItsRestart) {
  ASSERT_NO_FATAL_FAILURE(StartNats());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(AppliesMore(*replicas_[1], 100));
  replicas_[1]->Kill();
  // The log grows while it is down.
  ASSERT_TRUE(AppliesMore(*replicas_[0], 200));
  replicas_[1].reset();
  absl::StatusOr<std::unique_ptr<FleetReplica>> restarted =
      FleetReplica::Start(log_);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  replicas_[1] = *std::move(restarted);
  // It may have caught up before the first probe; it must be SERVING once
  // it has.
  bool saw_not_serving = false;
  uint64_t health = 0;
  ASSERT_TRUE(WaitUntil(
      [&] {
        health = replicas_[1]->Health();
        saw_not_serving |= health == kHealthNotServing;
        return health == kHealthServing;
      },
      kFleetBound))
      << "health " << health;
  std::cerr << "the restarted replica was "
            << (saw_not_serving ? "seen" : "not seen")
            << " NOT_SERVING before SERVING\n";
  // It follows the live stream too, not only what was there at its start.
  ASSERT_TRUE(AppliesMore(*replicas_[1], 100));
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
  EXPECT_EQ(replicas_[1]->Health(), kHealthServing);
}

// How long the log may take to accept appends again after a node of the
// cluster is killed. A new stream leader is elected within seconds, but
// publishes can go unanswered ("no responders") for a while after that:
// under a loaded CI run the appends of one run stopped for more than 20 s
// (the replicas read again after 10 s), and a passing run took 29 s instead
// of the usual 10. The bridges retry without losing anything meanwhile,
// which is what these tests check; the bound only has to be above the
// failover.
constexpr std::chrono::milliseconds kFailoverBound = 60s;

// With the log on an R=3 NATS cluster, a node killed while the bridges
// stream loses no acknowledged batch: the replicas end up holding
// everything the publishers published. `leader`: the stream's leader dies,
// otherwise another node.
void FleetE2eTest::NodeDiesWhileStreaming(bool leader) {
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster = NatsCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  cluster_ = *std::move(cluster);
  log_ = FleetLogTarget{.urls = cluster_->urls(), .replicas = 3};
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(AppliesMore(*replicas_[0], 100));
  absl::StatusOr<std::string> stream_leader = FleetStreamLeader(log_);
  ASSERT_TRUE(stream_leader.ok()) << stream_leader.status();
  ASSERT_THAT(*stream_leader, ::testing::MatchesRegex("n[123]"));
  const int leader_node = (*stream_leader)[1] - '1';
  const int victim = leader ? leader_node : (leader_node + 1) % 3;
  cluster_->node(victim).Kill();
  // The two nodes left are a quorum: the log goes on growing, and both
  // replicas go on reading it.
  for (size_t i = 0; i < replicas_.size(); ++i) {
    ASSERT_TRUE(AppliesMore(*replicas_[i], 200, kFailoverBound))
        << "replica " << i << " after node n" << victim + 1
        << " died; the consumers as the nodes left see them:\n"
        << ConsumerReport();
  }
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
}

// A node of the R=3 cluster dies while the bridges stream and both replicas
// read: the two nodes left are a quorum, so the replicas read on (their
// consumers keep as many copies as the stream) and end identical.
TEST_F(FleetE2eTest, AClusterLosesNoBatchWhenAFollowerNodeDies) {
  NodeDiesWhileStreaming(/*leader=*/false);
}

TEST_F(FleetE2eTest, AClusterLosesNoBatchWhenTheStreamLeaderDies) {
  NodeDiesWhileStreaming(/*leader=*/true);
}

// The bridges' side of the above without the replicas' reading through the
// failure: the stream's leader of an R=3 cluster dies while the bridges
// stream, the bridges go on appending to the two nodes left, and replicas
// started afterwards read everything the publishers published.
TEST_F(FleetE2eTest, AClusterKeepsEveryBatchWhenTheStreamLeaderDies) {
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster = NatsCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  cluster_ = *std::move(cluster);
  log_ = FleetLogTarget{.urls = cluster_->urls(), .replicas = 3};
  // A replica's first start creates the snapshot stream and the lease
  // bucket with three replicas, which needs every node.
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  replicas_.front()->Kill();
  replicas_.clear();
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(BridgesAppendMore(100));
  absl::StatusOr<std::string> stream_leader = FleetStreamLeader(log_);
  ASSERT_TRUE(stream_leader.ok()) << stream_leader.status();
  ASSERT_THAT(*stream_leader, ::testing::MatchesRegex("n[123]"));
  cluster_->node((*stream_leader)[1] - '1').Kill();
  // The two nodes left are a quorum: the bridges' appends go on.
  ASSERT_TRUE(BridgesAppendMore(200, kFailoverBound));
  streamer_->Stop();
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
}

// A NATS server that hangs (SIGSTOP): the bridges buffer what their
// publishers go on publishing, the replicas go on answering with what they
// had. After SIGCONT both sides recover, the replicas hold everything and
// are SERVING. (How soon a silent replica turns NOT_SERVING:
// replica_partition_e2e_test.cc.)
TEST_F(FleetE2eTest, AHungNatsServerStallsTheLogButNotTheReplicas) {
  ASSERT_NO_FATAL_FAILURE(StartNats());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartReplica());
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(StreamFor(50));
  const uint64_t before = Converge();
  const std::vector<int64_t> universe_before = Universe(workers_);
  std::vector<std::set<int64_t>> held_before;
  for (const auto& w : workers_) held_before.push_back(w->model());

  ASSERT_TRUE(nats_->Pause());
  constexpr int kBatchesWhilePaused = 100;
  for (int i = 0; i < kBatchesWhilePaused; ++i) {
    for (const auto& w : workers_) w->PublishRandomBatch();
  }
  // Each bridge holds what it has received in its live buffer: one batch
  // at most is in its hands, stuck in an append.
  for (const auto& w : workers_) {
    std::optional<double> buffered;
    EXPECT_TRUE(WaitUntil(
        [&] {
          buffered = w->BridgeMetric("kvindexer_bridge_live_buffer_batches");
          return buffered.value_or(0) >= kBatchesWhilePaused - 1;
        },
        kFleetBound, 20ms))
        << w->id() << " buffered " << buffered.value_or(-1);
  }
  // The replicas notice that the log does not answer (their reads time
  // out after KV_INDEXER_NATS_TIMEOUT_MS)...
  for (size_t r = 0; r < replicas_.size(); ++r) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          return replicas_[r]->Metric("kvindexer_fleet_log_reachable") == 0;
        },
        kFleetBound, 20ms))
        << "replica " << r;
  }
  // ... and answer queries, with what they held before.
  for (size_t r = 0; r < replicas_.size(); ++r) {
    for (size_t i = 0; i < workers_.size(); ++i) {
      const std::optional<std::set<int64_t>> held =
          replicas_[r]->Held(workers_[i]->id(), universe_before);
      ASSERT_TRUE(held.has_value()) << "replica " << r;
      EXPECT_EQ(*held, held_before[i]) << "replica " << r;
    }
  }

  ASSERT_TRUE(nats_->Resume());
  const uint64_t end = Converge();
  EXPECT_GE(end, before + kWorkers * kBatchesWhilePaused);
  ExpectIdenticalReplicas(end);
  for (size_t r = 0; r < replicas_.size(); ++r) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          return replicas_[r]->Metric("kvindexer_fleet_log_reachable") == 1;
        },
        kFleetBound, 20ms))
        << "replica " << r;
    // Silent for longer than KV_INDEXER_FLEET_MAX_SILENCE_MS, a replica is
    // NOT_SERVING until it has read what was appended meanwhile.
    EXPECT_TRUE(
        WaitUntil([&] { return replicas_[r]->Health() == kHealthServing; },
                  kFleetBound, 20ms))
        << "replica " << r;
  }
}

// A replica started after the log was trimmed behind a snapshot loads the
// snapshot, reads the log after it, and holds what the replica that wrote
// it holds.
TEST_F(FleetE2eTest, AReplicaStartedAfterATrimLoadsTheSnapshot) {
  ASSERT_NO_FATAL_FAILURE(StartNats());
  // The first replica writes a snapshot every second and keeps one, so the
  // log is trimmed up to it.
  ASSERT_NO_FATAL_FAILURE(
      StartReplica({{"KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS", "1000"},
                    {"KV_INDEXER_FLEET_SNAPSHOT_KEEP", "1"}}));
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(StreamFor(100));
  const uint64_t snapshotted = Converge();
  FleetReplica& writer = *replicas_.front();
  std::optional<double> last_snapshot;
  ASSERT_TRUE(WaitUntil(
      [&] {
        last_snapshot = writer.Metric("kvindexer_fleet_snapshot_last_position");
        return last_snapshot.value_or(0) >= snapshotted;
      },
      kFleetBound, 50ms))
      << "last snapshot at " << last_snapshot.value_or(-1) << ", log end "
      << snapshotted;
  EXPECT_TRUE(writer.process().WaitForOutput("snapshot written", kFleetBound));
  absl::StatusOr<uint64_t> first = FleetLogFirst(log_);
  ASSERT_TRUE(WaitUntil(
      [&] {
        first = FleetLogFirst(log_);
        return first.ok() && *first > 1;
      },
      kFleetBound, 50ms))
      << "the log was not trimmed: "
      << (first.ok() ? absl::StrCat("first position ", *first)
                     : first.status().ToString());
  // More batches, which the new replica must read from the log.
  StartStreaming();
  ASSERT_TRUE(StreamFor(50));
  streamer_->Stop();

  ASSERT_NO_FATAL_FAILURE(StartReplica());
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
  FleetReplica& joined = *replicas_.back();
  const std::optional<double> loaded =
      joined.Metric("kvindexer_fleet_snapshot_loaded_position");
  EXPECT_GE(loaded.value_or(0), snapshotted);
  EXPECT_EQ(joined.Health(), kHealthServing);
}

// A replica that was stopped (SIGSTOP) while snapshots were written and
// the log was trimmed behind them finds, when it runs again, that records
// it still needed are gone: it reloads the newest snapshot, reads on from
// there and ends holding what the writer holds, without a restart.
TEST_F(FleetE2eTest, AReplicaThatSleptThroughATrimReloadsTheSnapshot) {
  ASSERT_NO_FATAL_FAILURE(StartNats());
  ASSERT_NO_FATAL_FAILURE(
      StartReplica({{"KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS", "1000"},
                    {"KV_INDEXER_FLEET_SNAPSHOT_KEEP", "1"}}));
  // The sleeper writes no snapshots, so the lease stays with the writer.
  ASSERT_NO_FATAL_FAILURE(
      StartReplica({{"KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS", "0"}}));
  ASSERT_NO_FATAL_FAILURE(StartWorkers());
  StartStreaming();
  ASSERT_TRUE(StreamFor(30));
  const uint64_t before = Converge();
  FleetReplica& sleeper = *replicas_.back();
  ASSERT_TRUE(sleeper.process().Signal(SIGSTOP));

  StartStreaming();
  ASSERT_TRUE(StreamFor(100));
  streamer_->Stop();
  // Trimmed well past where the sleeper stopped (an idle bridge's probes
  // may have moved it a few positions on).
  absl::StatusOr<uint64_t> first = FleetLogFirst(log_);
  ASSERT_TRUE(WaitUntil(
      [&] {
        first = FleetLogFirst(log_);
        return first.ok() && *first > before + 50;
      },
      kFleetBound, 50ms))
      << "the log was not trimmed past " << before + 50 << ": "
      << (first.ok() ? absl::StrCat("first position ", *first)
                     : first.status().ToString());

  ASSERT_TRUE(sleeper.process().Signal(SIGCONT));
  const uint64_t end = Converge();
  ExpectIdenticalReplicas(end);
  EXPECT_GE(
      sleeper
          .Metric("kvindexer_fleet_snapshot_reloads_total{result=\"loaded\"}")
          .value_or(0),
      1);
  EXPECT_TRUE(WaitUntil([&] { return sleeper.Health() == kHealthServing; },
                        kFleetBound, 20ms));
}

}  // namespace
}  // namespace kvindexer::bridge::testing
