#include "tests/e2e/recovery_e2e_harness.h"

#include <signal.h>

#include <algorithm>
#include <iostream>
#include <string_view>
#include <utility>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/msgpack_builders.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::WaitUntil;

constexpr size_t kMaxHashesPerMatch = 16384;

std::unique_ptr<grpc::ClientContext> Context(
    std::chrono::milliseconds timeout = 5s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// Every complete stats line of the bridge so far, oldest first.
std::vector<std::string> StatsLines(ServerProcess& bridge) {
  std::vector<std::string> lines;
  const std::string output = bridge.Output();
  size_t start = 0;
  for (size_t end; (end = output.find('\n', start)) != std::string::npos;
       start = end + 1) {
    std::string_view line(output.data() + start, end - start);
    if (line.find("stats: ") != std::string_view::npos) {
      lines.emplace_back(line);
    }
  }
  return lines;
}

}  // namespace

Ev Store(std::vector<int64_t> hashes, std::optional<int64_t> parent) {
  return Ev{Ev::Kind::kStore, std::move(hashes), parent};
}
Ev Remove(std::vector<int64_t> hashes) {
  return Ev{Ev::Kind::kRemove, std::move(hashes), std::nullopt};
}
Ev Clear() { return Ev{Ev::Kind::kClear, {}, std::nullopt}; }

std::string Payload(const Events& events) {
  MpArray packed;
  for (const Ev& ev : events) {
    switch (ev.kind) {
      case Ev::Kind::kStore: {
        // Block size 1 keeps 40,000-hash batches small.
        Mp store = StoreEvent(ev.hashes, "GPU", /*block_size=*/1);
        if (ev.parent) std::get<MpArray>(store.v)[2] = Mp(*ev.parent);
        packed.push_back(std::move(store));
        break;
      }
      case Ev::Kind::kRemove:
        packed.push_back(RemoveEvent(ev.hashes, "GPU"));
        break;
      case Ev::Kind::kClear:
        packed.push_back(ClearEvent());
        break;
    }
  }
  return PackBatch(std::move(packed));
}

void Fold(std::set<int64_t>& held, const Events& events) {
  for (const Ev& ev : events) {
    switch (ev.kind) {
      case Ev::Kind::kStore:
        held.insert(ev.hashes.begin(), ev.hashes.end());
        break;
      case Ev::Kind::kRemove:
        for (int64_t h : ev.hashes) held.erase(h);
        break;
      case Ev::Kind::kClear:
        held.clear();
        break;
    }
  }
}

std::unique_ptr<IndexerUnderTest> IndexerUnderTest::Start(
    int port, std::map<std::string, std::string> env) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.unset_env = {"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                       "KV_INDEXER_BACKEND",
                       "KV_INDEXER_BACKEND_PATH",
                       "KV_INDEXER_LOG_LEVEL",
                       "KV_INDEXER_DATA_DIR",
                       "KV_INDEXER_LIVENESS",
                       "KV_INDEXER_LIVENESS_SWEEP_MS"};
  options.env = std::move(env);
  absl::StatusOr<e2e::ReadyServer> ready =
      e2e::StartReadyServer(std::move(options), port, kStartBound);
  EXPECT_TRUE(ready.ok()) << ready.status();
  if (!ready.ok()) return nullptr;
  auto indexer = std::unique_ptr<IndexerUnderTest>(new IndexerUnderTest());
  indexer->process_ = std::move(ready->process);
  indexer->port_ = ready->port;
  indexer->channel_ = std::move(ready->channel);
  indexer->stub_ = std::move(ready->stub);
  return indexer;
}

std::optional<std::string> IndexerUnderTest::Fidelity(
    const std::string& worker_id) {
  namespace admin = ::kvindexer::admin::v1;
  auto stub = admin::KvIndexerAdmin::NewStub(channel_);
  admin::ListWorkersResponse resp;
  if (!stub->ListWorkers(Context().get(), admin::ListWorkersRequest{}, &resp)
           .ok()) {
    return std::nullopt;
  }
  for (const admin::WorkerInfo& w : resp.workers()) {
    if (w.worker_id() != worker_id) continue;
    switch (w.fidelity()) {
      case admin::FIDELITY_EXACT:
        return "exact";
      case admin::FIDELITY_DEGRADED:
        return "degraded; " + w.fidelity_reason();
      default:
        return "unknown";
    }
  }
  return std::nullopt;
}

std::string IndexerUnderTest::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::optional<std::set<int64_t>> IndexerUnderTest::Held(
    const std::vector<int64_t>& universe) {
  std::optional<std::map<int, std::set<int64_t>>> by_tier =
      HeldByTier(universe);
  if (!by_tier) return std::nullopt;
  auto hbm = by_tier->find(kv_indexer::v1::TIER_HBM);
  return hbm == by_tier->end() ? std::set<int64_t>() : hbm->second;
}

std::optional<std::map<int, std::set<int64_t>>> IndexerUnderTest::HeldByTier(
    const std::vector<int64_t>& universe) {
  std::map<int, std::set<int64_t>> held;
  for (size_t begin = 0; begin < universe.size(); begin += kMaxHashesPerMatch) {
    kv_indexer::v1::MatchExternalKvRequest req;
    const size_t end = std::min(universe.size(), begin + kMaxHashesPerMatch);
    for (size_t i = begin; i < end; ++i) req.add_hashes(universe[i]);
    kv_indexer::v1::MatchExternalKvResponse resp;
    if (!stub_->MatchExternalKv(Context().get(), req, &resp).ok()) {
      return std::nullopt;
    }
    for (const auto& match : resp.matches()) {
      if (match.worker_id() != kWorkerId) continue;
      for (const auto& tier : match.hashes_by_tier()) {
        if (tier.hashes().empty()) continue;
        held[tier.tier()].insert(tier.hashes().begin(), tier.hashes().end());
      }
    }
  }
  return held;
}

std::set<int64_t> IndexerUnderTest::HeldOrEmpty(
    const std::vector<int64_t>& universe) {
  return Held(universe).value_or(std::set<int64_t>());
}

uint32_t IndexerUnderTest::Prefix(const std::vector<int64_t>& hashes) {
  kv_indexer::v1::MatchExternalKvPrefixRequest req;
  for (int64_t h : hashes) req.add_hashes(h);
  kv_indexer::v1::MatchExternalKvPrefixResponse resp;
  if (!stub_->MatchExternalKvPrefix(Context().get(), req, &resp).ok()) {
    return 0;
  }
  for (const auto& m : resp.matches()) {
    if (m.worker_address() == kWorkerAddress) return m.matched_prefix_blocks();
  }
  return 0;
}

std::optional<uint64_t> IndexerUnderTest::Checkpoint(const std::string& epoch) {
  kv_indexer::v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id(kWorkerId);
  // On a server without the gate this is a seed-era empty apply; the same
  // address keeps it harmless there.
  req.set_worker_address(kWorkerAddress);
  req.set_seq(0);
  req.set_worker_epoch(epoch);
  req.set_enforce_sequence(true);
  kv_indexer::v1::ApplyExternalKvBatchResponse resp;
  if (!stub_->ApplyExternalKvBatch(Context().get(), req, &resp).ok()) {
    return std::nullopt;
  }
  if (!resp.duplicate()) return std::nullopt;
  return resp.applied_seq();
}

std::unique_ptr<ServerProcess> StartBridge(
    const IndexerUnderTest& indexer, FakeSglangPublisher& publisher,
    bool with_replay, std::map<std::string, std::string> extra_env) {
  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = {
      "KV_INDEXER_CLEAR_TIERS",         "KV_INDEXER_CACHE_COMPONENTS",
      "KV_INDEXER_SWA_WINDOW_TOKENS",   "KV_INDEXER_FULL_TIERS",
      "KV_INDEXER_SWA_TIERS",           "KV_INDEXER_MAMBA_TIERS",
      "KV_INDEXER_CACHE_SPEC_VERSION",  "SGLANG_KV_EVENT_TOPIC",
      "SGLANG_KV_REPLAY_ENDPOINT",      "SGLANG_KV_SNAPSHOT_ENDPOINT",
      "KV_INDEXER_LIVE_BUFFER_BATCHES", "KV_INDEXER_WORKERS_JSON"};
  options.env = {{"KV_INDEXER_WORKER_ID", kWorkerId},
                 {"KV_INDEXER_WORKER_ADDRESS", kWorkerAddress},
                 {"KV_INDEXER_ENDPOINT", indexer.endpoint()},
                 {"SGLANG_KV_EVENT_ENDPOINT", publisher.pub_endpoint()},
                 {"KV_INDEXER_SEQUENCE_GATE", "on"},
                 {"KV_INDEXER_HEARTBEAT_TTL_MS", "0"},
                 {"KV_INDEXER_STATS_INTERVAL_SECS", "1"},
                 {"KV_INDEXER_LOG_LEVEL", "debug"}};
  if (with_replay) {
    options.env["SGLANG_KV_REPLAY_ENDPOINT"] = publisher.replay_endpoint();
  }
  if (!publisher.snapshot_endpoint().empty()) {
    options.env["SGLANG_KV_SNAPSHOT_ENDPOINT"] = publisher.snapshot_endpoint();
  }
  for (auto& [k, v] : extra_env) options.env[k] = v;

  const size_t subscriptions_before = publisher.subscriptions();
  auto process = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return nullptr;
  const bool subscribed = WaitUntil(
      [&] {
        return publisher.subscriptions() > subscriptions_before ||
               !(*process)->Running();
      },
      kStartBound);
  EXPECT_TRUE(subscribed && (*process)->Running())
      << "the bridge never subscribed:\n"
      << (*process)->Output();
  if (!subscribed || !(*process)->Running()) return nullptr;
  return *std::move(process);
}

void StopBridge(ServerProcess& bridge) {
  bridge.Signal(SIGTERM);
  auto exit = bridge.WaitForExit(20s);
  EXPECT_TRUE(exit.has_value() &&
              test_support::EndedCleanly(*exit, bridge.Output()))
      << (exit ? exit->ToString() : "still running") << "\n"
      << bridge.Output();
}

std::optional<std::string> NextStatsLine(ServerProcess& bridge) {
  const size_t before = StatsLines(bridge).size();
  std::vector<std::string> lines;
  WaitUntil(
      [&] {
        lines = StatsLines(bridge);
        return lines.size() > before || !bridge.Running();
      },
      kEffectBound, 50ms);
  if (lines.size() <= before) return std::nullopt;
  return lines[before];
}

void BridgeAndIndexerTest::SetUp() {
  indexer_ = IndexerUnderTest::Start();
  ASSERT_NE(indexer_, nullptr);
}

void BridgeAndIndexerTest::TearDown() {
  if (HasFailure()) {
    if (bridge_) std::cerr << "--- bridge output\n" << bridge_->Output();
    if (indexer_) {
      std::cerr << "--- server output\n" << indexer_->process().Output();
    }
  }
  if (bridge_ && bridge_->Running()) StopBridge(*bridge_);
}

void BridgeAndIndexerTest::Start(FakeSglangPublisher& publisher,
                                 bool with_replay,
                                 std::map<std::string, std::string> env) {
  bridge_ = StartBridge(*indexer_, publisher, with_replay, std::move(env));
  ASSERT_NE(bridge_, nullptr);
}

}  // namespace kvindexer::bridge::testing
