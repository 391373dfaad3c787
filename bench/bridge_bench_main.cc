// kv-indexer-bridge-bench: end-to-end benchmarks of kv-indexer-bridge over
// the real binaries on 127.0.0.1 (BENCHMARKS.md, "Bridge: end-to-end
// throughput and restore"):
//   throughput  a fake SGLang publisher -> bridge -> server, paced so that no
//               batch is dropped; batches/s and hashes/s from the first
//               publish to the last hash visible (bridge_throughput.h). Runs
//               interleave: for each repetition, each shape, each variant.
//   restore     a gated bridge with a replay endpoint restores 1,000,000
//               blocks into a server restarted empty (bridge_restore.h).
// Variants: --baseline_bridge (a bridge without the recovery engine, started
// with none of the recovery variables) and --bridge once per --gate_modes entry
// (KV_INDEXER_SEQUENCE_GATE; "on" and "auto" also get
// SGLANG_KV_REPLAY_ENDPOINT).
//
// Output: a table on stdout, JSON to --json_out, progress on stderr. "vs
// base" is the ratio of medians; "paired" the median over repetitions of a
// run's rate divided by the same repetition's baseline run.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bridge_payloads.h"
#include "bridge_restore.h"
#include "bridge_rig.h"
#include "bridge_throughput.h"
#include "json_writer.h"
#include "machine_info.h"

ABSL_FLAG(std::string, server, "", "Path of kv-indexer-server (required)");
ABSL_FLAG(std::string, backend, "",
          "KV_INDEXER_BACKEND for the servers (empty: the server's default)");
ABSL_FLAG(std::string, baseline_bridge, "",
          "kv-indexer-bridge without the recovery engine (variant "
          "\"baseline\")");
ABSL_FLAG(std::string, bridge, "", "kv-indexer-bridge under test");
ABSL_FLAG(std::string, gate_modes, "off,on",
          "KV_INDEXER_SEQUENCE_GATE values to run --bridge with (variants "
          "\"off\", \"on\", \"auto\"); on and auto also get the replay "
          "endpoint");
ABSL_FLAG(std::string, scenarios, "throughput,restore",
          "Comma list: throughput, restore");
ABSL_FLAG(std::string, shapes, "64x32p16,1x1024p1",
          "Throughput batch shapes <stores>x<hashes>p<page>");
ABSL_FLAG(uint32_t, batches, 2000, "Timed batches per throughput run");
ABSL_FLAG(uint32_t, window, 128, "Batches per pacing window");
ABSL_FLAG(uint32_t, poll_us, 2000, "Pause between visibility polls");
ABSL_FLAG(uint32_t, reps, 3, "Repetitions of every throughput run");
ABSL_FLAG(uint32_t, restore_blocks, 1'000'000, "Blocks the worker holds");
ABSL_FLAG(std::string, restore_shape, "1x1024p1",
          "Batch shape that stores the restore scenario's blocks");
ABSL_FLAG(std::string, restore_gate, "on",
          "KV_INDEXER_SEQUENCE_GATE of the restore scenario's --bridge");
ABSL_FLAG(uint32_t, restore_reps, 3, "Repetitions of the restore scenario");
ABSL_FLAG(uint32_t, restore_settle_ms, 3000,
          "Idle time between populating and killing the server");
ABSL_FLAG(uint32_t, timeout_s, 300,
          "Bound on each run's publishing and on each restore");
ABSL_FLAG(std::string, log_dir, "",
          "Directory for one server and one bridge log per variant (empty: "
          "temporary files)");
ABSL_FLAG(std::string, json_out, "", "Write the JSON report to this file");
ABSL_FLAG(std::string, label, "", "Free-form label stored in the report");

namespace kvindexer::bench {
namespace {

struct ThroughputRow {
  std::string shape;
  std::string variant;
  uint32_t rep = 0;
  ThroughputResult result;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string LogPath(const std::string& name) {
  const std::string dir = absl::GetFlag(FLAGS_log_dir);
  return dir.empty() ? "" : absl::StrCat(dir, "/", name, ".log");
}

absl::StatusOr<std::vector<BridgeVariant>> Variants() {
  std::vector<BridgeVariant> variants;
  if (!absl::GetFlag(FLAGS_baseline_bridge).empty()) {
    variants.push_back(
        {"baseline", absl::GetFlag(FLAGS_baseline_bridge), "", false});
  }
  const std::string bridge = absl::GetFlag(FLAGS_bridge);
  if (!bridge.empty()) {
    for (absl::string_view mode : absl::StrSplit(
             absl::GetFlag(FLAGS_gate_modes), ',', absl::SkipEmpty())) {
      if (mode != "off" && mode != "on" && mode != "auto") {
        return absl::InvalidArgumentError(absl::StrCat(
            "--gate_modes: \"", mode, "\" is not off, on or auto"));
      }
      variants.push_back(
          {std::string(mode), bridge, std::string(mode), mode != "off"});
    }
  }
  return variants;
}

std::vector<std::string> Payloads(const BatchPlan& plan) {
  std::vector<std::string> payloads;
  payloads.reserve(plan.batches);
  for (size_t b = 0; b < plan.batches; ++b) {
    payloads.push_back(PackPlanBatch(plan, b));
  }
  return payloads;
}

absl::Status RunThroughputScenario(const std::vector<BridgeVariant>& variants,
                                   std::vector<ThroughputRow>* rows) {
  std::vector<BatchShape> shapes;
  for (absl::string_view text :
       absl::StrSplit(absl::GetFlag(FLAGS_shapes), ',', absl::SkipEmpty())) {
    absl::StatusOr<BatchShape> shape = ParseBatchShape(text);
    if (!shape.ok()) return shape.status();
    shapes.push_back(*shape);
  }
  std::map<std::string, std::vector<std::string>> payloads;
  std::map<std::string, BatchPlan> plans;
  for (const BatchShape& shape : shapes) {
    BatchPlan plan = PlanForHashes(
        shape, 0,
        size_t{absl::GetFlag(FLAGS_batches)} * shape.hashes_per_batch());
    payloads[shape.name] = Payloads(plan);
    plans[shape.name] = plan;
    size_t bytes = 0;
    for (const std::string& p : payloads[shape.name]) bytes += p.size();
    std::fprintf(stderr, "shape %s: %zu batches, %zu hashes, %.1f KiB/batch\n",
                 shape.name.c_str(), plan.batches, plan.TotalHashes(),
                 static_cast<double>(bytes) / 1024.0 /
                     static_cast<double>(plan.batches));
  }
  for (uint32_t rep = 0; rep < absl::GetFlag(FLAGS_reps); ++rep) {
    for (const BatchShape& shape : shapes) {
      // The order rotates with the repetition, so no variant always runs
      // first (or right after another) while the machine drifts.
      for (size_t v = 0; v < variants.size(); ++v) {
        const BridgeVariant& variant = variants[(v + rep) % variants.size()];
        ThroughputSetup setup;
        setup.server_binary = absl::GetFlag(FLAGS_server);
        setup.backend = absl::GetFlag(FLAGS_backend);
        setup.server_log = LogPath("throughput_server_" + variant.name);
        setup.bridge_log = LogPath("throughput_bridge_" + variant.name);
        setup.window = absl::GetFlag(FLAGS_window);
        setup.poll = std::chrono::microseconds(absl::GetFlag(FLAGS_poll_us));
        setup.timeout = std::chrono::seconds(absl::GetFlag(FLAGS_timeout_s));
        absl::StatusOr<ThroughputResult> result = RunThroughput(
            setup, variant, plans[shape.name], payloads[shape.name]);
        if (!result.ok()) {
          return absl::Status(
              result.status().code(),
              absl::StrCat("throughput ", shape.name, " ", variant.name,
                           " rep ", rep, ": ", result.status().message()));
        }
        std::fprintf(stderr,
                     "throughput rep %u %-9s %-8s %8.1f batches/s %6.3f M "
                     "hashes/s (%.2f s; CPU bridge %.2f s, server %.2f s)\n",
                     rep, shape.name.c_str(), variant.name.c_str(),
                     result->batches_per_s, result->hashes_per_s / 1e6,
                     result->seconds, result->bridge_cpu_s,
                     result->server_cpu_s);
        rows->push_back({shape.name, variant.name, rep, *result});
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RunRestoreScenario(std::vector<RestoreResult>* results) {
  if (absl::GetFlag(FLAGS_bridge).empty()) {
    return absl::InvalidArgumentError("restore needs --bridge");
  }
  absl::StatusOr<BatchShape> shape =
      ParseBatchShape(absl::GetFlag(FLAGS_restore_shape));
  if (!shape.ok()) return shape.status();
  // Hash indexes far from the throughput plans'.
  const BatchPlan plan = PlanForHashes(*shape, uint64_t{1} << 40,
                                       absl::GetFlag(FLAGS_restore_blocks));
  const std::vector<std::string> payloads = Payloads(plan);
  const std::string gate = absl::GetFlag(FLAGS_restore_gate);
  const BridgeVariant variant{"restore_" + gate, absl::GetFlag(FLAGS_bridge),
                              gate, true};
  for (uint32_t rep = 0; rep < absl::GetFlag(FLAGS_restore_reps); ++rep) {
    RestoreSetup setup;
    setup.server_binary = absl::GetFlag(FLAGS_server);
    setup.backend = absl::GetFlag(FLAGS_backend);
    setup.server_log = LogPath("restore_server");
    setup.bridge_log = LogPath("restore_bridge");
    setup.window = absl::GetFlag(FLAGS_window);
    setup.poll = std::chrono::microseconds(absl::GetFlag(FLAGS_poll_us));
    setup.timeout = std::chrono::seconds(absl::GetFlag(FLAGS_timeout_s));
    setup.settle =
        std::chrono::milliseconds(absl::GetFlag(FLAGS_restore_settle_ms));
    absl::StatusOr<RestoreResult> result =
        RunRestore(setup, variant, plan, payloads);
    if (!result.ok()) {
      return absl::Status(
          result.status().code(),
          absl::StrCat("restore rep ", rep, ": ", result.status().message()));
    }
    std::fprintf(stderr,
                 "restore rep %u: %zu blocks in %.3f s after listening "
                 "(populate %.2f s, kill->listening %.3f s); phases from "
                 "listening: state lost %+.3f s, replay of %zu batches "
                 "requested %+.3f s and sent %+.3f s, held %+.3f s, bridge "
                 "synchronised %+.3f s\n",
                 rep, result->blocks, result->restore_s, result->populate_s,
                 result->kill_to_listening_s, result->state_lost_s,
                 result->replay_batches, result->replay_received_s,
                 result->replay_replied_s, result->restore_s,
                 result->synchronised_s);
    for (const RestoreLogLine& line : result->bridge_lines) {
      std::fprintf(stderr, "  %+8.3f s  %s\n", line.offset_s,
                   line.text.c_str());
    }
    results->push_back(*std::move(result));
  }
  return absl::OkStatus();
}

void PrintAndWrite(const std::vector<BridgeVariant>& variants,
                   const std::vector<ThroughputRow>& rows,
                   const std::vector<RestoreResult>& restores,
                   const MachineInfo& start, const MachineInfo& end) {
  JsonWriter json;
  json.BeginObject();
  json.Field("tool", "kv-indexer-bridge-bench");
  json.Field("label", absl::GetFlag(FLAGS_label));
  json.BeginObject("machine");
  json.Field("nproc", uint64_t{start.nproc});
  json.Field("cpu", start.cpu_model);
  json.Field("mem_total_kb", start.mem_total_kb);
  json.Field("date_utc_start", start.date_utc);
  json.Field("loadavg_start", start.loadavg);
  json.Field("date_utc_end", end.date_utc);
  json.Field("loadavg_end", end.loadavg);
  json.EndObject();
  json.BeginObject("settings");
  json.Field("batches", uint64_t{absl::GetFlag(FLAGS_batches)});
  json.Field("window", uint64_t{absl::GetFlag(FLAGS_window)});
  json.Field("poll_us", uint64_t{absl::GetFlag(FLAGS_poll_us)});
  json.Field("reps", uint64_t{absl::GetFlag(FLAGS_reps)});
  json.Field("backend", absl::GetFlag(FLAGS_backend));
  json.EndObject();

  json.BeginArray("throughput_runs");
  for (const ThroughputRow& row : rows) {
    json.BeginObject();
    json.Field("shape", row.shape);
    json.Field("variant", row.variant);
    json.Field("rep", uint64_t{row.rep});
    json.Field("batches", uint64_t{row.result.batches});
    json.Field("hashes", uint64_t{row.result.hashes});
    json.Field("seconds", row.result.seconds);
    json.Field("batches_per_s", row.result.batches_per_s);
    json.Field("hashes_per_s", row.result.hashes_per_s);
    json.Field("bridge_cpu_s", row.result.bridge_cpu_s);
    json.Field("server_cpu_s", row.result.server_cpu_s);
    json.Field("verified_held", uint64_t{row.result.verified_held});
    json.Field("bridge_stats", row.result.stats_line);
    json.EndObject();
  }
  json.EndArray();

  std::vector<std::string> shapes;
  for (const ThroughputRow& row : rows) {
    if (std::find(shapes.begin(), shapes.end(), row.shape) == shapes.end()) {
      shapes.push_back(row.shape);
    }
  }
  if (!rows.empty()) {
    std::printf(
        "\nthroughput (medians over %u repetitions, %u batches each)\n"
        "%-10s %-9s %12s %14s %8s %8s %16s %16s\n",
        absl::GetFlag(FLAGS_reps), absl::GetFlag(FLAGS_batches), "shape",
        "variant", "batches/s", "hashes/s", "vs base", "paired",
        "bridge CPU us/b", "server CPU us/b");
  }
  json.BeginArray("throughput_medians");
  for (const std::string& shape : shapes) {
    double base = 0;
    for (const BridgeVariant& variant : variants) {
      std::vector<double> bps, hps, bcpu, scpu, paired;
      for (const ThroughputRow& row : rows) {
        if (row.shape != shape || row.variant != variant.name) continue;
        const double batches = static_cast<double>(row.result.batches);
        // The same repetition's baseline run, next to this one in time.
        for (const ThroughputRow& b : rows) {
          if (b.shape == shape && b.variant == "baseline" && b.rep == row.rep) {
            paired.push_back(row.result.batches_per_s / b.result.batches_per_s);
          }
        }
        bps.push_back(row.result.batches_per_s);
        hps.push_back(row.result.hashes_per_s);
        bcpu.push_back(row.result.bridge_cpu_s / batches * 1e6);
        scpu.push_back(row.result.server_cpu_s / batches * 1e6);
      }
      if (bps.empty()) continue;
      const double median_bps = Median(bps);
      if (variant.name == "baseline") base = median_bps;
      const double ratio = base > 0 ? median_bps / base : 0;
      const double paired_ratio = Median(paired);
      std::printf("%-10s %-9s %12.1f %14.0f %8s %8s %16.1f %16.1f\n",
                  shape.c_str(), variant.name.c_str(), median_bps, Median(hps),
                  ratio > 0 ? absl::StrFormat("%.3f", ratio).c_str() : "-",
                  paired_ratio > 0
                      ? absl::StrFormat("%.3f", paired_ratio).c_str()
                      : "-",
                  Median(bcpu), Median(scpu));
      json.BeginObject();
      json.Field("shape", shape);
      json.Field("variant", variant.name);
      json.Field("batches_per_s", median_bps);
      json.Field("hashes_per_s", Median(hps));
      json.Field("ratio_to_baseline", ratio);
      // Median over repetitions of this run / the same repetition's
      // baseline run: less exposed to the machine's drift during a run.
      json.Field("paired_ratio_to_baseline", paired_ratio);
      json.Field("bridge_cpu_us_per_batch", Median(bcpu));
      json.Field("server_cpu_us_per_batch", Median(scpu));
      json.EndObject();
    }
  }
  json.EndArray();

  json.BeginArray("restore_runs");
  std::vector<double> restore_s;
  for (const RestoreResult& r : restores) {
    restore_s.push_back(r.restore_s);
    json.BeginObject();
    json.Field("blocks", uint64_t{r.blocks});
    json.Field("batches", uint64_t{r.batches});
    json.Field("populate_s", r.populate_s);
    json.Field("kill_to_listening_s", r.kill_to_listening_s);
    json.Field("restore_s", r.restore_s);
    json.Field("verified_held", uint64_t{r.verified_held});
    json.Field("verify_s", r.verify_s);
    json.Field("replace_request_bytes", uint64_t{r.replace_request_bytes});
    json.Field("state_lost_s", r.state_lost_s);
    json.Field("replay_received_s", r.replay_received_s);
    json.Field("replay_replied_s", r.replay_replied_s);
    json.Field("replay_batches", uint64_t{r.replay_batches});
    json.Field("synchronised_s", r.synchronised_s);
    json.Field("bridge_stats", r.stats_line);
    json.BeginArray("bridge_lines");
    for (const RestoreLogLine& line : r.bridge_lines) {
      json.BeginObject();
      json.Field("offset_s", line.offset_s);
      json.Field("text", line.text);
      json.EndObject();
    }
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
  if (!restores.empty()) {
    json.Field("restore_median_s", Median(restore_s));
    std::printf(
        "\nrestore of %zu blocks after a server restart: median %.3f s over "
        "%zu runs (",
        restores[0].blocks, Median(restore_s), restores.size());
    for (size_t i = 0; i < restore_s.size(); ++i) {
      std::printf("%s%.3f", i ? ", " : "", restore_s[i]);
    }
    std::printf(
        " s); Replace request of the holdings: %zu bytes (limit "
        "8,388,608)\n",
        restores[0].replace_request_bytes);
  }
  json.EndObject();

  const std::string path = absl::GetFlag(FLAGS_json_out);
  if (!path.empty()) {
    std::ofstream out(path);
    out << json.str() << "\n";
  }
}

int Main() {
  if (absl::GetFlag(FLAGS_server).empty()) {
    std::fprintf(stderr, "--server is required\n");
    return 2;
  }
  absl::StatusOr<std::vector<BridgeVariant>> variants = Variants();
  if (!variants.ok()) {
    std::fprintf(stderr, "%s\n", variants.status().ToString().c_str());
    return 2;
  }
  const MachineInfo start = ReadMachineInfo();
  std::vector<ThroughputRow> rows;
  std::vector<RestoreResult> restores;
  absl::Status status;
  for (absl::string_view scenario :
       absl::StrSplit(absl::GetFlag(FLAGS_scenarios), ',', absl::SkipEmpty())) {
    if (scenario == "throughput") {
      if (variants->empty()) {
        status = absl::InvalidArgumentError(
            "throughput needs --baseline_bridge or --bridge");
      } else {
        status = RunThroughputScenario(*variants, &rows);
      }
    } else if (scenario == "restore") {
      status = RunRestoreScenario(&restores);
    } else {
      status = absl::InvalidArgumentError(
          absl::StrCat("--scenarios: unknown scenario \"", scenario, "\""));
    }
    if (!status.ok()) break;
  }
  PrintAndWrite(*variants, rows, restores, start, ReadMachineInfo());
  if (!status.ok()) {
    std::fprintf(stderr, "kv-indexer-bridge-bench: %s\n",
                 status.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "End-to-end benchmarks of kv-indexer-bridge over the real binaries; see "
      "BENCHMARKS.md");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Main();
}
