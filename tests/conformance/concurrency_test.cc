// Snapshot isolation under concurrency (backend.h "Thread safety",
// docs/contract.md, "State model > Consistency"; behaviour 45 of
// "Reference behaviours"). Writers move their worker between two
// complete hash sets in single batches while readers check that they only
// ever observe whole batches. Bounded iterations, no sleeps; meant to run
// under ThreadSanitizer as well.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "tests/support/parking_visitor.h"

namespace kvindexer::conformance {
namespace concurrency_test {
namespace {

class ConcurrencyTest : public ConformanceTest {};
KVINDEXER_INSTANTIATE_CONFORMANCE(ConcurrencyTest);

constexpr int kWriters = 2;
constexpr int kReaders = 2;
constexpr int kMinBatchesPerWriter = 1000;
constexpr int kMaxBatchesPerWriter = 200000;
constexpr long kMinReaderRounds = 1500;
constexpr int64_t kSetSize = 24;
constexpr long kMaxReaderRounds = 1000000;

// Writer k's two hash sets: generation g holds set (g % 2).
Hashes SetOf(int writer, int which) {
  return Range(writer * 100000 + which * 1000, kSetSize);
}
std::string WorkerOf(int writer) { return absl::StrCat("writer-", writer); }

// Generation g of writer k: exactly SetOf(k, g % 2) at HBM, every block
// sized g + 1. Tokens identify the generation; the parity identifies the set.
v1::ApplyExternalKvBatchRequest Generation(int writer, int g) {
  return Batch(WorkerOf(writer), absl::StrCat("10.1.0.", writer, ":1"))
      .Clear(kTierHbm)
      .Report(kTierHbm, SetOf(writer, g % 2), {},
              Masks(kSetSize, static_cast<uint32_t>(g + 1)));
}

// True when the response has no entry, or one equal count per set hash.
bool WholeCounters(const v1::GetExternalKvHitCountsResponse& hits) {
  if (hits.entries_size() == 0) return true;
  if (hits.entries_size() != kSetSize) return false;
  for (const auto& e : hits.entries()) {
    if (e.hit_count_total() != At(hits.entries(), 0).hit_count_total())
      return false;
  }
  return true;
}

TEST_P(ConcurrencyTest, ReadersOnlyEverSeeWholeBatches) {
  for (int k = 0; k < kWriters; ++k) ApplyOk(Generation(k, 0));

  Hashes all;
  for (int k = 0; k < kWriters; ++k) {
    for (int which = 0; which < 2; ++which) {
      const Hashes s = SetOf(k, which);
      all.insert(all.end(), s.begin(), s.end());
    }
  }

  std::atomic<int> writers_left{kWriters};
  std::atomic<long> violations{0};
  std::mutex first_violation_mu;
  std::string first_violation;
  const auto report = [&](const std::string& what) {
    if (violations.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> lock(first_violation_mu);
      first_violation = what;
    }
  };

  // Everyone starts together; writers keep going until the readers have
  // done enough rounds, so reads and writes really overlap.
  std::latch start(kWriters + kReaders);
  std::atomic<long> reads{0};
  int last_generation[kWriters] = {};
  std::vector<std::thread> threads;
  for (int k = 0; k < kWriters; ++k) {
    threads.emplace_back([&, k] {
      start.arrive_and_wait();
      int g = 1;
      for (; g <= kMaxBatchesPerWriter; ++g) {
        v1::ApplyExternalKvBatchResponse resp;
        const absl::Status s =
            indexer().operations().Apply(Generation(k, g), &resp).Wait();
        if (!s.ok()) report(absl::StrCat("apply failed: ", s.ToString()));
        if (g >= kMinBatchesPerWriter &&
            reads.load() >= kMinReaderRounds * kReaders) {
          break;
        }
      }
      last_generation[k] = std::min(g, kMaxBatchesPerWriter);
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      start.arrive_and_wait();
      for (long round = 0; round < kMaxReaderRounds && writers_left.load() > 0;
           ++round) {
        const int k = static_cast<int>(round % kWriters);
        // 1. A non-counting match over every set: each writer holds exactly
        //    one complete set, all of one generation.
        v1::MatchExternalKvResponse match;
        if (!indexer().operations().Match(MatchRequest(all), &match).ok()) {
          report("match failed");
        }
        if (match.matches_size() != kWriters) {
          report(absl::StrCat("expected every writer listed: ", Text(match)));
        }
        for (const auto& m : match.matches()) {
          if (m.hashes_by_tier_size() != 1) {
            report(absl::StrCat("torn tiers: ", Text(m)));
            continue;
          }
          const auto& t = At(m.hashes_by_tier(), 0);
          const int writer = std::stoi(m.worker_id().substr(7));
          const uint32_t size =
              t.block_sizes_size() > 0 ? At(t.block_sizes(), 0) : 0;
          const Hashes want = SetOf(writer, static_cast<int>((size - 1) % 2));
          bool whole = Hashes(t.hashes().begin(), t.hashes().end()) == want;
          for (uint32_t s : t.block_sizes()) whole = whole && s == size;
          if (!whole) report(absl::StrCat("torn batch seen: ", Text(m)));
        }
        // 2. A prefix query over set 0: the whole set or nothing.
        v1::MatchExternalKvPrefixResponse prefix;
        if (!MatchPrefix(indexer().operations(), PrefixRequest(SetOf(k, 0)),
                         &prefix)
                 .ok()) {
          report("prefix failed");
        }
        if (prefix.best_prefix_blocks() != 0 &&
            prefix.best_prefix_blocks() != kSetSize) {
          report(absl::StrCat("torn prefix: ", Text(prefix)));
        }
        // 3. Counting a set, then reading its counters: every counter of a
        //    set is created, raised and deleted together, so against applies
        //    they are all equal or all absent. Only reader 0 touches
        //    counters here; concurrent counting is the next test's subject.
        if (r == 0) {
          v1::MatchExternalKvResponse counted;
          if (!indexer()
                   .operations()
                   .Match(MatchRequest(SetOf(k, 1), true), &counted)
                   .ok()) {
            report("counting match failed");
          }
          v1::GetExternalKvHitCountsResponse hits;
          if (!indexer()
                   .operations()
                   .HitCounts(HitCountsRequest(SetOf(k, 1)), &hits)
                   .ok()) {
            report("hit counts failed");
          }
          if (!WholeCounters(hits)) {
            report(absl::StrCat("torn counters against applies: ", Text(hits)));
          }
        }
        reads.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(violations.load(), 0) << "first: " << first_violation;
  EXPECT_GE(reads.load(), kMinReaderRounds * kReaders);
  // The final state is the last generation of every writer.
  for (int k = 0; k < kWriters; ++k) {
    const int g = last_generation[k];
    const auto resp = Match(SetOf(k, g % 2));
    ASSERT_EQ(resp.matches_size(), 1);
    EXPECT_EQ(At(At(resp.matches(), 0).hashes_by_tier(), 0).hashes_size(),
              kSetSize);
    EXPECT_EQ(
        At(At(At(resp.matches(), 0).hashes_by_tier(), 0).block_sizes(), 0),
        static_cast<uint32_t>(g + 1));
    EXPECT_EQ(Match(SetOf(k, (g + 1) % 2)).matches_size(), 0);
  }
}

// A counting match is one atomic step for every reader too (docs/contract.md,
// "State model > Consistency":
// it runs under the exclusive lock, and every query sees one consistent
// snapshot): a concurrent GetExternalKvHitCounts never sees it half done.
TEST_P(ConcurrencyTest, CountingMatchIsAtomicForConcurrentReaders) {
  const Hashes set = SetOf(0, 1);
  ApplyOk(Batch(WorkerOf(0), "a").Report(kTierHbm, set));
  // The counter keeps counting until the reader has looked often enough.
  constexpr int kMinCountingMatches = 1000;
  constexpr int kMaxCountingMatches = 200000;
  constexpr long kMinReads = 1000;
  std::latch start(2);
  std::atomic<bool> counting_done{false};
  std::atomic<long> reads{0};
  int matches = 0;
  std::thread counter([&] {
    start.arrive_and_wait();
    while (matches < kMaxCountingMatches &&
           (matches < kMinCountingMatches || reads.load() < kMinReads)) {
      v1::MatchExternalKvResponse resp;
      if (!indexer().operations().Match(MatchRequest(set, true), &resp).ok())
        break;
      ++matches;
    }
    counting_done.store(true);
  });
  long torn = 0;
  std::string first_torn;
  start.arrive_and_wait();
  while (reads.load() < kMaxReaderRounds && !counting_done.load()) {
    v1::GetExternalKvHitCountsResponse hits;
    if (!indexer().operations().HitCounts(HitCountsRequest(set), &hits).ok())
      break;
    if (!WholeCounters(hits) && torn++ == 0) first_torn = Text(hits);
    reads.fetch_add(1);
  }
  counter.join();
  EXPECT_EQ(torn, 0) << "a half-done counting match was visible; "
                     << "first: " << first_torn;
  EXPECT_GE(reads.load(), kMinReads);
  EXPECT_EQ(Hits({set.front()}),
            (std::map<int64_t, uint64_t>{
                {set.front(), static_cast<uint64_t>(matches)}}));
}

// Holds a PrefixScan inside OnBlock until released.
class CountingVisitor final : public BlockVisitor {
 public:
  void OnWorker(const WorkerView&) noexcept override { ++workers; }
  bool OnBlock(const BlockView& block) noexcept override {
    ++blocks;
    placements += block.placement_count;
    return true;
  }
  int workers = 0;
  int blocks = 0;
  size_t placements = 0;
};

// Behaviour 45: shared readers do not wait for one another.
TEST_P(ConcurrencyTest, ReadsCompleteWhileAPrefixScanIsHeld) {
  ApplyOk(Batch("w", "a").Report(kTierHbm, {1, 2, 3}));
  const int64_t hashes[] = {1, 2, 3};
  const HashSpan span{hashes, 3};

  test_support::ParkingVisitor blocker;
  BackendStatus scan_status{};
  std::thread scanner(
      [&] { scan_status = backend()->PrefixScan(span, &blocker); });
  const bool entered = blocker.WaitParked();

  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  CountingVisitor visitor;
  BackendStatus match_status{};
  BackendStatus hits_status{};
  uint64_t counts[3] = {};
  bool scan_still_parked = false;
  std::thread reader([&] {
    match_status = backend()->Match(span, /*count_as_hit=*/false, &visitor);
    hits_status = backend()->HitCounts(span, counts);
    // The order is what counts: both reads returned before the scan left
    // its visitor.
    scan_still_parked = !blocker.left();
    std::lock_guard<std::mutex> lock(mu);
    done = true;
    cv.notify_all();
  });
  // A reader that waits for the scan finishes once the parked OnBlock gives
  // up (kParkLimit); this bound only keeps a hang from outliving that.
  bool completed;
  {
    std::unique_lock<std::mutex> lock(mu);
    completed = cv.wait_for(
        lock,
        test_support::ParkingVisitor::kParkLimit + std::chrono::seconds(10),
        [&] { return done; });
  }
  blocker.Release();
  reader.join();
  scanner.join();

  ASSERT_TRUE(entered) << "PrefixScan never called OnBlock";
  EXPECT_TRUE(completed && scan_still_parked)
      << "a non-counting Match or HitCounts waited for a PrefixScan held "
         "inside its visitor";
  EXPECT_EQ(scan_status.code, BackendCode::kOk) << scan_status.message;
  EXPECT_EQ(match_status.code, BackendCode::kOk) << match_status.message;
  EXPECT_EQ(hits_status.code, BackendCode::kOk) << hits_status.message;
  EXPECT_EQ(visitor.blocks, 3);
  EXPECT_EQ(visitor.workers, 1);
  EXPECT_EQ(visitor.placements, 3u);
}

}  // namespace
}  // namespace concurrency_test
}  // namespace kvindexer::conformance
