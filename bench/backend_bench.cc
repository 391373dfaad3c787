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
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
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
