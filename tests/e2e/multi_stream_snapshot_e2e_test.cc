// End-to-end: a multi-stream kv-indexer-bridge (KV_INDEXER_WORKERS_JSON)
// installing snapshot-v2s through the staged snapshot RPCs of the real
// kv-indexer-server (docs/bridge-events.md, "Many streams in one process >
// Snapshot-v2 installs"). FakeSglangPublisher serves the snapshots; its v2
// header names a worker generation. The stream whose entry matches the
// header is installed with that generation and goes on with gated applies
// that carry it; the stream whose entry names another worker than the
// header is parked, and only it.
//
// No sleeps as synchronisation: every wait is a bounded loop on a
// condition.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/e2e/live_publisher.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge {
namespace multi_stream_snapshot_e2e {

using namespace std::chrono_literals;
using ::kvindexer::bridge::testing::FakeSglangPublisher;
using ::kvindexer::bridge::testing::Holds;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::StoreEvent;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr auto kStartBound = 30s;
constexpr auto kEffectBound = 30s;

FakeSglangPublisher::Options SnapshotV2Worker() {
  FakeSglangPublisher::Options options;
  options.epoch = "e1";
  options.snapshot = true;
  options.replay = false;
  options.v2_worker_generation = "gen-42";
  return options;
}

// The entry FakeSglangPublisher's v2 header describes, under `worker_id`.
std::string Entry(const FakeSglangPublisher& publisher,
                  const std::string& worker_id, int address_port) {
  return R"({"worker_id":")" + worker_id +
         R"(","worker_address":"http://127.0.0.1:)" +
         std::to_string(address_port) + R"(","event_endpoint":")" +
         publisher.pub_endpoint() + R"(","snapshot_endpoint":")" +
         publisher.snapshot_endpoint() +
         R"(","namespace":"default","model":"fake-model",)"
         R"("hash_schema_version":1,"page_size":4})";
}

// The generation the server returns for the stream's match of `hash`, from
// a line-A prefix query (eligible_streams); empty when it has no match.
std::string GenerationOf(::kv_indexer::v1::KVIndexer::Stub& stub,
                         const std::string& worker_id, int64_t hash) {
  ::kv_indexer::v1::MatchExternalKvPrefixRequest request;
  request.add_hashes(hash);
  ::kv_indexer::v1::StreamId* stream = request.add_eligible_streams();
  stream->set_namespace_("default");
  stream->set_worker_id(worker_id);
  stream->set_dp_rank(0);
  ::kv_indexer::v1::MatchExternalKvPrefixResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + 5s);
  if (!stub.MatchExternalKvPrefix(&context, request, &response).ok()) return "";
  for (const auto& match : response.matches()) {
    if (match.worker_id() == worker_id) return match.worker_generation();
  }
  return "";
}

TEST(MultiStreamSnapshotE2e, StagedInstallWithGenerationAndARefusedHeader) {
  ProcessOptions server_options;
  server_options.binary = KVINDEXER_SERVER_BINARY;
  server_options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                              "KV_INDEXER_LOG_LEVEL",
                              "KV_INDEXER_MAX_WORKER_ID_BYTES"};
  absl::StatusOr<e2e::ReadyServer> server =
      e2e::StartReadyServer(std::move(server_options), 0, kStartBound);
  ASSERT_TRUE(server.ok()) << server.status();

  // The matching worker's history, published before the bridge listens:
  // only its snapshot can bring it to the index.
  FakeSglangPublisher matching(SnapshotV2Worker());
  constexpr int64_t kHistory[] = {515151, 525252, 535353};
  matching.Publish(
      PackBatch({StoreEvent({kHistory[0], kHistory[1], kHistory[2]}, "GPU")}));
  FakeSglangPublisher other(SnapshotV2Worker());
  other.Publish(PackBatch({StoreEvent({616161}, "GPU")}));

  const std::string workers = "[" + Entry(matching, "fake-worker", 30001) +
                              "," + Entry(other, "other-worker", 30002) + "]";
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = {"KV_INDEXER_CACHE_COMPONENTS",
                       "KV_INDEXER_STATS_INTERVAL_SECS", "KV_INDEXER_SINK",
                       "KV_INDEXER_WORKER_ID"};
  options.env = {{"KV_INDEXER_WORKERS_JSON", workers},
                 {"KV_INDEXER_ENDPOINT",
                  "http://127.0.0.1:" + std::to_string(server->port)},
                 {"KV_INDEXER_HEARTBEAT_TTL_MS", "0"},
                 {"KV_INDEXER_SNAPSHOT_CONCURRENCY", "1"},
                 {"KV_INDEXER_LOG_LEVEL", "debug"}};
  auto bridge = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  ServerProcess& process = **bridge;
  ASSERT_TRUE(process.WaitForOutput("following 2 streams", kStartBound))
      << process.Output();
  EXPECT_THAT(process.Output(), HasSubstr("snapshot_concurrency=1"));

  // The matching stream: every block of the snapshot, under the header's
  // generation.
  auto& stub = *server->stub;
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int64_t hash : kHistory) {
          if (!Holds(stub, "fake-worker", hash, "TIER_HBM")) return false;
        }
        return true;
      },
      kEffectBound, 50ms))
      << process.Output();
  EXPECT_EQ(GenerationOf(stub, "fake-worker", kHistory[0]), "gen-42");
  EXPECT_GE(matching.snapshot_requests(), 1u);

  // The other stream: refused by its header, parked, nothing installed.
  ASSERT_TRUE(process.WaitForOutput(
      "snapshot header worker_id is 'fake-worker'; the entry says "
      "'other-worker'",
      kEffectBound))
      << process.Output();
  ASSERT_TRUE(process.WaitForOutput("parked", kEffectBound))
      << process.Output();
  EXPECT_FALSE(Holds(stub, "other-worker", 616161, "TIER_HBM"));

  // Live after the barrier: a gated apply with the generation, accepted by
  // the server's generation fence, so no state loss follows.
  constexpr int64_t kLive = 545454;
  matching.Publish(PackBatch({StoreEvent({kLive}, "CPU_PINNED")}));
  ASSERT_TRUE(
      WaitUntil([&] { return Holds(stub, "fake-worker", kLive, "TIER_DRAM"); },
                kEffectBound, 50ms))
      << process.Output();
  EXPECT_THAT(process.Output(), Not(HasSubstr("server state lost")));
  EXPECT_THAT(process.Output(),
              Not(HasSubstr("stream \"default\"/\"fake-worker\"/0 parked")));
  EXPECT_THAT(process.Output(),
              Not(HasSubstr("installed with ReplaceExternalKvSnapshot")));
  EXPECT_FALSE(process.WaitForExit(0ms).has_value()) << process.Output();

  process.Signal(SIGTERM);
  auto exit = process.WaitForExit(20s);
  ASSERT_TRUE(exit.has_value()) << process.Output();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 0) << process.Output();
  EXPECT_THAT(process.Output(),
              HasSubstr("stats: stream \"default\"/\"other-worker\"/0 "
                        "stream_state=parked"));
  EXPECT_THAT(process.Output(),
              HasSubstr("stats: stream \"default\"/\"fake-worker\"/0 "
                        "stream_state=exact"));
}

}  // namespace multi_stream_snapshot_e2e
}  // namespace kvindexer::bridge
