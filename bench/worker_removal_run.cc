#include "worker_removal_run.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "core/backend_loader.h"
#include "core/backend_status.h"
#include "json_writer.h"
#include "machine_info.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

double MiB(uint64_t bytes) { return static_cast<double>(bytes) / 1048576.0; }

struct Sample {
  std::string phase;
  double seconds = -1;  // of the phase; < 0 when the row is a re-sample
  uint64_t rss = 0;
  BackendStats stats{};
};

// The ordinal a scan names each worker by.
class OrdinalVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView& w) noexcept override {
    ordinals[std::string(w.id.data, w.id.size)] = w.worker;
  }
  bool OnBlock(const BlockView&) noexcept override { return true; }

  std::map<std::string, uint32_t> ordinals;
};

class Run {
 public:
  Run(std::string backend, const FleetShape& shape)
      : backend_name_(std::move(backend)), fleet_(shape) {}

  RunResult Go(bool survivors_only) {
    kind_ = survivors_only ? "survivors_only" : "removal";
    RunResult result;
    result.outcome = survivors_only ? MeasureSurvivors() : Measure();
    result.json = Json(result.outcome);
    return result;
  }

 private:
  bool LoadBackend() {
    absl::StatusOr<std::unique_ptr<LoadedBackend>> loaded = LoadedBackend::Load(
        backend_name_,
        ProcessEnvironment()("KV_INDEXER_BACKEND_PATH").value_or(""));
    if (!loaded.ok()) {
      Error(absl::StrCat("cannot load: ", loaded.status().ToString()));
      return false;
    }
    loaded_ = std::move(*loaded);
    std::printf("\n== %s (ABI 1.%u, %s)%s\n", backend_name_.c_str(),
                loaded_->abi_minor(), loaded_->path().c_str(),
                kind_ == "removal" ? ""
                                   : ", the yardstick: only the workers the "
                                     "removal leaves, loaded fresh");
    PrintHeader();
    malloc_trim(0);
    Take("loaded", -1);
    return true;
  }

  RunOutcome MeasureSurvivors() {
    if (!LoadBackend()) return RunOutcome::kFailed;
    IndexBackend* backend = loaded_->backend();
    std::vector<uint32_t> survivors;
    std::vector<std::pair<uint32_t, uint32_t>> generations;
    const std::vector<uint32_t> order = fleet_.RemovalOrder();
    for (uint32_t slot = 0; slot < fleet_.shape().workers; ++slot) {
      if (std::find(order.begin(), order.end(), slot) != order.end()) continue;
      survivors.push_back(slot);
      generations.emplace_back(slot, 0);
    }
    const Clock::time_point start = Clock::now();
    for (const uint32_t slot : survivors) {
      if (!Ok(fleet_.Load(backend, slot, 0))) return RunOutcome::kFailed;
    }
    if (!Ok(fleet_.CountHits(backend, generations))) return RunOutcome::kFailed;
    Take(absl::StrCat("survivors only: ", survivors.size(), " workers"),
         SecondsSince(start));
    if (!CheckCounts(survivors)) return RunOutcome::kFailed;
    malloc_trim(0);
    Take("  same, after malloc_trim(0)", -1);
    return RunOutcome::kOk;
  }

  RunOutcome Measure() {
    const FleetShape& shape = fleet_.shape();
    if (!LoadBackend()) return RunOutcome::kFailed;
    IndexBackend* backend = loaded_->backend();

    // Fill.
    std::vector<uint32_t> present;
    std::vector<std::pair<uint32_t, uint32_t>> generations;
    Clock::time_point start = Clock::now();
    for (uint32_t slot = 0; slot < shape.workers; ++slot) {
      if (!Ok(fleet_.Load(backend, slot, 0))) return RunOutcome::kFailed;
      present.push_back(slot);
      generations.emplace_back(slot, 0);
    }
    if (!Ok(fleet_.CountHits(backend, generations))) return RunOutcome::kFailed;
    Take(absl::StrCat("filled: ", shape.workers, " workers"),
         SecondsSince(start));
    if (!CheckCounts(present)) return RunOutcome::kFailed;
    malloc_trim(0);
    Take("  same, after malloc_trim(0)", -1);
    const std::map<std::string, uint32_t> before = Ordinals(generations);

    // Remove.
    if (!loaded_->SupportsAbiMinor(1)) {
      Error("built against ABI 1.0: it has no RemoveWorker");
      return RunOutcome::kRemoveFailed;
    }
    const std::vector<uint32_t> order = fleet_.RemovalOrder();
    std::set<uint32_t> freed;
    start = Clock::now();
    for (const uint32_t slot : order) {
      const std::string id = WorkerRemovalFleet::WorkerId(slot, 0);
      uint32_t existed = 0;
      const Clock::time_point one = Clock::now();
      const BackendStatus status =
          backend->RemoveWorker(StringView{id.data(), id.size()}, &existed);
      removal_seconds_.push_back(SecondsSince(one));
      if (status.code != BackendCode::kOk) {
        Error(absl::StrCat("RemoveWorker(", id,
                           ") failed: ", ToAbslStatus(status).ToString(),
                           "; no removal figures for this backend"));
        return RunOutcome::kRemoveFailed;
      }
      if (existed != 1) {
        Error(absl::StrCat("RemoveWorker(", id, ") said existed=", existed));
        return RunOutcome::kFailed;
      }
      freed.insert(before.at(id));
      present.erase(std::find(present.begin(), present.end(), slot));
      generations.erase(std::find(generations.begin(), generations.end(),
                                  std::make_pair(slot, 0u)));
    }
    Take(absl::StrCat("removed: ", order.size(), " workers"),
         SecondsSince(start));
    if (!CheckCounts(present)) return RunOutcome::kFailed;
    malloc_trim(0);
    Take("  same, after malloc_trim(0)", -1);

    // Re-add replacements of the same shape.
    start = Clock::now();
    std::vector<std::pair<uint32_t, uint32_t>> replacements;
    for (const uint32_t slot : order) {
      if (!Ok(fleet_.Load(backend, slot, 1))) return RunOutcome::kFailed;
      present.push_back(slot);
      replacements.emplace_back(slot, 1);
    }
    if (!Ok(fleet_.CountHits(backend, replacements))) {
      return RunOutcome::kFailed;
    }
    Take(absl::StrCat("re-added: ", order.size(), " new workers"),
         SecondsSince(start));
    if (!CheckCounts(present)) return RunOutcome::kFailed;
    malloc_trim(0);
    Take("  same, after malloc_trim(0)", -1);

    // Which ordinals the replacements got.
    uint32_t highest = 0;
    for (const auto& [id, ordinal] : Ordinals(generations)) {
      highest = std::max(highest, ordinal);
    }
    for (const auto& [id, ordinal] : Ordinals(replacements)) {
      highest = std::max(highest, ordinal);
      if (freed.count(ordinal) != 0) ++reused_;
    }
    highest_ordinal_ = highest;
    PrintSummary(order.size());
    return RunOutcome::kOk;
  }

  // The ordinal of each worker in `workers`, from a scan of its first
  // private block (which only it holds).
  std::map<std::string, uint32_t> Ordinals(
      const std::vector<std::pair<uint32_t, uint32_t>>& workers) {
    std::vector<int64_t> hashes;
    for (const auto& [slot, generation] : workers) {
      hashes.push_back(WorkerRemovalFleet::PrivateHash(slot, generation, 0));
    }
    OrdinalVisitor visitor;
    const BackendStatus status = loaded_->backend()->PrefixScan(
        HashSpan{hashes.data(), hashes.size()}, &visitor);
    if (status.code != BackendCode::kOk) {
      Error(absl::StrCat("PrefixScan: ", ToAbslStatus(status).ToString()));
    }
    return visitor.ordinals;
  }

  void Take(std::string phase, double seconds) {
    Sample s;
    s.phase = std::move(phase);
    s.seconds = seconds;
    s.rss = ReadRssBytes();
    s.stats.struct_size = sizeof(s.stats);
    loaded_->backend()->GetStats(&s.stats);
    PrintRow(s);
    samples_.push_back(std::move(s));
  }

  bool CheckCounts(const std::vector<uint32_t>& present) {
    const ExpectedCounts want = fleet_.Expected(present);
    const BackendStats& got = samples_.back().stats;
    if (got.workers == want.workers && got.placements == want.placements &&
        got.blocks == want.blocks) {
      return true;
    }
    Error(absl::StrCat("after \"", samples_.back().phase, "\" GetStats says ",
                       got.workers, " workers, ", got.placements,
                       " placements, ", got.blocks, " blocks; the fleet has ",
                       want.workers, ", ", want.placements, ", ", want.blocks));
    counts_ok_ = false;
    return false;
  }

  bool Ok(const absl::Status& status) {
    if (status.ok()) return true;
    Error(status.ToString());
    return false;
  }

  void Error(const std::string& message) {
    std::fflush(stdout);
    std::fprintf(stderr, "ERROR %s: %s\n", backend_name_.c_str(),
                 message.c_str());
    std::fflush(stderr);
    errors_.push_back(message);
  }

  static void PrintHeader() {
    std::printf("%-32s %8s %8s %12s %11s %9s %14s %9s\n", "phase", "seconds",
                "workers", "placements", "blocks", "hits", "memory_bytes",
                "RSS");
  }

  static void PrintRow(const Sample& s) {
    char seconds[32] = "";
    if (s.seconds >= 0)
      std::snprintf(seconds, sizeof(seconds), "%.2f", s.seconds);
    std::printf("%-32s %8s %8llu %12llu %11llu %9llu %10.1f MiB %5.1f MiB\n",
                s.phase.c_str(), seconds,
                static_cast<unsigned long long>(s.stats.workers),
                static_cast<unsigned long long>(s.stats.placements),
                static_cast<unsigned long long>(s.stats.blocks),
                static_cast<unsigned long long>(s.stats.hit_counters),
                MiB(s.stats.memory_bytes), MiB(s.rss));
    std::fflush(stdout);
  }

  void PrintSummary(size_t removed) {
    std::vector<double> sorted = removal_seconds_;
    std::sort(sorted.begin(), sorted.end());
    std::printf(
        "RemoveWorker: median %.1f ms, max %.1f ms per worker; %u of %zu "
        "replacements took an ordinal a removal freed; highest ordinal %u\n",
        sorted[sorted.size() / 2] * 1e3, sorted.back() * 1e3, reused_, removed,
        highest_ordinal_);
  }

  std::string Json(RunOutcome outcome) const {
    JsonWriter json;
    json.BeginObject();
    json.Field("backend", backend_name_);
    json.Field("kind", kind_);
    json.Field("outcome", outcome == RunOutcome::kOk ? "ok"
                          : outcome == RunOutcome::kRemoveFailed
                              ? "remove_failed"
                              : "failed");
    json.Field("counts_match_fleet", counts_ok_);
    json.BeginArray("errors");
    for (const std::string& e : errors_) json.Field("", e);
    json.EndArray();
    json.BeginArray("samples");
    for (const Sample& s : samples_) {
      json.BeginObject();
      json.Field("phase", s.phase);
      if (s.seconds >= 0) json.Field("seconds", s.seconds);
      json.Field("rss_bytes", s.rss);
      json.Field("workers", s.stats.workers);
      json.Field("placements", s.stats.placements);
      json.Field("blocks", s.stats.blocks);
      json.Field("hit_counters", s.stats.hit_counters);
      json.Field("memory_bytes", s.stats.memory_bytes);
      json.EndObject();
    }
    json.EndArray();
    json.BeginArray("remove_seconds");
    for (const double s : removal_seconds_) json.Field("", s);
    json.EndArray();
    if (outcome == RunOutcome::kOk) {
      json.Field("replacements_on_freed_ordinals", uint64_t{reused_});
      json.Field("highest_ordinal", uint64_t{highest_ordinal_});
    }
    json.EndObject();
    return json.str();
  }

  std::string backend_name_;
  std::string kind_;  // "removal" or "survivors_only"
  WorkerRemovalFleet fleet_;
  std::unique_ptr<LoadedBackend> loaded_;
  std::vector<Sample> samples_;
  std::vector<double> removal_seconds_;
  std::vector<std::string> errors_;
  bool counts_ok_ = true;
  uint32_t reused_ = 0;
  uint32_t highest_ordinal_ = 0;
};

}  // namespace

RunResult RunWorkerRemoval(const std::string& backend,
                           const FleetShape& shape) {
  return Run(backend, shape).Go(/*survivors_only=*/false);
}

RunResult RunSurvivorsOnly(const std::string& backend,
                           const FleetShape& shape) {
  return Run(backend, shape).Go(/*survivors_only=*/true);
}

}  // namespace kvindexer::bench
