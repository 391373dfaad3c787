// kvindexer_backend_bench: in-process microbenchmarks of each backend plugin,
// loaded by name through LoadedBackend, plus the lookup floor.
//
// Environment (all optional):
//   KV_INDEXER_BENCH_BACKENDS  names or paths, comma-separated
//                              (default "absl_rwlock,robin_sharded_snapshot");
//                              a backend that does not load is skipped with a
//                              message on stderr.
//   KV_INDEXER_BENCH_SIZES     placement counts of the memory cases
//                              (default "1000000,10000000").
//   KV_INDEXER_BENCH_PPB       filler placements per block of the memory
//                              cases (default "1,4").
//   KV_INDEXER_BACKEND_PATH    extra plugin directories for the loader.
// The last (size, ppb) pair is the headline scenario the query and apply cases
// run on: 128-block prefix, 32 candidate workers on every block.
//
// Google Benchmark flags apply (--benchmark_format=json,
// --benchmark_out=FILE, --benchmark_filter=REGEX, ...). Rates are per CPU
// second of the benchmark thread (Google Benchmark's default), which is what
// a single-threaded case costs even when other processes share the cores;
// the wall-clock time is reported alongside. The fill rate of the memory
// cases is given both ways.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backend_scenario.h"
#include "benchmark/benchmark.h"
#include "common/env.h"
#include "core/prefix_answer.h"
#include "core/prefix_response_wire.h"
#include "lookup_floor.h"
#include "machine_info.h"

namespace kvindexer::bench {
namespace {

// The scenario the query and apply cases share; replaced when another
// backend or spec is needed, so at most one large scenario is alive.
std::unique_ptr<BackendScenario> g_scenario;
std::unique_ptr<LookupFloor> g_floor;

bool SameSpec(const ScenarioSpec& a, const ScenarioSpec& b) {
  return a.backend == b.backend && a.placements == b.placements &&
         a.placements_per_block == b.placements_per_block;
}

BackendScenario* Ensure(const ScenarioSpec& spec, benchmark::State& state) {
  if (g_scenario != nullptr && SameSpec(g_scenario->spec(), spec)) {
    return g_scenario.get();
  }
  g_scenario.reset();
  g_floor.reset();
  absl::StatusOr<std::unique_ptr<BackendScenario>> s =
      BackendScenario::Build(spec);
  if (!s.ok()) {
    state.SkipWithError(s.status().ToString().c_str());
    return nullptr;
  }
  g_scenario = std::move(*s);
  return g_scenario.get();
}

void SetScenarioCounters(benchmark::State& state, const BackendScenario& s) {
  const double p = static_cast<double>(s.placements());
  state.counters["placements"] = p;
  state.counters["blocks"] = static_cast<double>(s.blocks());
  state.counters["placements_per_block"] =
      s.blocks() > 0 ? p / static_cast<double>(s.blocks()) : 0;
}

// Reads every byte a visitor is given.
class SumVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView& worker) noexcept override {
    sum_ += worker.worker + worker.address.size;
  }
  bool OnBlock(const BlockView& block) noexcept override {
    sum_ += block.token_count;
    for (size_t i = 0; i < block.placement_count; ++i) {
      const Placement& p = block.placements[i];
      sum_ += p.worker ^ (p.tier << 8) ^ (p.mask << 16);
    }
    return true;
  }
  uint64_t sum() const { return sum_; }

 private:
  uint64_t sum_ = 0;
};

void PerBlockCounters(benchmark::State& state, uint32_t blocks) {
  state.SetItemsProcessed(state.iterations() * blocks);
  state.counters["sec_per_block"] =
      benchmark::Counter(blocks, benchmark::Counter::kIsIterationInvariantRate |
                                     benchmark::Counter::kInvert);
}

void BM_Memory(benchmark::State& state, ScenarioSpec spec, bool keep) {
  for (auto _ : state) {
    g_scenario.reset();
    g_floor.reset();
    BackendScenario* s = Ensure(spec, state);
    if (s == nullptr) return;
    const double p = static_cast<double>(s->placements());
    SetScenarioCounters(state, *s);
    state.counters["stats_bytes_per_placement"] =
        static_cast<double>(s->stats_memory_bytes()) / p;
    state.counters["rss_bytes_per_placement"] =
        static_cast<double>(s->rss_delta_bytes()) / p;
    state.counters["fill_placements_per_s"] = p / s->fill_seconds();
    state.counters["fill_placements_per_cpu_s"] = p / s->fill_cpu_seconds();
    if (!keep) g_scenario.reset();
  }
}

// `distinct`: the distinct-lists prefix instead of the headline prefix.
// The query runs as the server runs it once admitted:
// IndexOperations::MatchPrefix, the answer written in its wire form.
void BM_PrefixIndexer(benchmark::State& state, ScenarioSpec spec,
                      bool distinct) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  v1::MatchExternalKvPrefixRequest req;
  for (const int64_t h : distinct ? DistinctListHashes() : HeadlineHashes()) {
    req.add_hashes(h);
  }
  std::vector<uint8_t> wire;
  size_t matches = 0;
  uint32_t best = 0;
  for (auto _ : state) {
    absl::Status st =
        s->operations().MatchPrefix(req, [&](const PrefixAnswer& answer) {
          wire.resize(PrefixResponseWireSize(answer));
          WritePrefixResponseWire(answer, wire.data());
          matches = answer.matches.size();
          best = answer.best_prefix_blocks;
        });
    benchmark::DoNotOptimize(st);
    benchmark::DoNotOptimize(wire.data());
  }
  if (matches != kHeadlineWorkers || best != kHeadlineBlocks) {
    state.SkipWithError(
        absl::StrCat("wrong answer: ", matches, " matches, best ", best)
            .c_str());
    return;
  }
  PerBlockCounters(state, kHeadlineBlocks);
  SetScenarioCounters(state, *s);
}

void BM_PrefixRaw(benchmark::State& state, ScenarioSpec spec, bool distinct) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  const std::vector<int64_t> hashes =
      distinct ? DistinctListHashes() : HeadlineHashes();
  const HashSpan span{hashes.data(), hashes.size()};
  uint64_t sum = 0;
  for (auto _ : state) {
    SumVisitor v;
    const BackendStatus st = s->backend()->PrefixScan(span, &v);
    benchmark::DoNotOptimize(st);
    sum += v.sum();
  }
  benchmark::DoNotOptimize(sum);
  PerBlockCounters(state, kHeadlineBlocks);
  SetScenarioCounters(state, *s);
}

void BM_MatchIndexer(benchmark::State& state, ScenarioSpec spec) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  v1::MatchExternalKvRequest req;
  for (const int64_t h : HeadlineHashes()) req.add_hashes(h);
  v1::MatchExternalKvResponse resp;
  for (auto _ : state) {
    resp.Clear();
    absl::Status st = s->operations().Match(req, &resp);
    benchmark::DoNotOptimize(st);
  }
  if (resp.matches_size() != static_cast<int>(kHeadlineWorkers)) {
    state.SkipWithError("wrong MatchExternalKv answer");
    return;
  }
  PerBlockCounters(state, kHeadlineBlocks);
}

void BM_MatchRaw(benchmark::State& state, ScenarioSpec spec) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  const std::vector<int64_t> hashes = HeadlineHashes();
  const HashSpan span{hashes.data(), hashes.size()};
  uint64_t sum = 0;
  for (auto _ : state) {
    SumVisitor v;
    const BackendStatus st = s->backend()->Match(span, false, &v);
    benchmark::DoNotOptimize(st);
    sum += v.sum();
  }
  benchmark::DoNotOptimize(sum);
  PerBlockCounters(state, kHeadlineBlocks);
}

// Report-then-revoke pairs of fresh hashes on the loaded scenario, so the
// index stays at its size. Each pair is 2 x batch placement mutations. The
// ring spans 256K distinct hashes whatever the batch size, so small batches
// do not stay cache-resident.
struct ChurnRing {
  std::vector<v1::ApplyExternalKvBatchRequest> report;
  std::vector<v1::ApplyExternalKvBatchRequest> revoke;
};

ChurnRing MakeChurn(uint32_t batch) {
  const uint32_t ring_size = std::max<uint32_t>(8, (256u << 10) / batch);
  ChurnRing ring;
  uint64_t next = 0;
  for (uint32_t i = 0; i < ring_size; ++i) {
    const uint32_t w = i % kHeadlineWorkers;
    std::vector<int64_t> hashes;
    for (uint32_t k = 0; k < batch; ++k) {
      hashes.push_back(FillerHash(~(next++)));
    }
    ring.report.push_back(WorkerBatch(w));
    AddAction(w, v1::ACTION_REPORT, v1::TIER_HBM, hashes, &ring.report.back());
    ring.revoke.push_back(WorkerBatch(w));
    AddAction(w, v1::ACTION_REVOKE, v1::TIER_HBM, hashes, &ring.revoke.back());
  }
  return ring;
}

void BM_ApplyIndexer(benchmark::State& state, ScenarioSpec spec,
                     uint32_t batch) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  const ChurnRing ring = MakeChurn(batch);
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ % ring.report.size();
    ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
    absl::Status a = s->operations().Apply(ring.report[k], &resp).Wait();
    absl::Status b = s->operations().Apply(ring.revoke[k], &resp).Wait();
    if (!a.ok() || !b.ok()) {
      state.SkipWithError((a.ok() ? b : a).ToString().c_str());
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * 2 * batch);
  state.counters["placements_per_s"] = benchmark::Counter(
      2.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
}

// What a placement bound that is never reached costs an apply
// (docs/contract.md, "The placement bound"): the churn of BM_ApplyIndexer
// through the scenario's Indexer and through one with such a bound over the
// same backend, alternating per iteration (and which goes first), so that
// both see the same machine. Counters: each side's placements/s and
// bounded_over_plain, the ratio of their rates (1.0: no cost).
void BM_ApplyBoundCost(benchmark::State& state, ScenarioSpec spec,
                       uint32_t batch) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  RequestLimits limits;
  limits.placement_bound = {.max_placements = UINT32_MAX,
                            .max_per_worker = UINT32_MAX};
  Indexer bounded(s->backend(), nullptr, limits);
  const ChurnRing ring = MakeChurn(batch);
  using Clock = std::chrono::steady_clock;
  Clock::duration plain_time{};
  Clock::duration bounded_time{};
  const auto churn = [&](IndexOperations& ops, size_t k,
                         Clock::duration* spent) {
    const Clock::time_point start = Clock::now();
    ::kv_indexer::v1::ApplyExternalKvBatchResponse resp;
    absl::Status a = ops.Apply(ring.report[k], &resp).Wait();
    absl::Status b = ops.Apply(ring.revoke[k], &resp).Wait();
    *spent += Clock::now() - start;
    return a.ok() ? b : a;
  };
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i % ring.report.size();
    const bool plain_first = i++ % 2 == 0;
    absl::Status first = plain_first
                             ? churn(s->operations(), k, &plain_time)
                             : churn(bounded.operations(), k, &bounded_time);
    absl::Status second = plain_first
                              ? churn(bounded.operations(), k, &bounded_time)
                              : churn(s->operations(), k, &plain_time);
    if (!first.ok() || !second.ok()) {
      state.SkipWithError((first.ok() ? second : first).ToString().c_str());
      return;
    }
  }
  const double placements =
      2.0 * batch * static_cast<double>(state.iterations());
  const double plain_s = std::chrono::duration<double>(plain_time).count();
  const double bounded_s = std::chrono::duration<double>(bounded_time).count();
  if (plain_s <= 0 || bounded_s <= 0) return;
  state.counters["plain_placements_per_s"] = placements / plain_s;
  state.counters["bounded_placements_per_s"] = placements / bounded_s;
  state.counters["bounded_over_plain"] = plain_s / bounded_s;
}

// The views an Indexer would build, made once: the raw apply path without
// validation or repeated-hash collapsing.
struct RawBatch {
  std::vector<ActionView> actions;
  ApplyBatchView view{};
};

RawBatch MakeRaw(const v1::ApplyExternalKvBatchRequest& req) {
  RawBatch raw;
  for (const auto& a : req.actions()) {
    ActionView v{};
    v.type = static_cast<uint32_t>(a.type());
    v.tier = static_cast<uint32_t>(a.tier());
    v.hashes = {a.hashes().data(), static_cast<size_t>(a.hashes_size())};
    v.component_masks = {a.component_masks().data(),
                         static_cast<size_t>(a.component_masks_size())};
    v.block_sizes = {a.block_sizes().data(),
                     static_cast<size_t>(a.block_sizes_size())};
    raw.actions.push_back(v);
  }
  raw.view.worker_id = {req.worker_id().data(), req.worker_id().size()};
  raw.view.worker_address = {req.worker_address().data(),
                             req.worker_address().size()};
  raw.view.has_cache_spec = req.has_cache_spec() ? 1 : 0;
  const auto& c = req.cache_spec();
  raw.view.cache_spec = {c.version(),           c.components(),
                         c.swa_window_tokens(), c.full_tier_mask(),
                         c.swa_tier_mask(),     c.mamba_tier_mask()};
  raw.view.actions = raw.actions.data();
  raw.view.action_count = raw.actions.size();
  return raw;
}

void BM_ApplyRaw(benchmark::State& state, ScenarioSpec spec, uint32_t batch) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  const ChurnRing ring = MakeChurn(batch);
  std::vector<RawBatch> report, revoke;
  for (size_t k = 0; k < ring.report.size(); ++k) {
    report.push_back(MakeRaw(ring.report[k]));
    revoke.push_back(MakeRaw(ring.revoke[k]));
  }
  size_t i = 0;
  for (auto _ : state) {
    const size_t k = i++ % report.size();
    const BackendStatus a = s->backend()->Apply(report[k].view);
    const BackendStatus b = s->backend()->Apply(revoke[k].view);
    if (a.code != BackendCode::kOk || b.code != BackendCode::kOk) {
      state.SkipWithError("backend Apply failed");
      return;
    }
  }
  state.SetItemsProcessed(state.iterations() * 2 * batch);
  state.counters["placements_per_s"] = benchmark::Counter(
      2.0 * batch, benchmark::Counter::kIsIterationInvariantRate);
}

// A thread that applies the raw churn back to back, and can be paused: Pause
// returns once no apply is in progress, so that a window measured after it
// sees none.
class ChurnThread {
 public:
  explicit ChurnThread(IndexBackend* backend, uint32_t batch)
      : backend_(backend) {
    const ChurnRing ring = MakeChurn(batch);
    for (size_t k = 0; k < ring.report.size(); ++k) {
      requests_.push_back(ring.report[k]);
      requests_.push_back(ring.revoke[k]);
    }
    for (const auto& r : requests_) raw_.push_back(MakeRaw(r));
    thread_ = std::thread([this] { Run(); });
  }
  ~ChurnThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      paused_ = false;
    }
    cv_.notify_all();
    thread_.join();
  }

  void Pause() {
    std::unique_lock<std::mutex> lock(mu_);
    paused_ = true;
    cv_.wait(lock, [this] { return !applying_; });
  }
  void Resume() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      paused_ = false;
    }
    cv_.notify_all();
  }
  uint64_t applies() const { return applies_.load(); }
  bool failed() const { return failed_.load(); }

 private:
  void Run() {
    size_t k = 0;
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        applying_ = false;
        cv_.notify_all();
        cv_.wait(lock, [this] { return stop_ || !paused_; });
        if (stop_) return;
        applying_ = true;
      }
      // Report then revoke of one ring entry, so the index keeps its size.
      for (int i = 0; i < 2; ++i) {
        if (backend_->Apply(raw_[k].view).code != BackendCode::kOk) {
          failed_ = true;
        }
        k = (k + 1) % raw_.size();
        ++applies_;
      }
    }
  }

  IndexBackend* backend_;
  std::vector<v1::ApplyExternalKvBatchRequest> requests_;
  std::vector<RawBatch> raw_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool paused_ = true;
  bool applying_ = false;
  bool stop_ = false;
  std::atomic<uint64_t> applies_{0};
  std::atomic<bool> failed_{false};
  std::thread thread_;
};

double PercentileUs(std::vector<double>& ns, double q) {
  if (ns.empty()) return 0;
  const size_t at = std::min(
      ns.size() - 1, static_cast<size_t>(q * static_cast<double>(ns.size())));
  std::nth_element(ns.begin(), ns.begin() + static_cast<ptrdiff_t>(at),
                   ns.end());
  return ns[at] / 1e3;
}

// What back-to-back applies cost a prefix scan that arrives beside them:
// the headline scan's latency (wall clock) in windows of 200 scans,
// alternating between the churn thread paused and applying 16,384-hash
// batches. Over a backend whose readers wait for its writer, the applying
// windows' tail is about the time an apply holds them off, and a writer
// that takes the lock again at once can keep a scan waiting for several.
// Counters: mean, p50 and p99 of both kinds of window and the applying
// windows' longest scan, in microseconds, the p99 ratio, and the applies
// per second while applying.
void BM_PrefixBesideApplies(benchmark::State& state, ScenarioSpec spec,
                            uint32_t batch) {
  BackendScenario* s = Ensure(spec, state);
  if (s == nullptr) return;
  const std::vector<int64_t> hashes = HeadlineHashes();
  const HashSpan span{hashes.data(), hashes.size()};
  ChurnThread churn(s->backend(), batch);
  constexpr uint64_t kWindow = 200;
  std::vector<double> idle_ns, busy_ns;
  using Clock = std::chrono::steady_clock;
  Clock::duration busy_time{};
  Clock::time_point busy_since{};
  uint64_t busy_applies_start = 0, busy_applies = 0;
  bool busy = false;
  uint64_t n = 0;
  uint64_t sum = 0;
  for (auto _ : state) {
    if (n++ % kWindow == 0) {
      if (busy) {
        churn.Pause();
        busy_time += Clock::now() - busy_since;
        busy_applies += churn.applies() - busy_applies_start;
      } else {
        busy_applies_start = churn.applies();
        busy_since = Clock::now();
        churn.Resume();
      }
      busy = !busy;
    }
    SumVisitor v;
    const auto t0 = Clock::now();
    const BackendStatus st = s->backend()->PrefixScan(span, &v);
    const auto t1 = Clock::now();
    benchmark::DoNotOptimize(st);
    sum += v.sum();
    (busy ? busy_ns : idle_ns)
        .push_back(static_cast<double>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0)
                .count()));
  }
  if (busy) {
    churn.Pause();
    busy_time += Clock::now() - busy_since;
    busy_applies += churn.applies() - busy_applies_start;
  }
  benchmark::DoNotOptimize(sum);
  if (churn.failed()) {
    state.SkipWithError("backend Apply failed");
    return;
  }
  const auto mean_us = [](const std::vector<double>& ns) {
    double total = 0;
    for (const double v : ns) total += v;
    return ns.empty() ? 0.0 : total / static_cast<double>(ns.size()) / 1e3;
  };
  state.counters["idle_mean_us"] = mean_us(idle_ns);
  state.counters["applying_mean_us"] = mean_us(busy_ns);
  state.counters["applying_max_us"] = PercentileUs(busy_ns, 1.0);
  const double idle_p99 = PercentileUs(idle_ns, 0.99);
  const double busy_p99 = PercentileUs(busy_ns, 0.99);
  state.counters["idle_p50_us"] = PercentileUs(idle_ns, 0.5);
  state.counters["idle_p99_us"] = idle_p99;
  state.counters["applying_p50_us"] = PercentileUs(busy_ns, 0.5);
  state.counters["applying_p99_us"] = busy_p99;
  state.counters["p99_ratio"] = idle_p99 > 0 ? busy_p99 / idle_p99 : 0;
  const double busy_s = std::chrono::duration<double>(busy_time).count();
  state.counters["applies_per_s"] =
      busy_s > 0 ? static_cast<double>(busy_applies) / busy_s : 0;
}

void BM_LookupFloor(benchmark::State& state, ScenarioSpec spec) {
  if (g_floor == nullptr) {
    g_scenario.reset();  // make room
    g_floor = std::make_unique<LookupFloor>(spec);
  }
  const std::vector<int64_t> hashes = HeadlineHashes();
  uint64_t sum = 0;
  for (auto _ : state) {
    sum += g_floor->Probe(hashes);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(sum);
  PerBlockCounters(state, kHeadlineBlocks);
  state.counters["blocks"] = static_cast<double>(g_floor->blocks());
  state.counters["placements"] = static_cast<double>(g_floor->placements());
}

std::vector<std::string> EnvList(std::string_view name,
                                 std::string_view fallback) {
  const std::string value =
      LookupTrimmed(ProcessEnvironment(), name).value_or(std::string(fallback));
  return absl::StrSplit(value, ',', absl::SkipEmpty());
}

// Exits with status 2 and common/env.h's message when an item is not a
// positive whole number.
std::vector<uint64_t> EnvNumbers(std::string_view name,
                                 std::string_view fallback) {
  std::vector<uint64_t> out;
  for (const std::string& s : EnvList(name, fallback)) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n == 0) {
      const absl::Status error = InvalidEnvValueBecause(
          name, s, "an item of the list is not a positive whole number",
          "comma-separated positive whole numbers, for example "
          "1000000,4000000");
      std::fprintf(stderr, "%s\n", std::string(error.message()).c_str());
      std::exit(2);
    }
    out.push_back(n);
  }
  return out;
}

std::string ShortName(const std::string& backend) {
  const size_t slash = backend.rfind('/');
  return slash == std::string::npos ? backend : backend.substr(slash + 1);
}

void RegisterAll() {
  const std::vector<uint64_t> sizes =
      EnvNumbers("KV_INDEXER_BENCH_SIZES", "1000000,10000000");
  const std::vector<uint64_t> ppbs = EnvNumbers("KV_INDEXER_BENCH_PPB", "1,4");
  const std::string search =
      ProcessEnvironment()("KV_INDEXER_BACKEND_PATH").value_or("");
  ScenarioSpec headline;
  headline.placements = sizes.back();
  headline.placements_per_block = static_cast<uint32_t>(ppbs.back());
  const std::string tag =
      absl::StrCat("128blocks_32cand_", headline.placements, "pl");

  for (const std::string& backend : EnvList(
           "KV_INDEXER_BENCH_BACKENDS", "absl_rwlock,robin_sharded_snapshot")) {
    {
      absl::StatusOr<std::unique_ptr<LoadedBackend>> probe =
          LoadedBackend::Load(backend, search);
      if (!probe.ok()) {
        std::fprintf(stderr,
                     "kvindexer_backend_bench: skipping backend %s: %s\n",
                     backend.c_str(), probe.status().ToString().c_str());
        continue;
      }
    }
    const std::string name = ShortName(backend);
    ScenarioSpec spec = headline;
    spec.backend = backend;
    for (const uint64_t n : sizes) {
      for (const uint64_t k : ppbs) {
        ScenarioSpec m = spec;
        m.placements = n;
        m.placements_per_block = static_cast<uint32_t>(k);
        const bool keep = SameSpec(m, spec);
        benchmark::RegisterBenchmark(
            absl::StrCat("memory/", name, "/", n, "pl/ppb", k).c_str(),
            BM_Memory, m, keep)
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
      }
    }
    for (const bool distinct : {false, true}) {
      const std::string variant = distinct ? "_distinct_lists" : "";
      benchmark::RegisterBenchmark(
          absl::StrCat("prefix_indexer", variant, "/", name, "/", tag).c_str(),
          BM_PrefixIndexer, spec, distinct)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          absl::StrCat("prefix_raw_scan", variant, "/", name, "/", tag).c_str(),
          BM_PrefixRaw, spec, distinct)
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(
        absl::StrCat("match_indexer/", name, "/", tag).c_str(), BM_MatchIndexer,
        spec)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(
        absl::StrCat("match_raw/", name, "/", tag).c_str(), BM_MatchRaw, spec)
        ->Unit(benchmark::kMicrosecond);
    for (const uint32_t batch : {16384u, 64u}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("apply_indexer/", name, "/batch", batch).c_str(),
          BM_ApplyIndexer, spec, batch)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          absl::StrCat("apply_bound_cost/", name, "/batch", batch).c_str(),
          BM_ApplyBoundCost, spec, batch)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          absl::StrCat("apply_raw/", name, "/batch", batch).c_str(),
          BM_ApplyRaw, spec, batch)
          ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RegisterBenchmark(
        absl::StrCat("prefix_beside_applies/", name, "/batch16384").c_str(),
        BM_PrefixBesideApplies, spec, 16384u)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime()
        ->Iterations(6000);  // 15 windows of each kind
  }
  benchmark::RegisterBenchmark(
      absl::StrCat("lookup_floor/robin_map/", tag).c_str(), BM_LookupFloor,
      headline)
      ->Unit(benchmark::kMicrosecond);
}

}  // namespace
}  // namespace kvindexer::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const kvindexer::bench::MachineInfo m = kvindexer::bench::ReadMachineInfo();
  benchmark::AddCustomContext("cpu_model", m.cpu_model);
  benchmark::AddCustomContext("mem_total_kb", std::to_string(m.mem_total_kb));
  benchmark::AddCustomContext("loadavg_start", m.loadavg);
  benchmark::AddCustomContext("date_utc", m.date_utc);
  kvindexer::bench::RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  kvindexer::bench::g_scenario.reset();
  kvindexer::bench::g_floor.reset();
  return 0;
}
