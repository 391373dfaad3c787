#include "server/worker_match_counters.h"

#include <algorithm>
#include <functional>
#include <tuple>

namespace kvindexer {
namespace {

size_t TableSize(uint32_t capacity) {
  size_t size = 1;
  while (size < 2 * static_cast<size_t>(capacity)) size <<= 1;
  return size;
}

uint64_t HashOf(const WorkerMatchKey& key) {
  uint64_t h = std::hash<std::string_view>{}(key.worker_id);
  if (key.stream) {
    h ^= std::hash<std::string_view>{}(key.ns) + 0x9e3779b97f4a7c15ULL +
         (h << 6) + (h >> 2);
    h ^= (static_cast<uint64_t>(key.dp_rank) + 1) * 0xff51afd7ed558ccdULL;
  }
  // Mix the high bits into the low ones, which pick the slot.
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 29;
  return h;
}

}  // namespace

bool WorkerMatchCounters::Slot::Holds(uint64_t h,
                                      const WorkerMatchKey& key) const {
  return hash == h && stream == key.stream && worker_id == key.worker_id &&
         ns == key.ns && dp_rank == key.dp_rank;
}

WorkerMatchCounters::WorkerMatchCounters(uint32_t capacity)
    : capacity_(capacity),
      mask_(TableSize(capacity) - 1),
      slots_(capacity == 0 ? nullptr
                           : new std::atomic<Slot*>[TableSize(capacity)]) {
  if (capacity_ == 0) return;
  for (size_t i = 0; i <= mask_; ++i) {
    slots_[i].store(nullptr, std::memory_order_relaxed);
  }
}

WorkerMatchCounters::~WorkerMatchCounters() {
  if (capacity_ == 0) return;
  for (size_t i = 0; i <= mask_; ++i) {
    delete slots_[i].load(std::memory_order_relaxed);
  }
}

WorkerMatchCounters::Slot* WorkerMatchCounters::Probe(uint64_t h,
                                                      const WorkerMatchKey& key,
                                                      size_t* empty) const {
  // At most capacity_ slots are ever taken, half the table, so the probe
  // always reaches the key or an empty slot.
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    Slot* slot = slots_[i].load(std::memory_order_acquire);
    if (slot == nullptr) {
      *empty = i;
      return nullptr;
    }
    if (slot->Holds(h, key)) return slot;
  }
}

void WorkerMatchCounters::Add(const WorkerMatchKey& key, uint64_t n) {
  if (capacity_ == 0) {
    omitted_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  const uint64_t h = HashOf(key);
  size_t empty = 0;
  if (Slot* slot = Probe(h, key, &empty); slot != nullptr) {
    slot->value.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  // Counters are only ever created under insert_mu_, so a full table seen
  // here is final.
  if (used_.load(std::memory_order_acquire) >= capacity_) {
    omitted_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> lock(insert_mu_);
  // Another thread may have created this worker's counter meanwhile.
  if (Slot* slot = Probe(h, key, &empty); slot != nullptr) {
    slot->value.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  if (used_.load(std::memory_order_relaxed) >= capacity_) {
    omitted_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  auto fresh = std::make_unique<Slot>();
  fresh->hash = h;
  fresh->worker_id = std::string(key.worker_id);
  fresh->stream = key.stream;
  fresh->ns = std::string(key.ns);
  fresh->dp_rank = key.dp_rank;
  fresh->value.store(n, std::memory_order_relaxed);
  slots_[empty].store(fresh.release(), std::memory_order_release);
  used_.fetch_add(1, std::memory_order_release);
}

std::vector<WorkerMatchCounters::Entry> WorkerMatchCounters::Read() const {
  std::vector<Entry> entries;
  if (capacity_ == 0) return entries;
  for (size_t i = 0; i <= mask_; ++i) {
    const Slot* slot = slots_[i].load(std::memory_order_acquire);
    if (slot == nullptr) continue;
    entries.push_back(Entry{slot->worker_id, slot->stream, slot->ns,
                            slot->dp_rank,
                            slot->value.load(std::memory_order_relaxed)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.worker_id, a.stream, a.ns, a.dp_rank) <
           std::tie(b.worker_id, b.stream, b.ns, b.dp_rank);
  });
  return entries;
}

}  // namespace kvindexer
