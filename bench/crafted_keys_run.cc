#include "crafted_keys_run.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/backend_loader.h"
#include "kvindexer/backend.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The worker whose 1-hash applies are timed.
constexpr char kVictim[] = "victim";

double Milliseconds(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

// REPORTs hashes[0..n) at HBM for `worker`.
absl::Status Report(IndexBackend& backend, const std::string& worker,
                    const int64_t* hashes, size_t n) {
  const ActionView action{kActionReport, kTierHbm, HashSpan{hashes, n},
                          U32Span{nullptr, 0}, U32Span{nullptr, 0}};
  ApplyBatchView batch{};
  batch.worker_id = StringView{worker.data(), worker.size()};
  batch.worker_address = StringView{worker.data(), worker.size()};
  batch.actions = &action;
  batch.action_count = 1;
  const BackendStatus status = backend.Apply(batch);
  if (status.code != BackendCode::kOk) {
    return absl::InternalError(
        absl::StrCat("apply for ", worker, " failed: ", status.message));
  }
  return absl::OkStatus();
}

// Counts the blocks found and says when the first callback has arrived.
class ScanVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView&) noexcept override {}
  bool OnBlock(const BlockView& block) noexcept override {
    if (found_ == 0 && absent_ == 0) {
      started.store(true, std::memory_order_release);
    }
    (block.placement_count != 0 ? found_ : absent_) += 1;
    return true;
  }
  uint64_t found() const { return found_; }

  std::atomic<bool> started{false};

 private:
  uint64_t found_ = 0;
  uint64_t absent_ = 0;
};

// Scans the whole query set; its duration in milliseconds.
absl::StatusOr<double> Scan(IndexBackend& backend,
                            const std::vector<int64_t>& query_set,
                            ScanVisitor& visitor) {
  const Clock::time_point start = Clock::now();
  const BackendStatus status = backend.PrefixScan(
      HashSpan{query_set.data(), query_set.size()}, &visitor);
  const double ms = Milliseconds(Clock::now() - start);
  if (status.code != BackendCode::kOk) {
    return absl::InternalError(
        absl::StrCat("prefix scan failed: ", status.message));
  }
  if (visitor.found() != query_set.size()) {
    return absl::InternalError(absl::StrCat("prefix scan found ",
                                            visitor.found(), " blocks of ",
                                            query_set.size()));
  }
  return ms;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CraftedKeysRun>> CraftedKeysRun::Fill(
    const CraftedKeysSpec& spec, std::vector<int64_t> query_set) {
  std::unique_ptr<CraftedKeysRun> run(new CraftedKeysRun());
  absl::StatusOr<std::unique_ptr<LoadedBackend>> loaded =
      LoadedBackend::Load(spec.backend, spec.search_path);
  if (!loaded.ok()) return loaded.status();
  run->loaded_ = std::move(*loaded);
  run->query_set_ = std::move(query_set);
  run->rng_.seed(spec.seed);
  IndexBackend& backend = *run->loaded_->backend();
  CraftedKeysFigures& figures = run->figures_;

  std::vector<int64_t> hashes(spec.batch);
  Clock::time_point start = Clock::now();
  for (uint64_t done = 0, round = 0; done < spec.ordinary_hashes; ++round) {
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>(spec.batch, spec.ordinary_hashes - done));
    for (size_t i = 0; i < n; ++i) {
      hashes[i] = static_cast<int64_t>(run->rng_());
    }
    const std::string worker =
        absl::StrCat("ordinary-", round % spec.ordinary_workers);
    if (absl::Status s = Report(backend, worker, hashes.data(), n); !s.ok()) {
      return s;
    }
    done += n;
  }
  figures.fill_ordinary_s =
      std::chrono::duration<double>(Clock::now() - start).count();

  const std::vector<int64_t>& set = run->query_set_;
  start = Clock::now();
  for (size_t done = 0; done < set.size(); done += spec.batch) {
    const size_t n = std::min<size_t>(spec.batch, set.size() - done);
    if (absl::Status s = Report(backend, "attacker", set.data() + done, n);
        !s.ok()) {
      return s;
    }
  }
  figures.fill_query_set_s =
      std::chrono::duration<double>(Clock::now() - start).count();
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  figures.memory_bytes = stats.memory_bytes;

  // The victim's record exists before the timed applies, which then only
  // add one block each.
  const int64_t first = static_cast<int64_t>(run->rng_());
  if (absl::Status s = Report(backend, kVictim, &first, 1); !s.ok()) return s;
  return run;
}

absl::Status CraftedKeysRun::TimeRound() {
  IndexBackend& backend = *loaded_->backend();
  {
    ScanVisitor visitor;
    absl::StatusOr<double> ms = Scan(backend, query_set_, visitor);
    if (!ms.ok()) return ms.status();
    figures_.scan_ms.push_back(*ms);
  }
  {
    const int64_t fresh = static_cast<int64_t>(rng_());
    const Clock::time_point start = Clock::now();
    if (absl::Status s = Report(backend, kVictim, &fresh, 1); !s.ok()) {
      return s;
    }
    figures_.alone_ms.push_back(Milliseconds(Clock::now() - start));
  }
  ScanVisitor visitor;
  std::atomic<bool> scan_done{false};
  absl::StatusOr<double> scan_ms = 0.0;
  std::thread scanner([&] {
    scan_ms = Scan(backend, query_set_, visitor);
    scan_done.store(true, std::memory_order_release);
  });
  // A spin, not a sleep: the apply must start while the scan runs.
  while (!visitor.started.load(std::memory_order_acquire) &&
         !scan_done.load(std::memory_order_acquire)) {
    std::this_thread::yield();
  }
  const int64_t fresh = static_cast<int64_t>(rng_());
  const Clock::time_point start = Clock::now();
  const absl::Status applied = Report(backend, kVictim, &fresh, 1);
  const double apply_ms = Milliseconds(Clock::now() - start);
  scanner.join();
  if (!applied.ok()) return applied;
  if (!scan_ms.ok()) return scan_ms.status();
  figures_.apply_ms.push_back(apply_ms);
  figures_.beside_ms.push_back(*scan_ms);
  return absl::OkStatus();
}

}  // namespace kvindexer::bench
