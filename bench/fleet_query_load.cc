#include "fleet_query_load.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <random>
#include <thread>

namespace kvindexer::bench {

std::vector<v1::MatchExternalKvPrefixRequest> MakeFleetQueries(
    const QueryPoolOptions& options) {
  std::mt19937_64 rng(options.seed * 104729 + 17);
  const uint32_t max_blocks =
      std::min(options.max_blocks, options.batch_hashes);
  const uint32_t min_blocks = std::min(options.min_blocks, max_blocks);
  std::uniform_int_distribution<uint32_t> worker(0, options.workers - 1);
  std::uniform_int_distribution<uint64_t> batch(
      0, std::max<uint64_t>(options.batches_per_worker, 1) - 1);
  std::uniform_int_distribution<uint32_t> length(min_blocks, max_blocks);
  std::vector<v1::MatchExternalKvPrefixRequest> out;
  for (uint32_t q = 0; q < options.pool; ++q) {
    const uint32_t w = worker(rng);
    const uint64_t b = batch(rng);
    const std::vector<int64_t> hashes =
        FleetBatchHashes(options.seed, w, b, options.batch_hashes);
    v1::MatchExternalKvPrefixRequest request;
    request.mutable_hashes()->Assign(hashes.begin(),
                                     hashes.begin() + length(rng));
    out.push_back(std::move(request));
  }
  return out;
}

std::vector<QueryRound> MeasureQueriesUnderAppends(
    ChannelPool* replica, fleet::EventLog& log,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const QueryLoad& load, PacedAppendOptions append, uint32_t rounds) {
  std::vector<QueryRound> out;
  for (uint32_t r = 0; r < rounds; ++r) {
    QueryRound quiet;
    QueryLoad quiet_load = load;
    quiet_load.label = "queries/quiet";
    std::fprintf(stderr, "== queries round %u: quiet log\n", r + 1);
    quiet.queries = RunQueries(replica, queries, quiet_load);
    out.push_back(std::move(quiet));

    QueryRound busy;
    busy.appending = true;
    std::atomic<bool> stop{false};
    append.stop = &stop;
    append.max_batches = 0;
    std::fprintf(stderr, "== queries round %u: %.0f batches/s appended\n",
                 r + 1, append.batches_per_s);
    std::thread appender([&] {
      busy.append = PacedAppend(log, append, [](const PacedBatch&) {});
    });
    QueryLoad busy_load = load;
    busy_load.label = "queries/appending";
    busy.queries = RunQueries(replica, queries, busy_load);
    stop = true;
    appender.join();
    // New hashes for the next round's appends.
    append.first_index += busy.append.batches + append.workers;
    out.push_back(std::move(busy));
  }
  return out;
}

}  // namespace kvindexer::bench
