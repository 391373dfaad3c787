#include "line_a_query_ratio.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;
using Clock = std::chrono::steady_clock;

// One slice: `threads` clients, each cycling through `requests` from its
// own offset until the slice ends.
absl::StatusOr<QuerySlice> RunSlice(
    ChannelPool& pool,
    const std::vector<v1::MatchExternalKvPrefixRequest>& requests,
    const std::function<double()>& server_cpu_s,
    const QueryRatioOptions& options) {
  // Room for 64k queries per thread and second; a slice records what fits.
  const size_t samples_per_thread =
      static_cast<size_t>(std::max(options.slice_s, 1.0) * 65'536);
  LatencyRecorder recorder(samples_per_thread * options.threads);
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> failed{0};
  const double cpu_start = server_cpu_s();
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::microseconds(
                  static_cast<int64_t>(options.slice_s * 1'000'000));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < options.threads; ++t) {
    threads.emplace_back([&, t] {
      v1::KVIndexer::Stub* stub = pool.Next();
      v1::MatchExternalKvPrefixResponse resp;
      for (size_t i = t * 7919; Clock::now() < end; ++i) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(10));
        const Clock::time_point sent = Clock::now();
        const grpc::Status s = stub->MatchExternalKvPrefix(
            &context, requests[i % requests.size()], &resp);
        if (!s.ok()) {
          failed.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        recorder.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(
                            Clock::now() - sent)
                            .count());
        done.fetch_add(1, std::memory_order_relaxed);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu_end = server_cpu_s();
  if (cpu_start < 0 || cpu_end < 0) {
    return absl::InternalError("cannot read the server's CPU time");
  }
  if (failed.load() > 0 || done.load() == 0) {
    return absl::InternalError(absl::StrCat("a query slice had ", failed.load(),
                                            " failed and ", done.load(),
                                            " completed queries"));
  }
  QuerySlice slice;
  slice.qps = static_cast<double>(done.load()) / seconds;
  slice.server_cpu_us_per_query =
      (cpu_end - cpu_start) * 1e6 / static_cast<double>(done.load());
  slice.latency = recorder.Summarize();
  return slice;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

absl::StatusOr<QueryRatio> RunQueryRatio(
    ChannelPool& pool, const std::vector<std::vector<int64_t>>& queries,
    const std::vector<std::string>& eligible,
    const std::function<double()>& server_cpu_s,
    const QueryRatioOptions& options) {
  std::vector<v1::MatchExternalKvPrefixRequest> seed_era;
  std::vector<v1::MatchExternalKvPrefixRequest> line_a;
  for (const std::vector<int64_t>& chain : queries) {
    v1::MatchExternalKvPrefixRequest req;
    for (const int64_t h : chain) req.add_hashes(h);
    seed_era.push_back(req);
    for (const std::string& address : eligible) {
      req.add_eligible_worker_addresses(address);
    }
    line_a.push_back(std::move(req));
  }
  // One unmeasured slice of each form first: connections, caches and the
  // server's threads warm up.
  for (const auto* requests : {&seed_era, &line_a}) {
    absl::StatusOr<QuerySlice> warm =
        RunSlice(pool, *requests, server_cpu_s, options);
    if (!warm.ok()) return warm.status();
  }
  QueryRatio out;
  for (uint32_t round = 0; round < options.rounds; ++round) {
    // Alternate which form goes first, so that a trend in the machine's
    // speed favours neither.
    double qps[2] = {0, 0};
    double cpu_per_query[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool is_line_a = (round % 2 == 0) == (k == 1);
      absl::StatusOr<QuerySlice> slice =
          RunSlice(pool, is_line_a ? line_a : seed_era, server_cpu_s, options);
      if (!slice.ok()) return slice.status();
      slice->line_a = is_line_a;
      slice->round = round;
      qps[is_line_a ? 1 : 0] = slice->qps;
      cpu_per_query[is_line_a ? 1 : 0] = slice->server_cpu_us_per_query;
      out.slices.push_back(*slice);
    }
    out.overheads.push_back(qps[0] / qps[1] - 1);
    out.server_overheads.push_back(cpu_per_query[1] / cpu_per_query[0] - 1);
  }
  out.median_overhead = Median(out.overheads);
  out.median_server_overhead = Median(out.server_overheads);
  return out;
}

}  // namespace kvindexer::bench
