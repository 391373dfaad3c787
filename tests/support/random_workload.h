// RandomWorkload: drives an Indexer with seeded random mutations of every
// kind (seed-era and gated applies with gaps, duplicates and probes,
// snapshots, configurations that scale in, removals and liveness sweeps),
// for tests that check what logs, checkpoints and replays make of them.
// Deterministic by seed.
#ifndef KVINDEXER_TESTS_SUPPORT_RANDOM_WORKLOAD_H_
#define KVINDEXER_TESTS_SUPPORT_RANDOM_WORKLOAD_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "core/indexer.h"
#include "gtest/gtest.h"
#include "tests/support/fake_clock.h"
#include "tests/support/requests.h"

namespace kvindexer::test_support {

// Drives one Indexer with seeded random mutations of every kind, checking
// only that each call answers one of the outcomes it may.
class RandomWorkload {
 public:
  static constexpr int kWorkers = 6;

  // Outcomes seen, so that a test can show the workload reaches them all.
  struct Tally {
    int accepted = 0;
    int duplicates = 0;  // probes included
    int gaps = 0;
    int refused = 0;  // G1 and G2
    int replaced = 0;
    int scale_ins = 0;  // configures that removed a worker
    int removed = 0;
    int sweep_clears = 0;
  };

  // `tally` collects the outcomes; it may be shared by several workloads.
  // Hashes are drawn from [-4, hash_range - 4): the default few make blocks
  // shared between workers and touched again and again.
  RandomWorkload(uint32_t seed, Indexer* indexer, FakeMonotonicClock* clock,
                 Tally* tally, int hash_range = 16)
      : rng_(seed),
        indexer_(indexer),
        clock_(clock),
        tally_(tally),
        hash_range_(hash_range) {
    for (int i = 0; i < kWorkers; ++i) ids_.push_back("w" + std::to_string(i));
  }

  const std::vector<std::string>& ids() const { return ids_; }

  void Step() {
    const int op = Pick(16);
    if (op < 3) {
      SeedEraApply();
    } else if (op < 9) {
      GatedApply();
    } else if (op < 11) {
      ReplaceSnapshot();
    } else if (op < 12) {
      Configure();
    } else if (op < 13) {
      Remove();
    } else {
      clock_->Advance(std::chrono::milliseconds(Pick(150)));
      tally_->sweep_clears += static_cast<int>(
          indexer_->operator_view().SweepLiveness(clock_->Now()).cleared);
    }
  }

 private:
  int Pick(int n) {
    return static_cast<int>(rng_() % static_cast<uint32_t>(n));
  }
  const std::string& AnyId() {
    return ids_[static_cast<size_t>(Pick(kWorkers))];
  }
  std::string AnyAddress() {
    static const char* const kAddresses[] = {"", "10.0.0.1:1", "10.0.0.2:2"};
    return kAddresses[Pick(3)];
  }
  HeartbeatHeader AnyHeartbeat() {
    switch (Pick(10)) {
      case 0:
      case 1:
        return HeartbeatHeader::Valid(std::chrono::milliseconds(100));
      case 2:
      case 3:
        return HeartbeatHeader::Valid(std::chrono::milliseconds(250));
      case 4:
        return HeartbeatHeader::Parse("soon");
      default:
        return HeartbeatHeader{};
    }
  }
  std::vector<int64_t> AnyHashes() {
    std::vector<int64_t> hashes;
    const int n = 1 + Pick(5);
    for (int i = 0; i < n; ++i) hashes.push_back(Pick(hash_range_) - 4);
    return hashes;
  }
  std::vector<uint32_t> SideArray(size_t n, int range) {
    std::vector<uint32_t> out;
    if (Pick(2) == 0) return out;
    for (size_t i = 0; i < n; ++i)
      out.push_back(static_cast<uint32_t>(Pick(range)));
    return out;
  }
  void AddActions(Batch& batch) {
    const int actions = Pick(3);
    for (int a = 0; a < actions; ++a) {
      const int tier = 1 + Pick(3);
      const std::vector<int64_t> hashes = AnyHashes();
      switch (Pick(4)) {
        case 0:
        case 1:
          // Repeated hashes included: the Indexer collapses them.
          batch.Report(tier, hashes, SideArray(hashes.size(), 4),
                       SideArray(hashes.size(), 40));
          break;
        case 2:
          batch.Revoke(tier, hashes);
          break;
        default:
          batch.Clear(tier);
          break;
      }
    }
  }
  void MaybeSpec(Batch& batch) {
    if (Pick(3) == 0) {
      batch.Spec(test_support::Spec(kComponentFull, 0,
                                    static_cast<uint32_t>(1 + Pick(3))));
    }
  }

  void SeedEraApply() {
    Batch batch(AnyId(), AnyAddress());
    MaybeSpec(batch);
    AddActions(batch);
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s =
        indexer_->operations()
            .Apply(batch, &resp, {.heartbeat = AnyHeartbeat()})
            .Wait();
    EXPECT_TRUE(s.ok()) << s;
  }

  void GatedApply() {
    // Mostly to a SEQUENCED worker, where the gate has most to decide.
    std::string id = AnyId();
    std::vector<std::string> sequenced;
    for (const std::string& candidate : ids_) {
      const std::optional<WorkerRecord> r =
          indexer_->operator_view().WorkerState(candidate);
      if (r.has_value() && r->checkpoint.has_value()) {
        sequenced.push_back(candidate);
      }
    }
    if (!sequenced.empty() && Pick(5) != 0) {
      id = sequenced[static_cast<size_t>(
          Pick(static_cast<int>(sequenced.size())))];
    }
    const std::optional<WorkerRecord> record =
        indexer_->operator_view().WorkerState(id);
    std::string epoch = Pick(2) == 0 ? "e1" : "e2";
    uint64_t seq = 1 + static_cast<uint64_t>(Pick(3));
    bool probe = false;
    if (record.has_value() && record->checkpoint.has_value()) {
      const uint64_t cp = record->checkpoint->seq;
      if (Pick(6) != 0) epoch = record->checkpoint->epoch;
      switch (Pick(8)) {
        case 0:
          seq = cp;  // a duplicate
          break;
        case 1:
          seq = 0;  // a probe
          probe = true;
          break;
        case 2:
          seq = cp + 2;  // a gap
          break;
        default:
          seq = cp + 1;
          break;
      }
    }
    Batch batch(id, AnyAddress());
    batch.Gated(epoch, seq);
    if (!probe) {
      MaybeSpec(batch);
      AddActions(batch);
    }
    v1::ApplyExternalKvBatchResponse resp;
    const absl::Status s =
        indexer_->operations()
            .Apply(batch, &resp, {.heartbeat = AnyHeartbeat()})
            .Wait();
    EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s)) << s;
    if (s.ok()) {
      ++(resp.duplicate() ? tally_->duplicates : tally_->accepted);
    } else if (s.message().find("gap") != absl::string_view::npos) {
      ++tally_->gaps;
    } else {
      ++tally_->refused;
    }
  }

  void ReplaceSnapshot() {
    Snapshot snapshot(AnyId(), AnyAddress());
    snapshot.Epoch(Pick(2) == 0 ? "e1" : "e2")
        .AppliedSeq(static_cast<uint64_t>(Pick(5)));
    if (Pick(3) == 0) {
      snapshot.Spec(test_support::Spec(kComponentFull, 0, kTierBitHbm));
    }
    const int tiers = Pick(3);
    for (int t = 0; t < tiers; ++t) {
      const std::vector<int64_t> hashes = AnyHashes();
      snapshot.Tier(1 + Pick(3), hashes, SideArray(hashes.size(), 4),
                    SideArray(hashes.size(), 40));
    }
    v1::ReplaceExternalKvSnapshotResponse resp;
    const absl::Status s =
        indexer_->operations().Replace(snapshot, &resp).Wait();
    EXPECT_TRUE(s.ok() || absl::IsFailedPrecondition(s)) << s;
    if (s.ok()) ++tally_->replaced;
  }

  void Configure() {
    ExpectedWorkers workers;
    for (const std::string& id : ids_) {
      if (Pick(6) == 0) continue;  // scaled in
      if (Pick(4) == 0) {
        workers.Worker(id, AnyAddress(),
                       test_support::Spec(kComponentFull, 0, kTierBitDram));
      } else {
        workers.Worker(id, AnyAddress());
      }
    }
    const size_t before = indexer_->durable_state().worker_count();
    v1::ConfigureExpectedWorkersResponse resp;
    const absl::Status s =
        indexer_->operations().Configure(workers, &resp).Wait();
    EXPECT_TRUE(s.ok()) << s;
    const size_t kept = static_cast<size_t>(workers.request().workers_size());
    if (before > kept) ++tally_->scale_ins;
  }

  void Remove() {
    const absl::Status s =
        indexer_->operator_view().RemoveWorker(AnyId(), RemovalReason::kAdmin);
    EXPECT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
    if (s.ok()) ++tally_->removed;
  }

  std::mt19937 rng_;
  Indexer* indexer_;
  FakeMonotonicClock* clock_;
  Tally* tally_;
  int hash_range_;
  std::vector<std::string> ids_;
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_RANDOM_WORKLOAD_H_
