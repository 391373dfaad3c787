// End-to-end: a multi-stream kv-indexer-bridge whose entries have
// "discover": true, each worker's /server_info served by FakeServerInfo on
// loopback -> the real kv-indexer-server, checked with MatchExternalKv and
// ListWorkers. F40 (second half): an advertised block_size other than the
// entry's page_size parks only that stream, while the other follows the
// endpoint it discovered and adopts the advertised block size; an
// all_dp_ranks entry follows every advertised rank; a resynchronisation
// discovers again and follows a changed endpoint.
//
// No sleeps as synchronisation: the fake publishers report subscriptions,
// and batches are published again until their effect is visible, inside
// bounded loops.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/live_publisher.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/fake_server_info.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge {
namespace discovery_e2e {

using namespace std::chrono_literals;
using ::kvindexer::bridge::testing::Holds;
using ::kvindexer::bridge::testing::LivePublisher;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::RemoveEvent;
using ::kvindexer::bridge::testing::SeqFrame;
using ::kvindexer::bridge::testing::StoreEvent;
using ::kvindexer::test_support::AdvertisedKvEvents;
using ::kvindexer::test_support::FakeServerInfo;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;

constexpr auto kStartBound = 30s;
constexpr auto kEffectBound = 30s;

// The server's ListWorkers entry of `worker_id`/`dp_rank`, if listed.
std::optional<kvindexer::admin::v1::WorkerInfo> Listed(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& worker_id,
    uint32_t dp_rank) {
  auto admin = kvindexer::admin::v1::KvIndexerAdmin::NewStub(channel);
  kvindexer::admin::v1::ListWorkersResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  if (!admin->ListWorkers(&context, {}, &response).ok()) return std::nullopt;
  for (const auto& worker : response.workers()) {
    if (worker.worker_id() == worker_id && worker.dp_rank() == dp_rank) {
      return worker;
    }
  }
  return std::nullopt;
}

// The placements the stream `worker_id`/`dp_rank` holds in HBM.
uint64_t HbmPlacements(const kvindexer::admin::v1::WorkerInfo& worker) {
  for (const auto& count : worker.placements()) {
    if (count.tier() == kv_indexer::v1::TIER_HBM) return count.placements();
  }
  return 0;
}

// The real server, and a bridge following `workers_json`.
struct Deployment {
  e2e::ReadyServer server;
  std::unique_ptr<ServerProcess> bridge;
};

void Deploy(const std::string& workers_json, Deployment* out) {
  ProcessOptions server_options;
  server_options.binary = KVINDEXER_SERVER_BINARY;
  server_options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                              "KV_INDEXER_LOG_LEVEL",
                              "KV_INDEXER_MAX_WORKER_ID_BYTES"};
  absl::StatusOr<e2e::ReadyServer> server =
      e2e::StartReadyServer(std::move(server_options), 0, kStartBound);
  ASSERT_TRUE(server.ok()) << server.status();
  out->server = *std::move(server);
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = {"KV_INDEXER_CACHE_COMPONENTS",
                       "KV_INDEXER_STATS_INTERVAL_SECS", "KV_INDEXER_SINK"};
  options.env = {{"KV_INDEXER_WORKERS_JSON", workers_json},
                 {"KV_INDEXER_ENDPOINT",
                  "http://127.0.0.1:" + std::to_string(out->server.port)},
                 {"KV_INDEXER_HEARTBEAT_TTL_MS", "0"},
                 {"KV_INDEXER_LOG_LEVEL", "debug"}};
  auto bridge = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  out->bridge = *std::move(bridge);
}

void StopWithStatusZero(ServerProcess& process) {
  process.Signal(SIGTERM);
  auto exit = process.WaitForExit(20s);
  ASSERT_TRUE(exit.has_value()) << process.Output();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0) << process.Output();
}

TEST(DiscoveryE2e, F40BlockSizeMismatchParksOnlyThatStream) {
  std::unique_ptr<LivePublisher> followed = LivePublisher::Bind(0);
  std::unique_ptr<LivePublisher> refused = LivePublisher::Bind(0);
  ASSERT_NE(followed, nullptr);
  ASSERT_NE(refused, nullptr);
  auto followed_info = FakeServerInfo::Start();
  auto refused_info = FakeServerInfo::Start();
  ASSERT_TRUE(followed_info.ok()) << followed_info.status();
  ASSERT_TRUE(refused_info.ok()) << refused_info.status();
  // The wildcard host becomes the worker URL's host, 127.0.0.1.
  AdvertisedKvEvents advertised;
  advertised.endpoint_host = "*";
  advertised.endpoint_port_base = static_cast<uint32_t>(followed->port());
  advertised.block_size = 16;
  (*followed_info)->Advertise(advertised);
  advertised.endpoint_port_base = static_cast<uint32_t>(refused->port());
  advertised.block_size = 32;
  (*refused_info)->Advertise(advertised);

  // "followed" names no page_size and adopts 16; "refused" names 16.
  const std::string workers =
      R"([{"worker_id":"followed","worker_address":")" +
      (*followed_info)->url() +
      R"(","namespace":"ns","model":"m","discover":true},)"
      R"({"worker_id":"refused","worker_address":")" +
      (*refused_info)->url() +
      R"(","namespace":"ns","model":"m","page_size":16,"discover":true}])";
  Deployment d;
  ASSERT_NO_FATAL_FAILURE(Deploy(workers, &d));
  ServerProcess& process = *d.bridge;
  ASSERT_TRUE(process.WaitForOutput("following 2 streams", kStartBound))
      << process.Output();

  // Only the refused stream is parked, with both values named.
  ASSERT_TRUE(
      process.WaitForOutput("stream \"ns\"/\"refused\"/0 parked", kEffectBound))
      << process.Output();
  EXPECT_THAT(process.Output(),
              HasSubstr("advertised block_size 32 differs from the entry's "
                        "page_size 16"));
  EXPECT_THAT(process.Output(),
              ::testing::Not(HasSubstr("stream \"ns\"/\"followed\"/0 parked")));

  // The followed stream installs, then updates.
  constexpr int64_t kFirst = 515151;
  constexpr int64_t kSecond = 525252;
  auto& stub = *d.server.stub;
  ASSERT_TRUE(
      PublishUntil(*followed, PackBatch({StoreEvent({kFirst}, "GPU")}),
                   [&] { return Holds(stub, "followed", kFirst, "TIER_HBM"); }))
      << process.Output();
  ASSERT_TRUE(
      PublishUntil(*followed,
                   PackBatch({StoreEvent({kSecond}, "CPU_PINNED"),
                              RemoveEvent({kFirst}, "GPU")}),
                   [&] {
                     return Holds(stub, "followed", kSecond, "TIER_DRAM") &&
                            !Holds(stub, "followed", kFirst, "TIER_HBM");
                   }))
      << process.Output();
  EXPECT_THAT(process.Output(), HasSubstr("following tcp://127.0.0.1:" +
                                          std::to_string(followed->port())));

  // Configure carried the adopted page size; the parked stream was never
  // configured and never subscribed.
  std::optional<kvindexer::admin::v1::WorkerInfo> listed;
  ASSERT_TRUE(WaitUntil(
      [&] {
        listed = Listed(d.server.channel, "followed", 0);
        return listed.has_value() && listed->configured();
      },
      kEffectBound, 50ms));
  EXPECT_EQ(listed->page_size(), 16u);
  EXPECT_EQ(listed->namespace_(), "ns");
  std::optional<kvindexer::admin::v1::WorkerInfo> parked =
      Listed(d.server.channel, "refused", 0);
  EXPECT_TRUE(!parked.has_value() || !parked->configured());
  EXPECT_THAT(process.Output(),
              ::testing::Not(HasSubstr("following tcp://127.0.0.1:" +
                                       std::to_string(refused->port()))));
  EXPECT_GE((*refused_info)->request_count(), 1u);

  StopWithStatusZero(process);
}

TEST(DiscoveryE2e, AllDpRanksFollowsEveryAdvertisedRank) {
  // Two publishers on consecutive ports: rank r publishes on base + r.
  std::unique_ptr<LivePublisher> rank0;
  std::unique_ptr<LivePublisher> rank1;
  for (int attempt = 0; attempt < 50 && rank1 == nullptr; ++attempt) {
    rank0 = LivePublisher::Bind(0);
    ASSERT_NE(rank0, nullptr);
    if (rank0->port() < 65535) rank1 = LivePublisher::Bind(rank0->port() + 1);
  }
  ASSERT_NE(rank1, nullptr) << "no two consecutive free ports";
  auto info = FakeServerInfo::Start();
  ASSERT_TRUE(info.ok()) << info.status();
  AdvertisedKvEvents advertised;
  advertised.endpoint_host = "0.0.0.0";
  advertised.endpoint_port_base = static_cast<uint32_t>(rank0->port());
  advertised.block_size = 4;
  advertised.dp_size = 2;
  (*info)->Advertise(advertised);

  const std::string workers = R"([{"worker_id":"dp","worker_address":")" +
                              (*info)->url() +
                              R"(/","discover":true,"all_dp_ranks":true}])";
  Deployment d;
  ASSERT_NO_FATAL_FAILURE(Deploy(workers, &d));
  ServerProcess& process = *d.bridge;
  ASSERT_TRUE(process.WaitForOutput("following 1 streams", kStartBound))
      << process.Output();
  ASSERT_TRUE(process.WaitForOutput("following rank 1 of 2", kEffectBound))
      << process.Output();

  // Each rank's publisher feeds its own stream: one block each.
  constexpr int64_t kRank0 = 616161;
  constexpr int64_t kRank1 = 626262;
  auto& stub = *d.server.stub;
  const auto holds_one = [&](uint32_t rank) {
    std::optional<kvindexer::admin::v1::WorkerInfo> listed =
        Listed(d.server.channel, "dp", rank);
    return listed.has_value() && listed->configured() &&
           listed->page_size() == 4 && HbmPlacements(*listed) == 1;
  };
  ASSERT_TRUE(PublishUntil(*rank0, PackBatch({StoreEvent({kRank0}, "GPU")}),
                           [&] { return holds_one(0); }))
      << process.Output();
  ASSERT_TRUE(PublishUntil(*rank1, PackBatch({StoreEvent({kRank1}, "GPU")}),
                           [&] { return holds_one(1); }))
      << process.Output();
  EXPECT_TRUE(holds_one(0));
  EXPECT_TRUE(Holds(stub, "dp", kRank0, "TIER_HBM"));
  EXPECT_TRUE(Holds(stub, "dp", kRank1, "TIER_HBM"));

  StopWithStatusZero(process);
}

TEST(DiscoveryE2e, ResynchronisingDiscoversAgainAndFollowsAMovedPublisher) {
  std::unique_ptr<LivePublisher> before = LivePublisher::Bind(0);
  std::unique_ptr<LivePublisher> after = LivePublisher::Bind(0);
  ASSERT_NE(before, nullptr);
  ASSERT_NE(after, nullptr);
  auto info = FakeServerInfo::Start();
  ASSERT_TRUE(info.ok()) << info.status();
  AdvertisedKvEvents advertised;
  advertised.endpoint_port_base = static_cast<uint32_t>(before->port());
  (*info)->Advertise(advertised);
  const std::string workers = R"([{"worker_id":"moved","worker_address":")" +
                              (*info)->url() + R"(","discover":true}])";
  Deployment d;
  ASSERT_NO_FATAL_FAILURE(Deploy(workers, &d));
  ServerProcess& process = *d.bridge;
  auto& stub = *d.server.stub;
  constexpr int64_t kBefore = 717171;
  constexpr int64_t kAfter = 727272;
  ASSERT_TRUE(
      PublishUntil(*before, PackBatch({StoreEvent({kBefore}, "GPU")}),
                   [&] { return Holds(stub, "moved", kBefore, "TIER_HBM"); }))
      << process.Output();
  const size_t asked = (*info)->request_count();

  // The worker now advertises another port; the old publisher restarts
  // (sequence numbers from 0), which resynchronises the stream.
  advertised.endpoint_port_base = static_cast<uint32_t>(after->port());
  (*info)->Advertise(advertised);
  const std::string moved_to =
      "now advertises tcp://127.0.0.1:" + std::to_string(after->port());
  const auto deadline = std::chrono::steady_clock::now() + kEffectBound;
  bool restarted = false;
  while (!restarted && std::chrono::steady_clock::now() < deadline) {
    before->SetNextSeq(0);
    before->Publish(PackBatch({}));
    restarted = process.WaitForOutput(moved_to, 300ms);
  }
  ASSERT_TRUE(restarted) << process.Output();
  EXPECT_GT((*info)->request_count(), asked);
  ASSERT_TRUE(
      PublishUntil(*after, PackBatch({StoreEvent({kAfter}, "GPU")}),
                   [&] { return Holds(stub, "moved", kAfter, "TIER_HBM"); }))
      << process.Output();
  EXPECT_THAT(process.Output(),
              ::testing::Not(HasSubstr("\"moved\"/0 parked")));

  StopWithStatusZero(process);
}

}  // namespace discovery_e2e
}  // namespace kvindexer::bridge
