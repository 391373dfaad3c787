#include "worker_registry.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "block_table.h"
#include "swiss_table.h"

namespace kvindexer::absl_rwlock {

std::optional<uint32_t> WorkerRegistry::Find(
    absl::string_view id) const noexcept {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint32_t> WorkerRegistry::LowestFree() const noexcept {
  if (free_.empty() || free_.front() >= records_.size()) return std::nullopt;
  return free_.front();
}

bool WorkerRegistry::CanAdd() const noexcept {
  return LowestFree().has_value() || records_.size() <= kMaxWorkerOrdinal;
}

uint32_t WorkerRegistry::Add(absl::string_view id) {
  // Everything that allocates comes first, while nothing has changed.
  WorkerRecord record;
  record.id.assign(id.data(), id.size());
  std::string key = record.id;
  ReserveForInserts(index_, 1);
  const std::optional<uint32_t> reuse = LowestFree();
  if (!reuse && records_.size() == records_.capacity()) {
    records_.reserve(records_.size() * 2 + 1);
  }
  // From here on nothing allocates: the key and the record are moved in.
  uint32_t ordinal;
  if (reuse) {
    ordinal = *reuse;
    std::pop_heap(free_.begin(), free_.end(), std::greater<>());
    free_.pop_back();
    records_[ordinal] = std::move(record);
  } else {
    ordinal = static_cast<uint32_t>(records_.size());
    free_.clear();  // no free ordinal is below the end: all are stale
    records_.push_back(std::move(record));
  }
  index_.emplace(std::move(key), ordinal);
  Recharge(ordinal);
  return ordinal;
}

void WorkerRegistry::UndoAdd(uint32_t ordinal) noexcept {
  WorkerRecord& r = records_[ordinal];
  charged_bytes_ -= r.charged_bytes;
  index_.erase(r.id);
  if (ordinal + 1 == records_.size()) {
    // Appended; the record before it is live (back() always is).
    records_.pop_back();
    return;
  }
  r = WorkerRecord();
  // Add popped this entry, so the heap has room for it again.
  free_.push_back(ordinal);
  std::push_heap(free_.begin(), free_.end(), std::greater<>());
}

void WorkerRegistry::ReserveForRemove() {
  if (free_.size() == free_.capacity()) free_.reserve(free_.size() * 2 + 1);
}

void WorkerRegistry::Remove(uint32_t ordinal) noexcept {
  WorkerRecord& r = records_[ordinal];
  charged_bytes_ -= r.charged_bytes;
  index_.erase(r.id);
  r = WorkerRecord();  // frees the strings and the holdings
  if (ordinal + 1 == records_.size()) {
    TrimFreeTail();
    return;
  }
  free_.push_back(ordinal);  // room reserved by ReserveForRemove
  std::push_heap(free_.begin(), free_.end(), std::greater<>());
}

void WorkerRegistry::TrimFreeTail() noexcept {
  // The ordinals cut off stay in free_ as stale entries.
  while (!records_.empty() && records_.back().id.empty()) records_.pop_back();
}

void WorkerRegistry::Compact() {
  ShrinkIfSparse(index_);
  if (records_.capacity() > 2 * records_.size() + 16) {
    records_.shrink_to_fit();  // moves records; keeps them on failure
  }
  if (!LowestFree()) free_.clear();
  if (free_.capacity() > 2 * free_.size() + 16) free_.shrink_to_fit();
}

WorkerView WorkerRegistry::View(uint32_t ordinal) const noexcept {
  const WorkerRecord& r = records_[ordinal];
  WorkerView view{};
  view.worker = ordinal;
  view.id = StringView{r.id.data(), r.id.size()};
  view.address = StringView{r.address.data(), r.address.size()};
  view.has_cache_spec = r.has_cache_spec;
  view.cache_spec = r.cache_spec;
  return view;
}

void WorkerRegistry::Recharge(uint32_t ordinal) noexcept {
  WorkerRecord& r = records_[ordinal];
  // The id is stored twice: in the record and as the index key.
  uint64_t bytes = 2 * StringHeapBytes(r.id) + StringHeapBytes(r.address);
  for (const HoldingSet& set : r.holdings) bytes += SwissTableBytes(set);
  charged_bytes_ = charged_bytes_ - r.charged_bytes + bytes;
  r.charged_bytes = bytes;
}

uint64_t WorkerRegistry::MemoryBytes() const noexcept {
  return VectorHeapBytes(records_) + SwissTableBytes(index_) +
         VectorHeapBytes(free_) + charged_bytes_;
}

}  // namespace kvindexer::absl_rwlock
