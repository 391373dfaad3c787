// kv-indexer-crafted-keys-bench: what block hashes crafted against
// robin_sharded_snapshot's old fixed mixer cost a backend (BENCHMARKS.md,
// "Crafted block hashes"). For each query set (--sets: "random" hashes, or
// hashes "crafted" by CraftLegacyCollisions to share one shard and their low
// --bucket_bits bits under that mixer), a backend is filled; then their
// rounds alternate, timed as crafted_keys_run.h says. The table gives
// medians over --reps rounds and the crafted/random ratios.
//
// The robin backend mixes with the process's random key unless
// KV_INDEXER_ROBIN_HASH_KEY names one; set to kLegacyHashKeyText
// (9e3779b97f4a7c15d6e8feb86659fd93) it mixes as before the key, which is
// how "before" is measured with the same binary. Exits 1 when a run fails
// (a refused apply, a scan that misses a block).
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_split.h"
#include "crafted_keys_run.h"
#include "tests/support/crafted_keys_hashes.h"

ABSL_FLAG(std::string, backend, "robin_sharded_snapshot",
          "Backend plugin: a name (looked up as kv-indexer-server does) or a "
          "path");
ABSL_FLAG(std::string, sets, "random,crafted",
          "Comma list of query sets: random, crafted");
ABSL_FLAG(uint64_t, query_hashes, 480'000,
          "Blocks of the attacking worker, all scanned by each query");
ABSL_FLAG(uint32_t, bucket_bits, 20,
          "Low mixed-hash bits the crafted hashes share under the old mixer");
ABSL_FLAG(uint32_t, ordinary_workers, 16, "Workers holding ordinary blocks");
ABSL_FLAG(uint64_t, ordinary_hashes, 1'000'000,
          "Random blocks spread over the ordinary workers");
ABSL_FLAG(uint32_t, batch, 16384, "Hashes per apply while filling");
ABSL_FLAG(uint32_t, reps, 5, "Timed rounds per query set, alternating");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the random hashes");

namespace kvindexer::bench {
namespace {

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid]
                                : (values[mid - 1] + values[mid]) / 2;
}

std::vector<int64_t> RandomHashes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0xC0FFEEull);
  std::vector<int64_t> hashes(n);
  for (int64_t& h : hashes) h = static_cast<int64_t>(rng());
  return hashes;
}

int Main() {
  CraftedKeysSpec spec;
  spec.backend = absl::GetFlag(FLAGS_backend);
  const char* search = getenv("KV_INDEXER_BACKEND_PATH");
  spec.search_path = search != nullptr ? search : "";
  spec.ordinary_workers = std::max(1u, absl::GetFlag(FLAGS_ordinary_workers));
  spec.ordinary_hashes = absl::GetFlag(FLAGS_ordinary_hashes);
  spec.batch = std::max(1u, absl::GetFlag(FLAGS_batch));
  spec.seed = absl::GetFlag(FLAGS_seed);
  const uint32_t reps = std::max(1u, absl::GetFlag(FLAGS_reps));
  const size_t n = absl::GetFlag(FLAGS_query_hashes);
  const uint32_t bucket_bits = absl::GetFlag(FLAGS_bucket_bits);
  if (bucket_bits < 1 || bucket_bits > 40) {
    std::fprintf(stderr, "--bucket_bits must be 1 to 40\n");
    return 2;
  }
  const char* key = getenv("KV_INDEXER_ROBIN_HASH_KEY");
  std::printf("backend %s; KV_INDEXER_ROBIN_HASH_KEY %s\n",
              spec.backend.c_str(), key != nullptr ? key : "unset");
  std::printf(
      "query set %zu hashes; ordinary %llu hashes over %u workers; "
      "batches of %u; %u rounds\n\n",
      n, static_cast<unsigned long long>(spec.ordinary_hashes),
      spec.ordinary_workers, spec.batch, reps);
  std::printf(
      "| query set | fill: ordinary / query set (s) | memory (MB) | scan "
      "(ms) | 1-hash apply alone (ms) | 1-hash apply during a scan (ms) | "
      "that scan (ms) |\n|---|---|---|---|---|---|---|\n");

  std::vector<std::string> names;
  std::vector<std::unique_ptr<CraftedKeysRun>> runs;
  const std::vector<std::string> sets =
      absl::StrSplit(absl::GetFlag(FLAGS_sets), ',', absl::SkipEmpty());
  for (const std::string& set : sets) {
    std::vector<int64_t> query_set;
    if (set == "random") {
      query_set = RandomHashes(n, spec.seed);
    } else if (set == "crafted") {
      query_set = CraftLegacyCollisions(n, bucket_bits);
      if (query_set.size() != n) {
        std::fprintf(stderr, "only %zu crafted hashes for --bucket_bits=%u\n",
                     query_set.size(), bucket_bits);
        return 2;
      }
    } else {
      std::fprintf(stderr, "unknown query set \"%s\"\n", set.c_str());
      return 2;
    }
    absl::StatusOr<std::unique_ptr<CraftedKeysRun>> run =
        CraftedKeysRun::Fill(spec, std::move(query_set));
    if (!run.ok()) {
      std::fprintf(stderr, "%s: %s\n", set.c_str(),
                   run.status().ToString().c_str());
      return 1;
    }
    names.push_back(set);
    runs.push_back(std::move(*run));
  }
  for (uint32_t rep = 0; rep < reps; ++rep) {
    for (size_t i = 0; i < runs.size(); ++i) {
      if (absl::Status s = runs[i]->TimeRound(); !s.ok()) {
        std::fprintf(stderr, "%s: %s\n", names[i].c_str(),
                     s.ToString().c_str());
        return 1;
      }
    }
  }

  double scan_random = 0;
  double apply_random = 0;
  double scan_crafted = 0;
  double apply_crafted = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const CraftedKeysFigures& figures = runs[i]->figures();
    const double scan = Median(figures.scan_ms);
    const double apply = Median(figures.apply_ms);
    std::printf("| %s | %.2f / %.2f | %.1f | %.2f | %.3f | %.3f | %.2f |\n",
                names[i].c_str(), figures.fill_ordinary_s,
                figures.fill_query_set_s, figures.memory_bytes / 1e6, scan,
                Median(figures.alone_ms), apply, Median(figures.beside_ms));
    (names[i] == "random" ? scan_random : scan_crafted) = scan;
    (names[i] == "random" ? apply_random : apply_crafted) = apply;
  }
  if (scan_random > 0 && scan_crafted > 0) {
    std::printf(
        "\ncrafted / random: scan %.2fx, 1-hash apply during a scan %.2fx\n",
        scan_crafted / scan_random, apply_crafted / apply_random);
  }
  return 0;
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Times a backend under block hashes crafted against robin's old fixed "
      "mixer, against random ones; see BENCHMARKS.md");
  absl::ParseCommandLine(argc, argv);
  return kvindexer::bench::Main();
}
