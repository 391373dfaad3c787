// kv-indexer-fleet-bench: what fleet mode costs and how fast it is
// (docs/fleet.md; BENCHMARKS.md, "Fleet mode"). It starts a nats-server
// with JetStream on loopback (tests/support/nats_server.h) and real
// kv-indexer-server replicas (KV_INDEXER_EVENT_SOURCE=jetstream) on free
// 127.0.0.1 ports, and appends through the bridge's own sink
// (bridge/log_applier.h) from this process. Phases, each on a stream of its
// own:
//
//   log-bytes   JetStream bytes per block hash for each of --bytes_batches
//               (fleet_log_bytes.h);
//   visibility  delay from LogApplier::Apply called to the batch answered
//               by every one of two replicas, at --rate batches/s of
//               --min_hashes..--max_hashes hashes (fleet_visibility.h);
//   catch-up    a log of --catchup_workers x --catchup_batches batches of
//               --catchup_batch_hashes hashes: a replica reading it whole,
//               the snapshot it writes, a fresh replica starting from that
//               snapshot (fleet_catchup.h);
//   queries     MatchExternalKvPrefix QPS and p99 against that fresh
//               replica, with the log quiet and with --rate batches/s
//               appended (fleet_query_load.h).
//
// --quick shrinks every size for a smoke run. Output: a markdown table on
// stdout, JSON to --json, progress on stderr. Exit 1 when a phase fails or
// a batch never became visible; 2 when --max_run_s is exceeded.
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
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_event_log.h"
#include "fleet_catchup.h"
#include "fleet_log_bytes.h"
#include "fleet_query_load.h"
#include "fleet_replica.h"
#include "fleet_traffic.h"
#include "fleet_visibility.h"
#include "grpcpp/grpcpp.h"
#include "json_writer.h"
#include "load_client.h"
#include "machine_info.h"
#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"
#include "tests/support/nats_server.h"

ABSL_FLAG(std::string, server, "", "Path of kv-indexer-server (required)");
ABSL_FLAG(std::string, backend, "",
          "KV_INDEXER_BACKEND of the replicas (empty: the server's default)");
ABSL_FLAG(std::string, server_log, "",
          "File the replicas' output is appended to (empty: temporary files)");
ABSL_FLAG(std::string, phases, "log-bytes,visibility,catch-up,queries",
          "Comma-separated phases to run (queries needs catch-up)");
ABSL_FLAG(bool, quick, false,
          "Small sizes everywhere, for a smoke run (overrides the size "
          "flags)");
ABSL_FLAG(std::string, json, "", "Write the JSON report to this file");
ABSL_FLAG(std::string, label, "", "Free-form label stored in the report");
ABSL_FLAG(uint64_t, seed, 1, "Random seed of the hashes");

ABSL_FLAG(std::string, bytes_batches, "64,16384",
          "Batch sizes (hashes) of the log-bytes phase");
ABSL_FLAG(uint64_t, bytes_hashes, 2'097'152,
          "Hashes appended per batch size in the log-bytes phase");

ABSL_FLAG(uint32_t, workers, 8, "Workers (one bridge each) appending");
ABSL_FLAG(double, rate, 200, "Batches per second of all workers together");
ABSL_FLAG(uint32_t, min_hashes, 32, "Smallest paced batch (hashes)");
ABSL_FLAG(uint32_t, max_hashes, 64, "Largest paced batch (hashes)");
ABSL_FLAG(uint64_t, visibility_batches, 4000,
          "Batches measured in the visibility phase");
ABSL_FLAG(uint32_t, poll_gap_us, 500,
          "Least time between two visibility polls of one replica");

ABSL_FLAG(uint32_t, catchup_workers, 8, "Workers of the catch-up log");
ABSL_FLAG(uint64_t, catchup_batches, 77, "Batches per worker of that log");
ABSL_FLAG(uint32_t, catchup_batch_hashes, 16384, "Hashes per batch of it");
ABSL_FLAG(uint32_t, catchup_timeout_s, 1800,
          "Bound on each wait of the catch-up phase");

ABSL_FLAG(double, query_s, 10, "Duration of each query run");
ABSL_FLAG(uint32_t, query_rounds, 2, "Pairs of quiet and appending runs");
ABSL_FLAG(uint32_t, query_concurrency, 16, "Queries kept outstanding");
ABSL_FLAG(uint32_t, query_min_blocks, 32, "Shortest query (blocks)");
ABSL_FLAG(uint32_t, query_max_blocks, 512, "Longest query (blocks)");
ABSL_FLAG(uint32_t, query_pool, 1024, "Distinct queries cycled over");

ABSL_FLAG(double, max_run_s, 3600,
          "Hard bound on the whole run; the process exits 2 when exceeded");

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::NatsServer;

// A channel that has made one callback call (to a loopback port nothing
// listens on) and so holds the shared callback completion queue of gRPC
// 1.51 for the whole run: replicas come and go with their connections, and
// that queue's shutdown with the last of them can crash its own thread
// (the same guard as kv-indexer-durability-bench).
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

struct Sizes {
  std::vector<uint32_t> bytes_batches;
  uint64_t bytes_hashes = 0;
  uint64_t visibility_batches = 0;
  uint32_t catchup_workers = 0;
  uint64_t catchup_batches = 0;
  uint32_t catchup_batch_hashes = 0;
  double query_s = 0;
  uint32_t query_rounds = 0;
};

absl::StatusOr<Sizes> SizesFromFlags() {
  Sizes s;
  for (const absl::string_view text : absl::StrSplit(
           absl::GetFlag(FLAGS_bytes_batches), ',', absl::SkipEmpty())) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0 || n > 16384) {
      return absl::InvalidArgumentError(
          absl::StrCat("--bytes_batches entry '", text, "' is not 1..16384"));
    }
    s.bytes_batches.push_back(n);
  }
  s.bytes_hashes = absl::GetFlag(FLAGS_bytes_hashes);
  s.visibility_batches = absl::GetFlag(FLAGS_visibility_batches);
  s.catchup_workers =
      std::max<uint32_t>(absl::GetFlag(FLAGS_catchup_workers), 1);
  s.catchup_batches =
      std::max<uint64_t>(absl::GetFlag(FLAGS_catchup_batches), 1);
  s.catchup_batch_hashes =
      std::clamp<uint32_t>(absl::GetFlag(FLAGS_catchup_batch_hashes), 1, 16384);
  s.query_s = absl::GetFlag(FLAGS_query_s);
  s.query_rounds = std::max<uint32_t>(absl::GetFlag(FLAGS_query_rounds), 1);
  if (absl::GetFlag(FLAGS_quick)) {
    s.bytes_hashes = std::min<uint64_t>(s.bytes_hashes, 65536);
    s.visibility_batches = 200;
    s.catchup_workers = 4;
    s.catchup_batches = 2;
    s.catchup_batch_hashes = 4096;
    s.query_s = 0.5;
    s.query_rounds = 1;
  }
  return s;
}

absl::StatusOr<std::unique_ptr<fleet::EventLog>> OpenLog(
    const std::string& url, const std::string& stream,
    const std::string& subject_prefix) {
  fleet::EventLogConfig config;
  config.nats.urls = {url};
  config.nats.timeout_ms = 30000;
  config.stream = stream;
  config.subject_prefix = subject_prefix;
  return fleet::OpenJetStreamEventLog(config);
}

double Ms(double us) { return us / 1000.0; }

void LatencyJson(JsonWriter& j, const std::string& key,
                 const LatencySummary& s) {
  j.BeginObject(key);
  j.Field("count", s.count);
  j.Field("p50_ms", Ms(s.p50_us));
  j.Field("p90_ms", Ms(s.p90_us));
  j.Field("p99_ms", Ms(s.p99_us));
  j.Field("max_ms", Ms(s.max_us));
  j.Field("mean_ms", Ms(s.mean_us));
  j.EndObject();
}

void StartJson(JsonWriter& j, const std::string& key,
               const ReplicaStartFigures& f) {
  j.BeginObject(key);
  j.Field("seconds_to_listen", f.seconds_to_listen);
  j.Field("seconds_to_serving", f.seconds_to_serving);
  j.Field("seconds_to_caught_up", f.seconds_to_caught_up);
  j.EndObject();
}

int Fail(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "kv-indexer-fleet-bench: %s: %s\n", what.c_str(),
               status.ToString().c_str());
  return 1;
}

int Run() {
  const std::shared_ptr<grpc::Channel> keep_callback_queue =
      HoldCallbackQueue();
  const auto run_start = std::chrono::steady_clock::now();
  const double max_run_s = absl::GetFlag(FLAGS_max_run_s);
  std::thread([max_run_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_run_s));
    std::fprintf(stderr, "kv-indexer-fleet-bench: --max_run_s=%.0f exceeded\n",
                 max_run_s);
    std::fflush(stderr);
    _exit(2);
  }).detach();

  if (absl::GetFlag(FLAGS_server).empty()) {
    std::fprintf(stderr, "kv-indexer-fleet-bench: --server is required\n");
    return 1;
  }
  absl::StatusOr<Sizes> sizes_or = SizesFromFlags();
  if (!sizes_or.ok()) return Fail("flags", sizes_or.status());
  const Sizes sizes = *sizes_or;
  const std::vector<std::string> phases =
      absl::StrSplit(absl::GetFlag(FLAGS_phases), ',', absl::SkipEmpty());
  const auto wants = [&](const std::string& p) {
    return std::find(phases.begin(), phases.end(), p) != phases.end();
  };
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const uint32_t workers = std::max<uint32_t>(absl::GetFlag(FLAGS_workers), 1);

  if (test_support::NatsServerBinary().empty()) {
    std::fprintf(stderr, "kv-indexer-fleet-bench: %s\n",
                 test_support::kNoNatsServerMessage);
    return 1;
  }
  std::fprintf(stderr, "== starting nats-server\n");
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  if (!nats.ok()) return Fail("nats-server", nats.status());
  const std::string url = (*nats)->url();

  ReplicaOptions replica_options;
  replica_options.server_binary = absl::GetFlag(FLAGS_server);
  replica_options.backend = absl::GetFlag(FLAGS_backend);
  replica_options.server_log = absl::GetFlag(FLAGS_server_log);
  replica_options.nats_url = url;
  replica_options.start_timeout =
      std::chrono::seconds(absl::GetFlag(FLAGS_catchup_timeout_s));

  PacedAppendOptions paced;
  paced.seed = seed;
  paced.workers = workers;
  paced.batches_per_s = absl::GetFlag(FLAGS_rate);
  paced.min_hashes = std::max<uint32_t>(absl::GetFlag(FLAGS_min_hashes), 1);
  paced.max_hashes = std::clamp<uint32_t>(absl::GetFlag(FLAGS_max_hashes),
                                          paced.min_hashes, 16384);

  const MachineInfo machine = ReadMachineInfo();
  JsonWriter j;
  j.BeginObject();
  j.Field("tool", "kv-indexer-fleet-bench");
  j.Field("label", absl::GetFlag(FLAGS_label));
  j.Field("date_utc", machine.date_utc);
  j.BeginObject("machine");
  j.Field("nproc", uint64_t{machine.nproc});
  j.Field("cpu_model", machine.cpu_model);
  j.Field("mem_total_kb", machine.mem_total_kb);
  j.Field("loadavg_start", machine.loadavg);
  j.EndObject();
  j.BeginObject("config");
  j.Field("quick", absl::GetFlag(FLAGS_quick));
  j.Field("backend", replica_options.backend);
  j.Field("workers", uint64_t{workers});
  j.Field("rate_batches_per_s", paced.batches_per_s);
  j.Field("min_hashes", uint64_t{paced.min_hashes});
  j.Field("max_hashes", uint64_t{paced.max_hashes});
  j.Field("visibility_batches", sizes.visibility_batches);
  j.Field("catchup_workers", uint64_t{sizes.catchup_workers});
  j.Field("catchup_batches_per_worker", sizes.catchup_batches);
  j.Field("catchup_batch_hashes", uint64_t{sizes.catchup_batch_hashes});
  j.Field("phases", absl::GetFlag(FLAGS_phases));
  j.EndObject();
  std::vector<std::string> rows;  // the markdown table
  const auto row = [&](const std::string& what, const std::string& figure) {
    rows.push_back(absl::StrCat("| ", what, " | ", figure, " |"));
    std::fprintf(stderr, "  => %s: %s\n", what.c_str(), figure.c_str());
  };
  int rc = 0;

  // Log bytes per hash.
  j.BeginArray("log_bytes");
  if (wants("log-bytes")) {
    for (const uint32_t batch : sizes.bytes_batches) {
      const std::string stream = absl::StrCat("KVBENCH_BYTES_", batch);
      std::fprintf(stderr, "== log bytes: batches of %u hashes\n", batch);
      absl::StatusOr<std::unique_ptr<fleet::EventLog>> log =
          OpenLog(url, stream, absl::StrCat("kvbench.bytes", batch));
      if (!log.ok()) return Fail("opening the log", log.status());
      absl::StatusOr<LogBytesFigures> f =
          MeasureLogBytes(**log, (*nats)->monitor_port(), stream, seed, workers,
                          batch, sizes.bytes_hashes);
      if (!f.ok()) return Fail("log bytes", f.status());
      j.BeginObject();
      j.Field("batch_hashes", uint64_t{f->batch_hashes});
      j.Field("hashes", f->hashes);
      j.Field("records", f->records);
      j.Field("stream_bytes", f->stream.bytes);
      j.Field("stream_messages", f->stream.messages);
      j.Field("bytes_per_hash", f->bytes_per_hash());
      j.Field("append_seconds", f->append_seconds);
      j.EndObject();
      row(absl::StrFormat("log bytes per hash, %u-hash batches", batch),
          absl::StrFormat(
              "%.2f B (%llu bytes / %llu hashes in %llu records; "
              "appended at %.0f hashes/s)",
              f->bytes_per_hash(),
              static_cast<unsigned long long>(f->stream.bytes),
              static_cast<unsigned long long>(f->hashes),
              static_cast<unsigned long long>(f->records),
              f->append_seconds > 0
                  ? static_cast<double>(f->hashes) / f->append_seconds
                  : 0.0));
    }
  }
  j.EndArray();

  // Visibility on two replicas.
  if (wants("visibility")) {
    const std::string stream = "KVBENCH_VISIBILITY";
    absl::StatusOr<std::unique_ptr<fleet::EventLog>> log =
        OpenLog(url, stream, "kvbench.vis");
    if (!log.ok()) return Fail("opening the log", log.status());
    ReplicaOptions options = replica_options;
    options.stream = stream;
    options.subject_prefix = "kvbench.vis";
    std::vector<std::unique_ptr<FleetReplica>> replicas;
    std::vector<ChannelPool*> pools;
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<std::unique_ptr<FleetReplica>> r =
          FleetReplica::Start(options);
      if (!r.ok()) return Fail("starting a replica", r.status());
      pools.push_back((*r)->pool());
      replicas.push_back(*std::move(r));
    }
    std::fprintf(stderr,
                 "== visibility: %llu batches at %.0f/s over 2 replicas\n",
                 static_cast<unsigned long long>(sizes.visibility_batches),
                 paced.batches_per_s);
    PacedAppendOptions options_v = paced;
    options_v.max_batches = sizes.visibility_batches;
    const VisibilityFigures f = MeasureVisibility(
        **log, pools, options_v,
        std::chrono::microseconds(absl::GetFlag(FLAGS_poll_gap_us)));
    j.BeginObject("visibility");
    j.Field("batches", f.append.batches);
    j.Field("hashes", f.append.hashes);
    j.Field("failed_appends", f.append.failed);
    j.Field("late_appends", f.append.late);
    j.Field("seconds", f.append.seconds);
    j.Field("invisible", f.invisible);
    j.Field("polls", f.polls);
    LatencyJson(j, "append_ack", f.append.append_ack);
    LatencyJson(j, "visible_on_both", f.visible_all);
    j.BeginArray("visible_on_each");
    for (const LatencySummary& s : f.visible_each) LatencyJson(j, "", s);
    j.EndArray();
    j.EndObject();
    row(absl::StrFormat(
            "visible on both replicas (%llu batches of %u-%u "
            "hashes at %.0f/s, %u workers)",
            static_cast<unsigned long long>(f.visible_all.count),
            paced.min_hashes, paced.max_hashes,
            f.append.seconds > 0 ? f.append.batches / f.append.seconds : 0.0,
            workers),
        absl::StrFormat("p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                        Ms(f.visible_all.p50_us), Ms(f.visible_all.p99_us),
                        Ms(f.visible_all.max_us)));
    row("append acknowledged by JetStream (same batches)",
        absl::StrFormat("p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                        Ms(f.append.append_ack.p50_us),
                        Ms(f.append.append_ack.p99_us),
                        Ms(f.append.append_ack.max_us)));
    if (f.invisible > 0 || f.append.failed > 0) {
      std::fprintf(stderr,
                   "kv-indexer-fleet-bench: %llu batches never became "
                   "visible, %llu appends failed\n",
                   static_cast<unsigned long long>(f.invisible),
                   static_cast<unsigned long long>(f.append.failed));
      rc = 1;
    }
    for (std::unique_ptr<FleetReplica>& r : replicas) {
      if (absl::Status s = r->Stop(); !s.ok()) {
        std::fprintf(stderr, "kv-indexer-fleet-bench: stopping: %s\n",
                     s.ToString().c_str());
        rc = 1;
      }
    }
  }

  // Catch-up from a snapshot, then queries against the fresh replica.
  if (wants("catch-up")) {
    const std::string stream = "KVBENCH_CATCHUP";
    absl::StatusOr<std::unique_ptr<fleet::EventLog>> log =
        OpenLog(url, stream, "kvbench.catchup");
    if (!log.ok()) return Fail("opening the log", log.status());
    BulkAppendOptions bulk;
    bulk.seed = seed;
    bulk.workers = sizes.catchup_workers;
    bulk.batches_per_worker = sizes.catchup_batches;
    bulk.batch_hashes = sizes.catchup_batch_hashes;
    std::fprintf(stderr, "== catch-up: writing %u x %llu batches of %u\n",
                 bulk.workers,
                 static_cast<unsigned long long>(bulk.batches_per_worker),
                 bulk.batch_hashes);
    absl::StatusOr<BulkAppendResult> written = BulkAppend(**log, bulk);
    if (!written.ok()) return Fail("writing the log", written.status());
    absl::StatusOr<StreamUsage> usage =
        ReadStreamUsage((*nats)->monitor_port(), stream);
    if (!usage.ok()) return Fail("stream usage", usage.status());
    ReplicaOptions options = replica_options;
    options.stream = stream;
    options.subject_prefix = "kvbench.catchup";
    std::unique_ptr<FleetReplica> fresh;
    absl::StatusOr<CatchUpFigures> f = MeasureCatchUp(
        **log, options,
        std::chrono::seconds(absl::GetFlag(FLAGS_catchup_timeout_s)), &fresh);
    if (!f.ok()) return Fail("catch-up", f.status());
    j.BeginObject("catch_up");
    j.Field("placements", written->hashes);
    j.Field("records", written->batches);
    j.Field("log_end", f->log_end);
    j.Field("log_bytes", usage->bytes);
    j.Field("append_seconds", written->seconds);
    StartJson(j, "whole_log", f->whole_log);
    j.Field("snapshot_written_s", f->snapshot_written_s);
    j.Field("snapshot_round_s", f->snapshot_round_s);
    j.Field("snapshot_bytes", f->snapshot->bytes);
    j.Field("snapshot_parts", f->snapshot->parts);
    j.Field("snapshot_position", f->snapshot->position);
    j.Field("snapshot_load_s", f->snapshot->seconds);
    StartJson(j, "from_snapshot", f->from_snapshot);
    j.EndObject();
    const auto start_figure = [](const ReplicaStartFigures& s) {
      return absl::StrFormat(
          "listening %.2f s, SERVING %.2f s, applied = log end %.2f s",
          s.seconds_to_listen, s.seconds_to_serving, s.seconds_to_caught_up);
    };
    row(absl::StrFormat("catch-up log: %llu placements in %llu records",
                        static_cast<unsigned long long>(written->hashes),
                        static_cast<unsigned long long>(written->batches)),
        absl::StrFormat("%.1f MiB in JetStream; appended in %.1f s (%.0f "
                        "hashes/s)",
                        usage->bytes / 1048576.0, written->seconds,
                        written->hashes / std::max(written->seconds, 1e-9)));
    row("replica start, no snapshot (reads the whole log)",
        start_figure(f->whole_log));
    row("snapshot of that replica",
        absl::StrFormat("%.1f MiB, %llu part(s), at position %llu; stored "
                        "%.2f s after the replica was spawned (round %.2f s)",
                        f->snapshot->bytes / 1048576.0,
                        static_cast<unsigned long long>(f->snapshot->parts),
                        static_cast<unsigned long long>(f->snapshot->position),
                        f->snapshot_written_s, f->snapshot_round_s));
    row("fresh replica start from the snapshot",
        absl::StrCat(start_figure(f->from_snapshot),
                     absl::StrFormat(" (snapshot loaded in %.2f s)",
                                     f->snapshot->seconds)));

    if (wants("queries")) {
      QueryPoolOptions pool;
      pool.seed = seed;
      pool.workers = sizes.catchup_workers;
      pool.batches_per_worker = sizes.catchup_batches;
      pool.batch_hashes = sizes.catchup_batch_hashes;
      pool.min_blocks = absl::GetFlag(FLAGS_query_min_blocks);
      pool.max_blocks = absl::GetFlag(FLAGS_query_max_blocks);
      pool.pool = std::max<uint32_t>(absl::GetFlag(FLAGS_query_pool), 1);
      const std::vector<v1::MatchExternalKvPrefixRequest> queries =
          MakeFleetQueries(pool);
      QueryLoad load;
      load.offered_qps = 0;
      load.concurrency =
          std::max<uint32_t>(absl::GetFlag(FLAGS_query_concurrency), 1);
      load.duration = absl::Milliseconds(sizes.query_s * 1000);
      load.progress_every = absl::Seconds(5);
      PacedAppendOptions append = paced;
      append.first_index = sizes.catchup_batches;  // fresh hashes
      const std::vector<QueryRound> rounds = MeasureQueriesUnderAppends(
          fresh->pool(), **log, queries, load, append, sizes.query_rounds);
      j.BeginArray("queries");
      for (const QueryRound& r : rounds) {
        j.BeginObject();
        j.Field("appending", r.appending);
        j.Field("achieved_qps", r.queries.achieved_qps);
        j.Field("failed", r.queries.status.failed());
        j.Field("mean_query_blocks", r.queries.mean_query_blocks);
        j.Field("mean_best_prefix", r.queries.mean_best_prefix);
        LatencyJson(j, "latency", r.queries.latency);
        if (r.appending) {
          j.Field("appended_batches", r.append.batches);
          j.Field(
              "append_batches_per_s",
              r.append.seconds > 0 ? r.append.batches / r.append.seconds : 0.0);
        }
        j.EndObject();
        row(absl::StrFormat(
                "prefix queries, %u outstanding, %s", load.concurrency,
                r.appending
                    ? absl::StrFormat("while %.0f batches/s are appended",
                                      r.append.seconds > 0
                                          ? r.append.batches / r.append.seconds
                                          : 0.0)
                    : std::string("log quiet")),
            absl::StrFormat(
                "%.0f QPS, p50 %.2f ms, p99 %.2f ms (mean %.0f "
                "blocks, best prefix %.0f; %llu failed)",
                r.queries.achieved_qps, Ms(r.queries.latency.p50_us),
                Ms(r.queries.latency.p99_us), r.queries.mean_query_blocks,
                r.queries.mean_best_prefix,
                static_cast<unsigned long long>(r.queries.status.failed())));
        if (r.queries.status.failed() > 0) rc = 1;
      }
      j.EndArray();
    }
    if (absl::Status s = fresh->Stop(); !s.ok()) {
      std::fprintf(stderr, "kv-indexer-fleet-bench: stopping: %s\n",
                   s.ToString().c_str());
      rc = 1;
    }
  }

  j.Field("loadavg_end", ReadMachineInfo().loadavg);
  j.Field("run_seconds", std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - run_start)
                             .count());
  j.EndObject();

  std::printf("kv-indexer-fleet-bench  %s  nproc=%u  load %s -> %s%s\n\n",
              machine.date_utc.c_str(), machine.nproc, machine.loadavg.c_str(),
              ReadMachineInfo().loadavg.c_str(),
              absl::GetFlag(FLAGS_quick) ? "  (--quick)" : "");
  std::printf("| Measure | Figure |\n| --- | --- |\n");
  for (const std::string& r : rows) std::printf("%s\n", r.c_str());
  std::fflush(stdout);

  const std::string json_out = absl::GetFlag(FLAGS_json);
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << j.str() << "\n";
    if (!out) {
      std::fprintf(stderr, "kv-indexer-fleet-bench: cannot write %s\n",
                   json_out.c_str());
      rc = 1;
    }
  }
  return rc;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Fleet mode against a nats-server and kv-indexer-server replicas it "
      "starts: log bytes per hash, batch visibility on two replicas, replica "
      "catch-up from a snapshot, prefix queries while the log is "
      "consumed. See bench/fleet_bench_main.cc and BENCHMARKS.md.");
  absl::ParseCommandLine(argc, argv);
  // The fleet library logs (stream creation and the like); stdout is for
  // the table.
  spdlog::set_default_logger(
      spdlog::stderr_logger_mt("kv-indexer-fleet-bench"));
  return kvindexer::bench::Run();
}
