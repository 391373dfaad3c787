#include "fleet/jetstream_fleet.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "fleet/jetstream_event_log.h"
#include "fleet/jetstream_lease_register.h"
#include "fleet/jetstream_snapshot_store.h"
#include "fleet/nats_connection.h"
#include "spdlog/spdlog.h"

namespace kvindexer::fleet {
namespace {

// Runs `open` until it answers anything but UNAVAILABLE or `retry` is spent.
template <typename Open>
auto Retried(const FleetOpenRetry& retry, std::string_view what, Open open)
    -> decltype(open()) {
  std::chrono::milliseconds wait = retry.first_wait;
  const int attempts = std::max(retry.attempts, 1);
  for (int attempt = 1;; ++attempt) {
    auto opened = open();
    if (opened.ok() || !absl::IsUnavailable(opened.status()) ||
        attempt == attempts) {
      return opened;
    }
    spdlog::warn(
        "cannot open the fleet {} yet (attempt {} of {}): {}; "
        "trying again in {} ms",
        what, attempt, attempts, opened.status().ToString(), wait.count());
    if (retry.wait) {
      retry.wait(wait);
    } else {
      std::this_thread::sleep_for(wait);
    }
    wait *= 2;
  }
}

}  // namespace

absl::StatusOr<FleetStores> OpenJetStreamFleet(const EventLogConfig& config,
                                               const FleetOpenRetry& retry) {
  absl::StatusOr<std::shared_ptr<NatsClient>> client =
      Retried(retry, "NATS connection",
              [&] { return NatsClient::Connect(config.nats); });
  if (!client.ok()) return client.status();
  FleetStores stores;
  absl::StatusOr<std::unique_ptr<EventLog>> log =
      Retried(retry, "event log",
              [&] { return OpenJetStreamEventLogOn(*client, config); });
  if (!log.ok()) return log.status();
  stores.log = *std::move(log);
  absl::StatusOr<std::unique_ptr<SnapshotStore>> snapshots =
      Retried(retry, "snapshot store",
              [&] { return OpenJetStreamSnapshotStore(*client, config); });
  if (!snapshots.ok()) return snapshots.status();
  stores.snapshots = *std::move(snapshots);
  absl::StatusOr<std::unique_ptr<LeaseRegister>> lease =
      Retried(retry, "snapshot lease",
              [&] { return OpenJetStreamLeaseRegister(*client, config); });
  if (!lease.ok()) return lease.status();
  stores.lease = *std::move(lease);
  return stores;
}

}  // namespace kvindexer::fleet
