// End-to-end: a fake SGLang publisher (cppzmq PUB, frames [topic, 8-byte
// big-endian seq, msgpack payload]) -> the real kv-indexer-bridge binary ->
// the real kv-indexer-server binary, checked through kv_indexer.v1 queries.
//
// No sleeps as synchronisation: ZMQ's slow joiner is handled by publishing
// again until the effect is visible, inside bounded loops.
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge {
namespace {

using namespace std::chrono_literals;
using ::kv_indexer::v1::KVIndexer;
using ::kvindexer::bridge::testing::ClearEvent;
using ::kvindexer::bridge::testing::Labels;
using ::kvindexer::bridge::testing::Mp;
using ::kvindexer::bridge::testing::MpArray;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::RemoveEvent;
using ::kvindexer::bridge::testing::SeqFrame;
using ::kvindexer::bridge::testing::StoreEvent;
using ::kvindexer::test_support::ExitStatus;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;

// Upper bounds on waits that normally end within milliseconds; the machine
// may be busy.
constexpr auto kStartBound = 30s;
constexpr auto kEffectBound = 30s;

const char kWorkerId[] = "worker-e2e";
const char kWorkerAddress[] = "http://127.0.0.1:30000";

// SGLang's publisher, reduced to what the bridge sees.
class FakePublisher {
 public:
  FakePublisher() : socket_(context_, zmq::socket_type::pub) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
  }

  const std::string& endpoint() const { return endpoint_; }

  // Sends [seq, payload] without a topic frame (accepted by the bridge;
  // only reaches it with an empty subscription).
  void PublishTwoFrames(const std::string& payload) {
    const std::string seq = SeqFrame(next_seq_++);
    socket_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(payload), zmq::send_flags::none);
  }

  // Sends one message of another publisher (its own sequence numbers) on
  // the same socket: a topic the bridge's prefix filters out.
  void PublishOtherStream(const std::string& payload,
                          const std::string& topic) {
    const std::string seq = SeqFrame(other_seq_++);
    socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(payload), zmq::send_flags::none);
  }

  // Sends one live message with the next sequence number.
  void Publish(const std::string& payload, const std::string& topic = "") {
    const std::string seq = SeqFrame(next_seq_++);
    socket_.send(zmq::buffer(topic), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(seq), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(payload), zmq::send_flags::none);
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  uint64_t next_seq_ = 0;
  uint64_t other_seq_ = 0;
};

std::unique_ptr<grpc::ClientContext> Context(
    std::chrono::milliseconds timeout = 5s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// A kv-indexer-server process plus a stub.
class Server {
 public:
  // port 0: let the server choose; otherwise bind exactly that port.
  static std::unique_ptr<Server> Start(int port = 0) {
    ProcessOptions options;
    options.binary = KVINDEXER_SERVER_BINARY;
    options.unset_env = {"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                         "KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                         "KV_INDEXER_LOG_LEVEL"};
    absl::StatusOr<e2e::ReadyServer> ready =
        e2e::StartReadyServer(std::move(options), port, kStartBound);
    EXPECT_TRUE(ready.ok()) << ready.status();
    if (!ready.ok()) return nullptr;
    auto server = std::unique_ptr<Server>(new Server());
    server->process_ = std::move(ready->process);
    server->port_ = ready->port;
    server->stub_ = std::move(ready->stub);
    return server;
  }

  int port() const { return port_; }
  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }
  ServerProcess& process() { return *process_; }

  // tier name ("HBM", ...) -> hashes held by kWorkerId, for `hashes`.
  std::map<std::string, std::set<int64_t>> Held(
      const std::vector<int64_t>& hashes, std::string* address = nullptr) {
    std::map<std::string, std::set<int64_t>> out;
    for (size_t begin = 0; begin < hashes.size(); begin += 16384) {
      kv_indexer::v1::MatchExternalKvRequest req;
      for (size_t i = begin; i < std::min(hashes.size(), begin + 16384); ++i) {
        req.add_hashes(hashes[i]);
      }
      kv_indexer::v1::MatchExternalKvResponse resp;
      if (!stub_->MatchExternalKv(Context().get(), req, &resp).ok()) return {};
      for (const auto& match : resp.matches()) {
        if (match.worker_id() != kWorkerId) continue;
        if (address) *address = match.address();
        for (const auto& tier : match.hashes_by_tier()) {
          auto& set = out[kv_indexer::v1::TierType_Name(tier.tier())];
          set.insert(tier.hashes().begin(), tier.hashes().end());
        }
      }
    }
    return out;
  }

  bool Holds(int64_t hash, const std::string& tier) {
    auto held = Held({hash});
    return held.count(tier) > 0 && held[tier].count(hash) > 0;
  }

  // matched_prefix_blocks for kWorkerAddress, 0 if absent.
  uint32_t Prefix(const std::vector<int64_t>& hashes) {
    kv_indexer::v1::MatchExternalKvPrefixRequest req;
    for (int64_t h : hashes) req.add_hashes(h);
    kv_indexer::v1::MatchExternalKvPrefixResponse resp;
    grpc::Status status =
        stub_->MatchExternalKvPrefix(Context().get(), req, &resp);
    if (!status.ok()) {
      ADD_FAILURE() << "MatchExternalKvPrefix: " << status.error_message();
      return 0;
    }
    for (const auto& m : resp.matches()) {
      if (m.worker_address() == kWorkerAddress)
        return m.matched_prefix_blocks();
    }
    return 0;
  }

 private:
  Server() = default;
  std::unique_ptr<ServerProcess> process_;
  int port_ = 0;
  std::unique_ptr<KVIndexer::Stub> stub_;
};

std::unique_ptr<ServerProcess> StartBridge(
    const Server& server, const FakePublisher& publisher,
    std::map<std::string, std::string> extra_env = {}) {
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = {
      "KV_INDEXER_CLEAR_TIERS",        "KV_INDEXER_CACHE_COMPONENTS",
      "KV_INDEXER_SWA_WINDOW_TOKENS",  "KV_INDEXER_FULL_TIERS",
      "KV_INDEXER_SWA_TIERS",          "KV_INDEXER_MAMBA_TIERS",
      "KV_INDEXER_CACHE_SPEC_VERSION", "SGLANG_KV_EVENT_TOPIC",
      "KV_INDEXER_STATS_INTERVAL_SECS"};
  options.env = {{"KV_INDEXER_WORKER_ID", kWorkerId},
                 {"KV_INDEXER_WORKER_ADDRESS", kWorkerAddress},
                 {"KV_INDEXER_ENDPOINT", server.endpoint()},
                 {"SGLANG_KV_EVENT_ENDPOINT", publisher.endpoint()},
                 {"KV_INDEXER_LOG_LEVEL", "debug"}};
  for (auto& [k, v] : extra_env) options.env[k] = v;
  auto process = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return nullptr;
  EXPECT_TRUE((*process)->WaitForOutput("connected:", kStartBound))
      << (*process)->Output();
  return *std::move(process);
}

// Publishes `payload` until `effect` holds (the first copies may be lost to
// ZMQ's slow joiner). REQUIRES: re-applying the payload is harmless.
bool PublishUntil(FakePublisher& publisher, const std::string& payload,
                  const std::function<bool()>& effect,
                  const std::string& topic = "") {
  const auto deadline = std::chrono::steady_clock::now() + kEffectBound;
  while (std::chrono::steady_clock::now() < deadline) {
    publisher.Publish(payload, topic);
    if (WaitUntil(effect, 300ms)) return true;
  }
  return false;
}

class BridgeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = Server::Start();
    ASSERT_NE(server_, nullptr);
  }

  // Starts a bridge and publishes a probe until the bridge is live.
  void StartLiveBridge(std::map<std::string, std::string> env = {},
                       const std::string& topic = "") {
    bridge_ = StartBridge(*server_, publisher_, std::move(env));
    ASSERT_NE(bridge_, nullptr);
    ASSERT_TRUE(PublishUntil(
        publisher_, PackBatch({StoreEvent({kProbe}, "DISK")}),
        [&] { return server_->Holds(kProbe, "TIER_SSD"); }, topic))
        << bridge_->Output();
  }

  void TearDown() override {
    if (bridge_) {
      bridge_->Signal(SIGTERM);
      auto exit = bridge_->WaitForExit(20s);
      EXPECT_TRUE(exit.has_value() &&
                  test_support::EndedCleanly(*exit, bridge_->Output()))
          << (exit ? exit->ToString() : "still running") << "\n"
          << bridge_->Output();
      EXPECT_THAT(bridge_->Output(), ::testing::HasSubstr("bridge stopped"));
    }
  }

  static constexpr int64_t kProbe = 987654321987;
  FakePublisher publisher_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<ServerProcess> bridge_;
};

TEST_F(BridgeE2eTest, TiersRemovesAndClears) {
  const std::string topic = std::string("kv-events") + '\0' +
                            "sgl-kv-epoch=0123456789abcdef0123456789abcdef";
  StartLiveBridge({{"SGLANG_KV_EVENT_TOPIC", "kv-events"}}, topic);

  publisher_.Publish(
      PackBatch({StoreEvent({11, -12}, "GPU"), StoreEvent({13}, "CPU_PINNED"),
                 StoreEvent({14}, "EXTERNAL"), StoreEvent({15}, std::nullopt)}),
      topic);
  // Another topic is filtered out by the SUB prefix.
  publisher_.PublishOtherStream(PackBatch({StoreEvent({16}, "GPU")}),
                                "other-topic");
  publisher_.Publish(PackBatch({StoreEvent({17}, "DISK")}), topic);
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Holds(17, "TIER_SSD"); }, kEffectBound))
      << bridge_->Output();
  std::string address;
  auto held = server_->Held({11, -12, 13, 14, 15, 16, 17}, &address);
  EXPECT_EQ(held["TIER_HBM"], (std::set<int64_t>{11, -12}));
  EXPECT_EQ(held["TIER_DRAM"], (std::set<int64_t>{13}));
  EXPECT_EQ(held["TIER_SSD"], (std::set<int64_t>{17}));
  EXPECT_EQ(address, kWorkerAddress);

  // Remove then store of the same hash keep their order.
  publisher_.Publish(
      PackBatch({RemoveEvent({11}, "GPU"), StoreEvent({11}, "CPU_PINNED")}),
      topic);
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Holds(11, "TIER_DRAM"); }, kEffectBound));
  EXPECT_FALSE(server_->Holds(11, "TIER_HBM"));

  // A barrier batch (empty events) is harmless; then a clear of every tier.
  publisher_.Publish(PackBatch({}), topic + '\0' + "sgl-kv-snapshot=1");
  publisher_.Publish(PackBatch({ClearEvent()}), topic);
  ASSERT_TRUE(WaitUntil(
      [&] {
        return server_->Held({11, -12, 13, 17, kProbe}).empty();
      },
      kEffectBound));
}

TEST_F(BridgeE2eTest, ClearTiersSubset) {
  StartLiveBridge({{"KV_INDEXER_CLEAR_TIERS", "GPU"}});
  publisher_.Publish(PackBatch(
      {StoreEvent({21}, "GPU"), StoreEvent({22}, "CPU_PINNED"), ClearEvent()}));
  publisher_.PublishTwoFrames(PackBatch({StoreEvent({23}, "GPU")}));
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Holds(23, "TIER_HBM"); }, kEffectBound));
  auto held = server_->Held({21, 22, 23});
  EXPECT_EQ(held["TIER_HBM"], (std::set<int64_t>{23}));
  EXPECT_EQ(held["TIER_DRAM"], (std::set<int64_t>{22}));
}

TEST_F(BridgeE2eTest, ChunksA40000HashBatch) {
  StartLiveBridge();
  std::vector<int64_t> hashes(40000);
  for (size_t i = 0; i < hashes.size(); ++i) {
    hashes[i] = 1000000 + static_cast<int64_t>(i) * 7919;
  }
  publisher_.Publish(PackBatch({StoreEvent(hashes, "GPU", 1)}));
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Prefix(hashes) == 40000; }, kEffectBound))
      << bridge_->Output();
  auto held = server_->Held(hashes);
  EXPECT_EQ(held["TIER_HBM"].size(), 40000u);
  // Three RPCs were needed (16,384 + 16,384 + 7,232 hashes).
  EXPECT_TRUE(bridge_->WaitForOutput(
      "chunk 3/3 applied: 1 actions, 7232 hashes", kEffectBound))
      << bridge_->Output();
}

TEST_F(BridgeE2eTest, FullSwaWorker) {
  StartLiveBridge({{"KV_INDEXER_CACHE_COMPONENTS", "full,swa"},
                   {"KV_INDEXER_SWA_WINDOW_TOKENS", "100"},
                   {"KV_INDEXER_FULL_TIERS", "HBM"},
                   {"KV_INDEXER_SWA_TIERS", "HBM"}});
  // V5: five 50-token blocks with F|S -> 5.
  const std::vector<int64_t> a = {101, 102, 103, 104, 105};
  publisher_.Publish(
      PackBatch({StoreEvent(a, "GPU", 50, Labels({"full", "swa"}))}));
  ASSERT_TRUE(WaitUntil([&] { return server_->Prefix(a) == 5; }, kEffectBound))
      << bridge_->Output();
  // V6: block index 3 is FULL only -> 3.
  const std::vector<int64_t> b = {201, 202, 203, 204, 205};
  publisher_.Publish(PackBatch(
      {StoreEvent({201, 202, 203}, "GPU", 50, Labels({"full", "swa"})),
       StoreEvent({204}, "GPU", 50, Labels({"full"})),
       StoreEvent({205}, "GPU", 50, Labels({"full", "swa"}))}));
  ASSERT_TRUE(WaitUntil([&] { return server_->Prefix(b) == 3; }, kEffectBound));
  // Stores at DRAM do not serve FULL under FULL_TIERS=HBM.
  const std::vector<int64_t> c = {301, 302};
  publisher_.Publish(PackBatch(
      {StoreEvent(c, "CPU_PINNED", 50, Labels({"full", "swa"})),
       StoreEvent({kProbe + 1}, "GPU", 50, Labels({"full", "swa"}))}));
  ASSERT_TRUE(WaitUntil([&] { return server_->Holds(kProbe + 1, "TIER_HBM"); },
                        kEffectBound));
  EXPECT_EQ(server_->Prefix(c), 0u);
}

TEST_F(BridgeE2eTest, FullMambaWorker) {
  StartLiveBridge({{"KV_INDEXER_CACHE_COMPONENTS", "full,mamba"},
                   {"KV_INDEXER_FULL_TIERS", "HBM"},
                   {"KV_INDEXER_MAMBA_TIERS", "HBM"}});
  // V8: FULL on four blocks, MAMBA (with FULL) only on the last.
  const std::vector<int64_t> m = {401, 402, 403, 404};
  publisher_.Publish(
      PackBatch({StoreEvent({401, 402, 403}, "GPU", 4, Labels({"full"})),
                 StoreEvent({404}, "GPU", 4, Labels({"full", "mamba"}))}));
  ASSERT_TRUE(WaitUntil([&] { return server_->Prefix(m) == 4; }, kEffectBound))
      << bridge_->Output();
  EXPECT_EQ(server_->Prefix({401, 402}), 0u);
}

TEST_F(BridgeE2eTest, ReconnectsAfterServerRestart) {
  StartLiveBridge({{"KV_INDEXER_STATS_INTERVAL_SECS", "1"}});
  publisher_.Publish(PackBatch({StoreEvent({501}, "GPU")}));
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Holds(501, "TIER_HBM"); }, kEffectBound));

  const int port = server_->port();
  server_->process().Signal(SIGTERM);
  ASSERT_TRUE(server_->process().WaitForExit(20s).has_value());
  server_.reset();
  // An event while the server is down makes the apply fail: the bridge
  // keeps its subscription and retries the RPC with backoff
  // (docs/bridge-events.md, "Recovery > Errors").
  publisher_.Publish(PackBatch({StoreEvent({503}, "GPU")}));
  ASSERT_TRUE(bridge_->WaitForOutput("retrying in", kEffectBound))
      << bridge_->Output();
  server_ = Server::Start(port);
  ASSERT_NE(server_, nullptr);
  // The new server starts empty.
  EXPECT_TRUE(server_->Held({501, kProbe}).empty());

  // The new server does not know the stream: the bridge resynchronises
  // (mode L: from the next live batch) and later events appear.
  ASSERT_TRUE(PublishUntil(publisher_, PackBatch({StoreEvent({502}, "GPU")}),
                           [&] { return server_->Holds(502, "TIER_HBM"); }))
      << bridge_->Output();
  EXPECT_FALSE(server_->Holds(501, "TIER_HBM"));
  // 503 may or may not be held: it is lost if its own apply was the one
  // that failed, and kept if it was still buffered when the bridge
  // resynchronised from the next live batch.
  EXPECT_THAT(bridge_->Output(), ::testing::HasSubstr("stats: messages="));
}

TEST_F(BridgeE2eTest, EmptyWorkerIdExitsOnPermanentError) {
  bridge_ = StartBridge(*server_, publisher_, {{"KV_INDEXER_WORKER_ID", ""}});
  ASSERT_NE(bridge_, nullptr);
  std::optional<ExitStatus> exit;
  const auto deadline = std::chrono::steady_clock::now() + kEffectBound;
  while (!exit && std::chrono::steady_clock::now() < deadline) {
    publisher_.Publish(PackBatch({StoreEvent({601}, "GPU")}));
    exit = bridge_->WaitForExit(300ms);
  }
  ASSERT_TRUE(exit.has_value()) << bridge_->Output();
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 1) << bridge_->Output();
  EXPECT_THAT(bridge_->Output(), ::testing::HasSubstr("INVALID_ARGUMENT"));
  bridge_.reset();  // already gone; skip the SIGTERM check
}

TEST(BridgeProcessE2e, StartupErrorsAndHelp) {
  ProcessOptions help;
  help.binary = KVINDEXER_BRIDGE_BINARY;
  help.args = {"--help"};
  auto p = ServerProcess::Start(help);
  ASSERT_TRUE(p.ok());
  auto exit = (*p)->WaitForExit(20s);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->ok());
  EXPECT_THAT((*p)->Output(), ::testing::HasSubstr("KV_INDEXER_CLEAR_TIERS"));

  ProcessOptions bad;
  bad.binary = KVINDEXER_BRIDGE_BINARY;
  bad.unset_env = {"KV_INDEXER_WORKER_ID"};
  auto q = ServerProcess::Start(bad);
  ASSERT_TRUE(q.ok());
  exit = (*q)->WaitForExit(20s);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 2);
  EXPECT_THAT((*q)->Output(), ::testing::HasSubstr("KV_INDEXER_WORKER_ID"));
}

// F40, first half: two entries with one stream key exit 2 at startup,
// before anything is connected.
TEST(BridgeProcessE2e, DuplicateWorkersJsonKeyExits2) {
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  const std::string entry =
      R"({"worker_id":"w","worker_address":"http://127.0.0.1:1",)"
      R"("event_endpoint":"tcp://127.0.0.1:1","namespace":"ns","dp_rank":1})";
  options.env = {{"KV_INDEXER_WORKERS_JSON", "[" + entry + "," + entry + "]"},
                 {"KV_INDEXER_ENDPOINT", "http://127.0.0.1:1"}};
  options.unset_env = {"KV_INDEXER_WORKER_ID"};
  auto p = ServerProcess::Start(options);
  ASSERT_TRUE(p.ok());
  auto exit = (*p)->WaitForExit(20s);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->exited);
  EXPECT_EQ(exit->code, 2) << (*p)->Output();
  EXPECT_THAT((*p)->Output(),
              ::testing::HasSubstr("invalid KV_INDEXER_WORKERS_JSON: entry 1 "
                                   "repeats the stream key"));
}

TEST(BridgeProcessE2e, SigtermWhileRetryingAnUnusableEndpoint) {
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.env = {{"KV_INDEXER_WORKER_ID", "w"},
                 {"KV_INDEXER_ENDPOINT", "not a uri"}};
  auto p = ServerProcess::Start(options);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->WaitForOutput("reconnecting in 1000 ms", 20s))
      << (*p)->Output();
  (*p)->Signal(SIGTERM);
  auto exit = (*p)->WaitForExit(20s);
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(test_support::EndedCleanly(*exit, (*p)->Output()))
      << exit->ToString();
}

// The metrics endpoint (docs/metrics.md, "Bridge"): after known events the
// scrape shows them by kind, the undecodable message by reason, and no RPC
// failure. The live probe may reach the bridge more than once (ZMQ's slow
// joiner makes StartLiveBridge publish it until it lands) and the first one
// may be folded into the initial synchronisation, so message, batch and
// store counts are checked as lower bounds; the rest are exact.
TEST_F(BridgeE2eTest, MetricsCountKnownEvents) {
  StartLiveBridge({{"KV_INDEXER_BRIDGE_METRICS_ADDR", "127.0.0.1:0"}});
  const int port =
      ::kvindexer::test_support::WaitForMetricsPort(*bridge_, kStartBound);
  ASSERT_NE(port, 0) << bridge_->Output();
  using ::kvindexer::test_support::HttpGet;
  using ::kvindexer::test_support::ScrapedValue;

  auto health = HttpGet(port, "/healthz");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);
  auto ready = HttpGet(port, "/readyz");
  ASSERT_TRUE(ready.ok()) << ready.status();
  EXPECT_EQ(ready->status, 200) << ready->body;

  publisher_.Publish(
      PackBatch({StoreEvent({31, 32}, "GPU"), RemoveEvent({31}, "GPU")}));
  publisher_.Publish(PackBatch({ClearEvent()}));
  publisher_.Publish("not a msgpack batch");
  publisher_.Publish(PackBatch({StoreEvent({33}, "DISK")}));
  ASSERT_TRUE(
      WaitUntil([&] { return server_->Holds(33, "TIER_SSD"); }, kEffectBound))
      << bridge_->Output();

  // The loop publishes its counters every few milliseconds: wait until the
  // scrape covers the last batch.
  std::string scrape;
  auto value = [&](std::string_view series) {
    return ScrapedValue(scrape, series).value_or(-1);
  };
  const bool settled = WaitUntil(
      [&] {
        auto got = HttpGet(port, "/metrics");
        if (!got.ok() || got->status != 200) return false;
        scrape = got->body;
        return value("kvindexer_bridge_events_total{kind=\"clear\"}") == 1 &&
               value("kvindexer_bridge_messages_total") >= 5;
      },
      kEffectBound, 50ms);
  ASSERT_TRUE(settled) << scrape;
  EXPECT_GE(value("kvindexer_bridge_batches_total"), 3);
  EXPECT_GE(value("kvindexer_bridge_events_received_total"), 4);
  EXPECT_GE(value("kvindexer_bridge_events_total{kind=\"store\"}"), 2);
  EXPECT_EQ(value("kvindexer_bridge_events_total{kind=\"remove\"}"), 1);
  EXPECT_EQ(
      value("kvindexer_bridge_messages_skipped_total{reason=\"bad_batch\"}"),
      1);
  EXPECT_EQ(value("kvindexer_bridge_rpc_failures_total{code=\"UNAVAILABLE\"}"),
            0);
  EXPECT_GE(value("kvindexer_bridge_apply_rpcs_total"), 3);
  EXPECT_EQ(value("kvindexer_bridge_sequence_gaps_total"), 0);
  EXPECT_EQ(value("kvindexer_bridge_live_buffer_batches"), 0);
  EXPECT_THAT(scrape, ::testing::HasSubstr(
                          "# TYPE kvindexer_bridge_messages_total counter\n"));
}

}  // namespace
}  // namespace kvindexer::bridge
