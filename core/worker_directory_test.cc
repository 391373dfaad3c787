// WorkerDirectory on its own, and the Indexer's use of it: every mutation
// publishes what it changed, and the operator's listings, counts and
// lookups answer while a mutation holds the mutation mutex.
#include "core/worker_directory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/indexer.h"
#include "core/stream_key.h"
#include "tests/support/fake_clock.h"
#include "tests/support/removable_model_backend.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace worker_directory_test {

using namespace std::chrono_literals;
using test_support::Batch;
using test_support::ExpectedWorkers;
using test_support::RemovableModelBackend;
using test_support::Snapshot;

WorkerSnapshot Entry(std::string id, bool ready, Fidelity fidelity,
                     bool sequenced = false) {
  WorkerSnapshot w;
  w.worker_id = std::move(id);
  w.ready = ready;
  w.fidelity = fidelity;
  if (sequenced) {
    w.sequence_state = SequenceState::kSequenced;
    w.checkpoint = SequenceCheckpoint{"e", 1};
  }
  return w;
}

std::vector<std::string> Ids(const std::vector<WorkerSnapshot>& workers) {
  std::vector<std::string> ids;
  for (const WorkerSnapshot& w : workers) ids.push_back(w.worker_id);
  return ids;
}

TEST(WorkerDirectoryTest, PublishReplacesAndErasesAndKeepsTheCounts) {
  WorkerDirectory dir;
  dir.Publish({Entry("b", true, Fidelity::kExact, /*sequenced=*/true),
               Entry("a", false, Fidelity::kUnknown)},
              {});
  WorkerCounts want;
  want.total = 2;
  want.ready = 1;
  want.sequenced = 1;
  want.by_fidelity = {1, 1, 0};
  EXPECT_EQ(dir.counts(), want);

  // "a" becomes ready and degraded; "b" goes; an unknown id is ignored.
  dir.Publish({Entry("a", true, Fidelity::kDegraded)}, {"b", "zz"});
  want = WorkerCounts{};
  want.total = 1;
  want.ready = 1;
  want.by_fidelity = {0, 0, 1};
  EXPECT_EQ(dir.counts(), want);
  ASSERT_TRUE(dir.Find("a").has_value());
  EXPECT_EQ(dir.Find("a")->fidelity, Fidelity::kDegraded);
  EXPECT_FALSE(dir.Find("b").has_value());
}

TEST(WorkerDirectoryTest, PagesAreSortedByIdAndResumeAfterTheLastId) {
  WorkerDirectory dir;
  std::vector<WorkerSnapshot> all;
  for (const char* id : {"w3", "w1", "w10", "w2", "w0"}) {
    all.push_back(Entry(id, true, Fidelity::kExact));
  }
  dir.Publish(all, {});
  EXPECT_EQ(Ids(dir.Page("", 2)), (std::vector<std::string>{"w0", "w1"}));
  EXPECT_EQ(Ids(dir.Page("w1", 2)), (std::vector<std::string>{"w10", "w2"}));
  EXPECT_EQ(Ids(dir.Page("w2", 2)), (std::vector<std::string>{"w3"}));
  EXPECT_TRUE(dir.Page("w3", 2).empty());
  // An id that is not there resumes at the next one.
  EXPECT_EQ(Ids(dir.Page("w15", 1)), (std::vector<std::string>{"w2"}));
}

TEST(WorkerDirectoryTest, PagesFollowTheStreamKeyOrder) {
  WorkerDirectory dir;
  const std::vector<std::string> in_order = {
      "a",
      EncodeStreamKey({"", "a", 1}),
      "b",
      EncodeStreamKey({"", "b", 3}),
      EncodeStreamKey({"ns", "a", 0}),
      EncodeStreamKey({"ns", "a", 2}),
      EncodeStreamKey({"ns", "c", 0}),
  };
  std::vector<WorkerSnapshot> all;
  for (auto it = in_order.rbegin(); it != in_order.rend(); ++it) {
    all.push_back(Entry(*it, true, Fidelity::kExact));
  }
  dir.Publish(all, {});
  std::vector<std::string> seen;
  std::string after;
  for (int pages = 0; pages < 10; ++pages) {
    const std::vector<std::string> page = Ids(dir.Page(after, 2));
    seen.insert(seen.end(), page.begin(), page.end());
    if (page.size() < 2) break;
    after = page.back();
  }
  EXPECT_EQ(seen, in_order);
  ASSERT_TRUE(dir.Find(EncodeStreamKey({"", "b", 3})).has_value());
  EXPECT_FALSE(dir.Find(EncodeStreamKey({"", "b", 2})).has_value());
}

// A backend whose Apply waits, once armed, until released: the Indexer
// holds its mutation mutex meanwhile.
class HoldingBackend final : public IndexBackend {
 public:
  void Arm() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
  }
  void WaitUntilHolding() {
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [this] { return holding_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
    changed_.notify_all();
  }

  BackendStatus Apply(const ApplyBatchView& batch) noexcept override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (armed_) {
        holding_ = true;
        changed_.notify_all();
        changed_.wait(lock, [this] { return !armed_; });
        holding_ = false;
      }
    }
    return inner_.Apply(batch);
  }
  BackendStatus Match(HashSpan hashes, bool count_as_hit,
                      BlockVisitor* visitor) noexcept override {
    return inner_.Match(hashes, count_as_hit, visitor);
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    return inner_.PrefixScan(hashes, visitor);
  }
  BackendStatus HitCounts(HashSpan hashes, uint64_t* counts) noexcept override {
    return inner_.HitCounts(hashes, counts);
  }
  void GetStats(BackendStats* stats) noexcept override {
    inner_.GetStats(stats);
  }

 private:
  RemovableModelBackend inner_;
  std::mutex mu_;
  std::condition_variable changed_;
  bool armed_ = false;
  bool holding_ = false;
};

TEST(IndexerDirectoryTest, ListingsAnswerWhileAMutationHoldsTheMutex) {
  HoldingBackend backend;
  Indexer indexer(&backend, /*gate_log=*/nullptr, RequestLimits{},
                  /*backend_abi_minor=*/0);
  IndexOperations& ops = indexer.operations();
  OperatorView& view = indexer.operator_view();
  v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(
      ops.Apply(Batch("a", "addr-a").Report(kTierHbm, {1}), &resp).Wait().ok());

  backend.Arm();
  auto held = std::async(std::launch::async, [&] {
    v1::ApplyExternalKvBatchResponse r;
    return ops.Apply(Batch("b", "addr-b").Report(kTierHbm, {2}), &r).Wait();
  });
  backend.WaitUntilHolding();
  // The apply of "b" is inside the backend with the mutation mutex held:
  // none of these may wait for it (a wait would hang the test, which the
  // ctest timeout reports).
  EXPECT_EQ(Ids(view.ListWorkers(/*placement_counts=*/false)),
            (std::vector<std::string>{"a"}));
  EXPECT_EQ(view.CountWorkers().total, 1u);
  ASSERT_TRUE(view.DescribeWorker("a").has_value());
  EXPECT_EQ(view.DescribeWorker("a")->address, "addr-a");
  EXPECT_FALSE(view.DescribeWorker("b").has_value());
  backend.Release();
  ASSERT_TRUE(held.get().ok());
  EXPECT_EQ(Ids(view.ListWorkers(false)), (std::vector<std::string>{"a", "b"}));
}

// The truth the directory must show: each worker's record and marker, as
// the mutation mutex guards them.
void ExpectDirectoryMatchesRecords(OperatorView& view,
                                   const std::vector<std::string>& universe) {
  std::vector<std::string> want_ids;
  WorkerCounts want;
  for (const std::string& id : universe) {
    const std::optional<WorkerRecord> record = view.WorkerState(id);
    const std::optional<WorkerSnapshot> entry = view.DescribeWorker(id);
    ASSERT_EQ(record.has_value(), entry.has_value()) << id;
    if (!record.has_value()) continue;
    want_ids.push_back(id);
    const std::optional<MonotonicClock::TimePoint> deadline =
        view.HeartbeatDeadline(id);
    EXPECT_EQ(entry->ready, record->ready) << id;
    EXPECT_EQ(entry->covered, record->covered()) << id;
    EXPECT_EQ(entry->meta, record->meta) << id;
    EXPECT_EQ(entry->checkpoint, record->checkpoint) << id;
    EXPECT_EQ(entry->sequence_state, record->state()) << id;
    EXPECT_EQ(entry->configured, record->configured) << id;
    EXPECT_EQ(entry->address, record->address) << id;
    EXPECT_EQ(entry->last_apply, record->last_apply) << id;
    EXPECT_EQ(entry->fidelity, record->fidelity) << id;
    EXPECT_EQ(entry->heartbeat_deadline, deadline) << id;
    ++want.total;
    want.ready += record->ready ? 1 : 0;
    want.covered += record->covered() ? 1 : 0;
    want.sequenced += record->state() == SequenceState::kSequenced ? 1 : 0;
    want.configured += record->configured ? 1 : 0;
    want.heartbeating += deadline.has_value() ? 1 : 0;
    ++want.by_fidelity[static_cast<size_t>(record->fidelity)];
  }
  EXPECT_EQ(Ids(view.ListWorkers(false)), want_ids);
  EXPECT_EQ(view.CountWorkers(), want);
}

TEST(IndexerDirectoryTest, EveryKindOfMutationIsPublished) {
  FakeMonotonicClock clock;
  RemovableModelBackend backend;
  Indexer indexer(&backend, /*gate_log=*/nullptr, RequestLimits{},
                  /*backend_abi_minor=*/2, &clock);
  IndexOperations& ops = indexer.operations();
  OperatorView& view = indexer.operator_view();
  const std::vector<std::string> universe = {"w0", "w1", "w2", "w3", "w4"};
  std::mt19937 rng(20261206);
  std::vector<uint64_t> next_seq(universe.size(), 1);

  for (int step = 0; step < 400; ++step) {
    const size_t who = rng() % universe.size();
    const std::string& id = universe[who];
    const std::string addr = "addr-" + id + "-" + std::to_string(rng() % 3);
    switch (rng() % 8) {
      case 0: {  // seed-era apply, maybe a heartbeat, maybe degraded
        v1::ApplyExternalKvBatchResponse r;
        MutationOptions options;
        if (rng() % 2 == 0) {
          options.heartbeat = HeartbeatHeader::Valid(500ms);
        }
        if (rng() % 3 == 0)
          options.fidelity = FidelityHeader::Parse("degraded; lag");
        (void)ops
            .Apply(Batch(id, addr).Report(kTierHbm, {int64_t(step)}), &r,
                   options)
            .Wait();
        break;
      }
      case 1: {  // gated apply, in order or not
        v1::ApplyExternalKvBatchResponse r;
        const uint64_t seq = rng() % 4 == 0 ? next_seq[who] + 2 : next_seq[who];
        if (ops.Apply(Batch(id, addr).Gated("e", seq), &r).Wait().ok()) {
          next_seq[who] = seq + 1;
        }
        break;
      }
      case 2: {  // snapshot install
        v1::ReplaceExternalKvSnapshotResponse r;
        if (ops.Replace(Snapshot(id, addr).Epoch("e").AppliedSeq(5), &r)
                .Wait()
                .ok()) {
          next_seq[who] = 6;
        }
        break;
      }
      case 3: {  // configure two workers
        v1::ConfigureExpectedWorkersResponse r;
        (void)ops
            .Configure(ExpectedWorkers().Worker(id, addr).Worker(
                           universe[(who + 1) % universe.size()]),
                       &r)
            .Wait();
        break;
      }
      case 4:
        (void)view.RemoveWorker(id, RemovalReason::kAdmin);
        break;
      case 5:
        clock.Advance(std::chrono::milliseconds(rng() % 400));
        (void)view.SweepLiveness(clock.Now());
        break;
      case 6:
        view.RearmHeartbeatMarkers(clock.Now());
        break;
      default:
        clock.Advance(100ms);
        break;
    }
    ExpectDirectoryMatchesRecords(view, universe);
    if (HasFailure()) FAIL() << "after step " << step;
  }
}

}  // namespace worker_directory_test
}  // namespace kvindexer
