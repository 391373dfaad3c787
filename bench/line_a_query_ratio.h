// The cost of a line-A prefix query against a seed-era one on the same
// index (BENCHMARKS.md, "Line-A routers and bridges"): client threads send
// the same prefix queries back to back, in slices that alternate between
// the seed-era form (hashes only) and the line-A form (the same hashes plus
// every stream's address as eligible), for a number of rounds; each round's
// ratio compares its two slices, so drift of the machine cancels. One
// unmeasured slice of each form comes first. Two ratios come out of each
// round: throughput, which also carries the client's work (it shares the
// machine and builds and parses the larger line-A messages), and the
// server's CPU time per query, which is the indexer's own cost.
//
// Thread safety: RunQueryRatio starts and joins its own threads.
#ifndef KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_
#define KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "latency_recorder.h"
#include "load_client.h"

namespace kvindexer::bench {

struct QueryRatioOptions {
  uint32_t threads = 8;
  double slice_s = 2;
  uint32_t rounds = 3;
};

struct QuerySlice {
  bool line_a = false;
  uint32_t round = 0;
  double qps = 0;
  double server_cpu_us_per_query = 0;
  LatencySummary latency;
};

struct QueryRatio {
  std::vector<QuerySlice> slices;
  // Per round: seed-era qps / line-A qps - 1 (the line-A query's extra cost
  // end to end, client included).
  std::vector<double> overheads;
  double median_overhead = 0;
  // Per round: line-A server CPU per query / seed-era's - 1.
  std::vector<double> server_overheads;
  double median_server_overhead = 0;
};

// `queries`: the hash chains to query; `eligible`: the addresses a line-A
// query names; `server_cpu_s`: the server process's CPU seconds so far
// (negative when unreadable). Fails when any query fails, a slice completes
// none or the server's CPU time cannot be read.
absl::StatusOr<QueryRatio> RunQueryRatio(
    ChannelPool& pool, const std::vector<std::vector<int64_t>>& queries,
    const std::vector<std::string>& eligible,
    const std::function<double()>& server_cpu_s,
    const QueryRatioOptions& options);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_
