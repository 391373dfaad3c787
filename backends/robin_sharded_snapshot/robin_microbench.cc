// A quick in-process benchmark of the robin_sharded_snapshot backend against
// the targets (not a substitute for bench/): ingest rate, memory per
// placement, prefix-scan cost versus raw robin_map probes, and query p99 with
// max-size applies running back to back.
//
//   kvindexer_robin_microbench [placements=10000000] [workers_per_block=1]
//                              [merge_min_delta merge_base_ratio]
//
// The last two set the merge policy (RobinShardedSnapshotBackend::
// SetMergePolicy) for experiments; both or neither.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "robin_backend.h"
#include "tests/support/requests.h"
#include "tsl/robin_map.h"

namespace kvindexer::robin {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint64_t RssBytes() {
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long pages = 0, resident = 0;
  if (fscanf(f, "%lu %lu", &pages, &resident) != 2) resident = 0;
  fclose(f);
  return uint64_t{resident} * 4096;
}

class CountingVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView& w) noexcept override { workers += w.worker; }
  bool OnBlock(const BlockView& b) noexcept override {
    placements += b.placement_count;
    return true;
  }
  uint64_t workers = 0;
  uint64_t placements = 0;
};

int Main(int argc, char** argv) {
  const uint64_t target =
      argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const uint32_t share = argc > 2 ? std::atoi(argv[2]) : 1;
  constexpr uint32_t kWorkers = 32;
  constexpr size_t kBatch = 16384;
  constexpr size_t kPrefix = 128;
  std::mt19937_64 rng(7);

  const uint64_t rss_before = RssBytes();
  auto backend = std::make_unique<RobinShardedSnapshotBackend>();
  if (argc > 4) {
    const size_t ratio = std::strtoull(argv[4], nullptr, 10);
    if (ratio == 0) {
      fprintf(stderr, "merge_base_ratio must be at least 1\n");
      return 2;
    }
    backend->SetMergePolicy(std::strtoull(argv[3], nullptr, 10), ratio);
  }

  // The anchor prefix: 128 blocks on every worker.
  std::vector<int64_t> anchor(kPrefix);
  for (auto& h : anchor) h = static_cast<int64_t>(rng());
  // Bulk: random hashes; each block is held by `share` workers.
  const uint64_t blocks = target / share;
  std::vector<int64_t> bulk(blocks);
  for (auto& h : bulk) h = static_cast<int64_t>(rng());

  uint64_t placed = 0;
  const auto ingest_start = Clock::now();
  const double ingest_cpu_start = ThreadCpuSeconds();
  for (uint32_t w = 0; w < kWorkers; ++w) {
    test_support::Batch b("worker-" + std::to_string(w),
                          "10.0.0." + std::to_string(w) + ":1");
    b.Report(kTierHbm, anchor);
    backend->Apply(test_support::BatchView(b).view());
    placed += kPrefix;
  }
  // Block i goes to workers (i + k) % 32 for k < share.
  for (uint32_t k = 0; k < share; ++k) {
    for (uint32_t w = 0; w < kWorkers; ++w) {
      std::vector<int64_t> chunk;
      const auto flush = [&] {
        if (chunk.empty()) return;
        test_support::Batch b("worker-" + std::to_string(w),
                              "10.0.0." + std::to_string(w) + ":1");
        b.Report(kTierHbm, chunk, std::vector<uint32_t>(chunk.size(), 3),
                 std::vector<uint32_t>(chunk.size(), 16));
        backend->Apply(test_support::BatchView(b).view());
        placed += chunk.size();
        chunk.clear();
      };
      for (uint64_t i = (w + kWorkers - k) % kWorkers; i < blocks;
           i += kWorkers) {
        chunk.push_back(bulk[i]);
        if (chunk.size() == kBatch) flush();
      }
      flush();
    }
  }
  const double ingest_s = Seconds(Clock::now() - ingest_start);
  const double ingest_cpu_s = ThreadCpuSeconds() - ingest_cpu_start;
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend->GetStats(&stats);
  const uint64_t rss_after = RssBytes();
  printf("placements %llu blocks %llu workers/block %u\n",
         (unsigned long long)stats.placements, (unsigned long long)stats.blocks,
         share);
  printf(
      "ingest: %.2f s, %.2f M placements/s wall, %.2f M/s per CPU second "
      "(batches of %zu)\n",
      ingest_s, placed / ingest_s / 1e6, placed / ingest_cpu_s / 1e6, kBatch);
  printf("memory: GetStats %.1f B/placement, RSS delta %.1f B/placement\n",
         double(stats.memory_bytes) / stats.placements,
         double(rss_after - rss_before) / stats.placements);

  if (std::getenv("ROBIN_BENCH_INGEST_ONLY") != nullptr) return 0;

  // Prefix scans of the anchor (every worker a candidate on every block).
  const HashSpan span{anchor.data(), anchor.size()};
  constexpr int kScans = 200000;
  CountingVisitor sink;
  auto t0 = Clock::now();
  for (int i = 0; i < kScans; ++i) backend->PrefixScan(span, &sink);
  const double scan_ns = Seconds(Clock::now() - t0) * 1e9 / kScans;

  // Prefix scans of cold blocks: a random 128-block walk of the bulk.
  std::vector<std::vector<int64_t>> cold(4096);
  for (auto& q : cold) {
    q.resize(kPrefix);
    for (auto& h : q) h = bulk[rng() % bulk.size()];
  }
  t0 = Clock::now();
  for (int i = 0; i < kScans / 10; ++i) {
    const auto& q = cold[i % cold.size()];
    backend->PrefixScan(HashSpan{q.data(), q.size()}, &sink);
  }
  const double cold_ns = Seconds(Clock::now() - t0) * 1e9 / (kScans / 10);

  // Raw robin_map probes of the same hashes in a map of the same size.
  tsl::robin_map<int64_t, uint64_t> raw;
  raw.reserve(blocks + kPrefix);
  for (int64_t h : bulk) raw.insert({h, 1});
  for (int64_t h : anchor) raw.insert({h, 1});
  uint64_t found = 0;
  t0 = Clock::now();
  for (int i = 0; i < kScans; ++i) {
    for (int64_t h : anchor) found += raw.find(h) != raw.end();
  }
  const double raw_ns = Seconds(Clock::now() - t0) * 1e9 / kScans;
  t0 = Clock::now();
  for (int i = 0; i < kScans / 10; ++i) {
    for (int64_t h : cold[i % cold.size()]) found += raw.find(h) != raw.end();
  }
  const double raw_cold_ns = Seconds(Clock::now() - t0) * 1e9 / (kScans / 10);
  printf(
      "prefix scan 128 blocks x 32 workers: %.0f ns; raw probes %.0f ns "
      "(%.2fx)\n",
      scan_ns, raw_ns, scan_ns / raw_ns);
  printf(
      "prefix scan 128 cold blocks: %.0f ns; raw probes %.0f ns (%.2fx) "
      "[%llu]\n",
      cold_ns, raw_cold_ns, cold_ns / raw_cold_ns,
      (unsigned long long)(found % 2));
  raw = {};

  // Query p99, idle versus with max-size applies back to back.
  auto p99 = [&](bool with_writer) {
    std::atomic<bool> stop{false};
    std::thread writer;
    if (with_writer) {
      writer = std::thread([&] {
        std::mt19937_64 wrng(11);
        uint32_t round = 0;
        while (!stop.load()) {
          std::vector<int64_t> chunk(kBatch);
          for (auto& h : chunk) h = bulk[wrng() % bulk.size()];
          test_support::Batch b(
              "worker-" + std::to_string(round % kWorkers),
              "10.0.0." + std::to_string(round % kWorkers) + ":1");
          if (round % 2 == 0) {
            b.Report(kTierDram, chunk);
          } else {
            b.Revoke(kTierDram, chunk);
          }
          backend->Apply(test_support::BatchView(b).view());
          ++round;
        }
      });
    }
    std::vector<double> lat;
    for (int i = 0; i < 200000; ++i) {
      const auto& q = (i % 2 == 0) ? anchor : cold[i % cold.size()];
      const auto s = Clock::now();
      backend->PrefixScan(HashSpan{q.data(), q.size()}, &sink);
      lat.push_back(Seconds(Clock::now() - s) * 1e9);
    }
    stop = true;
    if (writer.joinable()) writer.join();
    std::sort(lat.begin(), lat.end());
    return std::pair<double, double>(lat[lat.size() / 2],
                                     lat[lat.size() * 99 / 100]);
  };
  const auto idle = p99(false);
  const auto busy = p99(true);
  printf(
      "prefix p50/p99 idle %.0f/%.0f ns; with back-to-back 16384-hash "
      "applies %.0f/%.0f ns (p99 %.2fx)\n",
      idle.first, idle.second, busy.first, busy.second,
      busy.second / idle.second);
  return 0;
}

}  // namespace
}  // namespace kvindexer::robin

int main(int argc, char** argv) { return kvindexer::robin::Main(argc, argv); }
