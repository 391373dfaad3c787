#include "durability_checkpoint_paired.h"

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "builder_signals.h"
#include "durability_log_traffic.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Whatever happens, a builder this tool paused runs again.
class ResumeOnExit {
 public:
  ResumeOnExit(pid_t builder, pid_t server)
      : builder_(builder), server_(server) {}
  ~ResumeOnExit() { SignalBuilder(builder_, server_, SIGCONT); }
  ResumeOnExit(const ResumeOnExit&) = delete;
  ResumeOnExit& operator=(const ResumeOnExit&) = delete;

 private:
  pid_t builder_;
  pid_t server_;
};

}  // namespace

QueryResult RunPairedSlice(
    DurabilityRig& rig,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const PairedSliceLoad& load, const std::string& label) {
  QueryLoad q;
  q.label = label + absl::StrFormat("@%.0fqps", load.qps);
  q.offered_qps = load.qps;
  q.concurrency = load.max_outstanding;
  q.duration = load.slice;
  q.rpc_deadline = load.rpc_deadline;
  q.progress_every = load.progress_every;
  return RunQueries(rig.pool(), queries, q);
}

absl::StatusOr<PairedCheckpointFigures> MeasurePairedCheckpoint(
    DurabilityRig& rig, const std::string& data_dir,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const PairedCheckpointOptions& options, Report* report) {
  PairedCheckpointFigures figures;
  figures.qps = options.load.qps;
  const pid_t server = rig.process().pid();
  const LogTraffic traffic;
  const std::string at = absl::StrFormat("@%.0fqps", options.load.qps);
  const auto slice = [&](const std::string& label) {
    return RunPairedSlice(rig, queries, options.load, label);
  };
  for (uint32_t round = 0; round < options.rounds; ++round) {
    if (!WaitForDir(data_dir, NoCheckpointInProgress, options.max_checkpoint)) {
      return absl::DeadlineExceededError(
          "a checkpoint did not finish within the bound");
    }
    const DirUsage before = MeasureDir(data_dir);
    const auto done = [&](const DirUsage& d) {
      return d.newest_checkpoint != before.newest_checkpoint &&
             !d.writing_checkpoint;
    };
    std::fprintf(stderr,
                 "== paired checkpoint round %u at %.0f qps: log traffic "
                 "until the log rotates\n",
                 round + 1, options.load.qps);
    absl::StatusOr<double> trigger = traffic.RunUntilRotation(
        rig.side_pool(), data_dir, before, options.max_trigger,
        options.load.rpc_deadline * 5);
    if (!trigger.ok()) return trigger.status();

    const Clock::time_point start = Clock::now();
    pid_t builder = 0;
    while (builder == 0 && !done(MeasureDir(data_dir)) &&
           SecondsSince(start) < 10) {
      const std::vector<pid_t> children = ChildrenOf(server);
      builder = children.empty() ? 0 : children.front();
      if (builder == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (builder == 0 && !done(MeasureDir(data_dir))) {
      return absl::FailedPreconditionError(
          "no builder process appeared after the rotation: is "
          "KV_INDEXER_CHECKPOINT_BUILDER=process?");
    }
    if (builder == 0) {
      // A small checkpoint can be done before the first look.
      std::fprintf(stderr,
                   "  the checkpoint was done before its builder was seen: "
                   "no pairs this round\n");
      figures.checkpoint_seconds.push_back(SecondsSince(start));
      continue;
    }
    {
      ResumeOnExit resume(builder, server);
      uint32_t pairs = 0;
      for (uint32_t pair = 0;; ++pair) {
        // Paused first in even pairs, running first in odd ones, so that
        // drift within a pair does not lean one way.
        QueryResult paused;
        QueryResult running;
        bool resumed = true;
        if (pair % 2 == 0) {
          if (!SignalBuilder(builder, server, SIGSTOP)) break;
          paused = slice("queries/builder-paused");
          resumed = SignalBuilder(builder, server, SIGCONT);
          running = slice("queries/builder-running");
        } else {
          running = slice("queries/builder-running");
          // A builder that finished meanwhile leaves the server idle: the
          // paused slice is a baseline either way.
          const bool stopped = SignalBuilder(builder, server, SIGSTOP);
          paused = slice("queries/builder-paused");
          if (stopped) resumed = SignalBuilder(builder, server, SIGCONT);
        }
        WriteQuery(*report, "wal-always", "queries/builder-paused" + at,
                   paused);
        WriteQuery(*report, "wal-always", "queries/builder-running" + at,
                   running);
        figures.failed_queries +=
            paused.status.failed() + running.status.failed();
        if (resumed && paused.latency.count > 0 && running.latency.count > 0) {
          figures.paused_p99_us.push_back(paused.latency.p99_us);
          figures.running_p99_us.push_back(running.latency.p99_us);
          figures.ratios.push_back(running.latency.p99_us /
                                   paused.latency.p99_us);
          ++pairs;
        }
        if (!resumed || done(MeasureDir(data_dir))) break;
        if (SecondsSince(start) >
            absl::ToDoubleSeconds(options.max_checkpoint)) {
          return absl::DeadlineExceededError(
              "the checkpoint did not finish within the bound");
        }
      }
      std::fprintf(stderr, "  builder %d: %u pairs of slices\n",
                   static_cast<int>(builder), pairs);
    }
    if (!WaitForDir(data_dir, done, options.max_checkpoint)) {
      return absl::DeadlineExceededError(
          "the checkpoint was not renamed into place within the bound");
    }
    figures.checkpoint_seconds.push_back(SecondsSince(start));
  }
  if (figures.ratios.size() < options.min_pairs) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%zu pairs of slices, fewer than the %u asked for",
                        figures.ratios.size(), options.min_pairs));
  }
  return figures;
}

}  // namespace kvindexer::bench
