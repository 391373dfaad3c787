// RemoveWorker against concurrent readers (ABI 1.1, include/kvindexer/
// backend.h: "A concurrent reader sees the worker with all of its placements
// or not at all"; docs/backend-abi.md, "ABI 1.1: removing a worker").
//
// The churn workload: an anchor worker that is never removed, and kSlots
// slots whose worker is removed and replaced by the slot's next generation
// over and over. Generation g of slot k is worker "churn-<k>-<g>"; it holds
// Set(k, g % 2) and the shared anchor block, each at HBM and DRAM. So a
// replacement gets a different id and the other set, and, in a backend that
// reuses the lowest free ordinal, the ordinal its predecessor had.
//
// Readers audit every Match and PrefixScan snapshot (ChurnAudit): each
// placement's ordinal must be announced, as a worker that holds exactly that
// block at that tier under the workload; each announced churn worker must be
// seen with all of its placements; no slot may show two generations. A
// removal that readers can see half done, or a freed ordinal still announced
// under the removed worker's id, fails it; the plain tests at the end show
// the audit catching both on hand-made snapshots and on ModelBackend's
// deliberately torn removal. Bounded loops, no sleeps; meaningful under
// ThreadSanitizer too.
#include <atomic>
#include <cstdint>
#include <latch>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "conformance_fixture.h"
#include "recording_visitor.h"
#include "remove_worker_fixture.h"
#include "tests/support/model_backend.h"

namespace kvindexer::conformance {
namespace remove_worker_concurrency_test {
namespace {

constexpr int kSlots = 3;
constexpr int64_t kSetSize = 6;
constexpr int64_t kAnchor = 7;
constexpr char kAnchorWorker[] = "anchor";
// Placements of one churn worker: its set and the anchor, at two tiers.
constexpr uint64_t kChurnPlacements = (kSetSize + 1) * 2;

Hashes Set(int slot, int parity) {
  return Range(1000 * (slot + 1) + 100 * parity, kSetSize);
}
std::string ChurnId(int slot, int generation) {
  return absl::StrCat("churn-", slot, "-", generation);
}
Batch ChurnBatch(int slot, int generation) {
  Hashes held = Set(slot, generation % 2);
  held.push_back(kAnchor);
  return Batch(ChurnId(slot, generation), absl::StrCat("10.2.0.", slot, ":1"))
      .Report(kTierHbm, held)
      .Report(kTierDram, held);
}
// Every hash the workload ever holds, the anchor first.
Hashes ChurnHashes() {
  Hashes all = {kAnchor};
  for (int k = 0; k < kSlots; ++k) {
    for (int parity = 0; parity < 2; ++parity) {
      const Hashes s = Set(k, parity);
      all.insert(all.end(), s.begin(), s.end());
    }
  }
  return all;
}

// Checks one snapshot of ChurnHashes() (a Match or PrefixScan that visited
// every hash). Returns an empty string when it is a possible state of the
// workload, else what is wrong with it.
std::string ChurnAudit(const Hashes& hashes, const RecordingVisitor& v) {
  if (auto announced = v.WorkersAnnouncedFirst(); !announced) {
    return announced.message();
  }
  const std::map<uint32_t, std::string> names = v.Announced();
  std::map<std::string, uint64_t> seen;  // churn id -> placements
  std::map<int, std::string> generation_of_slot;
  bool anchor_held = false;
  for (const RecordingVisitor::Event* b : v.Blocks()) {
    if (b->index >= hashes.size()) return "block index out of range";
    const int64_t hash = hashes[b->index];
    for (const Placement& p : b->placements) {
      const std::string& id = names.at(p.worker);
      const std::string where =
          absl::StrCat("ordinal ", p.worker, " announced as ", id,
                       " has a placement on hash ", hash, " at tier ", p.tier);
      if (id == kAnchorWorker) {
        if (hash != kAnchor || p.tier != kTierHbm) return where;
        anchor_held = true;
        continue;
      }
      const std::vector<std::string> parts = absl::StrSplit(id, '-');
      int slot = -1, generation = -1;
      if (parts.size() != 3 || parts[0] != "churn" ||
          !absl::SimpleAtoi(parts[1], &slot) ||
          !absl::SimpleAtoi(parts[2], &generation)) {
        return absl::StrCat(where, ": no such worker in the workload");
      }
      const Hashes set = Set(slot, generation % 2);
      const bool holds =
          hash == kAnchor || (hash >= set.front() && hash <= set.back());
      if (!holds || (p.tier != kTierHbm && p.tier != kTierDram)) {
        return absl::StrCat(where, ", which that worker never held");
      }
      ++seen[id];
      auto [it, fresh] = generation_of_slot.emplace(slot, id);
      if (!fresh && it->second != id) {
        return absl::StrCat(
            "slot ", slot, " shows two generations: ", it->second, " and ", id);
      }
    }
  }
  for (const auto& [id, count] : seen) {
    if (count != kChurnPlacements) {
      return absl::StrCat(id, " seen with ", count, " of its ",
                          kChurnPlacements,
                          " placements: a removal or apply seen half done");
    }
  }
  if (!anchor_held) return "the anchor worker's placement is missing";
  return "";
}

// The churn workload run by one writer and kReaders readers on any backend.
// Thread safety: Run and the accessors are for one thread; Run starts and
// joins the others.
class ChurnRace {
 public:
  static constexpr int kReaders = 2;

  // REQUIRES: `backend` outlives the race and is ABI 1.1.
  explicit ChurnRace(IndexBackend* backend) : backend_(backend) {}

  // Applies the anchor and generation 0 of every slot; false on failure.
  bool Populate() {
    bool ok =
        Apply(Batch(kAnchorWorker, "10.2.0.9:1").Report(kTierHbm, {kAnchor}));
    for (int k = 0; k < kSlots; ++k) ok = Apply(ChurnBatch(k, 0)) && ok;
    return ok;
  }

  // The writer replaces slot (cycle % kSlots) each cycle, for at least
  // `min_cycles` cycles and until the readers have made `min_reads` reads
  // each (bounded by kMaxCycles and kMaxReads); the readers audit a
  // PrefixScan or a Match (reader 1 counting now and then) each round.
  void Run(int min_cycles, long min_reads) {
    std::latch start(1 + kReaders);
    std::atomic<bool> writer_done{false};
    std::vector<std::thread> threads;
    threads.emplace_back([&] {
      start.arrive_and_wait();
      for (; cycles_ < kMaxCycles; ++cycles_) {
        if (cycles_ >= min_cycles && reads_.load() >= min_reads * kReaders) {
          break;
        }
        const int k = cycles_ % kSlots;
        const std::string id = ChurnId(k, generation_[k]);
        uint32_t existed = 7;
        const BackendStatus s =
            backend_->RemoveWorker(StringView{id.data(), id.size()}, &existed);
        if (s.code != BackendCode::kOk || existed != 1) {
          Report(absl::StrCat("removing ", id, ": code ",
                              static_cast<int>(s.code), " ", s.message,
                              ", existed ", existed));
        }
        ++generation_[k];
        Apply(ChurnBatch(k, generation_[k]));
      }
      writer_done.store(true);
    });
    for (int r = 0; r < kReaders; ++r) {
      threads.emplace_back([&, r] {
        start.arrive_and_wait();
        const Hashes hashes = ChurnHashes();
        const HashSpan span{hashes.data(), hashes.size()};
        for (long round = 0; round < kMaxReads && !writer_done.load();
             ++round) {
          RecordingVisitor v;
          // A counting Match is an exclusive step in some backends; it
          // must see whole removals all the same.
          const bool scan = round % 2 == 0;
          const bool counting = r == 1 && round % 8 == 1;
          const BackendStatus s = scan ? backend_->PrefixScan(span, &v)
                                       : backend_->Match(span, counting, &v);
          if (s.code != BackendCode::kOk) Report(s.message);
          const std::string audit = ChurnAudit(hashes, v);
          if (!audit.empty()) {
            Report(absl::StrCat(scan ? "PrefixScan" : "Match", ": ", audit));
          }
          reads_.fetch_add(1);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }

  long violations() const { return violations_.load(); }
  std::string first_violation() {
    std::lock_guard<std::mutex> lock(first_mu_);
    return first_;
  }
  int cycles() const { return cycles_; }
  long reads() const { return reads_.load(); }
  int generation(int slot) const { return generation_[slot]; }

 private:
  static constexpr int kMaxCycles = 100000;
  static constexpr long kMaxReads = 1000000;

  bool Apply(const Batch& batch) {
    const test_support::BatchView view(batch);
    const BackendStatus s = backend_->Apply(view.view());
    if (s.code != BackendCode::kOk) Report(s.message);
    return s.code == BackendCode::kOk;
  }
  void Report(const std::string& what) {
    if (violations_.fetch_add(1) == 0) {
      std::lock_guard<std::mutex> lock(first_mu_);
      first_ = what;
    }
  }

  IndexBackend* backend_;
  int generation_[kSlots] = {};
  int cycles_ = 0;  // the writer's; read after Run joins it
  std::atomic<long> reads_{0};
  std::atomic<long> violations_{0};
  std::mutex first_mu_;
  std::string first_;
};

class RemoveWorkerConcurrencyTest : public RemoveWorkerFixture {};
KVINDEXER_INSTANTIATE_CONFORMANCE(RemoveWorkerConcurrencyTest);

TEST_P(RemoveWorkerConcurrencyTest, ReadersSeeAWorkerWholeOrNotAtAll) {
  constexpr int kMinCycles = 600;
  constexpr long kMinReads = 400;
  ChurnRace race(backend());
  ASSERT_TRUE(race.Populate());
  race.Run(kMinCycles, kMinReads);
  EXPECT_EQ(race.violations(), 0) << "first: " << race.first_violation();
  EXPECT_GE(race.cycles(), kMinCycles);
  EXPECT_GE(race.reads(), kMinReads * ChurnRace::kReaders);
  // The end state: the anchor and each slot's last generation, nothing else.
  const Hashes hashes = ChurnHashes();
  EXPECT_EQ(ChurnAudit(hashes, RawScan(hashes)), "");
  const BackendStats stats = Stats();
  EXPECT_EQ(stats.workers, static_cast<uint64_t>(kSlots + 1));
  EXPECT_EQ(stats.placements, kSlots * kChurnPlacements + 1);
  for (int k = 0; k < kSlots; ++k) {
    const int g = race.generation(k);
    EXPECT_EQ(Tiers(Set(k, g % 2).front(), ChurnId(k, g)),
              (std::vector<int>{kTierHbm, kTierDram}));
    EXPECT_EQ(Tiers(Set(k, (g + 1) % 2).front()), std::vector<int>{});
  }
}

// ---------------------------------------------------------------------------
// The audit itself must be able to fail.

// Feeds `v` one snapshot by hand: `workers` announced, then one block per
// hash of ChurnHashes() with the placements `held` gives it.
RecordingVisitor HandMade(
    const std::map<uint32_t, std::string>& workers,
    const std::map<int64_t, std::vector<Placement>>& held) {
  RecordingVisitor v;
  for (const auto& [ordinal, id] : workers) {
    WorkerView w{};
    w.worker = ordinal;
    w.id = StringView{id.data(), id.size()};
    v.OnWorker(w);
  }
  const Hashes hashes = ChurnHashes();
  for (size_t i = 0; i < hashes.size(); ++i) {
    BlockView b{};
    b.index = i;
    const auto it = held.find(hashes[i]);
    if (it != held.end()) {
      b.placements = it->second.data();
      b.placement_count = it->second.size();
    }
    v.OnBlock(b);
  }
  return v;
}

// What worker `ordinal` holds as churn-<slot>-<generation>.
void Hold(std::map<int64_t, std::vector<Placement>>* held, uint32_t ordinal,
          int slot, int generation, bool dram = true) {
  Hashes hashes = Set(slot, generation % 2);
  hashes.push_back(kAnchor);
  for (int64_t h : hashes) {
    (*held)[h].push_back(Placement{ordinal, kTierHbm, 0});
    if (dram) (*held)[h].push_back(Placement{ordinal, kTierDram, 0});
  }
}

TEST(ChurnAuditTest, AcceptsAWholeSnapshot) {
  std::map<int64_t, std::vector<Placement>> held;
  held[kAnchor].push_back(Placement{0, kTierHbm, 0});
  Hold(&held, 1, 0, 4);
  Hold(&held, 2, 2, 7);
  EXPECT_EQ(
      ChurnAudit(
          ChurnHashes(),
          HandMade({{0, "anchor"}, {1, "churn-0-4"}, {2, "churn-2-7"}}, held)),
      "");
}

TEST(ChurnAuditTest, CatchesAWorkerSeenHalfRemoved) {
  std::map<int64_t, std::vector<Placement>> held;
  held[kAnchor].push_back(Placement{0, kTierHbm, 0});
  Hold(&held, 1, 0, 4, /*dram=*/false);
  EXPECT_NE(ChurnAudit(ChurnHashes(),
                       HandMade({{0, "anchor"}, {1, "churn-0-4"}}, held))
                .find("half done"),
            std::string::npos);
}

TEST(ChurnAuditTest, CatchesAReusedOrdinalAnnouncedAsItsOldWorker) {
  // Ordinal 1 holds generation 5's set, but is announced as generation 4,
  // whose set was the other one.
  std::map<int64_t, std::vector<Placement>> held;
  held[kAnchor].push_back(Placement{0, kTierHbm, 0});
  Hold(&held, 1, 0, 5);
  EXPECT_NE(ChurnAudit(ChurnHashes(),
                       HandMade({{0, "anchor"}, {1, "churn-0-4"}}, held))
                .find("never held"),
            std::string::npos);
}

TEST(ChurnAuditTest, CatchesTwoGenerationsOfOneSlot) {
  std::map<int64_t, std::vector<Placement>> held;
  held[kAnchor].push_back(Placement{0, kTierHbm, 0});
  Hold(&held, 1, 1, 4);
  Hold(&held, 2, 1, 5);
  EXPECT_NE(
      ChurnAudit(
          ChurnHashes(),
          HandMade({{0, "anchor"}, {1, "churn-1-4"}, {2, "churn-1-5"}}, held))
          .find("two generations"),
      std::string::npos);
}

// ModelBackend can remove in two steps with a reader in between: the audit
// of that reader's snapshot must fail, and pass once the removal is done.
TEST(ChurnAuditTest, CatchesModelBackendsTornRemoval) {
  test_support::ModelBackend backend;
  const auto apply = [&](const Batch& batch) {
    const test_support::BatchView view(batch);
    const BackendStatus s = backend.Apply(view.view());
    ASSERT_EQ(s.code, BackendCode::kOk) << s.message;
  };
  apply(Batch(kAnchorWorker, "a").Report(kTierHbm, {kAnchor}));
  apply(ChurnBatch(0, 0));
  apply(ChurnBatch(1, 0));
  const Hashes hashes = ChurnHashes();
  const HashSpan span{hashes.data(), hashes.size()};
  std::string during;
  backend.during_removal = [&] {
    RecordingVisitor v;
    EXPECT_EQ(backend.PrefixScan(span, &v).code, BackendCode::kOk);
    during = ChurnAudit(hashes, v);
  };
  uint32_t existed = 0;
  const std::string id = ChurnId(0, 0);
  EXPECT_EQ(
      backend.RemoveWorker(StringView{id.data(), id.size()}, &existed).code,
      BackendCode::kOk);
  EXPECT_EQ(existed, 1u);
  EXPECT_NE(during.find("half done"), std::string::npos) << during;
  RecordingVisitor after;
  EXPECT_EQ(backend.Match(span, false, &after).code, BackendCode::kOk);
  EXPECT_EQ(ChurnAudit(hashes, after), "");
}

// The race itself, on a backend whose removal is torn: ModelBackend with a
// hook that holds the removal half done until the readers have finished
// more reads than there are readers (so at least one read began inside the
// window). The readers must report it.
TEST(ChurnAuditTest, TheRaceCatchesATornRemoval) {
  test_support::ModelBackend backend;
  ChurnRace race(&backend);
  ASSERT_TRUE(race.Populate());
  backend.during_removal = [&race] {
    const long start = race.reads();
    // Bounded: the readers stop only after the writer is done.
    for (long spin = 0;
         spin < 100000000 && race.reads() < start + ChurnRace::kReaders + 1;
         ++spin) {
      std::this_thread::yield();
    }
  };
  race.Run(/*min_cycles=*/6, /*min_reads=*/1);
  EXPECT_GT(race.violations(), 0);
  EXPECT_NE(race.first_violation().find("half done"), std::string::npos)
      << race.first_violation();
}

}  // namespace
}  // namespace remove_worker_concurrency_test
}  // namespace kvindexer::conformance
