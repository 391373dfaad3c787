// BaseTable on its own: merges against a std::map model (replacements,
// tombstones, released arrays) and lookups of every key and of absent keys at
// sizes around the directory's boundaries.
#include "base_table.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace kvindexer::robin {
namespace {

BlockRecord Single(uint32_t worker, uint32_t token_count) {
  BlockRecord record;
  record.set_single(Placement{worker, kTierHbm, 0});
  record.token_count = token_count;
  return record;
}

BaseTable::Change ChangeOf(int64_t hash, const BlockRecord& record) {
  return {MixHash(hash), {BlockKey::From(hash), record}};
}

// `count` distinct keys drawn from [first, first + span), each made a
// tombstone one time in `delete_one_in` and otherwise a record of `worker`
// with random tokens; `model` gets the same changes.
std::vector<BaseTable::Change> RandomChanges(
    std::mt19937_64& rng, size_t count, int64_t first, uint64_t span,
    uint64_t delete_one_in, uint32_t worker,
    std::map<int64_t, uint32_t>* model) {
  std::set<int64_t> keys;
  while (keys.size() < count) keys.insert(first + int64_t(rng() % span));
  std::vector<BaseTable::Change> changes;
  for (const int64_t hash : keys) {
    if (rng() % delete_one_in == 0) {
      changes.push_back(ChangeOf(hash, BlockRecord::Tombstone()));
      model->erase(hash);
    } else {
      const uint32_t tokens = uint32_t(rng() % 1000) + 1;
      changes.push_back(ChangeOf(hash, Single(worker, tokens)));
      (*model)[hash] = tokens;
    }
  }
  return changes;
}

// Every key of `model` is found with its record; `absent` keys are not.
void ExpectHolds(const BaseTable& table,
                 const std::map<int64_t, uint32_t>& model,
                 const std::vector<int64_t>& absent) {
  ASSERT_EQ(table.size(), model.size());
  for (const auto& [hash, tokens] : model) {
    const BlockRecord* found = table.Find(BlockKey::From(hash), MixHash(hash));
    ASSERT_NE(found, nullptr) << hash;
    EXPECT_EQ(found->token_count, tokens) << hash;
  }
  for (const int64_t hash : absent) {
    EXPECT_EQ(table.Find(BlockKey::From(hash), MixHash(hash)), nullptr) << hash;
  }
  // Table order is the order of the mixed hash's bits below the shard bits.
  uint64_t previous = 0;
  bool first = true;
  table.ForEach([&](const BaseTable::Entry& entry) {
    const uint64_t mixed = MixHash(entry.key.hash()) << kShardBits;
    if (!first) {
      EXPECT_LE(previous, mixed);
    }
    previous = mixed;
    first = false;
  });
}

}  // namespace

// Reads what a table's directory says against its entries.
class BaseTableTesting {
 public:
  // True when every directory slot holds the index of the first entry whose
  // slot is that one or later (the end for none), and the last holds the
  // size: what BuildDirectory would write.
  static bool DirectoryIsExact(const BaseTable& table) {
    const std::vector<uint32_t>& directory = table.directory_;
    const size_t slots = directory.size() - 1;
    if (directory[slots] != table.size_) return false;
    size_t e = 0;
    for (size_t slot = 0; slot < slots; ++slot) {
      while (e < table.size_ &&
             table.Slot(MixHash(table.entries_[e].key.hash())) < slot) {
        ++e;
      }
      if (directory[slot] != e) return false;
    }
    return true;
  }
  // True when the entries are strictly in table order: by the mixed hash
  // without its shard bits, then by the hash.
  static bool InTableOrder(const BaseTable& table) {
    for (size_t e = 1; e < table.size_; ++e) {
      const int64_t a = table.entries_[e - 1].key.hash();
      const int64_t b = table.entries_[e].key.hash();
      const uint64_t order_a = MixHash(a) << kShardBits;
      const uint64_t order_b = MixHash(b) << kShardBits;
      if (order_a > order_b ||
          (order_a == order_b && uint64_t(a) >= uint64_t(b))) {
        return false;
      }
    }
    return true;
  }
};

namespace {

TEST(BaseTableTest, TheEmptyTableFindsNothing) {
  const BaseTable& empty = BaseTable::Empty();
  EXPECT_EQ(empty.size(), 0u);
  for (int64_t hash : {0, 1, -1, 42}) {
    EXPECT_EQ(empty.Find(BlockKey::From(hash), MixHash(hash)), nullptr);
  }
}

TEST(BaseTableTest, BuildsTablesOfEverySizeAroundDirectoryBoundaries) {
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{7},
                   size_t{8}, size_t{9}, size_t{63}, size_t{64}, size_t{65},
                   size_t{1000}, size_t{4096}, size_t{50000}}) {
    std::vector<BaseTable::Change> changes;
    std::map<int64_t, uint32_t> model;
    for (size_t i = 0; i < n; ++i) {
      const int64_t hash = int64_t(i) * 2 + 1;  // odd hashes present
      changes.push_back(ChangeOf(hash, Single(1, uint32_t(i))));
      model[hash] = uint32_t(i);
    }
    std::vector<int64_t> absent;
    for (size_t i = 0; i < 200; ++i) absent.push_back(int64_t(i) * 2);
    std::vector<Placement*> released;
    auto table = BaseTable::Merge(BaseTable::Empty(), changes, &released);
    SCOPED_TRACE(n);
    ExpectHolds(*table, model, absent);
    EXPECT_TRUE(BaseTableTesting::InTableOrder(*table));
    EXPECT_TRUE(released.empty());
  }
}

TEST(BaseTableTest, RandomMergesAgreeWithAMap) {
  std::mt19937_64 rng(11);
  std::map<int64_t, uint32_t> model;
  std::unique_ptr<BaseTable> table;
  const BaseTable* current = &BaseTable::Empty();
  for (int round = 0; round < 40; ++round) {
    std::map<int64_t, uint32_t> next = model;
    std::vector<BaseTable::Change> changes =
        RandomChanges(rng, 1 + rng() % 3000, -10000, 20000, /*delete_one_in=*/3,
                      /*worker=*/2, &next);
    std::vector<Placement*> released;
    table = BaseTable::Merge(*current, changes, &released);
    EXPECT_TRUE(released.empty());  // no spilled records in this test
    current = table.get();
    model = std::move(next);
    std::vector<int64_t> absent;
    for (int64_t h = -10000; h < 10000; h += 7) {
      if (model.count(h) == 0) absent.push_back(h);
    }
    SCOPED_TRACE(round);
    EXPECT_TRUE(BaseTableTesting::DirectoryIsExact(*current));
    EXPECT_TRUE(BaseTableTesting::InTableOrder(*current));
    ExpectHolds(*current, model, absent);
    if (HasFailure()) return;
  }
}

// Small merges into a large table (the common case: a delta is merged at
// about a twelfth of its base): changes that replace, delete and add entries
// at any place (first and last slot, empty slots, next to each other) leave
// a table whose directory is exact and that agrees with the model.
TEST(BaseTableTest, SmallMergesIntoALargeTableAgreeWithAMap) {
  std::mt19937_64 rng(5);
  std::map<int64_t, uint32_t> model;
  std::vector<BaseTable::Change> changes;
  for (int64_t hash = 0; hash < 60000; hash += 2) {
    changes.push_back(ChangeOf(hash, Single(1, uint32_t(hash % 7) + 1)));
    model[hash] = uint32_t(hash % 7) + 1;
  }
  std::vector<Placement*> released;
  std::unique_ptr<BaseTable> table =
      BaseTable::Merge(BaseTable::Empty(), changes, &released);
  ASSERT_TRUE(BaseTableTesting::DirectoryIsExact(*table));
  for (int round = 0; round < 200; ++round) {
    std::map<int64_t, uint32_t> next = model;
    changes = RandomChanges(rng, 1 + rng() % 300, 0, 60002,
                            /*delete_one_in=*/2, /*worker=*/3, &next);
    std::unique_ptr<BaseTable> merged =
        BaseTable::Merge(*table, changes, &released);
    model = std::move(next);
    SCOPED_TRACE(round);
    ASSERT_TRUE(BaseTableTesting::DirectoryIsExact(*merged));
    std::vector<int64_t> absent;
    for (int64_t h = 1; h < 60002; h += 10) {
      if (model.count(h) == 0) absent.push_back(h);
    }
    ExpectHolds(*merged, model, absent);
    if (HasFailure()) return;
    table = std::move(merged);
  }
  EXPECT_TRUE(released.empty());  // no spilled records in this test
}

TEST(BaseTableTest, ReleasesTheArraysOfReplacedAndDeletedEntries) {
  alignas(8) static Placement arrays[4][4];
  auto spilled = [](Placement* array) {
    BlockRecord record;
    record.set_spill(array);
    record.token_count = 16;
    return record;
  };
  std::vector<BaseTable::Change> first = {
      ChangeOf(1, spilled(arrays[0])), ChangeOf(2, spilled(arrays[1])),
      ChangeOf(3, spilled(arrays[2])), ChangeOf(4, Single(1, 16))};
  std::vector<Placement*> released;
  auto base = BaseTable::Merge(BaseTable::Empty(), first, &released);
  ASSERT_TRUE(released.empty());
  // 1 replaced by a new array, 2 deleted, 3 untouched, 4 (inline) deleted.
  std::vector<BaseTable::Change> second = {
      ChangeOf(1, spilled(arrays[3])), ChangeOf(2, BlockRecord::Tombstone()),
      ChangeOf(4, BlockRecord::Tombstone())};
  auto merged = BaseTable::Merge(*base, second, &released);
  std::sort(released.begin(), released.end());
  EXPECT_EQ(released, (std::vector<Placement*>{arrays[0], arrays[1]}));
  EXPECT_EQ(merged->size(), 2u);
  const BlockRecord* one = merged->Find(BlockKey::From(1), MixHash(1));
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->spill(), arrays[3]);
  EXPECT_EQ(merged->Find(BlockKey::From(2), MixHash(2)), nullptr);
  EXPECT_EQ(merged->Find(BlockKey::From(4), MixHash(4)), nullptr);
}

TEST(BaseTableTest, TheChangedFilterHasNoFalseNegatives) {
  // Hashes as clients send them, spread over 64 bits: the false-positive
  // bound below assumes mixed hashes spread evenly, which the per-process
  // key does not promise for consecutive small integers.
  std::mt19937_64 rng(17);
  std::vector<int64_t> hashes;
  for (int i = 0; i < 20000; ++i) hashes.push_back(int64_t(rng()));
  std::vector<BaseTable::Change> changes;
  for (int64_t h : hashes) changes.push_back(ChangeOf(h, Single(1, 1)));
  std::vector<Placement*> released;
  auto table = BaseTable::Merge(BaseTable::Empty(), changes, &released);
  size_t maybe = 0;
  for (int64_t h : hashes) maybe += table->MayHaveChanged(MixHash(h));
  EXPECT_EQ(maybe, 0u);  // a fresh table has no delta over it
  for (size_t i = 0; i < hashes.size(); i += 10) {
    table->MarkChanged(MixHash(hashes[i]));
  }
  for (size_t i = 0; i < hashes.size(); ++i) {
    if (i % 10 == 0) {
      EXPECT_TRUE(table->MayHaveChanged(MixHash(hashes[i]))) << hashes[i];
    } else {
      maybe += table->MayHaveChanged(MixHash(hashes[i]));
    }
  }
  // 2,000 of 32,768 bits set: about 6% false positives.
  EXPECT_LT(maybe, 18000u * 0.12);
  EXPECT_TRUE(BaseTable::Empty().MayHaveChanged(MixHash(1)));
}

TEST(BaseTableTest, DeletingEverythingLeavesASmallTable) {
  std::vector<BaseTable::Change> changes;
  for (int64_t h = 0; h < 100000; ++h)
    changes.push_back(ChangeOf(h, Single(1, 1)));
  std::vector<Placement*> released;
  auto full = BaseTable::Merge(BaseTable::Empty(), changes, &released);
  EXPECT_GE(full->bytes(), 100000u * 20);
  for (auto& change : changes) change.entry.record = BlockRecord::Tombstone();
  auto empty = BaseTable::Merge(*full, changes, &released);
  EXPECT_EQ(empty->size(), 0u);
  EXPECT_LE(empty->bytes(), 1024u);  // the smallest filter and directory
  EXPECT_EQ(empty->Find(BlockKey::From(5), MixHash(5)), nullptr);
}

}  // namespace
}  // namespace kvindexer::robin
