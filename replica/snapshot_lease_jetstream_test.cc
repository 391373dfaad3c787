// SnapshotLease (replica/snapshot_lease.h) over the JetStream lease register
// (fleet/jetstream_lease_register.h) on a real nats-server (skipped when none
// is installed): two replicas, each with its own connection, on the real
// clock.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "fleet/fleet_config.h"
#include "fleet/lease_register.h"
#include "gtest/gtest.h"
#include "replica/snapshot_lease.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"

namespace kvindexer::replica {
namespace snapshot_lease_jetstream_test {

using namespace std::chrono_literals;
using test_support::NatsServer;

// --- The JetStream register only ---------------------------------------

class JetStreamLeaseTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }
};

// Two replicas, each with its own connection, on the real clock.
TEST_F(JetStreamLeaseTest, OneHolderAtATimeAndTakeOverAfterSilence) {
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const fleet::EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "LEASEJS");
  absl::StatusOr<std::unique_ptr<fleet::LeaseRegister>> reg_a =
      test_support::OpenLeaseRegisterOnOwnConnection(config);
  absl::StatusOr<std::unique_ptr<fleet::LeaseRegister>> reg_b =
      test_support::OpenLeaseRegisterOnOwnConnection(config);
  ASSERT_TRUE(reg_a.ok()) << reg_a.status();
  ASSERT_TRUE(reg_b.ok()) << reg_b.status();
  const MonotonicClock& clock = MonotonicClock::Real();
  constexpr auto kTtl = 300ms;
  SnapshotLease a(reg_a->get(), "replica-a", kTtl, &clock);
  SnapshotLease b(reg_b->get(), "replica-b", kTtl, &clock);

  ASSERT_TRUE(a.Tick()) << a.last_error();
  EXPECT_FALSE(b.Tick());
  // While a renews, b never takes it: watch for two TTLs. The start of
  // the Tick that wrote a's last revision bounds when b first saw it.
  const auto watch_until = std::chrono::steady_clock::now() + 2 * kTtl;
  uint64_t revision = (*reg_a)->Get().value()->revision;
  auto last_write_start = std::chrono::steady_clock::now();
  int renewals = 0;
  while (std::chrono::steady_clock::now() < watch_until) {
    const auto tick_start = std::chrono::steady_clock::now();
    ASSERT_TRUE(a.Tick()) << a.last_error();
    absl::StatusOr<std::optional<fleet::LeaseRegister::Entry>> seen =
        (*reg_a)->Get();
    ASSERT_TRUE(seen.ok() && seen->has_value()) << seen.status();
    EXPECT_EQ((*seen)->value, "replica-a");
    if ((*seen)->revision != revision) {
      revision = (*seen)->revision;
      last_write_start = tick_start;
      ++renewals;
    }
    ASSERT_FALSE(b.Tick()) << "b took the lease from a live holder";
    ASSERT_TRUE(b.last_error().ok()) << b.last_error();
  }
  EXPECT_GE(renewals, 3);

  // a falls silent: b takes over, but not before a TTL has passed since
  // a's last write.
  bool taken = false;
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (!taken && std::chrono::steady_clock::now() < give_up) {
    taken = b.Tick();
  }
  ASSERT_TRUE(taken) << b.last_error();
  EXPECT_GE(std::chrono::steady_clock::now() - last_write_start, kTtl);
  EXPECT_EQ((*reg_b)->Get().value()->value, "replica-b");
  // a comes back: its renewal fails and it steps down.
  EXPECT_FALSE(a.Tick());
  EXPECT_FALSE(a.held());

  // A released lease is taken at once.
  b.Release();
  EXPECT_TRUE(a.Tick()) << a.last_error();
  EXPECT_FALSE(b.Tick());
}

}  // namespace snapshot_lease_jetstream_test
}  // namespace kvindexer::replica
