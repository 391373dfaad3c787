// kv-indexer-line-a-bench: what serving line-A routers and bridges costs
// (BENCHMARKS.md, "Line-A routers and bridges"). It spawns kv-indexer-server
// on a free 127.0.0.1 port, once per phase, and measures:
//
//   query      --streams line-A streams, each installed as a staged
//              snapshot of prefixes of shared chains; the same prefix
//              queries as seed-era requests and as line-A requests naming
//              every stream's address as eligible, in alternating slices
//              (line_a_query_ratio.h). Prints each round's extra cost of
//              the line-A form and the median.
//   configure  --streams streams configured once, then one unchanged
//              Configure listing all of them per stream per second
//              (configure_heartbeat.h). Prints the server's CPU share of
//              one core against an idle window.
//   staged     one stream installed with --staged_placements placements in
//              Appends of --append_batch, timed from Begin to the Commit's
//              answer; GetStats must then count them all.
//
// Output: a table on stdout, JSON to --json_out, progress on stderr. Exit 1
// when a call fails or a count is wrong, 2 when --max_run_s is exceeded.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "configure_heartbeat.h"
#include "grpcpp/grpcpp.h"
#include "json_writer.h"
#include "kvindexer_admin.grpc.pb.h"
#include "line_a_fleet.h"
#include "line_a_query_ratio.h"
#include "load_client.h"
#include "machine_info.h"
#include "tests/support/server_process.h"

ABSL_FLAG(std::string, server, "", "Path of kv-indexer-server (required)");
ABSL_FLAG(std::string, backend, "", "KV_INDEXER_BACKEND; empty: the default");
ABSL_FLAG(std::string, server_log, "", "Append the server's output here");
ABSL_FLAG(std::string, json_out, "", "Write the results as JSON here");
ABSL_FLAG(std::string, phases, "query,configure,staged",
          "Comma-separated: query, configure, staged");
ABSL_FLAG(uint32_t, streams, 64, "Line-A streams (eligible addresses)");
ABSL_FLAG(uint32_t, chains, 256, "Query chains");
ABSL_FLAG(uint32_t, query_blocks, 128, "Blocks per query chain");
ABSL_FLAG(uint32_t, query_threads, 8, "Client threads of the query phase");
ABSL_FLAG(uint32_t, query_channels, 4, "gRPC connections of the query phase");
ABSL_FLAG(double, slice_s, 2, "Seconds per query slice");
ABSL_FLAG(uint32_t, rounds, 3, "Query rounds (two slices each)");
ABSL_FLAG(double, configure_window_s, 30, "Seconds of each heartbeat window");
ABSL_FLAG(uint32_t, staged_placements, 10'000'000,
          "Placements of the staged install");
ABSL_FLAG(uint32_t, append_batch, 16'384, "Placements per Append");
ABSL_FLAG(double, max_run_s, 600, "Bound on the whole run");

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;
namespace admin_v1 = ::kvindexer::admin::v1;
using test_support::ListeningServer;

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Exits 2 once --max_run_s has passed; a watchdog thread, not a wait.
void StartWatchdog() {
  const double bound = absl::GetFlag(FLAGS_max_run_s);
  std::thread([bound] {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(static_cast<int64_t>(bound * 1000)));
    std::fprintf(stderr, "kv-indexer-line-a-bench: --max_run_s=%.0f exceeded\n",
                 bound);
    std::_Exit(2);
  }).detach();
}

absl::StatusOr<ListeningServer> Spawn() {
  test_support::ProcessOptions options;
  options.binary = absl::GetFlag(FLAGS_server);
  options.output_path = absl::GetFlag(FLAGS_server_log);
  options.unset_env = {"KV_INDEXER_DATA_DIR", "KV_INDEXER_WRITE_TOKEN_FILE",
                       "KV_INDEXER_TLS_CERT_FILE", "KV_INDEXER_ROUTER_URLS"};
  if (!absl::GetFlag(FLAGS_backend).empty()) {
    options.env["KV_INDEXER_BACKEND"] = absl::GetFlag(FLAGS_backend);
  }
  options.env["KV_INDEXER_STAGING_MAX_PLACEMENTS"] = std::to_string(
      std::max<uint32_t>(absl::GetFlag(FLAGS_staged_placements), 20'000'000));
  return test_support::StartListeningServer(std::move(options), 0,
                                            std::chrono::seconds(60));
}

std::unique_ptr<v1::KVIndexer::Stub> Stub(const std::string& address) {
  return v1::KVIndexer::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
}

absl::Status Configure(v1::KVIndexer::Stub& stub,
                       const std::vector<LineAStream>& streams) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  v1::ConfigureExpectedWorkersResponse resp;
  const grpc::Status s =
      stub.ConfigureExpectedWorkers(&context, ConfigureRequest(streams), &resp);
  if (!s.ok()) {
    return absl::InternalError(absl::StrCat("Configure: ", s.error_message()));
  }
  return absl::OkStatus();
}

// Stream i holds chain c when (c + i) % 4 == 0, up to a length that varies
// with both, so that a query matches about a quarter of the streams at
// assorted depths.
int RunQueryPhase(JsonWriter& json) {
  const uint32_t stream_count = absl::GetFlag(FLAGS_streams);
  const uint32_t chain_count = absl::GetFlag(FLAGS_chains);
  const uint32_t blocks =
      std::max<uint32_t>(absl::GetFlag(FLAGS_query_blocks), 1);
  std::vector<std::vector<int64_t>> chains(chain_count);
  for (uint32_t c = 0; c < chain_count; ++c) {
    for (uint32_t b = 0; b < blocks; ++b) {
      chains[c].push_back(static_cast<int64_t>(Mix(c * 1'000'003ull + b)));
    }
  }
  absl::StatusOr<ListeningServer> server = Spawn();
  if (!server.ok()) {
    std::fprintf(stderr, "query: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto stub = Stub(server->address);
  const std::vector<LineAStream> streams = MakeLineAStreams(stream_count);
  if (absl::Status s = Configure(*stub, streams); !s.ok()) {
    std::fprintf(stderr, "query: %s\n", s.ToString().c_str());
    return 1;
  }
  uint64_t placements = 0;
  for (const LineAStream& stream : streams) {
    std::vector<int64_t> held;
    for (uint32_t c = 0; c < chain_count; ++c) {
      if ((c + stream.index) % 4 != 0) continue;
      const uint32_t length = 1 + (c * 7 + stream.index * 13) % blocks;
      held.insert(held.end(), chains[c].begin(), chains[c].begin() + length);
    }
    placements += held.size();
    if (absl::Status s = InstallStaged(*stub, stream, held, 16'384, 60);
        !s.ok()) {
      std::fprintf(stderr, "query: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "query: %u streams hold %lu placements\n", stream_count,
               static_cast<unsigned long>(placements));
  absl::StatusOr<std::unique_ptr<ChannelPool>> pool =
      ChannelPool::Connect(server->address,
                           static_cast<int>(std::max<uint32_t>(
                               absl::GetFlag(FLAGS_query_channels), 1)),
                           absl::Seconds(30));
  if (!pool.ok()) {
    std::fprintf(stderr, "query: %s\n", pool.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> eligible;
  for (const LineAStream& s : streams) eligible.push_back(s.address);
  QueryRatioOptions options;
  options.threads = std::max<uint32_t>(absl::GetFlag(FLAGS_query_threads), 1);
  options.slice_s = absl::GetFlag(FLAGS_slice_s);
  options.rounds = std::max<uint32_t>(absl::GetFlag(FLAGS_rounds), 1);
  absl::StatusOr<QueryRatio> ratio = RunQueryRatio(
      **pool, chains, eligible,
      [&server] { return server->process->CpuSeconds(); }, options);
  if (!ratio.ok()) {
    std::fprintf(stderr, "query: %s\n", ratio.status().ToString().c_str());
    return 1;
  }
  std::printf("%-6s %-9s %12s %10s %10s %14s\n", "round", "form", "queries/s",
              "p50 us", "p99 us", "server us/query");
  json.BeginArray("query_slices");
  for (const QuerySlice& slice : ratio->slices) {
    const char* form = slice.line_a ? "line-A" : "seed-era";
    std::printf("%-6u %-9s %12.0f %10.0f %10.0f %14.1f\n", slice.round, form,
                slice.qps, slice.latency.p50_us, slice.latency.p99_us,
                slice.server_cpu_us_per_query);
    json.BeginObject();
    json.Field("round", static_cast<uint64_t>(slice.round));
    json.Field("form", form);
    json.Field("qps", slice.qps);
    json.Field("p50_us", slice.latency.p50_us);
    json.Field("p99_us", slice.latency.p99_us);
    json.Field("server_cpu_us_per_query", slice.server_cpu_us_per_query);
    json.EndObject();
  }
  json.EndArray();
  const auto percents = [](const std::vector<double>& values) {
    std::string out;
    for (double v : values) {
      absl::StrAppend(&out, out.empty() ? "" : " ",
                      absl::StrFormat("%+.1f%%", v * 100));
    }
    return out;
  };
  std::printf(
      "line-A query with %u eligible addresses: server CPU per query "
      "%+.1f%% over seed-era (median of rounds: %s); throughput, client "
      "included, %+.1f%% (median of rounds: %s)\n",
      stream_count, ratio->median_server_overhead * 100,
      percents(ratio->server_overheads).c_str(), ratio->median_overhead * 100,
      percents(ratio->overheads).c_str());
  json.Field("query_placements", placements);
  json.Field("line_a_query_overhead", ratio->median_overhead);
  json.Field("line_a_query_server_cpu_overhead", ratio->median_server_overhead);
  return 0;
}

int RunConfigurePhase(JsonWriter& json) {
  const uint32_t stream_count = absl::GetFlag(FLAGS_streams);
  absl::StatusOr<ListeningServer> server = Spawn();
  if (!server.ok()) {
    std::fprintf(stderr, "configure: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto stub = Stub(server->address);
  const std::vector<LineAStream> streams = MakeLineAStreams(stream_count);
  if (absl::Status s = Configure(*stub, streams); !s.ok()) {
    std::fprintf(stderr, "configure: %s\n", s.ToString().c_str());
    return 1;
  }
  absl::StatusOr<HeartbeatCost> cost = MeasureConfigureHeartbeat(
      *stub, *server->process, ConfigureRequest(streams), stream_count,
      absl::GetFlag(FLAGS_configure_window_s));
  if (!cost.ok()) {
    std::fprintf(stderr, "configure: %s\n", cost.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "%u streams x 1 Hz unchanged Configure (%u entries each): %lu calls in "
      "%.1f s; server CPU %.3f s, idle %.3f s, as many paced one-hash "
      "MatchExternalKv %.3f s: %.2f%% of one core over idle, %.2f%% over "
      "the control\n",
      stream_count, stream_count, static_cast<unsigned long>(cost->configures),
      cost->window_s, cost->busy_cpu_s, cost->idle_cpu_s, cost->control_cpu_s,
      cost->added_core_share * 100, cost->over_control_core_share * 100);
  json.Field("heartbeat_configures", cost->configures);
  json.Field("heartbeat_busy_cpu_s", cost->busy_cpu_s);
  json.Field("heartbeat_idle_cpu_s", cost->idle_cpu_s);
  json.Field("heartbeat_control_cpu_s", cost->control_cpu_s);
  json.Field("heartbeat_added_core_share", cost->added_core_share);
  json.Field("heartbeat_over_control_core_share",
             cost->over_control_core_share);
  return 0;
}

int RunStagedPhase(JsonWriter& json) {
  const uint32_t count = absl::GetFlag(FLAGS_staged_placements);
  std::vector<int64_t> hashes(count);
  for (uint32_t i = 0; i < count; ++i) {
    hashes[i] = static_cast<int64_t>(Mix(0x5eed0000ull + i));
  }
  absl::StatusOr<ListeningServer> server = Spawn();
  if (!server.ok()) {
    std::fprintf(stderr, "staged: %s\n", server.status().ToString().c_str());
    return 1;
  }
  auto stub = Stub(server->address);
  const std::vector<LineAStream> streams = MakeLineAStreams(1);
  if (absl::Status s = Configure(*stub, streams); !s.ok()) {
    std::fprintf(stderr, "staged: %s\n", s.ToString().c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = InstallStaged(*stub, streams[0], hashes,
                                     absl::GetFlag(FLAGS_append_batch), 120);
      !s.ok()) {
    std::fprintf(stderr, "staged: %s\n", s.ToString().c_str());
    return 1;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  auto admin = admin_v1::KvIndexerAdmin::NewStub(
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(30));
  admin_v1::GetStatsResponse stats;
  const grpc::Status st =
      admin->GetStats(&context, admin_v1::GetStatsRequest(), &stats);
  if (!st.ok() || stats.backend().placements() != count) {
    std::fprintf(stderr, "staged: GetStats %s, %lu placements; expected %u\n",
                 st.error_message().c_str(),
                 static_cast<unsigned long>(stats.backend().placements()),
                 count);
    return 1;
  }
  std::printf(
      "staged snapshot of %u placements in Appends of %u: %.2f s from Begin "
      "to Commit (%.2fM placements/s)\n",
      count, absl::GetFlag(FLAGS_append_batch), seconds, count / seconds / 1e6);
  json.Field("staged_placements", static_cast<uint64_t>(count));
  json.Field("staged_seconds", seconds);
  return 0;
}

int Main() {
  if (absl::GetFlag(FLAGS_server).empty()) {
    std::fprintf(stderr, "kv-indexer-line-a-bench: --server is required\n");
    return 1;
  }
  StartWatchdog();
  JsonWriter json;
  json.BeginObject();
  const MachineInfo machine = ReadMachineInfo();
  json.Field("nproc", static_cast<uint64_t>(machine.nproc));
  json.Field("cpu_model", machine.cpu_model);
  json.Field("date_utc", machine.date_utc);
  int rc = 0;
  const std::vector<std::string> phases =
      absl::StrSplit(absl::GetFlag(FLAGS_phases), ',', absl::SkipEmpty());
  for (const std::string& phase : phases) {
    std::fprintf(stderr, "kv-indexer-line-a-bench: phase %s\n", phase.c_str());
    if (phase == "query") {
      rc = RunQueryPhase(json);
    } else if (phase == "configure") {
      rc = RunConfigurePhase(json);
    } else if (phase == "staged") {
      rc = RunStagedPhase(json);
    } else {
      std::fprintf(stderr, "unknown phase %s\n", phase.c_str());
      rc = 1;
    }
    if (rc != 0) return rc;
  }
  json.EndObject();
  if (!absl::GetFlag(FLAGS_json_out).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_json_out)) << json.str() << "\n";
  }
  return 0;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "kv-indexer-line-a-bench --server=<kv-indexer-server> [--phases=...]");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Main();
}
