// The LeaseRegister contract (fleet/lease_register.h), run against
// MemoryLeaseRegister, the reference, and the JetStream key-value driver
// (fleet/jetstream_lease_register.h) on a real nats-server (skipped when
// none is installed).
#include <chrono>
#include <memory>
#include <string>

#include "fleet/fleet_config.h"
#include "fleet/lease_register.h"
#include "gtest/gtest.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"

namespace kvindexer::fleet {
namespace lease_register_contract_test {

using namespace std::chrono_literals;
using test_support::NatsServer;

// A stream of its own for every register a test opens.
EventLogConfig FreshConfig(const std::string& url) {
  return test_support::FreshEventLogConfig({url}, "LEASECONTRACT");
}

class LeaseRegisterContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      reg_ = std::make_unique<MemoryLeaseRegister>();
      return;
    }
    KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
    absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
    ASSERT_TRUE(nats.ok()) << nats.status();
    absl::StatusOr<std::unique_ptr<LeaseRegister>> reg =
        test_support::OpenLeaseRegisterOnOwnConnection(
            FreshConfig((*nats)->url()));
    ASSERT_TRUE(reg.ok()) << reg.status();
    reg_ = *std::move(reg);
  }

  std::unique_ptr<LeaseRegister> reg_;
};

TEST_P(LeaseRegisterContractTest, NothingIsThereAtFirst) {
  absl::StatusOr<std::optional<LeaseRegister::Entry>> entry = reg_->Get();
  ASSERT_TRUE(entry.ok()) << entry.status();
  EXPECT_FALSE(entry->has_value());
}

TEST_P(LeaseRegisterContractTest, CreateWritesOnce) {
  absl::StatusOr<uint64_t> created = reg_->Create("a");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_GT(*created, 0u);
  absl::StatusOr<std::optional<LeaseRegister::Entry>> entry = reg_->Get();
  ASSERT_TRUE(entry.ok() && entry->has_value()) << entry.status();
  EXPECT_EQ((*entry)->value, "a");
  EXPECT_EQ((*entry)->revision, *created);
  EXPECT_EQ(reg_->Create("b").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reg_->Get().value()->value, "a");
}

TEST_P(LeaseRegisterContractTest, UpdateNeedsTheCurrentRevision) {
  absl::StatusOr<uint64_t> first = reg_->Create("a");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<uint64_t> second = reg_->Update("b", *first);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_GT(*second, *first);
  absl::StatusOr<uint64_t> stale = reg_->Update("c", *first);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition)
      << stale.status();
  EXPECT_EQ(reg_->Update("c", *second + 5).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // An empty value (a released lease) is a value like any other.
  absl::StatusOr<uint64_t> third = reg_->Update("", *second);
  ASSERT_TRUE(third.ok()) << third.status();
  absl::StatusOr<std::optional<LeaseRegister::Entry>> entry = reg_->Get();
  ASSERT_TRUE(entry.ok() && entry->has_value()) << entry.status();
  EXPECT_EQ((*entry)->value, "");
  EXPECT_EQ((*entry)->revision, *third);
}

TEST_P(LeaseRegisterContractTest, UpdateOfNothingNeedsRevisionZero) {
  EXPECT_EQ(reg_->Update("a", 7).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(reg_->Get().value().has_value());
}

INSTANTIATE_TEST_SUITE_P(Implementations, LeaseRegisterContractTest,
                         ::testing::Values("memory", "jetstream"),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

}  // namespace lease_register_contract_test
}  // namespace kvindexer::fleet
