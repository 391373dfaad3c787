// RobinShardedSnapshotBackend's queries (DESIGN.md, "Reads and
// prefetching", "Hit counters"): Match, PrefixScan and HitCounts. Readers
// visit the live copy inside a wait-free read section; a counting Match is a
// writer that raises counters in the non-live copy and publishes them.
#include "robin_backend.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <new>
#include <type_traits>
#include <vector>

#include "block_placements.h"
#include "kvindexer/backend_kit.h"
#include "worker_table.h"

namespace kvindexer::robin {
namespace {

using kit::ErrorStatus;
using kit::OkStatus;

// The set of workers already announced to the visitor in one call. It starts
// with 512 bits inline and grows only to cover the ordinals the call meets,
// so its cost depends on the workers in the answer, not on the table.
class SeenWorkers {
 public:
  SeenWorkers() { inline_.fill(0); }
  // True the first time `worker` is inserted. Throws std::bad_alloc.
  bool Insert(uint32_t worker) {
    const size_t index = worker / 64;
    if (index >= words_) Grow(index + 1);
    uint64_t& word = bits_[index];
    const uint64_t bit = uint64_t{1} << (worker % 64);
    if ((word & bit) != 0) return false;
    word |= bit;
    return true;
  }

 private:
  [[gnu::noinline]] void Grow(size_t words) {
    words = std::max(words, 2 * words_);
    if (heap_.empty()) {
      heap_.assign(words, 0);
      std::copy(inline_.begin(), inline_.end(), heap_.begin());
    } else {
      heap_.resize(words, 0);
    }
    bits_ = heap_.data();
    words_ = words;
  }

  std::array<uint64_t, 8> inline_;
  std::vector<uint64_t> heap_;
  uint64_t* bits_ = inline_.data();
  size_t words_ = inline_.size();
};

struct IgnorePresent {
  void operator()(int64_t, uint64_t) const {}
};

// Visits `hashes` in `snapshot`: OnWorker before a worker's first placement,
// OnBlock for every hash in order (absent ones with no placements), and
// `on_present(hash, mixed)` for every present block. After the visitor asks
// to stop, only `on_present` runs. Throws std::bad_alloc. Never inlined: as a
// function of its own its lookup loop compiles tighter (inlined into
// PrefixScan, a prefix scan ran 8% more instructions under callgrind).
template <typename OnPresent>
[[gnu::noinline]] void VisitBlocks(const SnapshotCopy& snapshot,
                                   HashSpan hashes, BlockVisitor* visitor,
                                   OnPresent&& on_present) {
  constexpr bool kVisitOnly =
      std::is_same_v<std::decay_t<OnPresent>, IgnorePresent>;
  // Lookups run a small window ahead of the callbacks so that their cache
  // misses overlap; spill arrays are prefetched in the same pass.
  constexpr size_t kWindow = 8;
  const WorkerTable& workers = snapshot.workers;
  const uint64_t total_workers = workers.present;
  SeenWorkers seen;
  size_t seen_count = 0;
  bool visiting = true;
  const BlockRecord* records[kWindow];
  uint64_t mixed_window[kWindow];
  for (size_t base = 0; base < hashes.size; base += kWindow) {
    const size_t m = std::min(kWindow, hashes.size - base);
    for (size_t k = 0; k < m; ++k) {
      mixed_window[k] = MixHash(hashes.data[base + k]);
      snapshot.Prefetch(mixed_window[k]);
    }
    for (size_t k = 0; k < m; ++k) snapshot.PrefetchBase(mixed_window[k]);
    for (size_t k = 0; k < m; ++k) {
      const int64_t hash = hashes.data[base + k];
      const uint64_t mixed = mixed_window[k];
      const BlockRecord* record = snapshot.Find(hash, mixed);
      records[k] = record;
      if (record != nullptr) {
        if (record->spilled()) __builtin_prefetch(record->spill());
        on_present(hash, mixed);
      }
    }
    if (!visiting) continue;
    for (size_t k = 0; k < m; ++k) {
      const BlockRecord* record = records[k];
      BlockView view{base + k, 0, nullptr, 0};
      Placement single;
      if (record != nullptr) {
        const uint32_t n = CountOf(*record);
        const Placement* placements = PlacementsOf(*record, &single);
        // Once every worker present has been announced there is nothing to
        // check.
        if (seen_count < total_workers) {
          for (uint32_t j = 0; j < n; ++j) {
            const uint32_t worker = placements[j].worker;
            if (seen.Insert(worker)) {
              ++seen_count;
              visitor->OnWorker(ViewOf(worker, *workers.records[worker]));
            }
          }
        }
        view = BlockView{base + k, record->token_count, placements, n};
      }
      if (!visitor->OnBlock(view)) {
        if constexpr (kVisitOnly) return;
        visiting = false;  // a counting match still counts the rest
        break;
      }
    }
  }
}

}  // namespace

BackendStatus RobinShardedSnapshotBackend::Match(
    HashSpan hashes, bool count_as_hit, BlockVisitor* visitor) noexcept {
  if (count_as_hit) return CountingMatch(hashes, visitor);
  return PrefixScan(hashes, visitor);
}

BackendStatus RobinShardedSnapshotBackend::PrefixScan(
    HashSpan hashes, BlockVisitor* visitor) noexcept {
  if (BackendStatus check = kit::CheckVisit(hashes, visitor);
      check.code != BackendCode::kOk) {
    return check;
  }
  try {
    ReadSection section(gate_);
    VisitBlocks(copies_[section.live()], hashes, visitor, IgnorePresent());
    return OkStatus();
  } catch (const std::bad_alloc&) {
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory while reading the index");
  }
}

BackendStatus RobinShardedSnapshotBackend::CountingMatch(
    HashSpan hashes, BlockVisitor* visitor) noexcept {
  if (BackendStatus check = kit::CheckVisit(hashes, visitor);
      check.code != BackendCode::kOk) {
    return check;
  }
  std::lock_guard<std::mutex> lock(writer_mu_);
  if (BackendStatus ready = WriterReady(); ready.code != BackendCode::kOk) {
    return ready;
  }
  if (bulk_) {
    return ErrorStatus(BackendCode::kFailedPrecondition,
                       "a counting Match during a bulk load (backend.h, "
                       "SetWriteMode)");
  }
  // The non-live copy equals the live one here and only this thread touches
  // it: read the blocks from it and raise its counters.
  SnapshotCopy& back = copies_[1 - gate_.live()];
  touched_.clear();
  counted_.clear();
  try {
    VisitBlocks(back, hashes, visitor, [&](int64_t hash, uint64_t mixed) {
      counted_.push_back(hash);
      SnapshotCopy::CounterMap& counters = back.counters_for(mixed);
      auto it = counters.find(hash, mixed);
      if (it == counters.end()) {
        counters.insert({hash, 1});
        ++back.hit_counters;
      } else if (it->second != UINT64_MAX) {
        ++it.value();
      }
    });
  } catch (const std::bad_alloc&) {
    try {
      SyncBackCopy();  // undo the raised counters
      counted_.clear();
    } catch (const std::bad_alloc&) {
      poisoned_ = true;
    }
    back.hit_counters = copies_[gate_.live()].hit_counters;
    return ErrorStatus(BackendCode::kResourceExhausted,
                       "out of memory counting hits; no counter changed");
  }
  if (!counted_.empty()) Publish();
  UpdateMemory();
  return OkStatus();
}

BackendStatus RobinShardedSnapshotBackend::HitCounts(
    HashSpan hashes, uint64_t* counts) noexcept {
  if (BackendStatus check = kit::CheckHitCounts(hashes, counts);
      check.code != BackendCode::kOk) {
    return check;
  }
  ReadSection section(gate_);
  const SnapshotCopy& snapshot = copies_[section.live()];
  for (size_t i = 0; i < hashes.size; ++i) {
    const int64_t hash = hashes.data[i];
    counts[i] = snapshot.Counter(hash, MixHash(hash));
  }
  return OkStatus();
}

}  // namespace kvindexer::robin
