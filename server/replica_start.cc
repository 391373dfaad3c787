#include "server/replica_start.h"

#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "durable/startup_bulk_load.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/fleet_epoch.h"
#include "fleet/jetstream_fleet.h"
#include "fleet/snapshot_store.h"
#include "fmt/format.h"
#include "replica/applied_outcomes.h"
#include "replica/commit_capture_log.h"
#include "replica/event_source_config.h"
#include "replica/eviction_proposer.h"
#include "replica/log_follower.h"
#include "replica/replica_liveness.h"
#include "replica/replica_snapshot.h"
#include "replica/snapshot_scheduler.h"
#include "replica/write_through.h"
#include "server/server_mode.h"
#include "server/server_runner.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// This process's name among the fleet's replicas, in the snapshot lease and
// in the manifests it writes: host, pid and a random part, so that a
// restarted replica never takes its old lease for its own.
std::string ReplicaName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  std::random_device random;
  return fmt::format("{}-{}-{:08x}", host[0] != '\0' ? host : "replica",
                     ::getpid(), random());
}

// How a replica's follower gets back to a whole index after the log was
// trimmed under it (replica::LogFollowerOptions::reload); null without a store.
std::function<absl::StatusOr<std::optional<uint64_t>>()> SnapshotReload(
    fleet::SnapshotStore* store, Indexer& indexer, ServerMetrics* metrics) {
  if (store == nullptr) return nullptr;
  return
      [store, &indexer, metrics]() -> absl::StatusOr<std::optional<uint64_t>> {
        const auto started = std::chrono::steady_clock::now();
        absl::StatusOr<std::optional<::kvindexer::fleet::v1::SnapshotManifest>>
            loaded = replica::ReloadNewestSnapshot(
                *store, indexer.durable_state(), indexer.operator_view());
        if (!loaded.ok()) return loaded.status();
        if (!loaded->has_value()) return std::nullopt;
        const ::kvindexer::fleet::v1::SnapshotManifest& manifest = **loaded;
        spdlog::info(
            "reloaded fleet snapshot id={} position={} parts={} bytes={} "
            "workers={} seconds={:.3f}",
            manifest.id(), manifest.position(), manifest.parts(),
            manifest.bytes(), indexer.durable_state().worker_count(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                          started)
                .count());
        if (metrics != nullptr) {
          metrics->SetLoadedSnapshotPosition(manifest.position());
        }
        return manifest.position();
      };
}

// The log follower and the snapshot scheduler beside the gRPC server. A
// replica answers reads at once but is NOT_SERVING until it has caught up
// with the log, and whenever it lags by more than the bound; it sweeps
// liveness only while it hears the log (docs/fleet.md, "Worker liveness on
// replicas").
class ReplicaMode final : public ServerMode {
 public:
  // REQUIRES: `wiring`, `log` and, when set, `snapshots` and `lease`
  // outlive the mode.
  // `outcomes` (null: none) is told what the follower applies, for the
  // write-through; `name` is this replica's among the fleet's.
  ReplicaMode(ServerWiring& wiring, fleet::EventLog& log,
              fleet::SnapshotStore* snapshots, fleet::LeaseRegister* lease,
              uint64_t follow_from, replica::AppliedOutcomes* outcomes,
              std::string name)
      : wiring_(wiring),
        log_(log),
        snapshots_(snapshots),
        lease_(lease),
        follow_from_(follow_from),
        outcomes_(outcomes),
        name_(std::move(name)) {}
  // The metrics stop reading the follower and the proposer before they go.
  ~ReplicaMode() override {
    if (ServerMetrics* metrics = wiring_.metrics()) {
      metrics->SetLogFollower(nullptr);
      metrics->SetEvictionProposer(nullptr);
    }
  }

  void Attach(ServingHealth& health) override {
    const replica::EventSourceConfig& event_source =
        wiring_.config().event_source;
    Indexer& indexer = wiring_.indexer();
    // An index-wide bound is kept through the log (docs/fleet.md, "The
    // placement bound on replicas").
    std::function<void(uint64_t, bool)> after_pass;
    if (wiring_.config().limits.placement_bound.max_placements != 0) {
      proposer_ = std::make_unique<replica::EvictionProposer>(
          log_, indexer.operator_view(), name_);
      after_pass = [proposer = proposer_.get()](uint64_t applied,
                                                bool at_head) {
        proposer->AfterPass(applied, at_head);
      };
      if (ServerMetrics* metrics = wiring_.metrics()) {
        metrics->SetEvictionProposer(proposer_.get());
      }
    }
    follower_ = std::make_unique<replica::LogFollower>(
        log_, indexer,
        replica::LogFollowerOptions{
            .start_position = follow_from_,
            .max_lag_records = event_source.max_lag_records,
            .max_silence = event_source.max_silence,
            .on_readiness =
                [&health](std::optional<std::string> behind) {
                  health.LogFollowing(std::move(behind));
                },
            .reload = SnapshotReload(snapshots_, indexer, wiring_.metrics()),
            .outcomes = outcomes_,
            .payloads = snapshots_,
            .after_pass = std::move(after_pass),
        });
    health.LogFollowing(follower_->NotReadyReason());
    if (ServerMetrics* metrics = wiring_.metrics()) {
      metrics->SetLogFollower(follower_.get());
    }
  }

  void Start() override {
    follower_->Start();
    // Snapshot writing (docs/fleet.md, "Snapshots"): every replica competes
    // for the lease; the holder writes one each interval.
    const replica::EventSourceConfig& event_source =
        wiring_.config().event_source;
    if (snapshots_ == nullptr || lease_ == nullptr ||
        event_source.snapshots.interval_ms == 0) {
      return;
    }
    replica::SnapshotRoundOptions round;
    round.writer = name_;
    round.limits = wiring_.config().limits;
    spdlog::info(
        "fleet snapshots: replica {} competes for the lease; interval_ms={} "
        "keep={} lease_ttl_ms={}",
        round.writer, event_source.snapshots.interval_ms,
        event_source.snapshots.keep, event_source.snapshots.lease_ttl_ms);
    scheduler_ = std::make_unique<replica::SnapshotScheduler>(
        &log_, snapshots_, lease_, event_source.snapshots, std::move(round),
        &MonotonicClock::Real(), [] {
          return std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
              .count();
        });
    if (ServerMetrics* metrics = wiring_.metrics()) {
      metrics->SetSnapshotScheduler(scheduler_.get());
    }
    scheduler_->Start();
  }

  // Only while the replica hears the log: caught up and in contact.
  bool MaySweep(MonotonicClock::TimePoint now) override {
    return liveness_.BeforeSweep(
        follower_->in_contact() && follower_->caught_up(),
        wiring_.indexer().operator_view(), now);
  }

  std::optional<std::string> NotReadyReason() const override {
    if (follower_ == nullptr) return std::nullopt;
    return follower_->NotReadyReason();
  }

  bool CaughtUpWithLog() const override {
    return follower_ != nullptr && follower_->caught_up();
  }

  void Stop() override {
    // Before the log it reads; gives the lease up for another replica.
    if (scheduler_ != nullptr) {
      if (ServerMetrics* metrics = wiring_.metrics()) {
        metrics->SetSnapshotScheduler(nullptr);
      }
      scheduler_->Stop();
    }
    // Before `health`, which it reports to, and the Indexer go.
    follower_->Stop();
  }

 private:
  ServerWiring& wiring_;
  fleet::EventLog& log_;
  fleet::SnapshotStore* const snapshots_;
  fleet::LeaseRegister* const lease_;
  const uint64_t follow_from_;
  replica::AppliedOutcomes* const outcomes_;
  const std::string name_;
  // Set by Attach with an index-wide bound; called by the follower only.
  std::unique_ptr<replica::EvictionProposer> proposer_;
  // Set by Attach; reads log_ and goes before it.
  std::unique_ptr<replica::LogFollower> follower_;
  // Set by Start when snapshots are written.
  std::unique_ptr<replica::SnapshotScheduler> scheduler_;
  // The sweeper's thread only.
  replica::ReplicaLiveness liveness_;
};

}  // namespace

int RunReplica(ServerWiring& wiring) {
  const replica::EventSourceConfig& event_source = wiring.config().event_source;
  Indexer& indexer = wiring.indexer();
  // LoadServerConfig refuses a data directory with jetstream.
  spdlog::info(
      "{}=jetstream: a replica of the fleet event log stream={} urls={} "
      "max_lag_records={}; seed-era writes are refused",
      replica::kEventSourceVar, event_source.log->stream,
      fleet::RedactedNatsUrls(event_source.log->nats.urls),
      event_source.max_lag_records);
  fleet::FleetOpenRetry open_retry;
  open_retry.attempts = static_cast<int>(event_source.open_attempts);
  auto opened = fleet::OpenJetStreamFleet(*event_source.log, open_retry);
  if (!opened.ok()) {
    spdlog::error("cannot open the fleet event log ({}=jetstream): {}",
                  replica::kEventSourceVar, opened.status().ToString());
    wiring.StopMetricsEndpoint();
    return kExitFailure;
  }
  // The log, the snapshot store and the lease outlive the mode, whose
  // follower and scheduler read them.
  const std::unique_ptr<fleet::EventLog> event_log = std::move(opened->log);
  const std::unique_ptr<fleet::SnapshotStore> snapshot_store =
      std::move(opened->snapshots);
  const std::unique_ptr<fleet::LeaseRegister> lease_register =
      std::move(opened->lease);
  // One epoch per log (docs/fleet.md, "One epoch per log"): every replica
  // computes the same one, before it serves.
  if (const std::optional<fleet::LogIdentity> identity =
          event_log->identity()) {
    indexer.durable_state().SetIndexerEpoch(fleet::FleetEpoch(*identity));
    spdlog::info(
        "indexer epoch {} (stream {} subject prefix {} created {} ns after "
        "the Unix epoch)",
        indexer.operations().IndexerEpoch(), identity->stream,
        identity->subject_prefix, identity->created_unix_ns);
  }
  // The newest snapshot goes in before the address is bound, as a bulk
  // load of the backend (nobody can read it yet); the log is followed from
  // the position after it.
  absl::StatusOr<replica::ReplicaStart> start = replica::ReplicaStart{};
  if (snapshot_store != nullptr) {
    durable::StartupBulkLoad bulk_load(wiring.backend().backend(),
                                       wiring.backend().abi_minor());
    start = replica::LoadNewestSnapshot(
        *snapshot_store, indexer.durable_state(), indexer.operator_view());
    if (absl::Status published = bulk_load.Finish();
        !published.ok() && start.ok()) {
      start = std::move(published);
    }
  }
  if (!start.ok()) {
    spdlog::error("{}=jetstream: {}", replica::kEventSourceVar,
                  start.status().ToString());
    wiring.StopMetricsEndpoint();
    return kExitFailure;
  }
  if (start->snapshot.has_value()) {
    spdlog::info(
        "loaded fleet snapshot id={} position={} parts={} bytes={} "
        "workers={} seconds={:.3f}",
        start->snapshot->id(), start->snapshot->position(),
        start->snapshot->parts(), start->snapshot->bytes(),
        indexer.durable_state().worker_count(), start->seconds);
    if (ServerMetrics* metrics = wiring.metrics()) {
      metrics->SetLoadedSnapshotPosition(start->snapshot->position());
    }
  } else {
    spdlog::info("no fleet snapshot yet: following the log from its start");
  }
  const std::string name = ReplicaName();
  // Line-A writes through the log (docs/fleet.md, "Writes through a
  // replica"): the Indexer's staged commits are captured for the log, and
  // the follower tells the write-through what it applied.
  replica::CommitCaptureLog capture_log;
  replica::AppliedOutcomes outcomes;
  // The index holds the snapshot's position exactly: a heartbeat arriving
  // before any later record is applied is answered here.
  if (start->snapshot.has_value()) {
    outcomes.Reloaded(start->snapshot->position());
  }
  std::optional<replica::WriteThrough> write_through;
  if (event_source.line_a_writes) {
    indexer.durable_state().AttachLog(&capture_log);
    write_through.emplace(indexer, *event_log, outcomes,
                          replica::WriteThroughOptions{
                              .producer = name,
                              .limits = wiring.config().limits,
                              .payloads = snapshot_store.get(),
                          });
    wiring.WriteThroughLog(&*write_through);
    spdlog::info(
        "line-A writes and staged snapshot commits are written through to "
        "the fleet event log as {}; other writes are refused ({}=1)",
        name, replica::kFleetLineAWritesVar);
  } else {
    spdlog::info("every write is refused, line-A writes included ({}=0)",
                 replica::kFleetLineAWritesVar);
  }
  ReplicaMode mode(wiring, *event_log, snapshot_store.get(),
                   lease_register.get(), start->follow_from,
                   event_source.line_a_writes ? &outcomes : nullptr, name);
  const int exit_code = wiring.Serve(wiring.MakeAdminSources(), mode);
  // The capture log goes with this scope; the Indexer takes no mutation
  // after this.
  if (event_source.line_a_writes) indexer.durable_state().AttachLog(nullptr);
  return exit_code;
}

}  // namespace kvindexer
