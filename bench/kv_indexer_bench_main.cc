// kv-indexer-bench: load generator for a running kv-indexer-server.
//
// Drives the server over gRPC on loopback with a synthetic fleet (see
// synthetic_fleet.h) in four phases:
//   preload  load the index to --preload_placements placements;
//   ingest   ApplyExternalKvBatch throughput (hashes/s) for each batch size in
//            --ingest_batch_sizes (0 = one batch per request, as a bridge
//            sees one prefill; 16384 = the maximum batch);
//   query    MatchExternalKvPrefix QPS and latency at saturation (closed loop)
//            and at a fixed offered load (open loop), for fleet prompts of
//            --query_min_blocks..--query_max_blocks blocks and for the
//            headline query (the 128-block prefix every worker holds);
//   mixed    the fixed-load queries again while ingest runs: idle, paced at
//            --mixed_ingest_rate, and back-to-back maximum-size applies; with
//            a floor server also a control run that sends the same applies,
//            at the rate the server just sustained, to the floor: the cost of
//            the apply traffic alone, without index work or locking.
// With a floor server (--floor_target or --spawn_floor) the ingest and query
// phases also run against it, and the report gives server/floor ratios.
// Query and mixed phases run in rounds (server and floor alternating) and the
// ratios use medians over rounds, to blunt drifting background load.
//
// Output: a table on stdout, JSON to --json_out, progress lines on stderr.
// Every phase is bounded in time and --max_run_s bounds the whole run.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "bench_report.h"
#include "common/wire_vocabulary.h"
#include "ingest_plan.h"
#include "json_writer.h"
#include "load_client.h"
#include "machine_info.h"
#include "synthetic_fleet.h"
#include "tests/support/server_process.h"

ABSL_FLAG(std::string, target, "",
          "Address of a running kv-indexer-server (loopback only), e.g. "
          "127.0.0.1:50051 or [::1]:50051");
ABSL_FLAG(std::string, spawn_server, "",
          "Path of kv-indexer-server to start on a free 127.0.0.1 port instead "
          "of --target");
ABSL_FLAG(std::string, backend, "",
          "KV_INDEXER_BACKEND for a spawned server (empty: inherit)");
ABSL_FLAG(std::string, server_env, "",
          "More environment for a spawned server: NAME=VALUE pairs separated "
          "by commas, e.g. KV_INDEXER_MAX_PLACEMENTS=4294967295");
ABSL_FLAG(std::string, floor_target, "",
          "Address of a running kv-indexer-floor-server (loopback only)");
ABSL_FLAG(std::string, spawn_floor, "",
          "Path of kv-indexer-floor-server to start on a free port");
ABSL_FLAG(std::string, server_log, "",
          "File spawned servers' stdout and stderr are appended to (empty: a "
          "temporary file per server, removed when it stops)");
ABSL_FLAG(std::string, phases, "preload,ingest,query,mixed",
          "Comma-separated phases to run, in this order");
ABSL_FLAG(std::string, json_out, "", "Write the JSON report to this file");
ABSL_FLAG(std::string, label, "", "Free-form label stored in the report");

ABSL_FLAG(uint32_t, workers, 32, "Workers in the synthetic fleet");
ABSL_FLAG(double, swa_fraction, 0.5,
          "Share of FULL+SWA workers (cache_spec set, masks F|S); the rest "
          "are legacy");
ABSL_FLAG(uint32_t, swa_window_tokens, 1024, "SWA window of FULL+SWA workers");
ABSL_FLAG(uint32_t, system_prompts, 32, "Fleet-wide shared system prompts");
ABSL_FLAG(uint32_t, system_min_blocks, 128, "Shortest system prompt (blocks)");
ABSL_FLAG(uint32_t, system_max_blocks, 512, "Longest system prompt (blocks)");
ABSL_FLAG(uint32_t, anchor_blocks, 128,
          "Headline query length: prefix of system prompt 0 pinned on every "
          "worker");
ABSL_FLAG(uint32_t, turn_min_blocks, 4, "Shortest conversation turn (blocks)");
ABSL_FLAG(uint32_t, turn_max_blocks, 96, "Longest conversation turn (blocks)");
ABSL_FLAG(uint32_t, live_conversations, 4096, "Concurrent conversations");
ABSL_FLAG(double, zipf_s, 1.0,
          "Zipf exponent of system prompt and conversation popularity");
ABSL_FLAG(double, hbm_share, 0.4,
          "Share of each worker's capacity at HBM; the rest spills to DRAM");
ABSL_FLAG(uint64_t, seed, 1, "Random seed of the fleet");

ABSL_FLAG(uint64_t, preload_placements, 1'000'000,
          "Placements to load before the other phases");
ABSL_FLAG(std::string, ingest_batch_sizes, "0,16384",
          "Batch sizes of the ingest phase; 0 = one batch per request");
ABSL_FLAG(uint64_t, ingest_hashes, 4'000'000,
          "Hashes applied per ingest batch size");
ABSL_FLAG(uint32_t, ingest_max_outstanding, 32,
          "Concurrent applies in ingest/preload (at most one per worker)");
ABSL_FLAG(double, ingest_max_s, 30, "Time cap of each ingest run (seconds)");

ABSL_FLAG(uint32_t, channels, 4, "gRPC channels (TCP connections)");
ABSL_FLAG(uint32_t, query_min_blocks, 32, "Shortest query (blocks)");
ABSL_FLAG(uint32_t, query_max_blocks, 2048, "Longest query (blocks)");
ABSL_FLAG(uint32_t, query_pool, 2048, "Distinct fleet queries to cycle over");
ABSL_FLAG(double, query_s, 5, "Duration of each query run (seconds)");
ABSL_FLAG(uint32_t, query_concurrency, 32,
          "Outstanding queries at saturation (the server admits 32 by "
          "default; more are refused with RESOURCE_EXHAUSTED)");
ABSL_FLAG(double, query_qps, 0,
          "Fixed offered load (queries/s); 0 = --query_qps_fraction of the "
          "server's measured saturation QPS");
ABSL_FLAG(double, query_qps_fraction, 0.5,
          "Fixed offered load as a share of saturation when --query_qps=0");
ABSL_FLAG(uint32_t, query_max_outstanding, 512,
          "Open loop: queries beyond this many outstanding are skipped");
ABSL_FLAG(bool, headline, true,
          "Also run the headline query (the pinned prefix, every worker a "
          "candidate)");
ABSL_FLAG(uint32_t, rpc_deadline_ms, 2000, "Deadline of every RPC");

ABSL_FLAG(uint32_t, query_rounds, 2,
          "Rounds of the query phase (server and floor alternate)");
ABSL_FLAG(double, mixed_s, 4, "Duration of each mixed run (seconds)");
ABSL_FLAG(uint32_t, mixed_rounds, 3,
          "Rounds of the mixed phase (idle, paced, back-to-back each)");
ABSL_FLAG(double, mixed_ingest_rate, 200'000,
          "Paced ingest during mixed (hashes/s, realistic batches); 0 skips");
ABSL_FLAG(uint32_t, mixed_b2b_streams, 1,
          "Streams of back-to-back 16384-hash applies during mixed; 0 skips");
ABSL_FLAG(uint32_t, mixed_ingest_channels, 1,
          "Connections the mixed phase's applies use, separate from the "
          "query connections (a bridge has its own connection); 1..64");
ABSL_FLAG(uint64_t, mixed_pool_hashes, 4'000'000,
          "Hashes in the cycled pool of back-to-back applies: fleet batches "
          "followed by their inverses, so each pass does real work");

ABSL_FLAG(int64_t, max_failed_rpcs, -1,
          "Exit 1 when more RPCs than this failed (-1: no limit). Open-loop "
          "overload legitimately gets RESOURCE_EXHAUSTED.");
ABSL_FLAG(bool, check_headline, true,
          "Exit 1 unless the server answers the headline query with every "
          "worker matching the whole prefix");
ABSL_FLAG(double, progress_s, 2, "Interval of progress lines (seconds)");
ABSL_FLAG(double, connect_timeout_s, 20, "Time to wait for servers");
ABSL_FLAG(double, max_run_s, 600,
          "Hard bound on the whole run; the process exits 2 when exceeded");

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kMaxBatchHashes = kMaxHashesPerRequest;

// Accepts 127.0.0.0/8, [::1] and localhost, optionally with gRPC's "ipv4:" or
// "ipv6:" scheme.
bool IsLoopback(const std::string& target) {
  absl::string_view t = target;
  if (!absl::ConsumePrefix(&t, "ipv4:")) absl::ConsumePrefix(&t, "ipv6:");
  return absl::StartsWith(t, "127.") || absl::StartsWith(t, "[::1]:") ||
         absl::StartsWith(t, "localhost:");
}

using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;

struct Target {
  std::string name;  // "server" or "floor"
  std::unique_ptr<ServerProcess> process;
  std::unique_ptr<ChannelPool> pool;
  // The mixed phase's applies: connections of their own, as a bridge has.
  std::unique_ptr<ChannelPool> mixed_ingest_pool;
};

absl::Duration Secs(double s) { return absl::Milliseconds(s * 1000.0); }

// Starts or connects the server and the floor given by the flags. The
// server, if any, comes first. Fails with a message for the user.
// `with_mixed_ingest_pool`: also open the mixed phase's apply connections.
absl::StatusOr<std::vector<Target>> ConnectTargets(
    absl::Duration connect_timeout, uint32_t channels,
    bool with_mixed_ingest_pool) {
  std::vector<Target> targets;
  const auto add_target =
      [&](const std::string& name, const std::string& address,
          const std::string& spawn,
          std::map<std::string, std::string> env) -> absl::Status {
    Target t;
    t.name = name;
    std::string addr = address;
    if (!spawn.empty()) {
      ProcessOptions options;
      options.binary = spawn;
      options.env = std::move(env);
      options.output_path = absl::GetFlag(FLAGS_server_log);
      absl::StatusOr<ListeningServer> server =
          StartListeningServer(std::move(options), /*port=*/0,
                               absl::ToChronoMilliseconds(connect_timeout));
      if (!server.ok()) return server.status();
      t.process = std::move(server->process);
      addr = server->address;
    }
    if (addr.empty()) return absl::OkStatus();
    if (!IsLoopback(addr)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", name == "server" ? "target" : "floor_target", "=", addr,
          ": only loopback addresses (127.0.0.0/8, [::1], localhost) are "
          "accepted"));
    }
    absl::StatusOr<std::unique_ptr<ChannelPool>> pool =
        ChannelPool::Connect(addr, static_cast<int>(channels), connect_timeout);
    if (!pool.ok()) return pool.status();
    t.pool = std::move(*pool);
    if (with_mixed_ingest_pool) {
      absl::StatusOr<std::unique_ptr<ChannelPool>> ingest_pool =
          ChannelPool::Connect(
              addr,
              static_cast<int>(std::clamp<uint32_t>(
                  absl::GetFlag(FLAGS_mixed_ingest_channels), 1, 64)),
              connect_timeout);
      if (!ingest_pool.ok()) return ingest_pool.status();
      t.mixed_ingest_pool = std::move(*ingest_pool);
    }
    std::fprintf(stderr, "kv-indexer-bench: %s at %s (%u channels)\n",
                 name.c_str(), addr.c_str(), channels);
    targets.push_back(std::move(t));
    return absl::OkStatus();
  };
  std::map<std::string, std::string> server_env;
  if (!absl::GetFlag(FLAGS_backend).empty()) {
    server_env["KV_INDEXER_BACKEND"] = absl::GetFlag(FLAGS_backend);
  }
  for (absl::string_view pair : absl::StrSplit(absl::GetFlag(FLAGS_server_env),
                                               ',', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    if (eq == absl::string_view::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--server_env: \"", pair, "\" is not NAME=VALUE"));
    }
    server_env[std::string(pair.substr(0, eq))] =
        std::string(pair.substr(eq + 1));
  }
  if (!absl::GetFlag(FLAGS_target).empty() &&
      !absl::GetFlag(FLAGS_spawn_server).empty()) {
    return absl::InvalidArgumentError(
        "give --target or --spawn_server, not both");
  }
  if (absl::Status s =
          add_target("server", absl::GetFlag(FLAGS_target),
                     absl::GetFlag(FLAGS_spawn_server), server_env);
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("server: ", s.ToString()));
  }
  if (absl::Status s = add_target("floor", absl::GetFlag(FLAGS_floor_target),
                                  absl::GetFlag(FLAGS_spawn_floor), {});
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("floor: ", s.ToString()));
  }
  if (targets.empty()) {
    return absl::InvalidArgumentError(
        "no target; give --target, --spawn_server, --floor_target or "
        "--spawn_floor");
  }
  return targets;
}

// The synthetic fleet the flags describe, sized for `preload` placements.
FleetConfig FleetConfigFromFlags(uint64_t preload) {
  FleetConfig fc;
  fc.workers = std::max<uint32_t>(absl::GetFlag(FLAGS_workers), 1);
  fc.swa_fraction = absl::GetFlag(FLAGS_swa_fraction);
  fc.swa_window_tokens = absl::GetFlag(FLAGS_swa_window_tokens);
  fc.system_prompts = absl::GetFlag(FLAGS_system_prompts);
  fc.anchor_blocks = absl::GetFlag(FLAGS_anchor_blocks);
  fc.system_min_blocks =
      std::max(absl::GetFlag(FLAGS_system_min_blocks), fc.anchor_blocks);
  fc.system_max_blocks =
      std::max(absl::GetFlag(FLAGS_system_max_blocks), fc.system_min_blocks);
  fc.turn_min_blocks =
      std::max<uint32_t>(absl::GetFlag(FLAGS_turn_min_blocks), 1);
  fc.turn_max_blocks =
      std::max(absl::GetFlag(FLAGS_turn_max_blocks), fc.turn_min_blocks);
  fc.max_prompt_blocks = absl::GetFlag(FLAGS_query_max_blocks);
  fc.live_conversations = absl::GetFlag(FLAGS_live_conversations);
  fc.zipf_s = absl::GetFlag(FLAGS_zipf_s);
  fc.hbm_share = absl::GetFlag(FLAGS_hbm_share);
  fc.seed = absl::GetFlag(FLAGS_seed);
  // Capacity a little above the preload target so the fleet reaches it while
  // still filling, then churns at about that size.
  fc.placements_per_worker =
      std::max<uint64_t>(preload / fc.workers + preload / fc.workers / 50, 1);
  return fc;
}

// Opens the report object and writes the machine and the configuration.
void WriteReportHeader(const MachineInfo& machine, const FleetConfig& fc,
                       uint64_t preload, uint32_t channels, JsonWriter* out) {
  JsonWriter& j = *out;
  j.BeginObject();
  j.Field("tool", "kv-indexer-bench");
  j.Field("label", absl::GetFlag(FLAGS_label));
  j.Field("date_utc", machine.date_utc);
  j.BeginObject("machine");
  j.Field("nproc", uint64_t{machine.nproc});
  j.Field("cpu_model", machine.cpu_model);
  j.Field("mem_total_kb", machine.mem_total_kb);
  j.Field("loadavg_start", machine.loadavg);
  j.EndObject();
  j.BeginObject("config");
  j.Field("backend", absl::GetFlag(FLAGS_backend));
  j.Field("workers", uint64_t{fc.workers});
  j.Field("swa_fraction", fc.swa_fraction);
  j.Field("swa_window_tokens", uint64_t{fc.swa_window_tokens});
  j.Field("block_tokens", uint64_t{fc.block_tokens});
  j.Field("system_prompts", uint64_t{fc.system_prompts});
  j.Field("anchor_blocks", uint64_t{fc.anchor_blocks});
  j.Field("zipf_s", fc.zipf_s);
  j.Field("preload_placements", preload);
  j.Field("channels", uint64_t{channels});
  j.Field("query_concurrency",
          uint64_t{absl::GetFlag(FLAGS_query_concurrency)});
  j.Field("phases", absl::GetFlag(FLAGS_phases));
  j.EndObject();
}

int Run() {
  const Clock::time_point run_start = Clock::now();
  const double max_run_s = absl::GetFlag(FLAGS_max_run_s);
  // Watchdog: the run must stop by itself even if a server hangs.
  std::thread([max_run_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_run_s));
    std::fprintf(stderr, "kv-indexer-bench: --max_run_s=%.0f exceeded\n",
                 max_run_s);
    std::fflush(stderr);
    _exit(2);
  }).detach();
  // Phases that would start after 80% of the bound are skipped instead.
  const auto time_left = [&] {
    return std::chrono::duration<double>(Clock::now() - run_start).count() <
           0.8 * max_run_s;
  };

  const std::vector<std::string> phases =
      absl::StrSplit(absl::GetFlag(FLAGS_phases), ',', absl::SkipEmpty());
  const auto wants = [&](absl::string_view p) {
    return std::find(phases.begin(), phases.end(), p) != phases.end();
  };
  const absl::Duration connect_timeout =
      Secs(absl::GetFlag(FLAGS_connect_timeout_s));
  const uint32_t channels =
      std::max<uint32_t>(absl::GetFlag(FLAGS_channels), 1);

  absl::StatusOr<std::vector<Target>> connected =
      ConnectTargets(connect_timeout, channels, wants("mixed"));
  if (!connected.ok()) {
    std::fprintf(stderr, "kv-indexer-bench: %s\n",
                 std::string(connected.status().message()).c_str());
    return 1;
  }
  std::vector<Target>& targets = *connected;
  Target* server = targets[0].name == "server" ? &targets[0] : nullptr;
  Target* floor = targets.back().name == "floor" ? &targets.back() : nullptr;

  const uint64_t preload = absl::GetFlag(FLAGS_preload_placements);
  const FleetConfig fc = FleetConfigFromFlags(preload);
  SyntheticFleet fleet(fc);

  const MachineInfo machine = ReadMachineInfo();
  Report report;
  JsonWriter& j = report.json;
  WriteReportHeader(machine, fc, preload, channels, &j);
  j.BeginArray("results");

  const absl::Duration rpc_deadline =
      absl::Milliseconds(absl::GetFlag(FLAGS_rpc_deadline_ms));
  const absl::Duration progress = Secs(absl::GetFlag(FLAGS_progress_s));
  const uint32_t ingest_outstanding =
      std::min(absl::GetFlag(FLAGS_ingest_max_outstanding), fc.workers);

  // Preload (server only; the floor keeps no state).
  if (wants("preload") && server != nullptr) {
    std::fprintf(stderr, "== preload to %llu placements\n",
                 static_cast<unsigned long long>(preload));
    PlanSink sink(fc.workers);
    fleet.EmitAnchors(&sink);
    IngestResult total;
    total.label = "preload";
    const Clock::time_point t0 = Clock::now();
    uint64_t steps = 0;
    const uint64_t max_steps = preload * 4 + 1000;
    while (fleet.placements() < preload && steps < max_steps && time_left()) {
      while (fleet.placements() < preload && steps < max_steps &&
             sink.hashes() < 2'000'000) {
        fleet.Step(kMaxBatchHashes, &sink);
        ++steps;
      }
      fleet.Flush(&sink);
      const IngestPlan plan = sink.Take();
      IngestLoad load;
      load.label = "preload";
      load.max_outstanding = ingest_outstanding;
      load.max_duration = Secs(absl::GetFlag(FLAGS_ingest_max_s));
      load.rpc_deadline = rpc_deadline * 5;
      load.progress_every = progress;
      const IngestResult x = RunIngest(server->pool.get(), plan, load);
      total.hashes_ok += x.hashes_ok;
      total.batches_ok += x.batches_ok;
      total.batches_total += x.batches_total;
      for (size_t c = 0; c < x.status.by_code.size(); ++c) {
        total.status.by_code[c] += x.status.by_code[c];
      }
      total.truncated |= x.truncated;
      total.latency = x.latency;  // latency of the last chunk
      std::fprintf(stderr, "[preload] placements=%llu hashes_ok=%llu\n",
                   static_cast<unsigned long long>(fleet.placements()),
                   static_cast<unsigned long long>(total.hashes_ok));
    }
    fleet.Flush(&sink);
    total.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    total.hashes_per_s =
        static_cast<double>(total.hashes_ok) / std::max(total.seconds, 1e-9);
    total.mean_batch_hashes = total.batches_ok > 0
                                  ? static_cast<double>(total.hashes_ok) /
                                        static_cast<double>(total.batches_ok)
                                  : 0;
    WriteIngest(report, "server", "preload(incl. generation)", total);
  }
  j.EndArray();
  j.Field("placements_after_preload", fleet.placements());
  j.BeginArray("ingest");

  // Ingest.
  double ingest_max_batch_rate = 0;
  double floor_ingest_max_batch_rate = 0;
  if (wants("ingest")) {
    for (const absl::string_view size_text : absl::StrSplit(
             absl::GetFlag(FLAGS_ingest_batch_sizes), ',', absl::SkipEmpty())) {
      uint32_t batch = 0;
      if (!absl::SimpleAtoi(size_text, &batch) || batch > kMaxBatchHashes) {
        std::fprintf(stderr,
                     "kv-indexer-bench: --ingest_batch_sizes entry '%s' is "
                     "not 0..16384\n",
                     std::string(size_text).c_str());
        return 1;
      }
      if (!time_left()) break;
      const std::string key =
          batch == 0 ? "ingest/per-request" : absl::StrCat("ingest/", batch);
      std::fprintf(
          stderr, "== %s: planning %llu hashes\n", key.c_str(),
          static_cast<unsigned long long>(absl::GetFlag(FLAGS_ingest_hashes)));
      const IngestPlan plan =
          MakePlan(&fleet, batch, absl::GetFlag(FLAGS_ingest_hashes));
      for (Target& t : targets) {
        IngestLoad load;
        load.label = absl::StrCat(t.name, " ", key);
        load.max_outstanding = ingest_outstanding;
        load.max_duration = Secs(absl::GetFlag(FLAGS_ingest_max_s));
        load.rpc_deadline = rpc_deadline * 5;
        load.progress_every = progress;
        const IngestResult x = RunIngest(t.pool.get(), plan, load);
        WriteIngest(report, t.name, key, x);
        if (batch == kMaxBatchHashes) {
          (t.name == "server" ? ingest_max_batch_rate
                              : floor_ingest_max_batch_rate) = x.hashes_per_s;
        }
      }
    }
  }
  j.EndArray();

  // Query pools.
  std::vector<v1::MatchExternalKvPrefixRequest> fleet_queries;
  for (uint32_t i = 0;
       i < std::max<uint32_t>(absl::GetFlag(FLAGS_query_pool), 1); ++i) {
    v1::MatchExternalKvPrefixRequest q;
    for (const int64_t h :
         fleet.SampleQuery(absl::GetFlag(FLAGS_query_min_blocks),
                           absl::GetFlag(FLAGS_query_max_blocks))) {
      q.add_hashes(h);
    }
    fleet_queries.push_back(std::move(q));
  }
  std::vector<v1::MatchExternalKvPrefixRequest> headline_queries(1);
  for (const int64_t h : fleet.AnchorQuery()) headline_queries[0].add_hashes(h);

  const auto query_load = [&](const std::string& label, double qps) {
    QueryLoad load;
    load.label = label;
    load.offered_qps = qps;
    load.concurrency = qps > 0 ? absl::GetFlag(FLAGS_query_max_outstanding)
                               : absl::GetFlag(FLAGS_query_concurrency);
    load.duration = Secs(absl::GetFlag(FLAGS_query_s));
    load.rpc_deadline = rpc_deadline;
    load.progress_every = progress;
    return load;
  };

  // Query. Each round runs every sub-run against the server, then against
  // the floor, so background load drifts affect both alike; ratios use the
  // median over rounds.
  j.BeginArray("query");
  double fixed_qps = absl::GetFlag(FLAGS_query_qps);
  std::vector<double> server_headline_qps, floor_headline_qps;
  // CPU microseconds the answering process spent per OK headline answer.
  std::vector<double> server_headline_cpu, floor_headline_cpu;
  std::vector<double> server_fleet_qps, floor_fleet_qps;
  std::vector<double> idle_p99_from_query;
  bool headline_wrong = false;
  const uint32_t query_rounds =
      std::max<uint32_t>(absl::GetFlag(FLAGS_query_rounds), 1);
  for (uint32_t round = 0; round < query_rounds; ++round) {
    for (Target& t : targets) {
      if (!time_left()) break;
      if (!wants("query") && (t.name != "server" || round > 0)) continue;
      const bool is_server = t.name == "server";
      std::fprintf(stderr, "== query %s round %u: saturation\n", t.name.c_str(),
                   round + 1);
      const QueryResult sat = RunQueries(
          t.pool.get(), fleet_queries,
          query_load(absl::StrCat(t.name, " query/fleet/saturation"), 0));
      WriteQuery(report, t.name, "query/fleet/saturation", sat);
      (is_server ? server_fleet_qps : floor_fleet_qps)
          .push_back(sat.achieved_qps);
      if (fixed_qps <= 0 && is_server) {
        fixed_qps = sat.achieved_qps * absl::GetFlag(FLAGS_query_qps_fraction);
      }
      if (!wants("query")) continue;
      if (absl::GetFlag(FLAGS_headline)) {
        const double cpu_before = t.process ? t.process->CpuSeconds() : -1;
        const QueryResult head = RunQueries(
            t.pool.get(), headline_queries,
            query_load(absl::StrCat(t.name, " query/headline/saturation"), 0));
        const double cpu_after = t.process ? t.process->CpuSeconds() : -1;
        const double cpu =
            cpu_before >= 0 && cpu_after >= 0 ? cpu_after - cpu_before : -1;
        WriteQuery(report, t.name, "query/headline/saturation", head, cpu);
        const double ok = head.achieved_qps * head.seconds;
        if (cpu >= 0 && ok > 0) {
          (is_server ? server_headline_cpu : floor_headline_cpu)
              .push_back(cpu * 1e6 / ok);
        }
        if (is_server && absl::GetFlag(FLAGS_check_headline) &&
            (head.status.ok() == 0 ||
             head.mean_matches != static_cast<double>(fc.workers) ||
             head.mean_best_prefix != static_cast<double>(fc.anchor_blocks))) {
          std::fprintf(stderr,
                       "kv-indexer-bench: headline answer is wrong: %.2f "
                       "matches (want %u), best prefix %.2f (want %u)\n",
                       head.mean_matches, fc.workers, head.mean_best_prefix,
                       fc.anchor_blocks);
          headline_wrong = true;
        }
        (is_server ? server_headline_qps : floor_headline_qps)
            .push_back(head.achieved_qps);
      }
      if (fixed_qps <= 0) fixed_qps = sat.achieved_qps * 0.5;
      std::fprintf(stderr, "== query %s round %u: fixed %.0f qps\n",
                   t.name.c_str(), round + 1, fixed_qps);
      const QueryResult fixed = RunQueries(
          t.pool.get(), fleet_queries,
          query_load(absl::StrCat(t.name, " query/fleet/fixed"), fixed_qps));
      WriteQuery(report, t.name, "query/fleet/fixed", fixed);
      if (is_server) idle_p99_from_query.push_back(fixed.latency.p99_us);
    }
  }
  j.EndArray();

  // Mixed (server only): rounds of idle, paced ingest and back-to-back
  // maximum-size applies, all at the same offered query load.
  j.BeginArray("mixed");
  std::vector<double> mixed_idle_p99, mixed_b2b_p99, mixed_paced_p99;
  std::vector<double> mixed_control_p99;
  if (wants("mixed") && server != nullptr && fixed_qps > 0 && time_left()) {
    // `ingest_pool` receives the applies: the server, or the floor for the
    // control run that shows what the same apply traffic costs the queries
    // through CPU sharing alone (no index work, no locking). Either way the
    // applies travel on connections of their own, never on the queries'
    // connections: a bridge has its own connection to the server, and
    // sharing one would put a query behind a 16,384-hash request on the
    // same TCP stream.
    double last_ingest_rate = 0;  // hashes/s of the latest run's applies
    const auto run_mixed = [&](const std::string& key, const IngestPlan* plan,
                               IngestLoad ingest, ChannelPool* ingest_pool) {
      std::fprintf(stderr, "== %s at %.0f qps\n", key.c_str(), fixed_qps);
      QueryLoad ql = query_load("server " + key, fixed_qps);
      ql.duration = Secs(absl::GetFlag(FLAGS_mixed_s));
      std::atomic<bool> stop{false};
      std::optional<IngestResult> ix;
      std::thread ingester;
      if (plan != nullptr) {
        ingest.stop = &stop;
        ingest.max_duration = ql.duration + absl::Seconds(5);
        ingest.rpc_deadline = rpc_deadline * 5;
        ingest.progress_every = progress;
        ingester =
            std::thread([&] { ix = RunIngest(ingest_pool, *plan, ingest); });
      }
      const QueryResult q = RunQueries(server->pool.get(), fleet_queries, ql);
      stop.store(true);
      if (ingester.joinable()) ingester.join();
      WriteQuery(report, "server", key, q);
      if (ix.has_value()) WriteIngest(report, "server", key + "/ingest", *ix);
      last_ingest_rate = ix.has_value() ? ix->hashes_per_s : 0;
      return q.latency.p99_us;
    };
    const double rate = absl::GetFlag(FLAGS_mixed_ingest_rate);
    const uint32_t b2b = absl::GetFlag(FLAGS_mixed_b2b_streams);
    IngestPlan b2b_plan;
    if (b2b > 0) {
      b2b_plan = MakePlan(&fleet, kMaxBatchHashes,
                          absl::GetFlag(FLAGS_mixed_pool_hashes) / 2);
      AppendInverse(&b2b_plan, fc.block_tokens);
    }
    const uint32_t rounds =
        std::max<uint32_t>(absl::GetFlag(FLAGS_mixed_rounds), 1);
    for (uint32_t round = 0; round < rounds && time_left(); ++round) {
      mixed_idle_p99.push_back(
          run_mixed("mixed/idle", nullptr, IngestLoad(), nullptr));
      if (rate > 0 && time_left()) {
        // A fresh plan per round: the fleet moves on, as it would.
        const IngestPlan paced_plan = MakePlan(
            &fleet, 0,
            static_cast<uint64_t>(rate * (absl::GetFlag(FLAGS_mixed_s) + 5)));
        IngestLoad load;
        load.label = "server mixed/paced ingest";
        load.hashes_per_s = rate;
        load.max_outstanding = ingest_outstanding;
        mixed_paced_p99.push_back(run_mixed("mixed/paced-ingest", &paced_plan,
                                            load,
                                            server->mixed_ingest_pool.get()));
      }
      if (b2b > 0 && time_left()) {
        IngestLoad load;
        load.label = "server mixed/back-to-back";
        load.max_outstanding = b2b;
        load.cycle = true;
        mixed_b2b_p99.push_back(run_mixed("mixed/back-to-back-16384", &b2b_plan,
                                          load,
                                          server->mixed_ingest_pool.get()));
        if (floor != nullptr && time_left() && last_ingest_rate > 0) {
          // Same batches at the rate the server just sustained, so the
          // control costs the machine the same client and transport work.
          load.label = "floor mixed/back-to-back (control)";
          load.hashes_per_s = last_ingest_rate;
          mixed_control_p99.push_back(
              run_mixed("mixed/back-to-back-16384-to-floor", &b2b_plan, load,
                        floor->mixed_ingest_pool.get()));
        }
      }
    }
  }
  j.EndArray();

  // Ratios measured in this run, from medians over rounds.
  const auto ratio = [](double x, double y) { return y > 0 ? x / y : 0.0; };
  const double headline_ratio =
      ratio(Median(server_headline_qps), Median(floor_headline_qps));
  const double fleet_ratio =
      ratio(Median(server_fleet_qps), Median(floor_fleet_qps));
  const double b2b_ratio = ratio(Median(mixed_b2b_p99), Median(mixed_idle_p99));
  const double paced_ratio =
      ratio(Median(mixed_paced_p99), Median(mixed_idle_p99));
  j.BeginObject("ratios");
  j.Field("headline_qps_server_median", Median(server_headline_qps));
  j.Field("headline_qps_floor_median", Median(floor_headline_qps));
  j.Field("headline_qps_server_over_floor", headline_ratio);
  // Queries per CPU-second of the answering process, server over floor: the
  // server's own capacity, without the load generator's share of the cores.
  j.Field("headline_cpu_us_per_answer_server_median",
          Median(server_headline_cpu));
  j.Field("headline_cpu_us_per_answer_floor_median",
          Median(floor_headline_cpu));
  j.Field("headline_per_cpu_second_server_over_floor",
          ratio(Median(floor_headline_cpu), Median(server_headline_cpu)));
  j.Field("fleet_qps_server_median", Median(server_fleet_qps));
  j.Field("fleet_qps_floor_median", Median(floor_fleet_qps));
  j.Field("fleet_qps_server_over_floor", fleet_ratio);
  j.Field("ingest_16384_hashes_per_s", ingest_max_batch_rate);
  j.Field("ingest_16384_server_over_floor",
          ratio(ingest_max_batch_rate, floor_ingest_max_batch_rate));
  j.Field("query_fixed_qps", fixed_qps);
  j.Field("query_fixed_idle_p99_us_median", Median(idle_p99_from_query));
  j.Field("mixed_idle_p99_us_median", Median(mixed_idle_p99));
  j.Field("mixed_paced_p99_us_median", Median(mixed_paced_p99));
  j.Field("mixed_b2b_p99_us_median", Median(mixed_b2b_p99));
  j.Field("mixed_paced_p99_over_idle", paced_ratio);
  j.Field("mixed_b2b_p99_over_idle", b2b_ratio);
  j.Field("mixed_b2b_to_floor_p99_us_median", Median(mixed_control_p99));
  j.Field("mixed_b2b_to_floor_p99_over_idle",
          ratio(Median(mixed_control_p99), Median(mixed_idle_p99)));
  j.EndObject();
  j.Field("loadavg_end", ReadMachineInfo().loadavg);
  j.Field("run_seconds",
          std::chrono::duration<double>(Clock::now() - run_start).count());
  j.EndObject();

  // Readable table.
  std::printf("kv-indexer-bench  %s  backend=%s  workers=%u  placements=%llu\n",
              machine.date_utc.c_str(),
              absl::GetFlag(FLAGS_backend).empty()
                  ? "(server default)"
                  : absl::GetFlag(FLAGS_backend).c_str(),
              fc.workers, static_cast<unsigned long long>(fleet.placements()));
  for (const std::string& row : report.table) std::printf("%s\n", row.c_str());
  std::printf(
      "ratios (medians over rounds): headline qps server/floor %.2f (per "
      "process CPU-second %.2f)  fleet "
      "qps server/floor %.2f  ingest-16384 %.0f hashes/s (server/floor %.2f)"
      "  mixed p99 b2b/idle %.2f paced/idle %.2f b2b-to-floor/idle %.2f\n",
      headline_ratio,
      ratio(Median(floor_headline_cpu), Median(server_headline_cpu)),
      fleet_ratio, ingest_max_batch_rate,
      ratio(ingest_max_batch_rate, floor_ingest_max_batch_rate), b2b_ratio,
      paced_ratio, ratio(Median(mixed_control_p99), Median(mixed_idle_p99)));
  std::fflush(stdout);

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << j.str() << "\n";
    if (!out) {
      std::fprintf(stderr, "kv-indexer-bench: cannot write %s\n",
                   json_out.c_str());
      return 1;
    }
  }

  int rc = headline_wrong ? 1 : 0;
  const int64_t max_failed = absl::GetFlag(FLAGS_max_failed_rpcs);
  if (max_failed >= 0 &&
      report.failed_rpcs > static_cast<uint64_t>(max_failed)) {
    std::fprintf(stderr, "kv-indexer-bench: %llu RPCs failed (limit %lld)\n",
                 static_cast<unsigned long long>(report.failed_rpcs),
                 static_cast<long long>(max_failed));
    rc = 1;
  }
  for (Target& t : targets) {
    if (t.process != nullptr) {
      if (absl::Status s = t.process->Stop(std::chrono::seconds(10)); !s.ok()) {
        std::fprintf(stderr, "kv-indexer-bench: stopping %s: %s\n",
                     t.name.c_str(), s.ToString().c_str());
        rc = 1;
      }
    }
  }
  return rc;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Load generator for kv-indexer-server. See "
      "bench/kv_indexer_bench_main.cc "
      "and BENCHMARKS.md.");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Run();
}
