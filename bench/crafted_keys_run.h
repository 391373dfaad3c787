// One backend of kv-indexer-crafted-keys-bench (BENCHMARKS.md, "Crafted
// block hashes"): a plugin loaded by name or path, filled with ordinary
// workers' random blocks and then with one attacking worker's blocks (the
// "query set": crafted or random hashes). Each round then times
//   (a) a prefix scan of the whole query set, alone;
//   (b) a 1-hash apply by another worker, alone;
//   (c) the same apply issued once a scan like (a) has made its first
//       callback, and the scan it ran beside.
// The tool fills one backend per query set first and then alternates their
// rounds, so that a change in the machine's load hits every set alike.
//
// Thread safety: none; (c) runs its scan on a thread of its own.
#ifndef KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_
#define KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/backend_loader.h"

namespace kvindexer::bench {

struct CraftedKeysSpec {
  std::string backend;      // LoadedBackend spec: a name or a plugin path
  std::string search_path;  // KV_INDEXER_BACKEND_PATH
  uint32_t ordinary_workers = 16;
  uint64_t ordinary_hashes = 1'000'000;  // random, spread over the workers
  uint32_t batch = 16384;                // hashes per apply while filling
  uint64_t seed = 1;                     // for the random hashes
};

struct CraftedKeysFigures {
  double fill_ordinary_s = 0;   // applying the ordinary blocks
  double fill_query_set_s = 0;  // applying the attacker's blocks
  uint64_t memory_bytes = 0;    // GetStats after filling
  // One entry per round, in milliseconds.
  std::vector<double> scan_ms;    // (a)
  std::vector<double> alone_ms;   // (b)
  std::vector<double> apply_ms;   // (c): the apply
  std::vector<double> beside_ms;  // (c): the scan it ran beside
};

class CraftedKeysRun {
 public:
  // Loads the backend and fills it. Fails when it does not load or refuses
  // an apply.
  static absl::StatusOr<std::unique_ptr<CraftedKeysRun>> Fill(
      const CraftedKeysSpec& spec, std::vector<int64_t> query_set);

  // Times one round, appending to figures(). Fails when an apply is refused
  // or a scan does not find every block of the query set.
  absl::Status TimeRound();

  const CraftedKeysFigures& figures() const { return figures_; }

 private:
  CraftedKeysRun() = default;

  std::unique_ptr<LoadedBackend> loaded_;
  std::vector<int64_t> query_set_;
  std::mt19937_64 rng_;
  CraftedKeysFigures figures_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_CRAFTED_KEYS_RUN_H_
