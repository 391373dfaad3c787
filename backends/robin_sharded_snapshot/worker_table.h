// The workers readers see: immutable WorkerRecords, gathered by ordinal in a
// WorkerTable that each snapshot copy owns and the writer keeps in step like
// the deltas (DESIGN.md, "Workers"), and what the backend derives from a
// record: the view a visitor receives, whether a batch changes it, and its
// heap bytes.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_TABLE_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kvindexer/backend.h"

namespace kvindexer::robin {

// A worker as readers see it. Immutable once published; a change of address
// or spec publishes a new record.
struct WorkerRecord {
  std::string id;
  std::string address;
  uint32_t has_cache_spec = 0;
  CacheSpec cache_spec{};
};

// The workers of one snapshot copy, indexed by ordinal; nullptr marks a free
// ordinal (never seen, or its worker was removed). Each copy has its own
// table, changed only while the copy is not live, so a change costs one
// entry and never a copy of the table; the records are shared by both.
struct WorkerTable {
  std::vector<const WorkerRecord*> records;
  uint64_t present = 0;  // entries that are not nullptr

  // Makes room for Set(ordinal, ...) so that it cannot fail. Throws
  // std::bad_alloc. REQUIRES: ordinal <= records.size().
  void Reserve(uint32_t ordinal) {
    if (ordinal < records.capacity()) return;
    records.reserve(
        std::max<size_t>(size_t{ordinal} + 1, 2 * records.capacity()));
  }
  // REQUIRES: Reserve(ordinal) since the table last grew.
  void Set(uint32_t ordinal, const WorkerRecord* record) noexcept {
    if (ordinal == records.size()) records.push_back(nullptr);
    const WorkerRecord*& slot = records[ordinal];
    present = present - (slot != nullptr ? 1 : 0) + (record != nullptr ? 1 : 0);
    slot = record;
  }
  uint64_t bytes() const { return records.capacity() * sizeof(records[0]); }
};

// The record as a BlockVisitor receives it; valid while the record is.
inline WorkerView ViewOf(uint32_t ordinal, const WorkerRecord& record) {
  WorkerView view;
  view.worker = ordinal;
  view.id = StringView{record.id.data(), record.id.size()};
  view.address = StringView{record.address.data(), record.address.size()};
  view.has_cache_spec = record.has_cache_spec;
  view.cache_spec = record.cache_spec;
  return view;
}

// True when `record` holds the spec `batch` carries, or both hold none.
inline bool SameSpec(const WorkerRecord& record, const ApplyBatchView& batch) {
  if ((record.has_cache_spec != 0) != (batch.has_cache_spec != 0)) {
    return false;
  }
  if (batch.has_cache_spec == 0) return true;
  const CacheSpec& a = record.cache_spec;
  const CacheSpec& b = batch.cache_spec;
  return a.version == b.version && a.components == b.components &&
         a.swa_window_tokens == b.swa_window_tokens &&
         a.full_tier_mask == b.full_tier_mask &&
         a.swa_tier_mask == b.swa_tier_mask &&
         a.mamba_tier_mask == b.mamba_tier_mask;
}

// Heap bytes a string holds outside itself.
inline uint64_t StringHeapBytes(const std::string& s) {
  // Short strings live inside the object.
  return s.capacity() > 15 ? s.capacity() + 1 : 0;
}

inline uint64_t RecordBytes(const WorkerRecord& record) {
  return sizeof(WorkerRecord) + StringHeapBytes(record.id) +
         StringHeapBytes(record.address);
}

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_WORKER_TABLE_H_
