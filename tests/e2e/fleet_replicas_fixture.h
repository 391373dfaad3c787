// FleetReplicasTest: a GoogleTest fixture for end-to-end tests of fleet
// replicas (docs/fleet.md): a real nats-server on a loopback port started
// for each test (skipped when nats-server is not installed), the log target
// on it, and the replicas a test starts, whose output and the server's are
// printed when the test failed.
//
// Thread safety: the test's main thread only.
#ifndef KVINDEXER_TESTS_E2E_FLEET_REPLICAS_FIXTURE_H_
#define KVINDEXER_TESTS_E2E_FLEET_REPLICAS_FIXTURE_H_

#include <cstddef>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/e2e/fleet_e2e_harness.h"
#include "tests/support/nats_server.h"

namespace kvindexer::bridge::testing {

class FleetReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
    absl::StatusOr<std::unique_ptr<test_support::NatsServer>> nats =
        test_support::NatsServer::Start();
    ASSERT_TRUE(nats.ok()) << nats.status();
    nats_ = *std::move(nats);
    log_ = FleetLogTarget{.urls = nats_->url(), .replicas = 1};
  }

  void TearDown() override {
    if (!HasFailure()) return;
    for (size_t i = 0; i < replicas_.size(); ++i) {
      if (replicas_[i] != nullptr) {
        std::cerr << "--- replica " << i << "\n"
                  << replicas_[i]->process().Output();
      }
    }
    if (nats_ != nullptr) std::cerr << "--- nats\n" << nats_->Output();
  }

  // Starts a replica of log_ with `env`; null (with the failure recorded)
  // when it does not start.
  FleetReplica* StartReplica(std::map<std::string, std::string> env = {}) {
    absl::StatusOr<std::unique_ptr<FleetReplica>> replica =
        FleetReplica::Start(log_, std::move(env));
    EXPECT_TRUE(replica.ok()) << replica.status();
    if (!replica.ok()) return nullptr;
    replicas_.push_back(*std::move(replica));
    return replicas_.back().get();
  }

  std::unique_ptr<test_support::NatsServer> nats_;
  FleetLogTarget log_;
  std::vector<std::unique_ptr<FleetReplica>> replicas_;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_E2E_FLEET_REPLICAS_FIXTURE_H_
