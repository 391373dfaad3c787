// The monitoring that ships in monitoring/ (docs/monitoring.md) reads only
// metrics the binaries write. Every metric name the Grafana dashboard and
// the Prometheus rules query is taken from their files and looked up in real
// scrapes: a kv-indexer-server with a data directory, tokens and a router to
// report to, driven until its labelled families have samples; a replica of
// the fleet event log on a real nats-server; and a kv-indexer-bridge, with a
// server of its own, following one stream in multi-stream mode (which writes
// every bridge family, kvindexer_bridge_streams included). All on loopback.
// Renaming a metric in the code, or a typo in a query, fails here.
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/monitoring_queries.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/nats_server.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif
#ifndef KVINDEXER_MONITORING_DIR
#error "KVINDEXER_MONITORING_DIR must name the monitoring/ directory"
#endif

namespace kvindexer::e2e {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace monitoring_e2e_test {

using namespace std::chrono_literals;
using ::kv_indexer::v1::ApplyExternalKvBatchResponse;
using ::kv_indexer::v1::ConfigureExpectedWorkersResponse;
using ::kv_indexer::v1::KVIndexer;
using ::kv_indexer::v1::MatchExternalKvPrefixResponse;
using ::kv_indexer::v1::ReplaceExternalKvSnapshotResponse;
using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::ExpectedWorkers;
using ::kvindexer::test_support::HttpGet;
using ::kvindexer::test_support::NatsServer;
using ::kvindexer::test_support::PrefixRequest;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ScratchDir;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::Snapshot;
using ::kvindexer::test_support::WaitForMetricsPort;
using ::kvindexer::test_support::WaitUntil;

constexpr auto kBound = 20s;
constexpr char kPrefix[] = "kvindexer_";
constexpr char kWriteToken[] = "monitoring-write-token-0123456789";
constexpr char kReadToken[] = "monitoring-read-token-0123456789";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Metric name -> the files (relative to monitoring/) whose queries read it.
std::map<std::string, std::set<std::string>> QueriedNames() {
  std::map<std::string, std::set<std::string>> names;
  const auto add = [&](const std::string& file,
                       const std::vector<std::string>& queries) {
    for (const std::string& query : queries) {
      for (const std::string& name : MetricNames(query, kPrefix)) {
        names[name].insert(file);
      }
    }
  };
  const std::string dir = KVINDEXER_MONITORING_DIR;
  add("grafana/kvindexer.json",
      DashboardQueries(ReadFile(dir + "/grafana/kvindexer.json")));
  add("prometheus/kvindexer-rules.yml",
      RuleQueries(ReadFile(dir + "/prometheus/kvindexer-rules.yml")));
  return names;
}

// The names of the samples of a Prometheus text scrape.
std::set<std::string> SampleNames(std::string_view scrape) {
  std::set<std::string> names;
  while (!scrape.empty()) {
    const size_t end = scrape.find('\n');
    const std::string_view line = scrape.substr(0, end);
    if (!line.empty() && line.front() != '#') {
      names.emplace(line.substr(0, line.find_first_of("{ ")));
    }
    if (end == std::string_view::npos) break;
    scrape.remove_prefix(end + 1);
  }
  return names;
}

bool WriteSecretFile(const std::string& path, std::string_view text) {
  std::ofstream(path) << text << "\n";
  return chmod(path.c_str(), 0600) == 0;
}

std::unique_ptr<grpc::ClientContext> Context(bool write = false) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + 10s);
  context->AddMetadata(
      "authorization",
      absl::StrCat("Bearer ", write ? kWriteToken : kReadToken));
  return context;
}

// The variables a test run may inherit that would change what the started
// servers do.
std::vector<std::string> InheritedVariablesToDrop() {
  return {"KV_INDEXER_BACKEND",
          "KV_INDEXER_BACKEND_PATH",
          "KV_INDEXER_LOG_LEVEL",
          "KV_INDEXER_DATA_DIR",
          "KV_INDEXER_WAL_SYNC",
          "KV_INDEXER_EVENT_SOURCE",
          "KV_INDEXER_ROUTER_URLS",
          "KV_INDEXER_ADVERTISE_ENDPOINT",
          "KV_INDEXER_WRITE_TOKEN_FILE",
          "KV_INDEXER_METRICS_WORKER_SERIES",
          "KV_INDEXER_ADMIN_READ_TOKEN_FILE",
          "KV_INDEXER_CACHE_COMPONENTS",
          "KV_INDEXER_SINK",
          "KV_INDEXER_STATS_INTERVAL_SECS"};
}

TEST(MonitoringQueriesTest, ReadsTheQueriesOfBothFormats) {
  const std::string json = R"json({"panels": [{"title": "kvindexer_title",
    "targets": [{"expr": "sum(rate(kvindexer_a_total{code=\"kvindexer_x\"}[5m])) / kvindexer_b",
                 "legendFormat": "{{kvindexer_legend}}", "refId": "A"}]}],
    "templating": {"list": [{"definition": "label_values(kvindexer_c, job)",
      "query": {"query": "label_values(kvindexer_c, job)"}}]}})json";
  const std::vector<std::string> panels = DashboardQueries(json);
  ASSERT_EQ(panels.size(), 3u);
  EXPECT_EQ(panels[0],
            "sum(rate(kvindexer_a_total{code=\"kvindexer_x\"}[5m])) / "
            "kvindexer_b");
  EXPECT_EQ(MetricNames(panels[0], kPrefix),
            (std::set<std::string>{"kvindexer_a_total", "kvindexer_b"}));
  EXPECT_EQ(MetricNames(panels[2], kPrefix),
            (std::set<std::string>{"kvindexer_c"}));

  const std::string yaml = R"yaml(groups:
  - name: g
    rules:
      - alert: One
        expr: kvindexer_d == 0  # a comment
        annotations:
          summary: "kvindexer_summary"
      - alert: Two
        expr: |
          label_replace(kvindexer_e == 1, "cause", "kvindexer_f", "", "")

          or kvindexer_g
        for: 1m
      - alert: Three
        expr: 'kvindexer_h{a=''b''} > 0'
)yaml";
  const std::vector<std::string> rules = RuleQueries(yaml);
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0], "kvindexer_d == 0");
  EXPECT_EQ(MetricNames(rules[1], kPrefix),
            (std::set<std::string>{"kvindexer_e", "kvindexer_g"}));
  EXPECT_EQ(rules[2], "kvindexer_h{a='b'} > 0");
}

TEST(MonitoringE2eTest, EveryQueriedMetricIsScraped) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  const std::map<std::string, std::set<std::string>> queried = QueriedNames();
  // The files were read and parsed: a broken parser or path finds nothing.
  ASSERT_GE(queried.size(), 100u);
  for (const char* name :
       {"kvindexer_grpc_request_duration_seconds_bucket",
        "kvindexer_worker_ready", "kvindexer_fleet_lag_records",
        "kvindexer_bridge_rpc_failures_total"}) {
    EXPECT_TRUE(queried.contains(name)) << name;
  }

  auto dir = ScratchDir::Create("monitoring-e2e-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string write_token = (*dir)->Sub("write-token");
  const std::string read_token = (*dir)->Sub("read-token");
  ASSERT_TRUE(WriteSecretFile(write_token, kWriteToken));
  ASSERT_TRUE(WriteSecretFile(read_token, kReadToken));
  // Nothing listens there: every report fails, and is counted so.
  absl::StatusOr<int> router_port = test_support::PickFreeLoopbackPort();
  ASSERT_TRUE(router_port.ok()) << router_port.status();

  // The server: a data directory (log and checkpoint figures), both tokens
  // (their refusal counters), a router (status reports).
  ProcessOptions server_options;
  server_options.binary = KVINDEXER_SERVER_BINARY;
  server_options.unset_env = InheritedVariablesToDrop();
  server_options.env = {
      {"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"},
      {"KV_INDEXER_DATA_DIR", (*dir)->Sub("data")},
      {"KV_INDEXER_WRITE_TOKEN_FILE", write_token},
      {"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read_token},
      {"KV_INDEXER_ROUTER_URLS",
       absl::StrCat("http://127.0.0.1:", *router_port)},
      {"KV_INDEXER_ADVERTISE_ENDPOINT", "http://127.0.0.1:50051"},
      // A bound that is never reached: its series exist only with one.
      {"KV_INDEXER_MAX_PLACEMENTS", "4294967295"}};
  absl::StatusOr<ReadyServer> server =
      StartReadyServer(std::move(server_options), /*port=*/0, kBound);
  ASSERT_TRUE(server.ok()) << server.status();
  const int server_metrics = WaitForMetricsPort(*server->process, kBound);
  ASSERT_GT(server_metrics, 0) << server->process->Output();

  // Traffic for the families that have a sample only once something
  // happened: a worker with a heartbeat (its age), a sequenced worker (its
  // checkpoint seq), applies (their age), a prefix query with a match (the
  // per-worker reuse counter).
  KVIndexer::Stub& stub = *server->stub;
  {
    ConfigureExpectedWorkersResponse configured;
    const grpc::Status s = stub.ConfigureExpectedWorkers(
        Context(/*write=*/true).get(),
        ExpectedWorkers().Worker("gated", "10.0.0.2:9000"), &configured);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ReplaceExternalKvSnapshotResponse replaced;
    const grpc::Status r =
        stub.ReplaceExternalKvSnapshot(Context(/*write=*/true).get(),
                                       Snapshot("gated", "10.0.0.2:9000")
                                           .Epoch("e1")
                                           .AppliedSeq(3)
                                           .Tier(kTierHbm, {7, 8}),
                                       &replaced);
    ASSERT_TRUE(r.ok()) << r.error_message();
  }
  {
    auto context = Context(/*write=*/true);
    context->AddMetadata("kv-indexer-heartbeat-ttl-ms", "600000");
    ApplyExternalKvBatchResponse applied;
    const grpc::Status s = stub.ApplyExternalKvBatch(
        context.get(), Batch("w1", "10.0.0.1:9000").Report(kTierHbm, {1, 2}),
        &applied);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  {
    MatchExternalKvPrefixResponse matched;
    const grpc::Status s = stub.MatchExternalKvPrefix(
        Context().get(), PrefixRequest({1, 2, 3}), &matched);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // A replica of the fleet event log.
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  ProcessOptions replica_options;
  replica_options.binary = KVINDEXER_SERVER_BINARY;
  replica_options.unset_env = InheritedVariablesToDrop();
  replica_options.env = {{"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"},
                         {"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                         {"KV_INDEXER_NATS_URL", (*nats)->url()},
                         {"KV_INDEXER_NATS_REPLICAS", "1"}};
  absl::StatusOr<ReadyServer> replica =
      StartReadyServer(std::move(replica_options), /*port=*/0, kBound);
  ASSERT_TRUE(replica.ok()) << replica.status();
  const int replica_metrics = WaitForMetricsPort(*replica->process, kBound);
  ASSERT_GT(replica_metrics, 0) << replica->process->Output();

  // A bridge following one stream (multi-stream mode), with a server of its
  // own: the bridge configures the workers it expects, which would replace
  // the list the traffic above set. Its publisher's port has no publisher,
  // which leaves the stream waiting.
  ProcessOptions bridged_options;
  bridged_options.binary = KVINDEXER_SERVER_BINARY;
  bridged_options.unset_env = InheritedVariablesToDrop();
  absl::StatusOr<ReadyServer> bridged =
      StartReadyServer(std::move(bridged_options), /*port=*/0, kBound);
  ASSERT_TRUE(bridged.ok()) << bridged.status();
  absl::StatusOr<int> publisher_port = test_support::PickFreeLoopbackPort();
  ASSERT_TRUE(publisher_port.ok()) << publisher_port.status();
  ProcessOptions bridge_options;
  bridge_options.binary = KVINDEXER_BRIDGE_BINARY;
  bridge_options.unset_env = InheritedVariablesToDrop();
  bridge_options.unset_env.push_back("KV_INDEXER_WORKER_ID");
  bridge_options.env = {
      {"KV_INDEXER_WORKERS_JSON",
       absl::StrCat(R"([{"worker_id":"bridged","worker_address":)",
                    R"("http://127.0.0.1:30001","event_endpoint":)",
                    R"("tcp://127.0.0.1:)", *publisher_port, R"("}])")},
      {"KV_INDEXER_ENDPOINT", "http://" + bridged->address},
      {"KV_INDEXER_HEARTBEAT_TTL_MS", "0"},
      {"KV_INDEXER_BRIDGE_METRICS_ADDR", "127.0.0.1:0"}};
  absl::StatusOr<std::unique_ptr<ServerProcess>> bridge =
      ServerProcess::Start(std::move(bridge_options));
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  const int bridge_metrics = WaitForMetricsPort(**bridge, kBound);
  ASSERT_GT(bridge_metrics, 0) << (*bridge)->Output();

  // Scrapes all three until every queried name has a sample (the bridge
  // publishes its counters for the endpoint every 20 ms; the replica
  // attaches its follower once it has opened the log).
  std::set<std::string> missing;
  const bool all_found = WaitUntil(
      [&] {
        std::set<std::string> scraped;
        for (const int port :
             {server_metrics, replica_metrics, bridge_metrics}) {
          absl::StatusOr<test_support::HttpResponse> scrape =
              HttpGet(port, "/metrics");
          if (!scrape.ok() || scrape->status != 200) return false;
          scraped.merge(SampleNames(scrape->body));
        }
        missing.clear();
        for (const auto& [name, files] : queried) {
          if (!scraped.contains(name)) missing.insert(name);
        }
        return missing.empty();
      },
      kBound, 100ms);
  if (!all_found) {
    std::vector<std::string> lines;
    for (const std::string& name : missing) {
      lines.push_back(
          absl::StrCat(name, " (", absl::StrJoin(queried.at(name), ", "), ")"));
    }
    ADD_FAILURE() << "metrics queried by monitoring/ but in no scrape:\n  "
                  << absl::StrJoin(lines, "\n  ");
  }

  EXPECT_TRUE((*bridge)->Stop(kBound).ok()) << (*bridge)->Output();
  // A server stops at once only when no channel to it is left open.
  for (ReadyServer* s : {&*server, &*replica, &*bridged}) {
    s->stub.reset();
    s->channel.reset();
  }
  EXPECT_TRUE(bridged->process->Stop(kBound).ok())
      << bridged->process->Output();
  EXPECT_TRUE(replica->process->Stop(kBound).ok())
      << replica->process->Output();
  EXPECT_TRUE(server->process->Stop(kBound).ok()) << server->process->Output();
}

}  // namespace monitoring_e2e_test
}  // namespace kvindexer::e2e
