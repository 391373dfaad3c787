// DurabilityTest: the fixture the durability e2e tests share. Each test gets
// a scratch directory with the server's data directory in it
// (options_.data_dir), and checks what a DurableServer holds against the
// reference model of a GatedWorkerStream.
//
// Thread safety: the test's thread only.
#ifndef KVINDEXER_TESTS_E2E_DURABILITY_FIXTURE_H_
#define KVINDEXER_TESTS_E2E_DURABILITY_FIXTURE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::e2e {

class DurabilityTest : public ::testing::Test {
 protected:
  // `scratch_prefix` names the test's scratch directory.
  explicit DurabilityTest(std::string scratch_prefix)
      : scratch_prefix_(std::move(scratch_prefix)) {}

  // Creates scratch_ and sets options_.data_dir inside it. A subclass that
  // overrides SetUp calls this first and returns on a fatal failure.
  void SetUp() override;

  // The server holds exactly the model of applies 1..seq (reads only).
  static void ExpectPlacementsAt(DurableServer& server,
                                 const GatedWorkerStream& stream, uint64_t seq);
  // The same, and its probe says seq.
  static void ExpectStateAt(DurableServer& server,
                            const GatedWorkerStream& stream, uint64_t seq);

  // The port of the server's metrics endpoint (started with
  // KV_INDEXER_METRICS_ADDR=127.0.0.1:0); 0 when it does not say.
  static int MetricsPort(DurableServer& server);
  // The durability part of the server's admin GetStats (a failed call is a
  // test failure and answers an empty message).
  static ::kvindexer::admin::v1::DurabilityInfo Durability(
      DurableServer& server);

  std::unique_ptr<test_support::ScratchDir> scratch_;
  DurableServerOptions options_;

 private:
  const std::string scratch_prefix_;
};

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_DURABILITY_FIXTURE_H_
