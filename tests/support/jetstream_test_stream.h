// A JetStream stream of a test's own, for the tests of fleet/'s JetStream
// drivers and of what replica/ builds on them: its configuration, and the
// lease register or snapshot store on a connection of its own (as another
// replica has). Many tests share one nats-server
// (tests/support/nats_server.h, SharedNatsServer); their streams keep them
// apart.
//
// Header-only: the including test links kvindexer_fleet.
// Thread safety: every function may be called from any thread.
#ifndef KVINDEXER_TESTS_SUPPORT_JETSTREAM_TEST_STREAM_H_
#define KVINDEXER_TESTS_SUPPORT_JETSTREAM_TEST_STREAM_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_lease_register.h"
#include "fleet/jetstream_snapshot_store.h"
#include "fleet/lease_register.h"
#include "fleet/nats_connection.h"
#include "fleet/snapshot_store.h"

namespace kvindexer::test_support {

// The servers at `urls`, a 2-second NATS timeout, and a stream no other
// call of the process gets: "<stream_prefix>_<n>", subjects under
// "<stream_prefix in lower case><n>", n counting the calls.
inline fleet::EventLogConfig FreshEventLogConfig(
    std::vector<std::string> urls, const std::string& stream_prefix) {
  static std::atomic<int> counter{0};
  const int n = ++counter;
  fleet::EventLogConfig config;
  config.nats.urls = std::move(urls);
  config.nats.timeout_ms = 2000;
  config.stream = absl::StrCat(stream_prefix, "_", n);
  config.subject_prefix = absl::StrCat(absl::AsciiStrToLower(stream_prefix), n);
  return config;
}

// The JetStream lease register of `config`, on a new connection.
inline absl::StatusOr<std::unique_ptr<fleet::LeaseRegister>>
OpenLeaseRegisterOnOwnConnection(const fleet::EventLogConfig& config) {
  absl::StatusOr<std::shared_ptr<fleet::NatsClient>> client =
      fleet::NatsClient::Connect(config.nats);
  if (!client.ok()) return client.status();
  return fleet::OpenJetStreamLeaseRegister(*std::move(client), config);
}

// The JetStream snapshot store of `config`, on a new connection.
inline absl::StatusOr<std::unique_ptr<fleet::SnapshotStore>>
OpenSnapshotStoreOnOwnConnection(const fleet::EventLogConfig& config) {
  absl::StatusOr<std::shared_ptr<fleet::NatsClient>> client =
      fleet::NatsClient::Connect(config.nats);
  if (!client.ok()) return client.status();
  return fleet::OpenJetStreamSnapshotStore(*std::move(client), config);
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_JETSTREAM_TEST_STREAM_H_
