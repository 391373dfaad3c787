// WorkerMatchCounters: one counter per worker for at most `capacity`
// workers, added to on the prefix query path without a lock
// (docs/metrics.md, "Prefix reuse").
//
// A worker gets its counter the first time something is added for it, as
// long as fewer than `capacity` workers have one; its counter then lasts as
// long as this object, so that the series it feeds only goes up. What is
// added for any later worker goes to omitted() instead. The capacity is
// KV_INDEXER_METRICS_WORKER_SERIES, the bound on every per-worker series of
// the server.
//
// The counters live in an open-addressing table of twice the capacity
// (rounded up to a power of two), whose slots are published once and never
// change after: an Add for a worker that has a counter costs one hash, a
// short probe and one relaxed atomic addition, without a lock. Only the
// first Add of a worker takes a mutex, to create its counter, and
// allocates; once the table holds `capacity` counters, Adds for other
// workers go to omitted() without the mutex. The table itself (one pointer
// per slot, at most 32 bytes per unit of capacity) is allocated up front.
//
// Thread safety: Add and Read may be called concurrently.
#ifndef KVINDEXER_SERVER_WORKER_MATCH_COUNTERS_H_
#define KVINDEXER_SERVER_WORKER_MATCH_COUNTERS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace kvindexer {

// Who a counter belongs to: a seed-era worker id alone, or a stream's
// worker id, namespace and rank (docs/contract.md, "Streams").
struct WorkerMatchKey {
  std::string_view worker_id;
  bool stream = false;
  std::string_view ns;  // empty unless `stream`
  uint32_t dp_rank = 0;
};

class WorkerMatchCounters {
 public:
  struct Entry {
    std::string worker_id;
    bool stream = false;
    std::string ns;
    uint32_t dp_rank = 0;
    uint64_t value = 0;
  };

  explicit WorkerMatchCounters(uint32_t capacity);
  ~WorkerMatchCounters();
  WorkerMatchCounters(const WorkerMatchCounters&) = delete;
  WorkerMatchCounters& operator=(const WorkerMatchCounters&) = delete;

  void Add(const WorkerMatchKey& key, uint64_t n);

  // Every worker with a counter, sorted by worker id, then namespace and
  // rank.
  std::vector<Entry> Read() const;
  // What was added for workers left without a counter.
  uint64_t omitted() const { return omitted_.load(std::memory_order_relaxed); }
  uint32_t capacity() const { return capacity_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string worker_id;
    bool stream = false;
    std::string ns;
    uint32_t dp_rank = 0;
    std::atomic<uint64_t> value{0};

    bool Holds(uint64_t h, const WorkerMatchKey& key) const;
  };

  // The slot holding `key` (hash `h`), or null with `*empty` set to the
  // empty slot where the probe stopped.
  Slot* Probe(uint64_t h, const WorkerMatchKey& key, size_t* empty) const;

  const uint32_t capacity_;
  const size_t mask_;  // table size - 1; unused when capacity_ is 0
  std::unique_ptr<std::atomic<Slot*>[]> slots_;  // owned; null: empty
  std::mutex insert_mu_;                         // creates counters
  std::atomic<uint32_t> used_{0};                // counters created
  std::atomic<uint64_t> omitted_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_WORKER_MATCH_COUNTERS_H_
