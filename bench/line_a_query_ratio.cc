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
    const QueryRatioOptions& options) {
  const size_t samples_per_thread = 1 << 20;
  LatencyRecorder recorder(samples_per_thread * options.threads);
  std::atomic<uint64_t> done{0};
  std::atomic<uint64_t> failed{0};
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
  if (failed.load() > 0 || done.load() == 0) {
    return absl::InternalError(absl::StrCat("a query slice had ", failed.load(),
                                            " failed and ", done.load(),
                                            " completed queries"));
  }
  QuerySlice slice;
  slice.qps = static_cast<double>(done.load()) / seconds;
  slice.latency = recorder.Summarize();
  return slice;
}

}  // namespace

absl::StatusOr<QueryRatio> RunQueryRatio(
    ChannelPool& pool, const std::vector<std::vector<int64_t>>& queries,
    const std::vector<std::string>& eligible,
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
    absl::StatusOr<QuerySlice> warm = RunSlice(pool, *requests, options);
    if (!warm.ok()) return warm.status();
  }
  QueryRatio out;
  for (uint32_t round = 0; round < options.rounds; ++round) {
    // Alternate which form goes first, so that a trend in the machine's
    // speed favours neither.
    double qps[2] = {0, 0};
    for (int k = 0; k < 2; ++k) {
      const bool is_line_a = (round % 2 == 0) == (k == 1);
      absl::StatusOr<QuerySlice> slice =
          RunSlice(pool, is_line_a ? line_a : seed_era, options);
      if (!slice.ok()) return slice.status();
      slice->line_a = is_line_a;
      slice->round = round;
      qps[is_line_a ? 1 : 0] = slice->qps;
      out.slices.push_back(*slice);
    }
    out.overheads.push_back(qps[0] / qps[1] - 1);
  }
  std::vector<double> sorted = out.overheads;
  std::sort(sorted.begin(), sorted.end());
  out.median_overhead = sorted.empty() ? 0 : sorted[sorted.size() / 2];
  return out;
}

}  // namespace kvindexer::bench
