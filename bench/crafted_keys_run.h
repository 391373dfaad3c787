// One run of kv-indexer-crafted-keys-bench (BENCHMARKS.md, "Crafted block
// hashes"): a backend plugin loaded by name or path, filled with ordinary
// workers' random blocks and then with one attacking worker's blocks (the
// "query set": crafted or random hashes), then timed on
//   (a) a prefix scan of the whole query set, alone, and
//   (b) a 1-hash apply by another worker, issued once such a scan has
//       made its first callback, and the scan it ran beside.
//
// Single-threaded apart from the scan that (b) runs on a second thread.
#ifndef KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_
#define KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvindexer::bench {

struct CraftedKeysSpec {
  std::string backend;      // LoadedBackend spec: a name or a plugin path
  std::string search_path;  // KV_INDEXER_BACKEND_PATH
  uint32_t ordinary_workers = 16;
  uint64_t ordinary_hashes = 1'000'000;  // random, spread over the workers
  uint32_t batch = 16384;                // hashes per apply while filling
  uint32_t reps = 5;                     // timed rounds of (a) and (b)
  uint64_t seed = 1;                     // for the random hashes
};

struct CraftedKeysFigures {
  double fill_ordinary_s = 0;     // applying the ordinary blocks
  double fill_query_set_s = 0;    // applying the attacker's blocks
  std::vector<double> scan_ms;    // (a), one per round
  std::vector<double> apply_ms;   // (b): the apply
  std::vector<double> beside_ms;  // (b): the scan it ran beside
  std::vector<double> alone_ms;   // the same apply with no scan running
  uint64_t memory_bytes = 0;      // GetStats after filling
};

// Runs the scenario with `query_set` as the attacker's blocks. Fails when the
// backend does not load, refuses an apply, or a scan does not find every
// block of the query set.
absl::StatusOr<CraftedKeysFigures> RunCraftedKeys(
    const CraftedKeysSpec& spec, const std::vector<int64_t>& query_set);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_
