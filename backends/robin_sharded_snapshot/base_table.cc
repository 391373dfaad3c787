#include "base_table.h"

#include <algorithm>
#include <bit>
#include <new>
#include <vector>

namespace kvindexer::robin {
namespace {

// Where a table without entries points, so that a lookup's empty scan never
// does arithmetic on a null pointer.
BaseTable::Entry no_entries[1];

uint64_t KeyBits(BlockKey key) { return static_cast<uint64_t>(key.hash()); }

// Table order: the mixed hash without its shard bits (the bits the
// directory reads), then the key itself, so that keys with equal bits still
// have a fixed order. In the backend a table holds one shard's keys, for
// which this is mixed-hash order; it holds for any keys, though.
bool Before(uint64_t mixed_a, BlockKey a, uint64_t mixed_b, BlockKey b) {
  const uint64_t order_a = mixed_a << kShardBits;
  const uint64_t order_b = mixed_b << kShardBits;
  if (order_a != order_b) return order_a < order_b;
  return KeyBits(a) < KeyBits(b);
}

// Sorts `changes` into table order. Mixed hashes are uniform, so a counting
// pass on their leading table-order bits puts about four changes in each
// bucket, and only the buckets are sorted: two linear passes and many tiny
// sorts instead of one sort of the whole delta (which took about a fifth of
// a merge's time).
void SortChanges(std::vector<BaseTable::Change>& changes) {
  const auto before = [](const BaseTable::Change& a,
                         const BaseTable::Change& b) {
    return Before(a.mixed, a.entry.key, b.mixed, b.entry.key);
  };
  const size_t n = changes.size();
  if (n < 256) {
    std::sort(changes.begin(), changes.end(), before);
    return;
  }
  const int bits = std::min(static_cast<int>(std::bit_width(n / 4)) - 1, 20);
  const int shift = 64 - bits;
  const auto bucket_of = [&](const BaseTable::Change& c) {
    return static_cast<size_t>((c.mixed << kShardBits) >> shift);
  };
  std::vector<uint32_t> starts((size_t{1} << bits) + 1, 0);
  for (const BaseTable::Change& c : changes) ++starts[bucket_of(c) + 1];
  for (size_t b = 1; b < starts.size(); ++b) starts[b] += starts[b - 1];
  std::vector<BaseTable::Change> sorted(n);
  std::vector<uint32_t> next(starts.begin(), starts.end() - 1);
  for (const BaseTable::Change& c : changes) sorted[next[bucket_of(c)]++] = c;
  for (size_t b = 0; b + 1 < starts.size(); ++b) {
    if (starts[b + 1] - starts[b] > 1) {
      std::sort(sorted.begin() + starts[b], sorted.begin() + starts[b + 1],
                before);
    }
  }
  changes.swap(sorted);
}

}  // namespace

const BaseTable& BaseTable::Empty() {
  // A static object rather than a leaked one: the plugin can be unloaded
  // (dlclose), which destroys it and frees its directory.
  static const BaseTable* const empty = [] {
    static BaseTable table;
    table.entries_ = no_entries;
    table.BuildDirectory();
    return &table;
  }();
  return *empty;
}

BaseTable::~BaseTable() {
  if (pool_ != nullptr) {
    pool_->Give(mapping_);
  } else {
    MappingPool::Unmap(mapping_);
  }
}

std::unique_ptr<BaseTable> BaseTable::Merge(const BaseTable& base,
                                            std::vector<Change>& changes,
                                            std::vector<Placement*>* released,
                                            MappingPool* pool) {
  SortChanges(changes);
  const size_t most = base.size_ + changes.size();
  if (most > UINT32_MAX) throw std::bad_alloc();
  std::unique_ptr<BaseTable> table(new BaseTable());
  table->entries_ = no_entries;
  table->pool_ = pool;
  if (most != 0) {
    const size_t bytes = most * sizeof(Entry);
    table->mapping_ =
        pool != nullptr ? pool->Take(bytes) : MappingPool::Map(bytes);
    table->entries_ = reinterpret_cast<Entry*>(table->mapping_.data);
  }
  const size_t released_before = released->size();
  released->reserve(released_before + std::min(base.size_, changes.size()));
  // The directory is filled as entries are written, sized for `most`
  // entries; BuildDirectory redoes it below if far fewer are written.
  table->SizeDirectory(most);
  uint32_t* const directory = table->directory_.data();
  const size_t slots = table->directory_.size() - 1;
  size_t next_slot = 0;

  Entry* const out = table->entries_;
  size_t n = 0;
  auto emit = [&](const Entry& entry, uint64_t mixed) {
    const uint64_t slot = table->Slot(mixed);
    while (next_slot <= slot) directory[next_slot++] = static_cast<uint32_t>(n);
    out[n++] = entry;
  };
  size_t i = 0;
  size_t j = 0;
  const Entry* const old = base.entries_;
  uint64_t old_mixed = base.size_ != 0 ? MixHash(old[0].key.hash()) : 0;
  auto next_old = [&] {
    ++i;
    if (i < base.size_) old_mixed = MixHash(old[i].key.hash());
  };
  while (i < base.size_ || j < changes.size()) {
    if (j == changes.size() ||
        (i < base.size_ && Before(old_mixed, old[i].key, changes[j].mixed,
                                  changes[j].entry.key))) {
      emit(old[i], old_mixed);
      next_old();
      continue;
    }
    const BlockRecord& change = changes[j].entry.record;
    if (i < base.size_ && old[i].key == changes[j].entry.key) {
      // Delta arrays are never base arrays (the writer copies an array when
      // it moves a block into the delta), but check rather than free twice.
      const BlockRecord& replaced = old[i].record;
      if (replaced.spilled() && (change.tombstone() || !change.spilled() ||
                                 change.spill() != replaced.spill())) {
        released->push_back(replaced.spill());
      }
      next_old();
    }
    // A tombstone of a block the base does not hold deletes nothing.
    if (!change.tombstone()) emit(changes[j].entry, changes[j].mixed);
    ++j;
  }
  while (next_slot <= slots) directory[next_slot++] = static_cast<uint32_t>(n);

  table->size_ = n;
  MappingPool::Shrink(&table->mapping_, n * sizeof(Entry));
  if (n == 0) table->entries_ = no_entries;
  try {
    // The filter of changed blocks starts empty, as the deltas do.
    const uint64_t filter_bits = std::bit_ceil(std::max<uint64_t>(n, 4096));
    table->changed_.reset(new std::atomic<uint64_t>[filter_bits / 64]());
    table->changed_mask_ = filter_bits - 1;
    if (DirectoryBits(n) != 64 - table->directory_shift_) {
      table->BuildDirectory();
    }
  } catch (const std::bad_alloc&) {
    released->resize(released_before);
    throw;
  }
  return table;
}

uint32_t BaseTable::DirectoryBits(size_t entries) {
  // 2^bits slots for 2 to 4 entries each on average; at least 2 slots.
  uint32_t bits = 1;
  while (bits < 31 && (uint64_t{1} << (bits + 1)) <= entries / 2) ++bits;
  return bits;
}

void BaseTable::SizeDirectory(size_t entries) {
  const uint32_t bits = DirectoryBits(entries);
  directory_shift_ = 64 - bits;
  // A new vector rather than assign(), which would keep a larger capacity.
  directory_ = decltype(directory_)((size_t{1} << bits) + 1, 0);
}

void BaseTable::BuildDirectory() {
  SizeDirectory(size_);
  const size_t slots = directory_.size() - 1;
  size_t e = 0;
  for (size_t slot = 0; slot < slots; ++slot) {
    directory_[slot] = static_cast<uint32_t>(e);
    while (e < size_ && Slot(MixHash(entries_[e].key.hash())) <= slot) ++e;
  }
  directory_[slots] = static_cast<uint32_t>(size_);
}

}  // namespace kvindexer::robin
