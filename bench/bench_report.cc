#include "bench_report.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvindexer::bench {
namespace {

void WriteLatency(JsonWriter& j, const LatencySummary& l) {
  j.BeginObject("latency_us");
  j.Field("count", l.count);
  j.Field("dropped", l.dropped);
  j.Field("mean", l.mean_us);
  j.Field("p50", l.p50_us);
  j.Field("p90", l.p90_us);
  j.Field("p99", l.p99_us);
  j.Field("p999", l.p999_us);
  j.Field("max", l.max_us);
  j.EndObject();
}

void WriteStatus(JsonWriter& j, const StatusCounts& s) {
  j.BeginObject("status");
  for (size_t c = 0; c < s.by_code.size(); ++c) {
    if (s.by_code[c] != 0) j.Field(absl::StrCat(c), s.by_code[c]);
  }
  j.EndObject();
}

// Opens a run's JSON object with the fields every run has.
void BeginRun(JsonWriter& j, const std::string& target, const std::string& key,
              double seconds) {
  j.BeginObject();
  j.Field("target", target);
  j.Field("run", key);
  j.Field("seconds", seconds);
}

// Closes it with the status counts and latencies, and counts the failures.
void EndRun(Report& r, const StatusCounts& status,
            const LatencySummary& latency) {
  WriteStatus(r.json, status);
  WriteLatency(r.json, latency);
  r.json.EndObject();
  r.failed_rpcs += status.failed();
}

}  // namespace

void WriteIngest(Report& r, const std::string& target, const std::string& key,
                 const IngestResult& x) {
  JsonWriter& j = r.json;
  BeginRun(j, target, key, x.seconds);
  j.Field("batches_ok", x.batches_ok);
  j.Field("batches_planned", x.batches_total);
  j.Field("hashes_ok", x.hashes_ok);
  j.Field("hashes_per_s", x.hashes_per_s);
  j.Field("mean_batch_hashes", x.mean_batch_hashes);
  j.Field("truncated", x.truncated);
  EndRun(r, x.status, x.latency);
  r.Row(absl::StrFormat(
      "%-7s %-26s %12.0f hashes/s  batch %7.0f  p50 %8.0f us  p99 %8.0f us  "
      "failed %d%s",
      target, key, x.hashes_per_s, x.mean_batch_hashes, x.latency.p50_us,
      x.latency.p99_us, x.status.failed(),
      x.truncated ? "  (stopped before the plan ran out)" : ""));
}

void WriteQuery(Report& r, const std::string& target, const std::string& key,
                const QueryResult& x, double process_cpu_s) {
  JsonWriter& j = r.json;
  BeginRun(j, target, key, x.seconds);
  j.Field("offered_qps", x.offered_qps);
  j.Field("achieved_qps", x.achieved_qps);
  j.Field("issued", x.issued);
  j.Field("skipped", x.skipped);
  j.Field("late_sends", x.late_sends);
  j.Field("mean_query_blocks", x.mean_query_blocks);
  j.Field("mean_matches", x.mean_matches);
  j.Field("mean_best_prefix_blocks", x.mean_best_prefix);
  const double ok = x.achieved_qps * x.seconds;
  const double cpu_us_per_ok =
      process_cpu_s >= 0 && ok > 0 ? process_cpu_s * 1e6 / ok : -1;
  if (cpu_us_per_ok >= 0) {
    j.Field("process_cpu_s", process_cpu_s);
    j.Field("process_cpu_us_per_ok", cpu_us_per_ok);
  }
  EndRun(r, x.status, x.latency);
  r.Row(absl::StrFormat(
      "%-7s %-26s %10.0f qps  p50 %7.0f  p99 %7.0f  p99.9 %7.0f us  "
      "blocks %6.0f  matches %5.1f  failed %d%s",
      target, key, x.achieved_qps, x.latency.p50_us, x.latency.p99_us,
      x.latency.p999_us, x.mean_query_blocks, x.mean_matches, x.status.failed(),
      cpu_us_per_ok >= 0
          ? absl::StrFormat("  cpu/answer %.1f us", cpu_us_per_ok)
          : std::string()));
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace kvindexer::bench
