#include "worker_registry.h"

#include <utility>

#include "swiss_table.h"

namespace kvindexer::absl_rwlock {

std::optional<uint32_t> WorkerRegistry::Find(
    absl::string_view id) const noexcept {
  auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

uint32_t WorkerRegistry::Add(absl::string_view id) {
  const auto ordinal = static_cast<uint32_t>(records_.size());
  WorkerRecord record;
  record.id.assign(id.data(), id.size());  // may throw: nothing changed yet
  ReserveForInserts(index_, 1);            // may throw: nothing changed
  if (records_.size() == records_.capacity()) {
    records_.reserve(records_.size() * 2 + 1);  // may throw: nothing changed
  }
  index_.emplace(record.id, ordinal);     // room reserved: cannot throw
  records_.push_back(std::move(record));  // room reserved: cannot throw
  Recharge(ordinal);
  return ordinal;
}

void WorkerRegistry::RemoveLast() noexcept {
  WorkerRecord& last = records_.back();
  charged_bytes_ -= last.charged_bytes;
  index_.erase(last.id);
  records_.pop_back();
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
  return VectorHeapBytes(records_) + SwissTableBytes(index_) + charged_bytes_;
}

}  // namespace kvindexer::absl_rwlock
