// Tests of NatsServer and NatsCluster (tests/support/nats_server.h) with
// the real nats-server; skipped when none is installed.
#include "tests/support/nats_server.h"

#include <chrono>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/http_get.h"

namespace kvindexer::test_support {
namespace {

using namespace std::chrono_literals;

bool Healthy(int monitor_port) {
  absl::StatusOr<HttpResponse> health =
      HttpGet(monitor_port, "/healthz", 500ms);
  return health.ok() && health->status == 200;
}

TEST(NatsServerTest, StartsPausesKillsAndRestartsOnTheSamePort) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  NatsServer& server = **nats;
  EXPECT_EQ(server.url(), "nats://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_TRUE(Healthy(server.monitor_port()));

  ASSERT_TRUE(server.Pause());
  EXPECT_FALSE(Healthy(server.monitor_port()));  // cannot answer
  ASSERT_TRUE(server.Resume());
  EXPECT_TRUE(WaitUntil([&] { return Healthy(server.monitor_port()); }, 10s));

  const int port = server.port();
  server.Kill();
  EXPECT_FALSE(server.Running());
  EXPECT_FALSE(Healthy(server.monitor_port()));
  ASSERT_TRUE(server.Restart().ok());
  EXPECT_EQ(server.port(), port);
  EXPECT_TRUE(Healthy(server.monitor_port()));

  EXPECT_TRUE(server.Stop().ok());
  EXPECT_FALSE(server.Running());
}

TEST(NatsServerTest, AClusterElectsAMetaLeaderAndListsEveryNode) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster = NatsCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::string expected;
  for (int i = 0; i < NatsCluster::kNodes; ++i) {
    NatsServer& node = (*cluster)->node(i);
    absl::StatusOr<HttpResponse> jsz = HttpGet(node.monitor_port(), "/jsz");
    ASSERT_TRUE(jsz.ok()) << jsz.status();
    EXPECT_THAT(jsz->body, ::testing::HasSubstr("\"meta_cluster\""));
    EXPECT_THAT(jsz->body, ::testing::ContainsRegex("\"leader\": *\"n[123]\""));
    if (i > 0) expected += ",";
    expected += node.url();
  }
  EXPECT_EQ((*cluster)->urls(), expected);
}

TEST(NatsServerBinaryTest, TheVariableWins) {
  setenv("KV_INDEXER_TEST_NATS_SERVER", "/opt/elsewhere/nats-server", 1);
  EXPECT_EQ(NatsServerBinary(), "/opt/elsewhere/nats-server");
  unsetenv("KV_INDEXER_TEST_NATS_SERVER");
}

}  // namespace
}  // namespace kvindexer::test_support
