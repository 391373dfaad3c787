// SnapshotMirror: what SGLang's publisher keeps to answer snapshot
// requests, computed from the batches it publishes (docs/bridge-events.md,
// "Event batches"; SGLang's kv_events.py mirrors):
//
//   v1  keyed by block hash: a store at any medium (EXTERNAL and nil
//       included) adds the hash, a remove at any medium deletes it.
//   v2  keyed by (block hash, tier), tiers 1 = GPU, 2 = CPU_PINNED,
//       3 = DISK: a store sets that record (component mask of its labels,
//       FULL when it has none; its block_size), a remove at a medium deletes
//       only that tier's record. EXTERNAL (and any other medium) stores and
//       removes are not in it.
//   AllBlocksCleared empties both.
//
// Records keep the place of their first insertion until deleted (a Python
// dict's order): a store of a key already held updates it in place. A
// multi-hash store chains parents: hash i's parent is hash i - 1, the
// first one's the event's parent_block_hash. Array and map events of every
// era are read; a payload that is not a batch is ignored.
//
// Thread safety: none; FakeSglangPublisher guards it with its mutex.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_SNAPSHOT_MIRROR_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_SNAPSHOT_MIRROR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace kvindexer::bridge::testing {

// One record of a snapshot-v1 reply (one hash per record, as SGLang sends).
struct SnapshotRecord {
  std::optional<int64_t> parent;  // nil when absent
  int64_t hash = 0;
  bool operator==(const SnapshotRecord&) const = default;
};

// One record of a snapshot-v2 reply.
struct SnapshotV2Record {
  std::optional<int64_t> parent;  // nil when absent
  int64_t hash = 0;
  int64_t tier = 1;  // 1 GPU, 2 CPU_PINNED, 3 DISK
  uint32_t component_mask = 1;
  uint32_t block_size = 0;
  bool operator==(const SnapshotV2Record&) const = default;
};

class SnapshotMirror {
 public:
  // Applies the events of one published payload.
  void Apply(std::string_view payload);
  void Clear();

  // The records in snapshot order.
  std::vector<SnapshotRecord> V1() const;
  std::vector<SnapshotV2Record> V2() const;

 private:
  // A map that iterates in first-insertion order.
  template <typename Key, typename Value>
  class Ordered {
   public:
    void Set(const Key& key, Value value);
    void Erase(const Key& key);
    void Clear();
    template <typename Fn>
    void ForEach(Fn fn) const {
      for (const auto& [order, entry] : entries_) fn(entry.first, entry.second);
    }

   private:
    std::map<Key, uint64_t> index_;
    std::map<uint64_t, std::pair<Key, Value>> entries_;
    uint64_t next_ = 0;
  };
  struct V2Value {
    std::optional<int64_t> parent;
    uint32_t mask = 1;
    uint32_t size = 0;
  };

  // One decoded store or remove; `medium` empty when nil or absent.
  struct Event {
    bool store = true;
    std::vector<int64_t> hashes;
    std::optional<int64_t> parent;
    std::optional<std::string_view> medium;
    uint32_t mask = 1;
    uint32_t size = 0;
  };
  void ApplyEvent(const Event& event);

  Ordered<int64_t, std::optional<int64_t>> v1_;       // hash -> parent
  Ordered<std::pair<int64_t, int64_t>, V2Value> v2_;  // (hash, tier)
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_SNAPSHOT_MIRROR_H_
