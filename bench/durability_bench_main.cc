// kv-indexer-durability-bench: what restart-safe state costs and what it
// buys (docs/durability.md; BENCHMARKS.md, "Restart-safe state"). It spawns
// kv-indexer-server itself, on free 127.0.0.1 ports, with data directories
// under --data_root, and runs three phases, side by side in one run:
//
//   ingest      the same plan of 16,384-hash applies against a fresh server
//               with no data directory, with KV_INDEXER_WAL_SYNC=none and
//               with =always, in rounds (hashes/s, medians over rounds);
//   checkpoint  a server preloaded to --placements placements (wal-always
//               unless --loaded_wal_sync=none):
//               MatchExternalKvPrefix p99 at fixed offered loads while a
//               checkpoint is built and while it is written, against the
//               same load idle (durability_checkpoint_latency.h);
//   checkpoint-paired
//               the same, measured instead in alternating slices of one
//               checkpoint with its builder process paused and running
//               (durability_checkpoint_paired.h; needs the process
//               builder, the default); not in the default --phases;
//   interferer-paired
//               the same pairs of slices beside stand-ins for a builder
//               that load the machine in one way each (--interferers:
//               spin, random, stream; durability_interferer.h); not in the
//               default --phases;
//   preload     only the preload of that server, timed: with a replay
//               bound below the preload's log (--checkpoint_bytes,
//               --max_replay_bytes) its writes wait for checkpoint builds;
//               not in the default --phases;
//   recovery    that server stopped (SIGTERM), killed (SIGKILL), and killed
//               with a nearly full log, each time restarted on its
//               directory: recovery time, disk bytes, and the headline
//               query answered as before; --restarts adds kills after
//               sustained churn, and at the replay bound's worst moment.
//
// Output: a table on stdout, JSON to --json_out, progress on stderr. Exit 1
// when more RPCs failed than --max_failed_rpcs allows, when a restarted
// server answers the headline query wrongly or recovers a different number
// of placements than the previous start (a start after a kill at the cap,
// which may fall between a REPORT and its REVOKE, is not compared with the
// one before it), or when --stall_builds did not bring the log to the cap;
// 2 when --max_run_s is exceeded.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench_report.h"
#include "common/wire_vocabulary.h"
#include "durability_checkpoint_latency.h"
#include "durability_checkpoint_paired.h"
#include "durability_ingest.h"
#include "durability_interferer.h"
#include "durability_recovery.h"
#include "durability_rig.h"
#include "grpcpp/grpcpp.h"
#include "ingest_plan.h"
#include "json_writer.h"
#include "load_client.h"
#include "machine_info.h"
#include "server/durability_config.h"
#include "synthetic_fleet.h"
#include "tests/support/scratch_dir.h"

ABSL_FLAG(std::string, server, "", "Path of kv-indexer-server (required)");
ABSL_FLAG(std::string, backend, "",
          "KV_INDEXER_BACKEND of the servers (empty: the server's default)");
ABSL_FLAG(std::string, server_log, "",
          "File the servers' output is appended to (empty: temporary files)");
ABSL_FLAG(std::string, data_root, "",
          "Directory under which fresh data directories are made (empty: "
          "$TMPDIR or /tmp); it must be on the disk being measured");
ABSL_FLAG(std::string, phases, "ingest,checkpoint,recovery",
          "Comma-separated phases to run");
ABSL_FLAG(std::string, json_out, "", "Write the JSON report to this file");
ABSL_FLAG(std::string, label, "", "Free-form label stored in the report");

ABSL_FLAG(uint32_t, workers, 32, "Workers in the synthetic fleet");
ABSL_FLAG(uint64_t, seed, 1, "Random seed of the fleet");
ABSL_FLAG(uint32_t, channels, 4, "gRPC channels (TCP connections)");
ABSL_FLAG(uint32_t, rpc_deadline_ms, 2000, "Deadline of queries");
ABSL_FLAG(uint64_t, checkpoint_bytes, 0,
          "KV_INDEXER_CHECKPOINT_BYTES of the durable servers (0: the "
          "server's default, 64 MiB)");
ABSL_FLAG(std::string, checkpoint_builder, "",
          "KV_INDEXER_CHECKPOINT_BUILDER of the durable servers, process or "
          "thread (empty: the server's default, process)");

ABSL_FLAG(std::string, max_replay_bytes, "",
          "KV_INDEXER_MAX_REPLAY_BYTES of the durable servers (empty: the "
          "server's default, twice the checkpoint size; 0: no bound)");

ABSL_FLAG(uint64_t, ingest_hashes, 8'000'000,
          "Hashes in the ingest plan (16,384-hash batches)");
ABSL_FLAG(uint32_t, ingest_rounds, 5, "Rounds of the three ingest runs");
ABSL_FLAG(uint32_t, ingest_max_outstanding, 32,
          "Concurrent applies (at most one per worker)");
ABSL_FLAG(double, ingest_max_s, 120, "Time cap of each ingest run (seconds)");

ABSL_FLAG(uint64_t, placements, 10'000'000,
          "Placements preloaded for the checkpoint and recovery phases");
ABSL_FLAG(uint32_t, query_min_blocks, 32, "Shortest query (blocks)");
ABSL_FLAG(uint32_t, query_max_blocks, 2048, "Longest query (blocks)");
ABSL_FLAG(uint32_t, query_pool, 2048, "Distinct fleet queries to cycle over");
ABSL_FLAG(double, query_qps, 0,
          "Offered load of the latency runs; 0 = each of "
          "--query_qps_fractions of the saturation QPS measured on the "
          "preloaded server");
ABSL_FLAG(std::string, query_qps_fractions, "0.25,0.5", "See --query_qps");
ABSL_FLAG(double, saturation_s, 3, "Duration of the saturation run");
// As long as a checkpoint's build: on a busy virtual machine a p99 over a
// few seconds swings with the host's own noise (BENCHMARKS.md, "Prefix p99
// while a checkpoint is built and written").
ABSL_FLAG(double, idle_s, 30, "Duration of each idle latency run");
ABSL_FLAG(double, paired_slice_s, 3,
          "checkpoint-paired: duration of each paused or running slice");
ABSL_FLAG(uint32_t, paired_min_pairs, 0,
          "checkpoint-paired: fail with fewer pairs of slices over all "
          "rounds");
ABSL_FLAG(std::string, interferers, "spin,random,stream",
          "interferer-paired: the stand-ins to measure, in order");
ABSL_FLAG(uint64_t, interferer_mb, 600,
          "interferer-paired: the array of random and stream (MB)");
ABSL_FLAG(std::string, interferer_sched, "idle",
          "interferer-paired: idle (SCHED_IDLE at nice 19, as the checkpoint "
          "builder) or nice (nice 19 only)");
ABSL_FLAG(uint32_t, interferer_pairs, 10,
          "interferer-paired: pairs of slices per stand-in and load");
ABSL_FLAG(uint32_t, checkpoint_rounds, 3,
          "Rounds of idle run plus checkpoint run");
ABSL_FLAG(std::string, restarts, "sigterm,sigkill,sigkill-full-log",
          "How the recovery phase ends the server before each restart: "
          "sigterm, sigkill, sigkill-full-log (SIGKILL once the current "
          "log file holds 90% of the checkpoint size), sigkill-after-churn "
          "(SIGKILL after --churn_s of REPORT/REVOKE applies at full rate) "
          "or sigkill-at-cap (the same applies go on until the log a restart "
          "replays is at KV_INDEXER_MAX_REPLAY_BYTES, or for --cap_wait_s, "
          "and SIGKILL then)");
ABSL_FLAG(double, churn_s, 600,
          "sigkill-after-churn and sigkill-at-cap: seconds of applies before "
          "the kill");
ABSL_FLAG(double, cap_wait_s, 120,
          "sigkill-at-cap: the most seconds the applies go on after "
          "--churn_s waiting for the log to reach the replay cap");
ABSL_FLAG(bool, stall_builds, false,
          "sigkill-at-cap: after --churn_s, SIGSTOP the server's checkpoint "
          "builder processes (the default builder), so that the log reaches "
          "the replay cap");
ABSL_FLAG(std::string, loaded_wal_sync, "always",
          "KV_INDEXER_WAL_SYNC of the loaded server the checkpoint, preload "
          "and recovery phases share, and of its restarts: always or none");
ABSL_FLAG(uint32_t, churn_streams, 2,
          "sigkill-after-churn and sigkill-at-cap: concurrent senders of the "
          "applies");
ABSL_FLAG(uint32_t, write_rpc_deadline_ms, 120000,
          "Deadline of each write of the ingest runs, the preload and the "
          "churn; a write may wait for a checkpoint build at "
          "KV_INDEXER_MAX_REPLAY_BYTES, as long as the build takes");

ABSL_FLAG(int64_t, max_failed_rpcs, -1,
          "Exit 1 when more RPCs than this failed (-1: no limit)");
ABSL_FLAG(double, progress_s, 2, "Interval of progress lines (seconds)");
ABSL_FLAG(double, max_run_s, 1800,
          "Hard bound on the whole run; the process exits 2 when exceeded");

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::ScratchDir;

absl::Duration Secs(double s) { return absl::Milliseconds(s * 1000.0); }

// Says why the run stops, and gives its exit code.
int Failed(const absl::Status& status) {
  std::fprintf(stderr, "kv-indexer-durability-bench: %s\n",
               status.ToString().c_str());
  return 1;
}

// The slices of the paired phases at `qps`.
PairedSliceLoad PairedLoad(double qps, absl::Duration rpc_deadline,
                           absl::Duration progress) {
  PairedSliceLoad load;
  load.qps = qps;
  load.slice = Secs(absl::GetFlag(FLAGS_paired_slice_s));
  load.rpc_deadline = rpc_deadline;
  load.progress_every = progress;
  return load;
}

// What the summaries of both paired phases hold.
void WritePairedFields(JsonWriter& j, const PairedCheckpointFigures& f) {
  j.Field("offered_qps", f.qps);
  j.Field("pairs", uint64_t{f.ratios.size()});
  j.Field("paused_p99_us_median", Median(f.paused_p99_us));
  j.Field("running_p99_us_median", Median(f.running_p99_us));
  j.Field("ratio_median", Median(f.ratios));
  j.Field("failed_queries", f.failed_queries);
}

FleetConfig FleetFromFlags(uint64_t placements) {
  FleetConfig fc;
  fc.workers = std::max<uint32_t>(absl::GetFlag(FLAGS_workers), 1);
  fc.system_min_blocks = 128;
  fc.system_max_blocks = 512;
  fc.max_prompt_blocks = absl::GetFlag(FLAGS_query_max_blocks);
  fc.seed = absl::GetFlag(FLAGS_seed);
  // A little above the target so the fleet reaches it while still filling.
  fc.placements_per_worker = std::max<uint64_t>(
      placements / fc.workers + placements / fc.workers / 50, 1);
  return fc;
}

// A channel that has made one callback call (to a loopback port nothing
// listens on, so it fails at once) and so holds a reference to the shared
// callback completion queue for as long as it lives.
std::shared_ptr<grpc::Channel> HoldCallbackQueue() {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  auto stub = v1::KVIndexer::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(200));
  v1::GetExternalKvHitCountsRequest req;
  v1::GetExternalKvHitCountsResponse resp;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  stub->async()->GetExternalKvHitCounts(&ctx, &req, &resp, [&](grpc::Status) {
    std::lock_guard<std::mutex> l(mu);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done; });
  return channel;
}

std::string Mb(uint64_t bytes) {
  return absl::StrFormat("%.1f MiB", static_cast<double>(bytes) / 1048576.0);
}

int Run() {
  // Servers come and go with their connections. gRPC 1.51 runs the
  // callbacks of the async client API on a completion queue shared by the
  // channels that used it and shut down with the last of them; that shutdown
  // can crash its own thread (seen here in about half of the runs that
  // stopped a server). A channel that never closes keeps the queue for the
  // whole run.
  const std::shared_ptr<grpc::Channel> keep_callback_queue =
      HoldCallbackQueue();
  const auto run_start = std::chrono::steady_clock::now();
  const double max_run_s = absl::GetFlag(FLAGS_max_run_s);
  std::thread([max_run_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_run_s));
    std::fprintf(stderr,
                 "kv-indexer-durability-bench: --max_run_s=%.0f exceeded\n",
                 max_run_s);
    std::fflush(stderr);
    _exit(2);
  }).detach();

  RigOptions rig_options;
  rig_options.server_binary = absl::GetFlag(FLAGS_server);
  rig_options.backend = absl::GetFlag(FLAGS_backend);
  rig_options.server_log = absl::GetFlag(FLAGS_server_log);
  rig_options.checkpoint_bytes = absl::GetFlag(FLAGS_checkpoint_bytes);
  rig_options.checkpoint_builder = absl::GetFlag(FLAGS_checkpoint_builder);
  rig_options.max_replay_bytes = absl::GetFlag(FLAGS_max_replay_bytes);
  rig_options.channels = std::max<uint32_t>(absl::GetFlag(FLAGS_channels), 1);
  if (rig_options.server_binary.empty()) {
    std::fprintf(stderr, "kv-indexer-durability-bench: --server is required\n");
    return 1;
  }
  const std::vector<std::string> phases =
      absl::StrSplit(absl::GetFlag(FLAGS_phases), ',', absl::SkipEmpty());
  for (const std::string& phase : phases) {
    if (phase != "ingest" && phase != "checkpoint" &&
        phase != "checkpoint-paired" && phase != "interferer-paired" &&
        phase != "preload" && phase != "recovery") {
      std::fprintf(stderr,
                   "kv-indexer-durability-bench: --phases: unknown phase "
                   "'%s' (ingest, checkpoint, checkpoint-paired, "
                   "interferer-paired, preload, recovery)\n",
                   phase.c_str());
      return 1;
    }
  }
  for (const absl::string_view kind : absl::StrSplit(
           absl::GetFlag(FLAGS_interferers), ',', absl::SkipEmpty())) {
    if (kind != "spin" && kind != "random" && kind != "stream") {
      std::fprintf(stderr,
                   "kv-indexer-durability-bench: --interferers: unknown "
                   "stand-in '%s' (spin, random, stream)\n",
                   std::string(kind).c_str());
      return 1;
    }
  }
  if (absl::GetFlag(FLAGS_interferer_sched) != "idle" &&
      absl::GetFlag(FLAGS_interferer_sched) != "nice") {
    std::fprintf(stderr,
                 "kv-indexer-durability-bench: --interferer_sched must be idle "
                 "or nice\n");
    return 1;
  }
  const std::string loaded_sync = absl::GetFlag(FLAGS_loaded_wal_sync);
  if (loaded_sync != "always" && loaded_sync != "none") {
    std::fprintf(stderr,
                 "kv-indexer-durability-bench: --loaded_wal_sync must be "
                 "always or none\n");
    return 1;
  }
  if (absl::GetFlag(FLAGS_stall_builds) &&
      rig_options.checkpoint_builder == "thread") {
    std::fprintf(stderr,
                 "kv-indexer-durability-bench: --stall_builds stops builder "
                 "processes; --checkpoint_builder=thread has none\n");
    return 1;
  }
  const DurabilityMode loaded_mode =
      loaded_sync == "always" ? DurabilityMode::kAlways : DurabilityMode::kNone;
  const auto wants = [&](const std::string& p) {
    return std::find(phases.begin(), phases.end(), p) != phases.end();
  };
  const absl::Duration progress = Secs(absl::GetFlag(FLAGS_progress_s));
  const absl::Duration rpc_deadline =
      absl::Milliseconds(absl::GetFlag(FLAGS_rpc_deadline_ms));
  const absl::Duration write_deadline =
      absl::Milliseconds(absl::GetFlag(FLAGS_write_rpc_deadline_ms));
  const std::string data_root = absl::GetFlag(FLAGS_data_root);

  const MachineInfo machine = ReadMachineInfo();
  Report report;
  JsonWriter& j = report.json;
  j.BeginObject();
  j.Field("tool", "kv-indexer-durability-bench");
  j.Field("label", absl::GetFlag(FLAGS_label));
  j.Field("date_utc", machine.date_utc);
  j.BeginObject("machine");
  j.Field("nproc", uint64_t{machine.nproc});
  j.Field("cpu_model", machine.cpu_model);
  j.Field("mem_total_kb", machine.mem_total_kb);
  j.Field("loadavg_start", machine.loadavg);
  j.EndObject();
  j.BeginObject("config");
  j.Field("backend", rig_options.backend);
  j.Field("workers", uint64_t{absl::GetFlag(FLAGS_workers)});
  j.Field("checkpoint_bytes", rig_options.checkpoint_bytes);
  j.Field("checkpoint_builder", rig_options.checkpoint_builder);
  j.Field("max_replay_bytes", rig_options.max_replay_bytes);
  j.Field("ingest_hashes", absl::GetFlag(FLAGS_ingest_hashes));
  j.Field("ingest_rounds", uint64_t{absl::GetFlag(FLAGS_ingest_rounds)});
  j.Field("placements", absl::GetFlag(FLAGS_placements));
  j.Field("phases", absl::GetFlag(FLAGS_phases));
  j.EndObject();
  int rc = 0;

  // Ingest: no data directory vs WAL_SYNC=none vs WAL_SYNC=always.
  std::vector<IngestModeFigures> ingest;
  j.BeginArray("ingest");
  if (wants("ingest")) {
    const FleetConfig fc = FleetFromFlags(absl::GetFlag(FLAGS_ingest_hashes));
    SyntheticFleet fleet(fc);
    std::fprintf(
        stderr, "== planning %llu hashes of 16,384-hash applies\n",
        static_cast<unsigned long long>(absl::GetFlag(FLAGS_ingest_hashes)));
    const IngestPlan plan = MakePlan(&fleet, kMaxHashesPerRequest,
                                     absl::GetFlag(FLAGS_ingest_hashes));
    IngestComparisonOptions options;
    options.rounds = std::max<uint32_t>(absl::GetFlag(FLAGS_ingest_rounds), 1);
    options.data_root = data_root;
    options.load.max_outstanding =
        std::min(absl::GetFlag(FLAGS_ingest_max_outstanding), fc.workers);
    options.load.max_duration = Secs(absl::GetFlag(FLAGS_ingest_max_s));
    options.load.rpc_deadline = write_deadline;
    options.load.progress_every = progress;
    absl::StatusOr<std::vector<IngestModeFigures>> figures =
        CompareIngest(rig_options, options, plan, &report);
    if (!figures.ok()) return Failed(figures.status());
    ingest = *std::move(figures);
  }
  j.EndArray();

  // Checkpoint and recovery share one loaded server (--loaded_wal_sync).
  std::vector<CheckpointLatencyFigures> latency;  // one per offered load
  std::vector<PairedCheckpointFigures> paired;    // one per offered load
  double saturation_qps = 0;
  std::vector<RestartFigures> restarts;
  uint64_t fleet_placements = 0;
  double preload_hashes_per_s = 0;
  std::optional<RecoveredLine> first_start;
  j.BeginArray("checkpoint");
  if (wants("checkpoint") || wants("checkpoint-paired") ||
      wants("interferer-paired") || wants("recovery") || wants("preload")) {
    absl::StatusOr<std::unique_ptr<ScratchDir>> dir =
        ScratchDir::Create("kvindexer-durability-bench-", data_root);
    if (!dir.ok()) return Failed(dir.status());
    const std::string data_dir = (*dir)->Sub("data");
    absl::StatusOr<std::unique_ptr<DurabilityRig>> started =
        DurabilityRig::Start(rig_options, loaded_mode, data_dir);
    if (!started.ok()) return Failed(started.status());
    std::unique_ptr<DurabilityRig> rig = *std::move(started);
    const uint64_t placements = absl::GetFlag(FLAGS_placements);
    const FleetConfig fc = FleetFromFlags(placements);
    SyntheticFleet fleet(fc);
    std::fprintf(stderr, "== preload to %llu placements\n",
                 static_cast<unsigned long long>(placements));
    IngestLoad preload_load;
    preload_load.label = "preload";
    preload_load.max_outstanding =
        std::min(absl::GetFlag(FLAGS_ingest_max_outstanding), fc.workers);
    preload_load.max_duration = absl::Seconds(600);
    preload_load.rpc_deadline = write_deadline;
    preload_load.progress_every = progress;
    const IngestResult preload =
        PreloadFleet(&fleet, rig->pool(), placements, preload_load);
    report.failed_rpcs += preload.status.failed();
    fleet_placements = fleet.placements();
    preload_hashes_per_s = preload.hashes_per_s;
    std::printf(
        "preload: %llu placements in %.2f s (%.0f hashes/s), %llu "
        "RPCs failed\n",
        static_cast<unsigned long long>(fleet_placements), preload.seconds,
        preload.hashes_per_s,
        static_cast<unsigned long long>(preload.status.failed()));

    std::vector<v1::MatchExternalKvPrefixRequest> queries;
    for (uint32_t i = 0;
         i < std::max<uint32_t>(absl::GetFlag(FLAGS_query_pool), 1); ++i) {
      v1::MatchExternalKvPrefixRequest q;
      for (const int64_t h :
           fleet.SampleQuery(absl::GetFlag(FLAGS_query_min_blocks),
                             absl::GetFlag(FLAGS_query_max_blocks))) {
        q.add_hashes(h);
      }
      queries.push_back(std::move(q));
    }

    if (wants("checkpoint") || wants("checkpoint-paired") ||
        wants("interferer-paired")) {
      std::vector<double> loads;
      if (absl::GetFlag(FLAGS_query_qps) > 0) {
        loads.push_back(absl::GetFlag(FLAGS_query_qps));
      } else {
        QueryLoad saturation;
        saturation.label = "queries/saturation";
        saturation.offered_qps = 0;
        saturation.concurrency = 32;
        saturation.duration = Secs(absl::GetFlag(FLAGS_saturation_s));
        saturation.rpc_deadline = rpc_deadline;
        saturation.progress_every = progress;
        const QueryResult sat = RunQueries(rig->pool(), queries, saturation);
        WriteQuery(report, "wal-always", "queries/saturation", sat);
        saturation_qps = sat.achieved_qps;
        for (const absl::string_view text :
             absl::StrSplit(absl::GetFlag(FLAGS_query_qps_fractions), ',',
                            absl::SkipEmpty())) {
          double fraction = 0;
          if (!absl::SimpleAtod(text, &fraction) || fraction <= 0) {
            std::fprintf(stderr,
                         "kv-indexer-durability-bench: --query_qps_fractions "
                         "entry '%s' is not a positive number\n",
                         std::string(text).c_str());
            return 1;
          }
          loads.push_back(std::max(1.0, sat.achieved_qps * fraction));
        }
      }
      for (const double qps : loads) {
        if (wants("interferer-paired")) {
          for (const absl::string_view kind : absl::StrSplit(
                   absl::GetFlag(FLAGS_interferers), ',', absl::SkipEmpty())) {
            InterfererOptions options;
            options.kind = std::string(kind);
            options.mb = absl::GetFlag(FLAGS_interferer_mb);
            options.sched = absl::GetFlag(FLAGS_interferer_sched);
            options.load = PairedLoad(qps, rpc_deadline, progress);
            options.pairs = absl::GetFlag(FLAGS_interferer_pairs);
            options.min_pairs = absl::GetFlag(FLAGS_paired_min_pairs);
            absl::StatusOr<PairedCheckpointFigures> figures =
                MeasurePairedInterferer(*rig, queries, options, &report);
            if (!figures.ok()) return Failed(figures.status());
            const PairedCheckpointFigures& f = *figures;
            j.BeginObject();
            j.Field("run", "interferer-paired/summary");
            j.Field("interferer", options.kind);
            j.Field("interferer_sched", options.sched);
            WritePairedFields(j, f);
            j.EndObject();
            std::printf(
                "prefix p99 at %.0f qps beside interferer %s-%s paused / "
                "running: paused %.0f us, running %.0f us (medians of %zu "
                "pairs); running over paused per pair: median %.2fx; %llu "
                "failed\n",
                f.qps, options.kind.c_str(), options.sched.c_str(),
                Median(f.paused_p99_us), Median(f.running_p99_us),
                f.ratios.size(), Median(f.ratios),
                static_cast<unsigned long long>(f.failed_queries));
            std::fflush(stdout);
          }
        }
        if (wants("checkpoint-paired")) {
          PairedCheckpointOptions options;
          options.load = PairedLoad(qps, rpc_deadline, progress);
          options.min_pairs = absl::GetFlag(FLAGS_paired_min_pairs);
          options.rounds =
              std::max<uint32_t>(absl::GetFlag(FLAGS_checkpoint_rounds), 1);
          absl::StatusOr<PairedCheckpointFigures> figures =
              MeasurePairedCheckpoint(*rig, data_dir, queries, options,
                                      &report);
          if (!figures.ok()) return Failed(figures.status());
          const PairedCheckpointFigures& f = *figures;
          j.BeginObject();
          j.Field("run", "checkpoint-paired/summary");
          WritePairedFields(j, f);
          j.Field("checkpoint_seconds_median", Median(f.checkpoint_seconds));
          j.EndObject();
          paired.push_back(*std::move(figures));
        }
        if (!wants("checkpoint")) continue;
        CheckpointLatencyOptions options;
        options.qps = qps;
        options.idle_duration = Secs(absl::GetFlag(FLAGS_idle_s));
        options.rounds =
            std::max<uint32_t>(absl::GetFlag(FLAGS_checkpoint_rounds), 1);
        options.rpc_deadline = rpc_deadline;
        options.progress_every = progress;
        absl::StatusOr<CheckpointLatencyFigures> figures =
            MeasureCheckpointLatency(*rig, data_dir, queries, options, &report);
        if (!figures.ok()) return Failed(figures.status());
        const CheckpointLatencyFigures& f = *figures;
        j.BeginObject();
        j.Field("run", "checkpoint/summary");
        j.Field("offered_qps", f.qps);
        j.Field("idle_p99_us_median", Median(f.idle_p99_us));
        j.Field("build_p99_us_median", Median(f.build_p99_us));
        j.Field("write_p99_us_median", Median(f.write_p99_us));
        j.Field("build_seconds_median", Median(f.build_seconds));
        j.Field("write_seconds_median", Median(f.write_seconds));
        j.Field("build_answers_median", Median(f.build_answers));
        j.Field("write_answers_median", Median(f.write_answers));
        j.Field("trigger_seconds_median", Median(f.trigger_seconds));
        j.Field("failed_queries", f.failed_queries);
        j.EndObject();
        latency.push_back(*std::move(figures));
      }
    }

    if (wants("recovery")) {
      HeadlineCheck headline;
      for (const int64_t h : fleet.AnchorQuery()) headline.query.add_hashes(h);
      headline.workers = fc.workers;
      headline.prefix_blocks = fc.anchor_blocks;
      first_start = rig->recovered();
      LogSizes sizes;
      sizes.checkpoint_bytes = rig_options.checkpoint_bytes > 0
                                   ? rig_options.checkpoint_bytes
                                   : kDefaultCheckpointBytes;
      sizes.max_replay_bytes = kDefaultReplayRotations * sizes.checkpoint_bytes;
      if (!rig_options.max_replay_bytes.empty() &&
          !absl::SimpleAtoi(rig_options.max_replay_bytes,
                            &sizes.max_replay_bytes)) {
        std::fprintf(stderr,
                     "kv-indexer-durability-bench: --max_replay_bytes is not "
                     "a number of bytes\n");
        return 1;
      }
      for (const absl::string_view how : absl::StrSplit(
               absl::GetFlag(FLAGS_restarts), ',', absl::SkipEmpty())) {
        const std::optional<RestartKind> kind =
            ParseRestartKind(std::string(how));
        if (!kind.has_value()) {
          std::fprintf(stderr,
                       "kv-indexer-durability-bench: --restarts entry '%s' is "
                       "not sigterm, sigkill, sigkill-full-log, "
                       "sigkill-after-churn or sigkill-at-cap\n",
                       std::string(how).c_str());
          return 1;
        }
        std::fprintf(stderr, "== restart after %s\n", RestartKindName(*kind));
        ChurnOptions churn;
        churn.duration = Secs(absl::GetFlag(FLAGS_churn_s));
        churn.cap_wait = Secs(absl::GetFlag(FLAGS_cap_wait_s));
        churn.stall_builds = absl::GetFlag(FLAGS_stall_builds);
        churn.streams = absl::GetFlag(FLAGS_churn_streams);
        churn.rpc_deadline = write_deadline;
        absl::StatusOr<RestartFigures> figures = MeasureRestart(
            &rig, rig_options, data_dir, *kind, sizes, headline, churn);
        if (!figures.ok()) return Failed(figures.status());
        restarts.push_back(*std::move(figures));
      }
    }
    if (absl::Status s = rig->Stop(); !s.ok()) {
      std::fprintf(stderr, "kv-indexer-durability-bench: stopping: %s\n",
                   s.ToString().c_str());
      rc = 1;
    }
  }
  j.EndArray();

  j.BeginArray("restarts");
  for (const RestartFigures& r : restarts) {
    j.BeginObject();
    j.Field("how", RestartKindName(r.kind));
    j.Field("dir_bytes", r.dir.bytes);
    j.Field("checkpoint_bytes", r.dir.checkpoint_bytes);
    j.Field("wal_bytes", r.dir.wal_bytes);
    j.Field("checkpoint_files", uint64_t{r.dir.checkpoints});
    j.Field("wal_files", uint64_t{r.dir.wals});
    j.Field("recovered_workers", r.recovered.workers);
    j.Field("recovered_placements", r.recovered.placements);
    j.Field("recovered_checkpoint", r.recovered.checkpoint);
    j.Field("recovered_log_records", r.recovered.log_records);
    j.Field("recovered_log_bytes", r.recovered.log_bytes);
    j.Field("recovery_ms", r.recovered.ms);
    j.Field("recovery_checkpoint_ms", r.recovered.checkpoint_ms);
    j.Field("recovery_log_ms", r.recovered.log_ms);
    j.Field("seconds_to_listen", r.seconds_to_listen);
    j.Field("headline_ok", r.headline_ok);
    j.Field("tail_bytes", r.dir.tail_bytes);
    if (r.kind == RestartKind::kSigkillAfterChurn ||
        r.kind == RestartKind::kSigkillAtCap) {
      j.Field("churn_hashes_per_s", r.churn_hashes_per_s);
    }
    if (r.kind == RestartKind::kSigkillAtCap) {
      j.Field("reached_cap", r.reached_cap);
    }
    j.EndObject();
  }
  j.EndArray();

  // Summary.
  const auto median_of = [&](DurabilityMode mode) {
    for (const IngestModeFigures& f : ingest) {
      if (f.mode == mode) return Median(f.hashes_per_s);
    }
    return 0.0;
  };
  // The ratio to no-data-dir within each round, whose runs follow each
  // other within seconds: the machine's speed drifts between rounds.
  const auto round_ratios = [&](DurabilityMode mode) {
    std::vector<double> out;
    const IngestModeFigures* base = nullptr;
    const IngestModeFigures* of = nullptr;
    for (const IngestModeFigures& f : ingest) {
      if (f.mode == DurabilityMode::kOff) base = &f;
      if (f.mode == mode) of = &f;
    }
    if (base == nullptr || of == nullptr) return out;
    for (size_t r = 0;
         r < base->hashes_per_s.size() && r < of->hashes_per_s.size(); ++r) {
      if (base->hashes_per_s[r] > 0) {
        out.push_back(of->hashes_per_s[r] / base->hashes_per_s[r]);
      }
    }
    return out;
  };
  const double off = median_of(DurabilityMode::kOff);
  const double none = median_of(DurabilityMode::kNone);
  const double always = median_of(DurabilityMode::kAlways);
  const auto ratio = [](double x, double y) { return y > 0 ? x / y : 0.0; };
  j.BeginObject("summary");
  j.Field("ingest_off_hashes_per_s_median", off);
  j.Field("ingest_none_hashes_per_s_median", none);
  j.Field("ingest_always_hashes_per_s_median", always);
  j.Field("ingest_none_over_off", ratio(none, off));
  j.Field("ingest_always_over_off", ratio(always, off));
  j.Field("ingest_none_over_off_per_round_median",
          Median(round_ratios(DurabilityMode::kNone)));
  j.Field("ingest_always_over_off_per_round_median",
          Median(round_ratios(DurabilityMode::kAlways)));
  j.Field("fleet_placements", fleet_placements);
  j.Field("preload_hashes_per_s", preload_hashes_per_s);
  j.Field("saturation_qps", saturation_qps);
  j.BeginArray("checkpoint_p99_over_idle");
  for (const CheckpointLatencyFigures& f : latency) {
    j.BeginObject();
    j.Field("offered_qps", f.qps);
    j.Field("build", ratio(Median(f.build_p99_us), Median(f.idle_p99_us)));
    j.Field("write", ratio(Median(f.write_p99_us), Median(f.idle_p99_us)));
    j.EndObject();
  }
  j.EndArray();
  j.Field("failed_rpcs", report.failed_rpcs);
  j.EndObject();
  j.Field("loadavg_end", ReadMachineInfo().loadavg);
  j.Field("run_seconds", std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - run_start)
                             .count());
  j.EndObject();

  // The readable table.
  std::printf("kv-indexer-durability-bench  %s  nproc=%u  backend=%s\n",
              machine.date_utc.c_str(), machine.nproc,
              rig_options.backend.empty() ? "(server default)"
                                          : rig_options.backend.c_str());
  for (const IngestModeFigures& f : ingest) {
    std::string rounds;
    for (const double x : f.hashes_per_s) {
      absl::StrAppend(&rounds, rounds.empty() ? "" : " ",
                      absl::StrFormat("%.2fM", x / 1e6));
    }
    std::printf(
        "ingest 16384  %-12s %10.0f hashes/s median of rounds [%s]; over "
        "no-data-dir: %.2f of medians, %.2f median per round; apply p99 %.1f "
        "ms; dir %s, %u checkpoints\n",
        ModeName(f.mode), Median(f.hashes_per_s), rounds.c_str(),
        ratio(Median(f.hashes_per_s), off), Median(round_ratios(f.mode)),
        Median(f.p99_us) / 1000.0,
        Mb(f.dir_bytes.empty() ? 0 : f.dir_bytes.back()).c_str(),
        f.checkpoints.empty() ? 0 : f.checkpoints.back());
  }
  for (const CheckpointLatencyFigures& f : latency) {
    std::printf(
        "prefix p99 at %.0f qps (%.2f of saturation): idle %.0f us; while a "
        "checkpoint is built %.0f us (%.2fx), while it is written %.0f us "
        "(%.2fx); medians of %zu rounds; built in %.2f s, written in %.2f s; "
        "%llu failed\n",
        f.qps, ratio(f.qps, saturation_qps), Median(f.idle_p99_us),
        Median(f.build_p99_us),
        ratio(Median(f.build_p99_us), Median(f.idle_p99_us)),
        Median(f.write_p99_us),
        ratio(Median(f.write_p99_us), Median(f.idle_p99_us)),
        f.idle_p99_us.size(), Median(f.build_seconds), Median(f.write_seconds),
        static_cast<unsigned long long>(f.failed_queries));
  }
  for (const PairedCheckpointFigures& f : paired) {
    std::string ratios;
    for (const double x : f.ratios) {
      absl::StrAppend(&ratios, ratios.empty() ? "" : " ",
                      absl::StrFormat("%.2f", x));
    }
    std::printf(
        "prefix p99 at %.0f qps (%.2f of saturation), builder paused / "
        "running in alternating slices: paused %.0f us, running %.0f us "
        "(medians of %zu pairs); running over paused per pair: median %.2fx "
        "[%s]; checkpoint took %.2f s (median); %llu failed\n",
        f.qps, ratio(f.qps, saturation_qps), Median(f.paused_p99_us),
        Median(f.running_p99_us), f.ratios.size(), Median(f.ratios),
        ratios.c_str(), Median(f.checkpoint_seconds),
        static_cast<unsigned long long>(f.failed_queries));
  }
  if (first_start.has_value() || !restarts.empty()) {
    std::printf("fleet placements %llu\n",
                static_cast<unsigned long long>(fleet_placements));
  }
  bool have_previous = false;
  uint64_t previous_placements = 0;
  for (const RestartFigures& r : restarts) {
    std::printf(
        "restart after %-16s recovered %llu placements, %llu workers in %llu "
        "ms (checkpoint %llu ms, log %llu ms; listening after %.2f s) from "
        "checkpoint %llu plus %llu records (%s); dir %s (checkpoints %s in %u "
        "files, logs %s in %u); headline %s\n",
        RestartKindName(r.kind),
        static_cast<unsigned long long>(r.recovered.placements),
        static_cast<unsigned long long>(r.recovered.workers),
        static_cast<unsigned long long>(r.recovered.ms),
        static_cast<unsigned long long>(r.recovered.checkpoint_ms),
        static_cast<unsigned long long>(r.recovered.log_ms),
        r.seconds_to_listen,
        static_cast<unsigned long long>(r.recovered.checkpoint),
        static_cast<unsigned long long>(r.recovered.log_records),
        Mb(r.recovered.log_bytes).c_str(), Mb(r.dir.bytes).c_str(),
        Mb(r.dir.checkpoint_bytes).c_str(), r.dir.checkpoints,
        Mb(r.dir.wal_bytes).c_str(), r.dir.wals,
        r.headline_ok ? "ok" : "WRONG");
    if (r.kind == RestartKind::kSigkillAfterChurn) {
      std::printf("  churn before the kill: %.2f M hashes/s\n",
                  r.churn_hashes_per_s / 1e6);
    }
    if (r.kind == RestartKind::kSigkillAtCap) {
      std::printf(
          "  churn before the kill: %.2f M hashes/s; log to replay at the "
          "kill %s, %s\n",
          r.churn_hashes_per_s / 1e6, Mb(r.dir.tail_bytes).c_str(),
          r.reached_cap ? "at the cap"
                        : "below the cap (a build ended, or --cap_wait_s ran "
                          "out)");
    }
    if (!r.headline_ok) rc = 1;
    if (r.kind == RestartKind::kSigkillAtCap && !r.reached_cap &&
        absl::GetFlag(FLAGS_stall_builds)) {
      std::fprintf(stderr,
                   "kv-indexer-durability-bench: with its builds stopped, "
                   "the log was below the replay cap at the kill\n");
      rc = 1;
    }
    // A kill in the middle of the traffic may fall between a REPORT and the
    // REVOKE that takes its placements back: such a start is not compared.
    const bool comparable = r.kind != RestartKind::kSigkillAtCap;
    if (comparable && have_previous &&
        previous_placements != r.recovered.placements) {
      std::fprintf(stderr,
                   "kv-indexer-durability-bench: the restart after %s "
                   "recovered %llu placements, the one before %llu\n",
                   RestartKindName(r.kind),
                   static_cast<unsigned long long>(r.recovered.placements),
                   static_cast<unsigned long long>(previous_placements));
      rc = 1;
    }
    have_previous = true;
    previous_placements = r.recovered.placements;
  }
  std::fflush(stdout);

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << j.str() << "\n";
    if (!out) {
      std::fprintf(stderr, "kv-indexer-durability-bench: cannot write %s\n",
                   json_out.c_str());
      rc = 1;
    }
  }
  const int64_t max_failed = absl::GetFlag(FLAGS_max_failed_rpcs);
  if (max_failed >= 0 &&
      report.failed_rpcs > static_cast<uint64_t>(max_failed)) {
    std::fprintf(stderr,
                 "kv-indexer-durability-bench: %llu RPCs failed (limit %lld)\n",
                 static_cast<unsigned long long>(report.failed_rpcs),
                 static_cast<long long>(max_failed));
    rc = 1;
  }
  return rc;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  if (argc > 1 &&
      std::string_view(argv[1]) == kvindexer::bench::kInterfererFlag) {
    return kvindexer::bench::RunInterferer(argc, argv);
  }
  absl::SetProgramUsageMessage(
      "What restart-safe state costs: ingest with and without a data "
      "directory, prefix p99 during a checkpoint, recovery time. See "
      "bench/durability_bench_main.cc and BENCHMARKS.md.");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Run();
}
