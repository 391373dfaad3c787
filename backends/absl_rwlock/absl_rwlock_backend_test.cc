// Focused tests of the absl_rwlock backend: the ABI obligations a generic
// conformance run cannot easily observe (callback order, stats counters,
// counter lifetime, saturation, lock modes) and the all-or-nothing Apply
// under injected allocation failures.
#include "absl_rwlock_backend.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/wire_vocabulary.h"
#include "gtest/gtest.h"
#include "kvindexer/backend.h"
#include "tests/support/parking_visitor.h"
#include "tests/support/requests.h"

// ---------------------------------------------------------------------------
// Allocation hooks for this test binary: every operator new is counted, and
// a test can make the Nth allocation on its own thread fail. The aligned
// forms are left to the runtime; nothing here allocates over-aligned memory.
namespace {

constexpr size_t kHeader = 16;  // keeps max_align_t alignment
std::atomic<int64_t> g_live_bytes{0};
thread_local int64_t t_fail_countdown = -1;  // -1: never fail

void* CountedNew(size_t size) {
  if (t_fail_countdown == 0) {
    t_fail_countdown = -1;
    throw std::bad_alloc();
  }
  if (t_fail_countdown > 0) --t_fail_countdown;
  void* raw = malloc(size + kHeader);
  if (raw == nullptr) throw std::bad_alloc();
  memcpy(raw, &size, sizeof(size));
  g_live_bytes.fetch_add(static_cast<int64_t>(size), std::memory_order_relaxed);
  return static_cast<char*>(raw) + kHeader;
}

void CountedDelete(void* p) noexcept {
  if (p == nullptr) return;
  char* raw = static_cast<char*>(p) - kHeader;
  size_t size;
  memcpy(&size, raw, sizeof(size));
  g_live_bytes.fetch_sub(static_cast<int64_t>(size), std::memory_order_relaxed);
  free(raw);
}

}  // namespace

extern "C" const kvindexer::BackendDescriptor* kvindexer_backend_descriptor(
    void);

void* operator new(size_t size) { return CountedNew(size); }
void* operator new[](size_t size) { return CountedNew(size); }
void operator delete(void* p) noexcept { CountedDelete(p); }
void operator delete[](void* p) noexcept { CountedDelete(p); }
void operator delete(void* p, size_t) noexcept { CountedDelete(p); }
void operator delete[](void* p, size_t) noexcept { CountedDelete(p); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return CountedNew(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  CountedDelete(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  CountedDelete(p);
}

namespace kvindexer::absl_rwlock {
namespace {

using test_support::Batch;
using test_support::Range;

// Applies `batch` as the host hands it to a backend.
BackendStatus Apply(IndexBackend& backend, const Batch& batch) {
  return backend.Apply(test_support::BatchView(batch).view());
}

void ExpectOk(const BackendStatus& status) {
  EXPECT_EQ(status.code, BackendCode::kOk) << status.message;
}

// ---------------------------------------------------------------------------
// Recording what a visitor is told.

struct PlacementRecord {
  std::string worker;
  uint32_t tier;
  uint32_t mask;
  friend bool operator==(const PlacementRecord&,
                         const PlacementRecord&) = default;
  friend bool operator<(const PlacementRecord& a, const PlacementRecord& b) {
    return std::tie(a.worker, a.tier, a.mask) <
           std::tie(b.worker, b.tier, b.mask);
  }
};

struct BlockRecordSeen {
  size_t index;
  uint32_t token_count;
  std::vector<PlacementRecord> placements;  // sorted
  friend bool operator==(const BlockRecordSeen&,
                         const BlockRecordSeen&) = default;
};

struct WorkerSeen {
  std::string id;
  std::string address;
  uint32_t has_cache_spec;
  CacheSpec spec;
};

// Checks the visitor protocol as it goes and records the results.
class RecordingVisitor final : public BlockVisitor {
 public:
  explicit RecordingVisitor(size_t stop_after_blocks = SIZE_MAX)
      : stop_after_blocks_(stop_after_blocks) {}

  void OnWorker(const WorkerView& worker) noexcept override {
    if (stopped_) ++callbacks_after_stop_;
    if (worker.worker >= announced_.size()) {
      announced_.resize(worker.worker + 1);
      workers_.resize(worker.worker + 1);
    }
    if (announced_[worker.worker]) ++repeated_announcements_;
    announced_[worker.worker] = true;
    workers_[worker.worker] = {
        std::string(worker.id.data, worker.id.size),
        std::string(worker.address.data, worker.address.size),
        worker.has_cache_spec, worker.cache_spec};
    order_.push_back("W" + workers_[worker.worker].id);
  }

  bool OnBlock(const BlockView& block) noexcept override {
    if (stopped_) ++callbacks_after_stop_;
    BlockRecordSeen seen{block.index, block.token_count, {}};
    for (size_t i = 0; i < block.placement_count; ++i) {
      const Placement& p = block.placements[i];
      if (p.worker >= announced_.size() || !announced_[p.worker]) {
        ++unannounced_placements_;
        continue;
      }
      seen.placements.push_back({workers_[p.worker].id, p.tier, p.mask});
    }
    std::sort(seen.placements.begin(), seen.placements.end());
    blocks_.push_back(seen);
    order_.push_back("B" + std::to_string(block.index));
    if (blocks_.size() >= stop_after_blocks_) stopped_ = true;
    return !stopped_;
  }

  // The protocol held: no placement before its worker, no worker twice, no
  // callback after a stop.
  void ExpectProtocolHeld() const {
    EXPECT_EQ(unannounced_placements_, 0);
    EXPECT_EQ(repeated_announcements_, 0);
    EXPECT_EQ(callbacks_after_stop_, 0);
  }

  const std::vector<BlockRecordSeen>& blocks() const { return blocks_; }
  const std::vector<std::string>& order() const { return order_; }
  const WorkerSeen& worker(const std::string& id) const {
    for (const WorkerSeen& w : workers_) {
      if (w.id == id) return w;
    }
    static const WorkerSeen kNone{};
    ADD_FAILURE() << "worker " << id << " was never announced";
    return kNone;
  }

 private:
  size_t stop_after_blocks_;
  bool stopped_ = false;
  std::vector<bool> announced_;
  std::vector<WorkerSeen> workers_;
  std::vector<BlockRecordSeen> blocks_;
  std::vector<std::string> order_;
  int unannounced_placements_ = 0;
  int repeated_announcements_ = 0;
  int callbacks_after_stop_ = 0;
};

std::vector<BlockRecordSeen> Scan(IndexBackend& backend,
                                  const std::vector<int64_t>& hashes) {
  RecordingVisitor visitor;
  ExpectOk(backend.PrefixScan({hashes.data(), hashes.size()}, &visitor));
  visitor.ExpectProtocolHeld();
  return visitor.blocks();
}

std::vector<uint64_t> Hits(IndexBackend& backend,
                           const std::vector<int64_t>& hashes) {
  std::vector<uint64_t> counts(hashes.size(), 12345);
  ExpectOk(backend.HitCounts({hashes.data(), hashes.size()}, counts.data()));
  return counts;
}

BackendStats Stats(IndexBackend& backend) {
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend.GetStats(&stats);
  return stats;
}

void CountingMatch(IndexBackend& backend, const std::vector<int64_t>& hashes) {
  RecordingVisitor visitor;
  ExpectOk(backend.Match({hashes.data(), hashes.size()}, true, &visitor));
}

// Removes `id`; returns the existed flag.
uint32_t Remove(IndexBackend& backend, const std::string& id) {
  uint32_t existed = 7;
  ExpectOk(backend.RemoveWorker({id.data(), id.size()}, &existed));
  return existed;
}

// The ordinal each announced worker has in one PrefixScan over `hashes`.
std::map<std::string, uint32_t> Ordinals(IndexBackend& backend,
                                         const std::vector<int64_t>& hashes) {
  class OrdinalVisitor final : public BlockVisitor {
   public:
    void OnWorker(const WorkerView& w) noexcept override {
      ordinals[std::string(w.id.data, w.id.size)] = w.worker;
    }
    bool OnBlock(const BlockView&) noexcept override { return true; }
    std::map<std::string, uint32_t> ordinals;
  } visitor;
  ExpectOk(backend.PrefixScan({hashes.data(), hashes.size()}, &visitor));
  return visitor.ordinals;
}

// ---------------------------------------------------------------------------

TEST(AbslRwlockDescriptorTest, DescribesItselfAndCreates) {
  const BackendDescriptor* d = kvindexer_backend_descriptor();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->abi_major, kBackendAbiMajor);
  EXPECT_EQ(d->abi_minor, kBackendAbiMinor);
  EXPECT_EQ(d->struct_size, sizeof(BackendDescriptor));
  EXPECT_STREQ(d->name, "absl_rwlock");
  EXPECT_EQ(d->read_concurrency, ReadConcurrency::kReadersWaitForWriters);
  EXPECT_STREQ(d->version, "0.1.0");
  EXPECT_NE(strstr(d->build_info, "compiler"), nullptr);
  char error[64] = "untouched";
  IndexBackend* backend = d->create(error, sizeof(error));
  ASSERT_NE(backend, nullptr);
  ExpectOk(Apply(*backend, Batch("w1", "a1").Report(kTierHbm, {1})));
  EXPECT_EQ(Stats(*backend).blocks, 1u);
  d->destroy(backend);
}

TEST(AbslRwlockVisitTest, WorkerAnnouncedOncePerCallBeforeItsPlacements) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1, 2})));
  ExpectOk(Apply(backend, Batch("w2", "a2").Report(kTierDram, {2, 3})));
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierDram, {3})));
  const std::vector<int64_t> q = {4, 1, 2, 3};
  for (int call = 0; call < 2; ++call) {  // once per call, not per backend
    RecordingVisitor visitor;
    ExpectOk(backend.Match({q.data(), q.size()}, false, &visitor));
    visitor.ExpectProtocolHeld();
    const std::vector<std::string> expected = {"B0",  "Ww1", "B1",
                                               "Ww2", "B2",  "B3"};
    EXPECT_EQ(visitor.order(), expected) << "call " << call;
  }
  // Repeated hashes in a prefix scan: still one announcement per worker.
  const std::vector<int64_t> repeats = {1, 1, 2, 1};
  RecordingVisitor visitor;
  ExpectOk(backend.PrefixScan({repeats.data(), repeats.size()}, &visitor));
  visitor.ExpectProtocolHeld();
  const std::vector<std::string> expected = {"Ww1", "B0", "B1",
                                             "Ww2", "B2", "B3"};
  EXPECT_EQ(visitor.order(), expected);
}

TEST(AbslRwlockVisitTest, AbsentBlocksAreReportedInOrder) {
  AbslRwlockBackend backend;
  ExpectOk(
      Apply(backend,
            Batch("w1", "a1").Report(kTierHbm, {2}, {kComponentFull}, {64})));
  const std::vector<BlockRecordSeen> expected = {
      {0, 0, {}}, {1, 64, {{"w1", kTierHbm, kComponentFull}}}, {2, 0, {}}};
  EXPECT_EQ(Scan(backend, {7, 2, -9}), expected);
}

TEST(AbslRwlockVisitTest, EarlyStopEndsTheCallbacks) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1, 2})));
  ExpectOk(Apply(backend, Batch("w2", "a2").Report(kTierHbm, {3})));
  const std::vector<int64_t> q = {1, 2, 3};
  for (bool counting : {false, true}) {
    RecordingVisitor visitor(/*stop_after_blocks=*/2);
    ExpectOk(backend.Match({q.data(), q.size()}, counting, &visitor));
    visitor.ExpectProtocolHeld();
    // w2 holds only the third block: it must not even be announced.
    const std::vector<std::string> expected = {"Ww1", "B0", "B1"};
    EXPECT_EQ(visitor.order(), expected);
  }
  RecordingVisitor visitor(/*stop_after_blocks=*/1);
  ExpectOk(backend.PrefixScan({q.data(), q.size()}, &visitor));
  EXPECT_EQ(visitor.blocks().size(), 1u);
  // Counting belongs to the request, not to the callbacks: the one counting
  // match above counted all three hashes despite stopping after two.
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{1, 1, 1}));
}

TEST(AbslRwlockVisitTest, WorkerViewCarriesAddressAndSpec) {
  AbslRwlockBackend backend;
  const CacheSpec spec{1, kComponentFull | kComponentSwa, 100, 3, 1, 0};
  ExpectOk(Apply(
      backend, Batch("w1", "10.0.0.1:9000").Spec(spec).Report(kTierHbm, {1})));
  RecordingVisitor with_spec;
  const std::vector<int64_t> q = {1};
  ExpectOk(backend.PrefixScan({q.data(), q.size()}, &with_spec));
  EXPECT_EQ(with_spec.worker("w1").address, "10.0.0.1:9000");
  ASSERT_EQ(with_spec.worker("w1").has_cache_spec, 1u);
  EXPECT_EQ(with_spec.worker("w1").spec.swa_window_tokens, 100u);
  EXPECT_EQ(with_spec.worker("w1").spec.components,
            kComponentFull | kComponentSwa);
  // An empty action list still upserts: empty address overwrites, an absent
  // spec clears the stored one.
  ExpectOk(Apply(backend, Batch("w1", "")));
  RecordingVisitor cleared;
  ExpectOk(backend.PrefixScan({q.data(), q.size()}, &cleared));
  EXPECT_EQ(cleared.worker("w1").address, "");
  EXPECT_EQ(cleared.worker("w1").has_cache_spec, 0u);
}

TEST(AbslRwlockApplyTest, ReportReplacesMaskAndKeepsKnownTokenCount) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1")
                              .Report(kTierHbm, {1},
                                      {kComponentFull | kComponentSwa}, {80})));
  ExpectOk(Apply(backend,
                 Batch("w2", "a2").Report(kTierHbm, {1}, {kComponentFull})));
  // Mask replaced down to legacy 0; size 0 does not erase the count.
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1}, {0}, {0})));
  std::vector<BlockRecordSeen> expected = {
      {0, 80, {{"w1", kTierHbm, 0}, {"w2", kTierHbm, kComponentFull}}}};
  EXPECT_EQ(Scan(backend, {1}), expected);
  // The last non-zero size wins, whoever reports it.
  ExpectOk(
      Apply(backend,
            Batch("w2", "a2").Report(kTierHbm, {1}, {kComponentFull}, {96})));
  expected[0].token_count = 96;
  EXPECT_EQ(Scan(backend, {1}), expected);
}

TEST(AbslRwlockApplyTest, StatsFollowReportRevokeAndClear) {
  AbslRwlockBackend backend;
  BackendStats s = Stats(backend);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.placements, 0u);
  EXPECT_EQ(s.workers, 0u);
  EXPECT_EQ(s.hit_counters, 0u);
  const uint64_t empty_bytes = s.memory_bytes;

  ExpectOk(Apply(
      backend,
      Batch("w1", "a1").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {1})));
  ExpectOk(Apply(backend, Batch("w2", "a2").Report(kTierHbm, {3, 4})));
  s = Stats(backend);
  EXPECT_EQ(s.blocks, 4u);
  EXPECT_EQ(s.placements, 6u);
  EXPECT_EQ(s.workers, 2u);
  EXPECT_GT(s.memory_bytes, empty_bytes);

  CountingMatch(backend, {1, 2, 3, 4, 5});
  EXPECT_EQ(Stats(backend).hit_counters, 4u);

  ExpectOk(Apply(backend, Batch("w1", "a1").Revoke(kTierHbm, {2, 404})));
  s = Stats(backend);
  EXPECT_EQ(s.blocks, 3u);
  EXPECT_EQ(s.placements, 5u);
  EXPECT_EQ(s.hit_counters, 3u);

  ExpectOk(Apply(backend, Batch("w1", "a1").Clear(kTierHbm)));
  s = Stats(backend);
  EXPECT_EQ(s.blocks, 3u);      // 1 (DRAM), 3 and 4 (w2)
  EXPECT_EQ(s.placements, 3u);  // w1:1@DRAM, w2:3, w2:4
  EXPECT_EQ(s.hit_counters, 3u);

  ExpectOk(Apply(backend, Batch("w2", "a2").Clear(kTierHbm)));
  ExpectOk(Apply(backend, Batch("w1", "a1").Clear(kTierDram)));
  s = Stats(backend);
  EXPECT_EQ(s.blocks, 0u);
  EXPECT_EQ(s.placements, 0u);
  EXPECT_EQ(s.hit_counters, 0u);
  EXPECT_EQ(s.workers, 2u);  // only RemoveWorker deletes a worker record
}

TEST(AbslRwlockApplyTest, StatsRespectCallerStructSize) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1})));
  BackendStats stats;
  memset(&stats, 0xAB, sizeof(stats));
  stats.struct_size = offsetof(BackendStats, workers);  // an older host
  backend.GetStats(&stats);
  EXPECT_EQ(stats.blocks, 1u);
  EXPECT_EQ(stats.placements, 1u);
  EXPECT_EQ(stats.workers, 0xABABABABABABABABu);
  EXPECT_EQ(stats.memory_bytes, 0xABABABABABABABABu);
}

TEST(AbslRwlockHitTest, CounterDiesWithTheLastPlacementOnly) {
  AbslRwlockBackend backend;
  ExpectOk(
      Apply(backend,
            Batch("w1", "a1").Report(kTierHbm, {1, 2}).Report(kTierDram, {1})));
  CountingMatch(backend, {1, 2, 3});
  EXPECT_EQ(Hits(backend, {1, 2, 3}), (std::vector<uint64_t>{1, 1, 0}));
  // Losing one of two placements keeps the counter.
  ExpectOk(Apply(backend, Batch("w1", "a1").Revoke(kTierHbm, {1, 2})));
  EXPECT_EQ(Hits(backend, {1, 2}), (std::vector<uint64_t>{1, 0}));
  // Losing the last one deletes it, and a new report starts from nothing.
  ExpectOk(Apply(backend, Batch("w1", "a1").Revoke(kTierDram, {1})));
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1})));
  EXPECT_EQ(Hits(backend, {1}), (std::vector<uint64_t>{0}));
}

TEST(AbslRwlockHitTest, EmptiedInsideABatchLosesCounterAndTokenCount) {
  AbslRwlockBackend backend;
  ExpectOk(
      Apply(backend,
            Batch("w1", "a1").Report(kTierHbm, {1}, {kComponentFull}, {50})));
  CountingMatch(backend, {1});
  ASSERT_EQ(Hits(backend, {1}), (std::vector<uint64_t>{1}));
  // Sequentially the block is deleted and then created again.
  ExpectOk(Apply(backend, Batch("w1", "a1")
                              .Revoke(kTierHbm, {1})
                              .Report(kTierDram, {1}, {kComponentFull})));
  EXPECT_EQ(Hits(backend, {1}), (std::vector<uint64_t>{0}));
  const std::vector<BlockRecordSeen> expected = {
      {0, 0, {{"w1", kTierDram, kComponentFull}}}};
  EXPECT_EQ(Scan(backend, {1}), expected);
  EXPECT_EQ(Stats(backend).hit_counters, 0u);
}

TEST(AbslRwlockHitTest, CountsOnlyHeldHashesAndSaturates) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1, 2})));
  RecordingVisitor plain;
  const std::vector<int64_t> q = {1, 2, 3};
  ExpectOk(backend.Match({q.data(), q.size()}, false, &plain));
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{0, 0, 0}));
  const uint64_t kMax = std::numeric_limits<uint64_t>::max();
  ExpectOk(backend.SetHitCountForTest(1, kMax - 1));
  CountingMatch(backend, q);
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{kMax, 1, 0}));
  CountingMatch(backend, q);
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{kMax, 2, 0}));
  EXPECT_EQ(Stats(backend).hit_counters, 2u);
  // Applies never change counters except by deletion.
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1, 2})));
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{kMax, 2, 0}));
}

TEST(AbslRwlockApplyTest, ReapplyingABatchIsIdempotent) {
  AbslRwlockBackend backend;
  const Batch batch =
      Batch("w1", "a1")
          .Report(kTierHbm, {9, 10}, {kComponentFull, kComponentSwa}, {16, 0})
          .Revoke(kTierHbm, {9})
          .Report(kTierHbm, {9}, {kComponentFull}, {0})
          .Report(kTierDram, {11})
          .Clear(kTierDram)
          .Report(kTierDram, {12});
  const std::vector<int64_t> universe = {9, 10, 11, 12};
  ExpectOk(Apply(backend, batch));
  const std::vector<BlockRecordSeen> once = Scan(backend, universe);
  const BackendStats first = Stats(backend);
  for (int i = 0; i < 3; ++i) {
    ExpectOk(Apply(backend, batch));
    EXPECT_EQ(Scan(backend, universe), once);
    const BackendStats again = Stats(backend);
    EXPECT_EQ(again.blocks, first.blocks);
    EXPECT_EQ(again.placements, first.placements);
  }
  const std::vector<BlockRecordSeen> expected = {
      {0, 0, {{"w1", kTierHbm, kComponentFull}}},
      {1, 0, {{"w1", kTierHbm, kComponentSwa}}},
      {2, 0, {}},
      {3, 0, {{"w1", kTierDram, 0}}}};
  EXPECT_EQ(once, expected);
}

TEST(AbslRwlockApplyTest, ClearUsesHoldingsAndLaterReportsSurvive) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(
      backend,
      Batch("w1", "a1").Report(kTierHbm, {1, 2, 3}).Report(kTierDram, {1})));
  ExpectOk(Apply(backend, Batch("w2", "a2").Report(kTierHbm, {2})));
  ExpectOk(
      Apply(backend, Batch("w1", "a1").Clear(kTierHbm).Report(kTierHbm, {3})));
  const std::vector<BlockRecordSeen> expected = {{0, 0, {{"w1", kTierDram, 0}}},
                                                 {1, 0, {{"w2", kTierHbm, 0}}},
                                                 {2, 0, {{"w1", kTierHbm, 0}}}};
  EXPECT_EQ(Scan(backend, {1, 2, 3}), expected);
  // The re-reported hash is still in the holdings: a second clear finds it.
  ExpectOk(Apply(backend, Batch("w1", "a1").Clear(kTierHbm)));
  EXPECT_EQ(Scan(backend, {3}), (std::vector<BlockRecordSeen>{{0, 0, {}}}));
}

TEST(AbslRwlockApplyTest, RefusesMalformedViewsWithoutChangingState) {
  AbslRwlockBackend backend;
  EXPECT_EQ(Apply(backend, Batch("", "a").Report(kTierHbm, {1})).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(Apply(backend, Batch("w1", "a").Report(0, {1})).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(Apply(backend, Batch("w1", "a").Report(4, {1})).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(Apply(backend, Batch("w1", "a").Action(999, kTierHbm, {1})).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(Apply(backend,
                  Batch("w1", "a").Report(kTierHbm, {1, 2}, {kComponentFull}))
                .code,
            BackendCode::kInvalidArgument);
  // A valid action after an invalid one must not have been applied.
  EXPECT_EQ(
      Apply(backend, Batch("w1", "a").Report(kTierHbm, {5}).Report(7, {6}))
          .code,
      BackendCode::kInvalidArgument);
  EXPECT_EQ(Stats(backend).workers, 0u);
  EXPECT_EQ(Stats(backend).blocks, 0u);
  RecordingVisitor visitor;
  EXPECT_EQ(backend.PrefixScan({nullptr, 3}, &visitor).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(backend.Match({nullptr, 0}, false, nullptr).code,
            BackendCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------
// Lock modes (docs/contract.md, "State model > Consistency"; behaviour 45).

// A visitor that parks inside its first OnBlock until released, holding the
// backend's shared lock all that time.
// Stops the scan once released: the tests only need the lock held.
using test_support::ParkingVisitor;

TEST(AbslRwlockLockTest, NonCountingMatchRunsWhileAReaderHoldsTheLock) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1, 2})));
  const std::vector<int64_t> q = {1, 2};

  ParkingVisitor parker(/*continue_after_release=*/false);
  std::thread reader([&] {
    ExpectOk(backend.PrefixScan({q.data(), q.size()}, &parker));
  });
  ASSERT_TRUE(parker.WaitParked(std::chrono::seconds(10)));

  // The reader now holds the shared lock. A non-counting match must finish
  // while it is still parked: the matcher notes, as its Match returns,
  // whether the parked scan has left OnBlock. The wait is bounded just under
  // kParkLimit, so a slow machine only makes it longer, and a Match that
  // blocks behind the reader cannot pass: it returns only once the reader
  // has left, released after this wait or given up at kParkLimit.
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool done_while_parked = false;
  RecordingVisitor visitor;
  std::thread matcher([&] {
    ExpectOk(backend.Match({q.data(), q.size()}, false, &visitor));
    const bool parked = !parker.left();
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    done_while_parked = parked;
    cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, ParkingVisitor::kParkLimit - std::chrono::seconds(5),
                [&] { return done; });
  }
  parker.Release();  // lets every thread finish whatever happened
  matcher.join();
  reader.join();
  EXPECT_TRUE(done_while_parked)
      << "non-counting Match blocked behind a reader";
  EXPECT_EQ(visitor.blocks().size(), 2u);
}

TEST(AbslRwlockLockTest, CountingMatchWaitsForReaders) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1})));
  const std::vector<int64_t> q = {1};

  ParkingVisitor parker(/*continue_after_release=*/false);
  std::thread reader([&] {
    ExpectOk(backend.PrefixScan({q.data(), q.size()}, &parker));
  });
  ASSERT_TRUE(parker.WaitParked(std::chrono::seconds(10)));
  std::mutex mu;
  std::condition_variable cv;
  bool counted = false;
  std::thread counter([&] {
    CountingMatch(backend, q);
    std::lock_guard<std::mutex> lock(mu);
    counted = true;
    cv.notify_all();
  });
  // The counting match needs the lock exclusively, which it cannot get
  // while the reader is parked. This is a negative check: it waits a short
  // bounded time for something that must not happen (a wrong lock mode
  // makes it fail; a slow machine cannot make a correct backend fail).
  bool finished_early;
  {
    std::unique_lock<std::mutex> lock(mu);
    finished_early = cv.wait_for(lock, std::chrono::milliseconds(200),
                                 [&] { return counted; });
  }
  EXPECT_FALSE(finished_early) << "counting Match ran beside a reader";
  parker.Release();
  counter.join();
  reader.join();
  EXPECT_TRUE(counted);
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{1}));
}

TEST(AbslRwlockLockTest, ReadersSeeWholeBatchesOnly) {
  AbslRwlockBackend backend;
  // Each batch moves the worker's whole set of 64 hashes from one half of
  // the universe to the other; a reader must see exactly one half.
  std::vector<int64_t> low, high, all;
  for (int64_t h = 0; h < 64; ++h) low.push_back(h);
  for (int64_t h = 64; h < 128; ++h) high.push_back(h);
  all = low;
  all.insert(all.end(), high.begin(), high.end());
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, low)));
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    for (int i = 0; i < 300; ++i) {
      const auto& from = (i % 2 == 0) ? low : high;
      const auto& to = (i % 2 == 0) ? high : low;
      ExpectOk(
          Apply(backend,
                Batch("w1", "a1").Report(kTierHbm, to).Revoke(kTierHbm, from)));
    }
    stop = true;
  });
  int torn = 0;
  int reads = 0;
  while (!stop.load() || reads == 0) {
    size_t held = 0;
    for (const BlockRecordSeen& b : Scan(backend, all)) {
      held += b.placements.size();
    }
    if (held != 64) ++torn;
    ++reads;
  }
  writer.join();
  EXPECT_EQ(torn, 0) << "of " << reads << " reads";
}

// ---------------------------------------------------------------------------
// RemoveWorker (ABI 1.1).

TEST(AbslRwlockRemoveTest, RevokesEveryTierAndDeletesLoneBlocks) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1")
                              .Report(kTierHbm, {1, 2, 3})
                              .Report(kTierDram, {2, 4})
                              .Report(kTierSsd, {5})));
  ExpectOk(Apply(
      backend, Batch("w2", "a2").Report(kTierHbm, {3}).Report(kTierSsd, {4})));
  const std::vector<int64_t> all = {1, 2, 3, 4, 5};
  CountingMatch(backend, all);
  CountingMatch(backend, all);
  EXPECT_EQ(Remove(backend, "w1"), 1u);
  const std::vector<BlockRecordSeen> expected = {{0, 0, {}},
                                                 {1, 0, {}},
                                                 {2, 0, {{"w2", kTierHbm, 0}}},
                                                 {3, 0, {{"w2", kTierSsd, 0}}},
                                                 {4, 0, {}}};
  EXPECT_EQ(Scan(backend, all), expected);
  // Blocks w1 held alone went with their counters; shared ones kept theirs.
  EXPECT_EQ(Hits(backend, all), (std::vector<uint64_t>{0, 0, 2, 2, 0}));
  const BackendStats s = Stats(backend);
  EXPECT_EQ(s.blocks, 2u);
  EXPECT_EQ(s.placements, 2u);
  EXPECT_EQ(s.workers, 1u);
  EXPECT_EQ(s.hit_counters, 2u);
  // w2's CLEAR still finds exactly its own holdings.
  ExpectOk(Apply(backend, Batch("w2", "a2").Clear(kTierHbm).Clear(kTierSsd)));
  EXPECT_EQ(Stats(backend).blocks, 0u);
}

TEST(AbslRwlockRemoveTest, UnknownIdsAndRepeatsChangeNothing) {
  AbslRwlockBackend backend;
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, {1})));
  const BackendStats before = Stats(backend);
  EXPECT_EQ(Remove(backend, "nobody"), 0u);
  EXPECT_EQ(Remove(backend, ""), 0u);
  ExpectOk(backend.RemoveWorker({"w", 1}, nullptr));  // existed may be null
  const BackendStats after = Stats(backend);
  EXPECT_EQ(after.workers, before.workers);
  EXPECT_EQ(after.placements, before.placements);
  EXPECT_EQ(after.memory_bytes, before.memory_bytes);
  EXPECT_EQ(Remove(backend, "w1"), 1u);
  EXPECT_EQ(Remove(backend, "w1"), 0u);
  EXPECT_EQ(Stats(backend).workers, 0u);
  // A malformed view is refused and changes nothing.
  ExpectOk(Apply(backend, Batch("w2", "a2").Report(kTierHbm, {2})));
  uint32_t existed = 7;
  EXPECT_EQ(backend.RemoveWorker({nullptr, 3}, &existed).code,
            BackendCode::kInvalidArgument);
  EXPECT_EQ(existed, 0u);
  EXPECT_EQ(Stats(backend).workers, 1u);
}

TEST(AbslRwlockRemoveTest, NewWorkersTakeTheLowestFreeOrdinal) {
  AbslRwlockBackend backend;
  std::vector<int64_t> all;
  for (int w = 0; w < 10; ++w) {
    ExpectOk(
        Apply(backend,
              Batch("w" + std::to_string(w), "a").Report(kTierHbm, {100 + w})));
    all.push_back(100 + w);
  }
  std::map<std::string, uint32_t> ordinals = Ordinals(backend, all);
  for (int w = 0; w < 10; ++w) {
    EXPECT_EQ(ordinals["w" + std::to_string(w)], static_cast<uint32_t>(w));
  }
  // 9 and 8 come off the end; 5 and 2 leave holes.
  for (const char* id : {"w5", "w9", "w2", "w8"})
    EXPECT_EQ(Remove(backend, id), 1u);
  const std::vector<std::pair<std::string, uint32_t>> arrivals = {
      {"n0", 2}, {"n1", 5}, {"n2", 8}, {"n3", 9}, {"n4", 10}};
  for (size_t i = 0; i < arrivals.size(); ++i) {
    ExpectOk(Apply(backend, Batch(arrivals[i].first, "b" + std::to_string(i))
                                .Report(kTierDram, {200 + int64_t(i)})));
    all.push_back(200 + static_cast<int64_t>(i));
  }
  ordinals = Ordinals(backend, all);
  for (const auto& [id, ordinal] : arrivals) {
    EXPECT_EQ(ordinals[id], ordinal) << id;
  }
  EXPECT_EQ(ordinals.size(), 11u);
  EXPECT_EQ(Stats(backend).workers, 11u);
}

TEST(AbslRwlockRemoveTest, AReusedOrdinalCarriesTheNewWorker) {
  AbslRwlockBackend backend;
  const CacheSpec spec{1, kComponentFull, 0, 3, 0, 0};
  ExpectOk(Apply(backend,
                 Batch("old", "10.0.0.1:1").Spec(spec).Report(kTierHbm, {1})));
  ExpectOk(Apply(backend, Batch("keep", "10.0.0.2:1").Report(kTierHbm, {2})));
  EXPECT_EQ(Remove(backend, "old"), 1u);
  ExpectOk(Apply(backend, Batch("new", "10.0.0.3:1").Report(kTierHbm, {3})));
  const std::vector<int64_t> q = {1, 2, 3};
  EXPECT_EQ(Ordinals(backend, q),
            (std::map<std::string, uint32_t>{{"keep", 1}, {"new", 0}}));
  RecordingVisitor visitor;
  ExpectOk(backend.Match({q.data(), q.size()}, false, &visitor));
  visitor.ExpectProtocolHeld();
  EXPECT_EQ(visitor.worker("new").address, "10.0.0.3:1");
  EXPECT_EQ(visitor.worker("new").has_cache_spec, 0u);
  const std::vector<BlockRecordSeen> expected = {
      {0, 0, {}},
      {1, 0, {{"keep", kTierHbm, 0}}},
      {2, 0, {{"new", kTierHbm, 0}}}};
  EXPECT_EQ(visitor.blocks(), expected);
}

TEST(AbslRwlockRemoveTest, ReAddedWorkerStartsEmpty) {
  AbslRwlockBackend backend;
  const CacheSpec spec{1, kComponentFull, 0, 3, 0, 0};
  ExpectOk(Apply(
      backend,
      Batch("w1", "first").Spec(spec).Report(kTierHbm, {1, 2}, {}, {16, 16})));
  CountingMatch(backend, {1, 2});
  EXPECT_EQ(Remove(backend, "w1"), 1u);
  ExpectOk(Apply(backend, Batch("w1", "second").Report(kTierDram, {3})));
  RecordingVisitor visitor;
  const std::vector<int64_t> q = {1, 2, 3};
  ExpectOk(backend.Match({q.data(), q.size()}, false, &visitor));
  const std::vector<BlockRecordSeen> expected = {
      {0, 0, {}}, {1, 0, {}}, {2, 0, {{"w1", kTierDram, 0}}}};
  EXPECT_EQ(visitor.blocks(), expected);
  EXPECT_EQ(visitor.worker("w1").address, "second");
  EXPECT_EQ(visitor.worker("w1").has_cache_spec, 0u);
  EXPECT_EQ(Hits(backend, q), (std::vector<uint64_t>{0, 0, 0}));
  // Its CLEAR finds only what it reported since.
  ExpectOk(Apply(backend, Batch("w1", "second").Clear(kTierHbm)));
  EXPECT_EQ(Stats(backend).placements, 1u);
}

TEST(AbslRwlockRemoveTest, ConcurrentReadersSeeAWorkerWholeOrNotAtAll) {
  AbslRwlockBackend backend;
  const std::vector<int64_t> set = {1, 2, 3, 4, 5, 6, 7, 8};
  ExpectOk(Apply(backend, Batch("anchor", "a").Report(kTierHbm, {1})));
  const auto add = [&] {
    ExpectOk(Apply(
        backend,
        Batch("churn", "c").Report(kTierHbm, set).Report(kTierDram, set)));
  };
  add();
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0};
  std::thread writer([&] {
    for (int i = 0; i < 2000 || reads.load() < 200; ++i) {
      if (i >= 200000) break;
      Remove(backend, "churn");
      add();
    }
    stop.store(true);
  });
  int torn = 0;
  while (!stop.load() || reads.load() == 0) {
    size_t held = 0;
    for (const BlockRecordSeen& b : Scan(backend, set)) {
      held += b.placements.size();
    }
    // The anchor's placement plus all 16 of churn's, or the anchor alone.
    if (held != 1 && held != 17) ++torn;
    reads.fetch_add(1);
  }
  writer.join();
  EXPECT_EQ(torn, 0) << "of " << reads.load() << " reads";
}

// ---------------------------------------------------------------------------
// All or nothing under allocation failure.

struct Snapshot {
  std::vector<BlockRecordSeen> blocks;
  std::vector<uint64_t> hits;
  uint64_t block_count, placements, workers, hit_counters;
  std::vector<std::string> addresses;
  friend bool operator==(const Snapshot&, const Snapshot&) = default;
};

Snapshot Take(AbslRwlockBackend& backend, const std::vector<int64_t>& universe,
              const std::vector<std::string>& worker_ids) {
  Snapshot snap;
  RecordingVisitor visitor;
  ExpectOk(backend.PrefixScan({universe.data(), universe.size()}, &visitor));
  snap.blocks = visitor.blocks();
  snap.hits = Hits(backend, universe);
  const BackendStats s = Stats(backend);
  snap.block_count = s.blocks;
  snap.placements = s.placements;
  snap.workers = s.workers;
  snap.hit_counters = s.hit_counters;
  // Addresses of workers that hold something, via a match on everything.
  for (const std::string& id : worker_ids) {
    bool announced = false;
    for (const BlockRecordSeen& b : snap.blocks) {
      for (const PlacementRecord& p : b.placements) announced |= p.worker == id;
    }
    snap.addresses.push_back(announced ? visitor.worker(id).address : "-");
  }
  return snap;
}

TEST(AbslRwlockFailureTest, AFailedApplyLeavesNoTrace) {
  // A random workload; before each batch, the batch is first tried with the
  // Nth allocation failing for N = 0, 1, 2, ... until it succeeds. Every
  // failed try must leave the observable state exactly as it was.
  const uint64_t seed = 20261130;
  std::mt19937_64 rng(seed);
  std::vector<int64_t> universe;
  for (int64_t h = -20; h < 40; ++h) universe.push_back(h);
  const std::vector<std::string> ids = {"w0", "w1", "w2",
                                        "a-worker-id-long-"
                                        "enough-to-spill"};
  AbslRwlockBackend backend;
  int failed_tries = 0;
  for (int round = 0; round < 60; ++round) {
    const std::string& id = ids[rng() % ids.size()];
    const std::string address = "addr-" + std::to_string(round) +
                                "-long-enough-to-leave-small-string-buffer";
    Batch batch(id, address);
    const int n_actions = 1 + static_cast<int>(rng() % 4);
    for (int a = 0; a < n_actions; ++a) {
      const uint32_t tier = 1 + static_cast<uint32_t>(rng() % 3);
      const int kind = static_cast<int>(rng() % 6);
      std::vector<int64_t> hashes;
      const int n = 1 + static_cast<int>(rng() % 12);
      for (int i = 0; i < n; ++i) {
        const int64_t h = universe[rng() % universe.size()];
        if (std::find(hashes.begin(), hashes.end(), h) == hashes.end()) {
          hashes.push_back(h);
        }
      }
      if (kind <= 2) {
        std::vector<uint32_t> masks, sizes;
        for (size_t i = 0; i < hashes.size(); ++i) {
          masks.push_back(static_cast<uint32_t>(rng() % 8));
          sizes.push_back(static_cast<uint32_t>(rng() % 3) * 16);
        }
        batch.Report(tier, hashes, masks, sizes);
      } else if (kind <= 4) {
        batch.Revoke(tier, hashes);
      } else {
        batch.Clear(tier);
      }
    }
    if (rng() % 3 == 0) CountingMatch(backend, universe);
    // Removals free ordinals, so that later batches of new workers take the
    // reuse path of the registry, and undo it when they fail.
    if (rng() % 4 == 0) Remove(backend, ids[rng() % ids.size()]);
    const Snapshot before = Take(backend, universe, ids);
    for (int64_t fail_at = 0;; ++fail_at) {
      // The view is built before arming, so only Apply's own allocations
      // count.
      const test_support::BatchView view(batch);
      t_fail_countdown = fail_at;
      const BackendStatus status = backend.Apply(view.view());
      const bool injected = t_fail_countdown == -1;
      t_fail_countdown = -1;
      if (status.code == BackendCode::kOk) {
        ASSERT_FALSE(injected) << "an allocation failed but Apply said OK";
        break;
      }
      ASSERT_EQ(status.code, BackendCode::kResourceExhausted) << status.message;
      ++failed_tries;
      ASSERT_EQ(Take(backend, universe, ids), before)
          << "seed " << seed << " round " << round << " fail_at " << fail_at;
    }
  }
  EXPECT_GT(failed_tries, 60);  // the injection did reach Apply
}

TEST(AbslRwlockFailureTest, AFailedCountingMatchCountsNothing) {
  AbslRwlockBackend backend;
  std::vector<int64_t> hashes;
  for (int64_t h = 0; h < 100; ++h) hashes.push_back(h);
  ExpectOk(Apply(backend, Batch("w1", "a1").Report(kTierHbm, hashes)));
  RecordingVisitor visitor;
  t_fail_countdown = 0;
  const BackendStatus status =
      backend.Match({hashes.data(), hashes.size()}, true, &visitor);
  t_fail_countdown = -1;
  EXPECT_EQ(status.code, BackendCode::kResourceExhausted);
  EXPECT_EQ(Stats(backend).hit_counters, 0u);
  EXPECT_TRUE(visitor.blocks().empty());
}

TEST(AbslRwlockFailureTest, AFailedRemovalRemovesNothing) {
  // Each try runs on a fresh backend with the same content, with the Nth
  // allocation of RemoveWorker failing, N = 0, 1, ... until none fails. Only
  // the room for the freed ordinal is needed: when it cannot be had the
  // call fails and the state is as it was. The rebuilds of tables the
  // removal left sparse are optional: a failed one leaves a whole removal.
  const std::vector<std::string> ids = {"w0", "w1", "w2", "w3"};
  std::vector<int64_t> universe = Range(0, 2000);
  for (int w = 1; w < 4; ++w) {
    const std::vector<int64_t> own = Range(5000 * w, 50);
    universe.insert(universe.end(), own.begin(), own.end());
  }
  const auto fill = [&](AbslRwlockBackend& backend) {
    ExpectOk(Apply(backend, Batch("w0", "a").Report(kTierHbm, Range(0, 2000))));
    for (int w = 1; w < 4; ++w) {
      ExpectOk(Apply(backend, Batch(ids[w], "a")
                                  .Report(kTierHbm, Range(0, 10))
                                  .Report(kTierDram, Range(5000 * w, 50))));
    }
    CountingMatch(backend, universe);
  };
  AbslRwlockBackend reference;
  fill(reference);
  const Snapshot before = Take(reference, universe, ids);
  EXPECT_EQ(Remove(reference, "w0"), 1u);
  const Snapshot removed = Take(reference, universe, ids);
  ASSERT_NE(before, removed);
  int failed_calls = 0;
  int failed_rebuilds = 0;
  for (int64_t fail_at = 0;; ++fail_at) {
    AbslRwlockBackend backend;
    fill(backend);
    uint32_t existed = 7;
    t_fail_countdown = fail_at;
    const BackendStatus status = backend.RemoveWorker({"w0", 2}, &existed);
    const bool injected = t_fail_countdown == -1;
    t_fail_countdown = -1;
    if (status.code == BackendCode::kOk) {
      EXPECT_EQ(existed, 1u);
      EXPECT_EQ(Take(backend, universe, ids), removed) << "fail_at " << fail_at;
      if (injected) ++failed_rebuilds;
    } else {
      ASSERT_EQ(status.code, BackendCode::kResourceExhausted) << status.message;
      EXPECT_EQ(existed, 0u);
      EXPECT_EQ(Take(backend, universe, ids), before) << "fail_at " << fail_at;
      ++failed_calls;
    }
    if (!injected) break;
  }
  EXPECT_EQ(failed_calls, 1);     // the free list's room
  EXPECT_GE(failed_rebuilds, 2);  // the block and hit counter tables
}

// ---------------------------------------------------------------------------
// Memory accounting.

TEST(AbslRwlockMemoryTest, AccountingTracksTheHeap) {
  // Compares memory_bytes with what operator new actually handed out to the
  // backend, for a typical population: most blocks on one (worker, tier),
  // some shared by several workers and tiers.
  const int64_t heap_before = g_live_bytes.load();
  auto* backend = new AbslRwlockBackend();
  constexpr int kWorkers = 8;
  constexpr int64_t kBlocksPerWorker = 25000;
  for (int w = 0; w < kWorkers; ++w) {
    const std::string id = "worker-" + std::to_string(w);
    for (int64_t start = 0; start < kBlocksPerWorker; start += 4096) {
      std::vector<int64_t> hashes;
      for (int64_t h = start; h < std::min(start + 4096, kBlocksPerWorker);
           ++h) {
        // Blocks below 2000 are shared by every worker; the rest are
        // private.
        hashes.push_back(h < 2000 ? h : w * kBlocksPerWorker + h);
      }
      ExpectOk(Apply(*backend, Batch(id, "10.0.0." + std::to_string(w) + ":1")
                                   .Report(kTierHbm, hashes)
                                   .Report(kTierDram, {hashes[0]})));
    }
  }
  const BackendStats s = Stats(*backend);
  const int64_t heap = g_live_bytes.load() - heap_before;
  const double ratio =
      static_cast<double>(s.memory_bytes) / static_cast<double>(heap);
  printf(
      "[ memory   ] %llu blocks, %llu placements: accounted %llu B, heap "
      "%lld B, %.1f B/placement\n",
      static_cast<unsigned long long>(s.blocks),
      static_cast<unsigned long long>(s.placements),
      static_cast<unsigned long long>(s.memory_bytes),
      static_cast<long long>(heap),
      static_cast<double>(heap) / static_cast<double>(s.placements));
  EXPECT_GT(ratio, 0.95);
  EXPECT_LT(ratio, 1.05);

  // Revoking everything gives the holdings and spilled lists back; the block
  // table keeps its capacity (abseil tables do not shrink on erase).
  for (int w = 0; w < kWorkers; ++w) {
    const std::string id = "worker-" + std::to_string(w);
    ExpectOk(Apply(*backend, Batch(id, "").Clear(kTierHbm).Clear(kTierDram)));
  }
  const BackendStats after = Stats(*backend);
  EXPECT_EQ(after.placements, 0u);
  const int64_t heap_after = g_live_bytes.load() - heap_before;
  EXPECT_NEAR(static_cast<double>(after.memory_bytes),
              static_cast<double>(heap_after), 0.05 * heap_after);
  delete backend;
  EXPECT_EQ(g_live_bytes.load(), heap_before);  // nothing leaked
  RecordProperty("placements", std::to_string(s.placements));
  RecordProperty("memory_bytes", std::to_string(s.memory_bytes));
  RecordProperty("heap_bytes", std::to_string(heap));
}

TEST(AbslRwlockMemoryTest, RemovingWorkersGivesTheMemoryBack) {
  // 16 workers, each with private blocks at two tiers and a share of common
  // ones. Removing half of them must give back about half of what the
  // placements cost, in the accounting and in the real heap; removing the
  // rest must leave about what an empty backend holds.
  const int64_t heap_before = g_live_bytes.load();
  auto* backend = new AbslRwlockBackend();
  const uint64_t empty = Stats(*backend).memory_bytes;
  constexpr int kWorkers = 16;
  constexpr int64_t kBlocksPerWorker = 4000;
  const auto id = [](int w) { return "worker-id-" + std::to_string(w); };
  for (int w = 0; w < kWorkers; ++w) {
    std::vector<int64_t> hashes;
    for (int64_t h = 0; h < kBlocksPerWorker; ++h) {
      hashes.push_back(h < 500 ? h : w * kBlocksPerWorker + h);
    }
    // In batches of 1000, so that Apply's reusable buffers stay small.
    for (size_t start = 0; start < hashes.size(); start += 1000) {
      const std::vector<int64_t> part(
          hashes.begin() + static_cast<ptrdiff_t>(start),
          hashes.begin() + static_cast<ptrdiff_t>(start + 1000));
      ExpectOk(
          Apply(*backend, Batch(id(w), "10.0.0." + std::to_string(w) + ":1")
                              .Report(kTierHbm, part)));
    }
    ExpectOk(Apply(*backend, Batch(id(w), "10.0.0." + std::to_string(w) + ":1")
                                 .Report(kTierDram, {hashes.back()})));
    CountingMatch(*backend, {hashes.back()});
  }
  const BackendStats full = Stats(*backend);
  const int64_t heap_full = g_live_bytes.load() - heap_before;
  for (int w = 0; w < kWorkers; w += 2) EXPECT_EQ(Remove(*backend, id(w)), 1u);
  const BackendStats half = Stats(*backend);
  const int64_t heap_half = g_live_bytes.load() - heap_before;
  EXPECT_EQ(half.workers, kWorkers / 2u);
  EXPECT_EQ(half.placements, full.placements / 2);
  EXPECT_EQ(half.hit_counters, kWorkers / 2u);
  // The accounting still matches the heap, and both fell by at least a
  // third (the tables rebuilt smaller may sit anywhere from 5/16 to 5/8
  // full, so exactly half is not to be expected).
  EXPECT_NEAR(static_cast<double>(half.memory_bytes),
              static_cast<double>(heap_half), 0.05 * heap_half);
  EXPECT_LT(half.memory_bytes, full.memory_bytes * 2 / 3);
  EXPECT_LT(heap_half, heap_full * 2 / 3);
  printf("[ memory   ] %d workers: %llu B; after removing half: %llu B\n",
         kWorkers, static_cast<unsigned long long>(full.memory_bytes),
         static_cast<unsigned long long>(half.memory_bytes));
  for (int w = 1; w < kWorkers; w += 2) EXPECT_EQ(Remove(*backend, id(w)), 1u);
  const BackendStats none = Stats(*backend);
  EXPECT_EQ(none.workers, 0u);
  EXPECT_EQ(none.blocks, 0u);
  EXPECT_EQ(none.hit_counters, 0u);
  // What is left is the empty backend and Apply's reusable buffers (a few
  // thousand journal entries).
  EXPECT_LT(none.memory_bytes, empty + full.memory_bytes / 20);
  EXPECT_NEAR(static_cast<double>(none.memory_bytes),
              static_cast<double>(g_live_bytes.load() - heap_before), 64);
  delete backend;
  EXPECT_EQ(g_live_bytes.load(), heap_before);
}

}  // namespace
}  // namespace kvindexer::absl_rwlock
