// BaseTable: the settled bulk of one shard's blocks, stored once and read by
// both snapshot copies.
//
// The blocks of a shard live in two layers. Recent changes sit in the delta,
// a tsl::robin_map kept twice by the left-right protocol (snapshot_copy.h).
// Everything older sits here: an array of 20-byte (key, record) entries sorted
// by the bits of the mixed hash below the shard bits, plus a directory that
// maps the leading ones of those bits to the entries starting with them (2
// to 4 entries per directory slot on average). A lookup reads two adjacent
// directory words and scans a few adjacent entries. There are no empty slots,
// so a block costs 20 bytes and one to two bytes of directory, once.
//
// A BaseTable is immutable. The writer builds a new one by merging the old one
// with the shard's delta (Merge), publishes it in both copies with an emptied
// delta, and destroys the old one once no reader can see it.
//
// Entries live in page mappings from a MappingPool, so that a table the
// writer destroys neither fragments the malloc heap nor makes the next merge
// pay for fresh pages.
//
// Thread safety: const methods may be called concurrently.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BASE_TABLE_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BASE_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "block_record.h"
#include "kvindexer/backend.h"
#include "mapping_pool.h"

namespace kvindexer::robin {

class BaseTable {
 public:
  struct Entry {
    BlockKey key;
    BlockRecord record;
  };
  static_assert(sizeof(Entry) == 20);

  // A delta entry ready for merging: `record` may be a tombstone.
  struct Change {
    uint64_t mixed;
    Entry entry;
  };

  // The table with no blocks. Shared and never destroyed.
  static const BaseTable& Empty();

  // The blocks of `base` with `changes` applied: a change's record replaces
  // the entry of the same key, a tombstone deletes it. Sorts `changes`. The
  // spill arrays of replaced or deleted entries are appended to `released`
  // (the caller frees them once no reader can reach the old table). Throws
  // std::bad_alloc, leaving `released` as it was.
  // The new table's pages come from `pool` and go back to it when the table
  // is destroyed, so the pool must outlive the table; a null `pool` maps
  // and unmaps directly.
  static std::unique_ptr<BaseTable> Merge(const BaseTable& base,
                                          std::vector<Change>& changes,
                                          std::vector<Placement*>* released,
                                          MappingPool* pool = nullptr);

  BaseTable(const BaseTable&) = delete;
  BaseTable& operator=(const BaseTable&) = delete;
  ~BaseTable();

  const BlockRecord* Find(BlockKey key, uint64_t mixed) const {
    const uint64_t slot = Slot(mixed);
    const Entry* entry = entries_ + directory_[slot];
    const Entry* const end = entries_ + directory_[slot + 1];
    for (; entry != end; ++entry) {
      if (entry->key == key) return &entry->record;
    }
    return nullptr;
  }

  // False when no delta over this table can hold a block with this mixed
  // hash, so a lookup may skip the delta. A filter of one bit per entry
  // (rounded up to a power of two, at least 4096) indexed by the mixed
  // hash's low bits; the writer sets a block's bit before the block first
  // enters a delta, and bits are cleared only by replacing the table. The
  // empty table has no filter and answers true.
  bool MayHaveChanged(uint64_t mixed) const {
    if (changed_ == nullptr) return true;
    const uint64_t bit = mixed & changed_mask_;
    return ((changed_[bit >> 6].load(std::memory_order_relaxed) >> (bit & 63)) &
            1) != 0;
  }
  // Writer only, before the block enters either copy's delta. The filter is
  // the one mutable part of a table; its bits are atomics because readers
  // of either copy test them meanwhile.
  void MarkChanged(uint64_t mixed) const {
    if (changed_ == nullptr) return;
    const uint64_t bit = mixed & changed_mask_;
    changed_[bit >> 6].fetch_or(uint64_t{1} << (bit & 63),
                                std::memory_order_relaxed);
  }

  // Prefetches the directory word a lookup of `mixed` reads first.
  // Prefetching functions are always inlined: GCC deems a function whose only
  // effect is a prefetch pure and deletes calls to it that were not inlined.
  [[gnu::always_inline]] void PrefetchDirectory(uint64_t mixed) const {
    __builtin_prefetch(&directory_[Slot(mixed)]);
  }
  // Prefetches the first entry a lookup of `mixed` reads (reads the
  // directory).
  [[gnu::always_inline]] void PrefetchEntries(uint64_t mixed) const {
    __builtin_prefetch(entries_ + directory_[Slot(mixed)]);
  }

  size_t size() const { return size_; }
  // Bytes held: mapped entry pages and the directory.
  uint64_t bytes() const {
    return mapping_.bytes + directory_.capacity() * sizeof(uint32_t) +
           (changed_ == nullptr ? 0 : (changed_mask_ + 1) / 8);
  }

  // Calls fn(entry) for every entry, in table order. Test and tool use.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < size_; ++i) fn(entries_[i]);
  }

 private:
  friend class BaseTableTesting;
  BaseTable() = default;

  uint64_t Slot(uint64_t mixed) const {
    return (mixed << kShardBits) >> directory_shift_;
  }
  static uint32_t DirectoryBits(size_t entries);
  // Sizes the directory for `entries` entries (all offsets 0). Throws
  // std::bad_alloc.
  void SizeDirectory(size_t entries);
  // Builds the directory for the `size_` entries in place. Throws
  // std::bad_alloc.
  void BuildDirectory();

  Entry* entries_ = nullptr;
  size_t size_ = 0;
  MappingPool::Mapping mapping_;  // holds entries_ unless empty
  MappingPool* pool_ = nullptr;
  std::vector<uint32_t> directory_;                   // 2^bits + 1 offsets
  std::unique_ptr<std::atomic<uint64_t>[]> changed_;  // see MayHaveChanged
  uint64_t changed_mask_ = 0;                         // bits - 1
  uint32_t directory_shift_ = 63;                     // 64 - directory bits
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_BASE_TABLE_H_
