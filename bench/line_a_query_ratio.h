// The cost of a line-A prefix query against a seed-era one on the same
// index (BENCHMARKS.md, "Line-A routers and bridges"): client threads send
// the same prefix queries back to back, in slices that alternate between
// the seed-era form (hashes only) and the line-A form (the same hashes plus
// every stream's address as eligible), for a number of rounds; each round's
// ratio compares its two slices, so drift of the machine cancels. One
// unmeasured slice of each form comes first.
//
// Thread safety: RunQueryRatio starts and joins its own threads.
#ifndef KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_
#define KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_

#include <cstdint>
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
  LatencySummary latency;
};

struct QueryRatio {
  std::vector<QuerySlice> slices;
  // Per round: seed-era qps / line-A qps - 1 (the line-A query's extra cost).
  std::vector<double> overheads;
  double median_overhead = 0;
};

// `queries`: the hash chains to query; `eligible`: the addresses a line-A
// query names. Fails when any query fails or a slice completes none.
absl::StatusOr<QueryRatio> RunQueryRatio(
    ChannelPool& pool, const std::vector<std::vector<int64_t>>& queries,
    const std::vector<std::string>& eligible, const QueryRatioOptions& options);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LINE_A_QUERY_RATIO_H_
