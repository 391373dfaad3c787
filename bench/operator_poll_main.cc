// kv-indexer-operator-poll-bench: what an operator's polling costs the
// applies of a server at the worker bound (BENCHMARKS.md, "Operator reads
// at the worker bound"). It spawns kv-indexer-server on free 127.0.0.1
// ports with its metrics endpoint on (operator_poll_server.h), registers
// --workers workers with one small seed-era apply each
// (worker_registration.h), and then:
//
//   reads   times each read alone, --read_reps times, with no applies
//           running: one Health/Check, one GetStats, one walk through
//           every page of ListWorkers, one /metrics scrape
//           (operator_reads.h); all but Health must account for every
//           worker;
//   phases  one worker's applies, one at a time (apply_stream.h), for
//           --phase_s each, while: nothing else runs (idle); a client
//           repeats Health/Check back-to-back (health: the control, an RPC
//           that reads no worker state); the same with GetStats
//           (getstats); a client walks ListWorkers back-to-back
//           (listworkers); a client scrapes /metrics back-to-back (scrape)
//           (back_to_back_poller.h). With --rounds above 1 the phases
//           repeat in the same order, and the ratios to idle are taken
//           within each round.
//
// The server's and this process's CPU seconds are reported per phase: the
// client, the poller and the server share the machine's cores.
//
// Output: a table on stdout, JSON to --json_out, progress on stderr. Exit 1
// when an apply or a read fails, when a read does not account for every
// worker, or when the server does not stop cleanly; 2 when --max_run_s is
// exceeded.
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "apply_stream.h"
#include "back_to_back_poller.h"
#include "json_writer.h"
#include "machine_info.h"
#include "operator_poll_server.h"
#include "operator_reads.h"
#include "seconds_since.h"
#include "worker_registration.h"

ABSL_FLAG(std::string, server, "", "Path of kv-indexer-server (required)");
ABSL_FLAG(std::string, backend, "",
          "KV_INDEXER_BACKEND of the server (empty: the server's default)");
ABSL_FLAG(std::string, server_log, "",
          "File the server's output is appended to (empty: a temporary file)");
ABSL_FLAG(int64_t, worker_series, -1,
          "KV_INDEXER_METRICS_WORKER_SERIES of the server (-1: its default)");
ABSL_FLAG(std::string, json_out, "", "Write the JSON report to this file");
ABSL_FLAG(std::string, label, "", "Free-form label stored in the report");

ABSL_FLAG(uint32_t, workers, 65'536,
          "Workers registered (the server's default KV_INDEXER_MAX_WORKERS "
          "is 65,536)");
ABSL_FLAG(uint32_t, register_threads, 8,
          "Client threads (one connection each) that register the workers");
ABSL_FLAG(uint32_t, apply_hashes, 16'384,
          "Hashes per apply of the measured stream (REPORT, then REVOKE)");
ABSL_FLAG(std::string, phases, "idle,health,getstats,listworkers,scrape",
          "Comma-separated phases, in order (idle, health, getstats, "
          "listworkers, scrape); the ratios need idle");
ABSL_FLAG(double, phase_s, 10, "Duration of each phase (seconds)");
ABSL_FLAG(uint64_t, max_applies_per_phase, 1'000'000,
          "Bound on the applies of one phase");
ABSL_FLAG(double, warmup_s, 1,
          "Applies of the stream before anything is measured (seconds)");
ABSL_FLAG(uint32_t, rounds, 1, "Times the phases are run, in order");
ABSL_FLAG(uint32_t, read_reps, 5, "Times each read is timed alone");
ABSL_FLAG(uint32_t, page_size, 0,
          "ListWorkers page_size (0: the server's default)");
ABSL_FLAG(uint32_t, rpc_deadline_ms, 60'000,
          "Deadline of every RPC and socket wait");
ABSL_FLAG(double, max_run_s, 900,
          "Hard bound on the whole run; the process exits 2 when exceeded");

namespace kvindexer::bench {
namespace {

struct Phase {
  std::string name;
  std::optional<OperatorRead> poll;  // nullopt: idle
};

struct PhaseRun {
  uint32_t round = 0;
  const Phase* phase = nullptr;
  ApplyRunFigures apply;
  std::optional<PollFigures> poll;
  double server_cpu_s = 0;
  double bench_cpu_s = 0;
};

struct ReadTiming {
  OperatorRead read = OperatorRead::kGetStats;
  std::vector<double> ms;
  OperatorReadResult result;  // of the last read
};

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double Ratio(double x, double y) { return y > 0 ? x / y : 0; }

std::string Mb(uint64_t bytes) {
  return absl::StrFormat("%.2f MB", static_cast<double>(bytes) / 1e6);
}

int Fail(const std::string& why) {
  std::fprintf(stderr, "kv-indexer-operator-poll-bench: %s\n", why.c_str());
  return 1;
}

absl::StatusOr<std::vector<Phase>> ParsePhases(const std::string& flag) {
  std::vector<Phase> phases;
  for (const absl::string_view name :
       absl::StrSplit(flag, ',', absl::SkipEmpty())) {
    if (name == "idle") {
      phases.push_back({"idle", std::nullopt});
    } else if (name == "health") {
      phases.push_back({"health", OperatorRead::kHealth});
    } else if (name == "getstats") {
      phases.push_back({"getstats", OperatorRead::kGetStats});
    } else if (name == "listworkers") {
      phases.push_back({"listworkers", OperatorRead::kListWorkers});
    } else if (name == "scrape") {
      phases.push_back({"scrape", OperatorRead::kScrape});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--phases: unknown phase '", name,
                       "' (idle, health, getstats, listworkers, scrape)"));
    }
  }
  if (phases.empty()) return absl::InvalidArgumentError("--phases is empty");
  return phases;
}

// The idle run of `round`; nullptr when there is none.
const PhaseRun* IdleOf(const std::vector<PhaseRun>& runs, uint32_t round) {
  for (const PhaseRun& r : runs) {
    if (r.round == round && !r.phase->poll.has_value()) return &r;
  }
  return nullptr;
}

int Run() {
  const auto run_start = std::chrono::steady_clock::now();
  const double max_run_s = absl::GetFlag(FLAGS_max_run_s);
  std::thread([max_run_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(max_run_s));
    std::fprintf(stderr,
                 "kv-indexer-operator-poll-bench: --max_run_s=%.0f exceeded\n",
                 max_run_s);
    std::fflush(stderr);
    _exit(2);
  }).detach();

  OperatorPollServerOptions server_options;
  server_options.binary = absl::GetFlag(FLAGS_server);
  server_options.backend = absl::GetFlag(FLAGS_backend);
  server_options.server_log = absl::GetFlag(FLAGS_server_log);
  server_options.worker_series = absl::GetFlag(FLAGS_worker_series);
  if (server_options.binary.empty()) return Fail("--server is required");
  const uint32_t workers = absl::GetFlag(FLAGS_workers);
  if (workers == 0) return Fail("--workers must be at least 1");
  const absl::StatusOr<std::vector<Phase>> phases =
      ParsePhases(absl::GetFlag(FLAGS_phases));
  if (!phases.ok()) return Fail(phases.status().ToString());
  const std::chrono::milliseconds deadline(
      absl::GetFlag(FLAGS_rpc_deadline_ms));
  const std::chrono::duration<double> phase_s(absl::GetFlag(FLAGS_phase_s));
  const uint64_t max_applies = absl::GetFlag(FLAGS_max_applies_per_phase);
  const uint32_t rounds = std::max<uint32_t>(absl::GetFlag(FLAGS_rounds), 1);
  const uint32_t read_reps =
      std::max<uint32_t>(absl::GetFlag(FLAGS_read_reps), 1);
  const MachineInfo machine = ReadMachineInfo();

  std::fprintf(stderr, "== starting %s\n", server_options.binary.c_str());
  absl::StatusOr<OperatorPollServer> server =
      StartOperatorPollServer(server_options);
  if (!server.ok()) return Fail(server.status().ToString());

  std::fprintf(stderr, "== registering %u workers\n", workers);
  const absl::StatusOr<RegistrationFigures> registration =
      RegisterWorkers(server->address, workers,
                      absl::GetFlag(FLAGS_register_threads), deadline);
  if (!registration.ok()) return Fail(registration.status().ToString());

  absl::StatusOr<std::shared_ptr<grpc::Channel>> apply_channel =
      ConnectChannel(server->address, "apply-stream", deadline);
  if (!apply_channel.ok()) return Fail(apply_channel.status().ToString());
  absl::StatusOr<std::shared_ptr<grpc::Channel>> admin_channel =
      ConnectChannel(server->address, "operator", deadline);
  if (!admin_channel.ok()) return Fail(admin_channel.status().ToString());
  ApplyStreamOptions stream_options;
  stream_options.worker_id = RegisteredWorkerId(0);
  stream_options.worker_address = RegisteredWorkerAddress(0);
  stream_options.hashes = absl::GetFlag(FLAGS_apply_hashes);
  stream_options.rpc_deadline = deadline;
  ApplyStream stream(*apply_channel, stream_options);
  OperatorReader reader(*admin_channel, server->metrics_port,
                        absl::GetFlag(FLAGS_page_size), deadline);

  const ApplyRunFigures warmup =
      stream.Run(std::chrono::duration<double>(absl::GetFlag(FLAGS_warmup_s)),
                 max_applies);
  if (warmup.applies_failed > 0) {
    return Fail(absl::StrCat("warm-up apply failed: ", warmup.first_error));
  }

  // Each read alone.
  std::vector<ReadTiming> reads;
  for (const OperatorRead read :
       {OperatorRead::kHealth, OperatorRead::kGetStats,
        OperatorRead::kListWorkers, OperatorRead::kScrape}) {
    std::fprintf(stderr, "== %s alone, %u times\n", OperatorReadName(read),
                 read_reps);
    ReadTiming timing;
    timing.read = read;
    for (uint32_t i = 0; i < read_reps; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const absl::StatusOr<OperatorReadResult> result = reader.Read(read);
      timing.ms.push_back(SecondsSince(t0) * 1e3);
      if (!result.ok()) return Fail(result.status().ToString());
      if (CountsWorkers(read) && result->workers != workers) {
        return Fail(absl::StrCat(OperatorReadName(read), " counted ",
                                 result->workers, " workers, not ", workers));
      }
      timing.result = *result;
    }
    reads.push_back(std::move(timing));
  }

  // The phases.
  std::vector<PhaseRun> runs;
  for (uint32_t round = 0; round < rounds; ++round) {
    for (const Phase& phase : *phases) {
      std::fprintf(stderr, "== round %u: %s, %.1f s\n", round + 1,
                   phase.name.c_str(), phase_s.count());
      PhaseRun run;
      run.round = round;
      run.phase = &phase;
      std::optional<BackToBackPoller> poller;
      if (phase.poll.has_value()) poller.emplace(&reader, *phase.poll);
      const double server_cpu0 = server->process->CpuSeconds();
      const double bench_cpu0 = ProcessCpuSeconds();
      run.apply = stream.Run(phase_s, max_applies);
      run.server_cpu_s = server->process->CpuSeconds() - server_cpu0;
      run.bench_cpu_s = ProcessCpuSeconds() - bench_cpu0;
      if (poller.has_value()) run.poll = poller->Stop();
      runs.push_back(std::move(run));
    }
  }

  int rc = 0;
  for (const PhaseRun& r : runs) {
    if (r.apply.applies_failed > 0) {
      rc = Fail(absl::StrCat(r.phase->name, ": ", r.apply.applies_failed,
                             " applies failed; first: ", r.apply.first_error));
    }
    if (r.poll.has_value() && r.poll->reads_failed > 0) {
      rc = Fail(absl::StrCat(r.phase->name, ": ", r.poll->reads_failed,
                             " reads failed; first: ", r.poll->first_error));
    }
    if (r.poll.has_value() && r.poll->reads_ok > 0 &&
        CountsWorkers(*r.phase->poll) && r.poll->last.workers != workers) {
      rc = Fail(absl::StrCat(r.phase->name, ": a read counted ",
                             r.poll->last.workers, " workers, not ", workers));
    }
  }
  if (absl::Status s = server->process->Stop(deadline); !s.ok()) {
    rc = Fail(absl::StrCat("stopping the server: ", s.ToString()));
  }

  // The report.
  JsonWriter j;
  j.BeginObject();
  j.Field("tool", "kv-indexer-operator-poll-bench");
  j.Field("label", absl::GetFlag(FLAGS_label));
  j.BeginObject("machine");
  j.Field("nproc", uint64_t{machine.nproc});
  j.Field("cpu_model", machine.cpu_model);
  j.Field("mem_total_kb", machine.mem_total_kb);
  j.Field("loadavg_start", machine.loadavg);
  j.Field("date_utc", machine.date_utc);
  j.EndObject();
  j.BeginObject("config");
  j.Field("backend", server_options.backend);
  j.Field("worker_series", server_options.worker_series);
  j.Field("workers", uint64_t{workers});
  j.Field("apply_hashes", uint64_t{stream_options.hashes});
  j.Field("phase_s", phase_s.count());
  j.Field("rounds", uint64_t{rounds});
  j.Field("page_size", uint64_t{absl::GetFlag(FLAGS_page_size)});
  j.EndObject();
  j.BeginObject("registration");
  j.Field("workers", uint64_t{registration->workers});
  j.Field("seconds", registration->seconds);
  j.Field("threads", uint64_t{absl::GetFlag(FLAGS_register_threads)});
  j.EndObject();
  j.BeginArray("reads_alone");
  for (const ReadTiming& t : reads) {
    j.BeginObject();
    j.Field("read", OperatorReadName(t.read));
    j.Field("reps", uint64_t{t.ms.size()});
    j.Field("median_ms", MedianOf(t.ms));
    j.Field("min_ms", *std::min_element(t.ms.begin(), t.ms.end()));
    j.Field("max_ms", *std::max_element(t.ms.begin(), t.ms.end()));
    j.Field("bytes", t.result.bytes);
    j.Field("parts", t.result.parts);
    j.Field("workers", t.result.workers);
    j.EndObject();
  }
  j.EndArray();
  j.BeginArray("phases");
  for (const PhaseRun& r : runs) {
    const PhaseRun* idle = IdleOf(runs, r.round);
    j.BeginObject();
    j.Field("round", uint64_t{r.round + 1});
    j.Field("phase", r.phase->name);
    j.Field("seconds", r.apply.seconds);
    j.Field("applies_ok", r.apply.applies_ok);
    j.Field("applies_failed", r.apply.applies_failed);
    j.Field("apply_mean_us", r.apply.latency.mean_us);
    j.Field("apply_p50_us", r.apply.latency.p50_us);
    j.Field("apply_p99_us", r.apply.latency.p99_us);
    j.Field("apply_max_us", r.apply.latency.max_us);
    if (idle != nullptr) {
      j.Field("p50_over_idle",
              Ratio(r.apply.latency.p50_us, idle->apply.latency.p50_us));
      j.Field("p99_over_idle",
              Ratio(r.apply.latency.p99_us, idle->apply.latency.p99_us));
    }
    if (r.poll.has_value()) {
      j.Field("reads_ok", r.poll->reads_ok);
      j.Field("reads_failed", r.poll->reads_failed);
      j.Field("read_p50_us", r.poll->latency.p50_us);
      j.Field("read_max_us", r.poll->latency.max_us);
      j.Field("read_bytes_last", r.poll->last.bytes);
    }
    j.Field("server_cpu_s", r.server_cpu_s);
    j.Field("bench_cpu_s", r.bench_cpu_s);
    j.EndObject();
  }
  j.EndArray();
  j.Field("loadavg_end", ReadMachineInfo().loadavg);
  j.Field("run_seconds", SecondsSince(run_start));
  j.Field("ok", rc == 0);
  j.EndObject();

  std::printf(
      "kv-indexer-operator-poll-bench  %s  nproc=%u  cpu=%s  backend=%s\n"
      "loadavg at start %s, at end %s\n",
      machine.date_utc.c_str(), machine.nproc, machine.cpu_model.c_str(),
      server_options.backend.empty() ? "(server default)"
                                     : server_options.backend.c_str(),
      machine.loadavg.c_str(), ReadMachineInfo().loadavg.c_str());
  std::printf("%u workers registered in %.1f s (%u threads)\n\n", workers,
              registration->seconds, absl::GetFlag(FLAGS_register_threads));
  std::printf(
      "One read alone, no applies running (%u times; median, min..max):\n",
      read_reps);
  for (const ReadTiming& t : reads) {
    const char* unit = t.read == OperatorRead::kListWorkers ? "pages"
                       : t.read == OperatorRead::kScrape    ? "samples"
                                                            : "answer";
    std::printf("  %-12s %10s %8llu %-7s %9.2f ms  (%.2f..%.2f)\n",
                OperatorReadName(t.read), Mb(t.result.bytes).c_str(),
                static_cast<unsigned long long>(t.result.parts), unit,
                MedianOf(t.ms), *std::min_element(t.ms.begin(), t.ms.end()),
                *std::max_element(t.ms.begin(), t.ms.end()));
  }
  std::printf(
      "\nApplies of %u hashes (REPORT, REVOKE alternating), one at a time, "
      "%.1f s per phase:\n",
      stream_options.hashes, phase_s.count());
  std::printf("%-5s %-12s %7s %8s %8s %8s %8s %8s %7s %9s %10s %9s\n", "round",
              "phase", "applies", "p50 ms", "p99 ms", "max ms", "p50/idle",
              "p99/idle", "reads", "read p50", "server cpu", "bench cpu");
  for (const PhaseRun& r : runs) {
    const PhaseRun* idle = IdleOf(runs, r.round);
    const std::string p50_ratio =
        idle == nullptr
            ? "-"
            : absl::StrFormat("%.2fx", Ratio(r.apply.latency.p50_us,
                                             idle->apply.latency.p50_us));
    const std::string p99_ratio =
        idle == nullptr
            ? "-"
            : absl::StrFormat("%.2fx", Ratio(r.apply.latency.p99_us,
                                             idle->apply.latency.p99_us));
    const std::string polls =
        r.poll.has_value() ? absl::StrCat(r.poll->reads_ok) : "-";
    const std::string read_p50 =
        r.poll.has_value()
            ? absl::StrFormat("%.2f ms", r.poll->latency.p50_us / 1e3)
            : "-";
    std::printf(
        "%-5u %-12s %7llu %8.2f %8.2f %8.2f %8s %8s %7s %9s %8.2f s %7.2f s\n",
        r.round + 1, r.phase->name.c_str(),
        static_cast<unsigned long long>(r.apply.applies_ok),
        r.apply.latency.p50_us / 1e3, r.apply.latency.p99_us / 1e3,
        r.apply.latency.max_us / 1e3, p50_ratio.c_str(), p99_ratio.c_str(),
        polls.c_str(), read_p50.c_str(), r.server_cpu_s, r.bench_cpu_s);
  }
  if (rounds > 1) {
    std::printf("\nMedian over rounds of the per-round ratios to idle:\n");
    for (const Phase& phase : *phases) {
      std::vector<double> p50, p99;
      for (const PhaseRun& r : runs) {
        const PhaseRun* idle = IdleOf(runs, r.round);
        if (r.phase != &phase || idle == nullptr) continue;
        p50.push_back(
            Ratio(r.apply.latency.p50_us, idle->apply.latency.p50_us));
        p99.push_back(
            Ratio(r.apply.latency.p99_us, idle->apply.latency.p99_us));
      }
      std::printf("  %-12s p50 %.2fx  p99 %.2fx\n", phase.name.c_str(),
                  MedianOf(p50), MedianOf(p99));
    }
  }
  std::fflush(stdout);

  const std::string json_out = absl::GetFlag(FLAGS_json_out);
  if (!json_out.empty()) {
    std::ofstream out(json_out);
    out << j.str() << "\n";
    if (!out) rc = Fail(absl::StrCat("cannot write ", json_out));
  }
  return rc;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Apply latency of a kv-indexer-server at the worker bound while an "
      "operator polls GetStats, walks ListWorkers or scrapes /metrics. See "
      "bench/operator_poll_main.cc and BENCHMARKS.md.");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Run();
}
