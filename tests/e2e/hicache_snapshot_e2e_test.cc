// Mode S with a HiCache worker end to end (docs/bridge-events.md, "Recovery
// > Mode S"): FakeSglangPublisher (snapshot ROUTER, epoch-suffixed topic) ->
// the real kv-indexer-bridge in gated mode -> the real kv-indexer-server,
// read back per tier with MatchExternalKv.
//
// The worker publishes stores and removes at GPU, CPU_PINNED, DISK and
// EXTERNAL (hashes at several tiers, some removed at one tier only, a
// clear) before the bridge starts, so everything the index learns comes
// from the snapshot. The expected placements come from models in this file,
// not from the fake's mirrors:
//   - snapshot-v2 (a current SGLang): tier-exact, EXTERNAL not indexed, and
//     for a component worker the install is exact, not degraded;
//   - snapshot-v1 (an SGLang that refuses v2): the bridge falls back, logs
//     that v1 is tier-blind, and installs at HBM every hash the v1 mirror
//     holds (a store at any medium adds it, a remove at any medium drops
//     it).
//
// No sleeps as synchronisation: effects are awaited in bounded loops.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/recovery_e2e_harness.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/server_process.h"

namespace kvindexer::bridge::testing {
namespace {

using ::kvindexer::test_support::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Not;

// TierType number -> hashes; tiers holding nothing are absent.
using Placement = std::map<int, std::set<int64_t>>;

constexpr char kTierBlindWarning[] = "snapshot-v1, which is tier-blind";

// One event of the HiCache worker.
struct HiEvent {
  enum class Kind { kStore, kRemove, kClear };
  Kind kind = Kind::kStore;
  std::vector<int64_t> hashes;
  std::string medium;
};
HiEvent Stored(std::vector<int64_t> hashes, std::string medium) {
  return {HiEvent::Kind::kStore, std::move(hashes), std::move(medium)};
}
HiEvent Removed(std::vector<int64_t> hashes, std::string medium) {
  return {HiEvent::Kind::kRemove, std::move(hashes), std::move(medium)};
}
HiEvent Cleared() { return {HiEvent::Kind::kClear, {}, ""}; }
using HiBatch = std::vector<HiEvent>;

// What the worker does before the bridge starts:
//   101  GPU + EXTERNAL                   v2: HBM          v1: held
//   102  GPU + CPU, removed at GPU        v2: DRAM         v1: dropped
//   103  GPU + DISK                       v2: HBM, SSD     v1: held
//   104  GPU + CPU + DISK, removed DISK   v2: HBM, DRAM    v1: dropped
//   105  CPU                              v2: DRAM         v1: held
//   106  DISK                             v2: SSD          v1: held
//   107  EXTERNAL                         v2: -            v1: held
//   108  EXTERNAL, removed at EXTERNAL    v2: -            v1: dropped
//   109  GPU, removed at EXTERNAL         v2: HBM          v1: dropped
//   110  GPU, removed, stored again       v2: HBM          v1: held
//   111  CPU + DISK before the clear      v2: -            v1: -
std::vector<HiBatch> WorkerHistory() {
  return {
      {Stored({111}, "CPU_PINNED"), Stored({111}, "DISK"), Cleared()},
      {Stored({101, 102, 103, 104}, "GPU"), Stored({102, 104}, "CPU_PINNED"),
       Stored({103, 104}, "DISK"), Stored({101, 107, 108}, "EXTERNAL")},
      {Stored({105}, "CPU_PINNED"), Stored({106}, "DISK"),
       Removed({102}, "GPU"), Removed({104}, "DISK")},
      {Stored({109, 110}, "GPU"), Removed({108}, "EXTERNAL"),
       Removed({109}, "EXTERNAL"), Removed({110}, "GPU")},
      {Stored({110}, "GPU")},
  };
}

std::vector<int64_t> Universe() {
  std::vector<int64_t> out;
  for (int64_t h = 100; h <= 120; ++h) out.push_back(h);
  return out;
}

// SGLang's payload; `labels` gives every store component labels (a worker
// whose cache spec the bridge is configured with).
std::string HiPayload(const HiBatch& batch, bool labels) {
  MpArray events;
  for (const HiEvent& ev : batch) {
    switch (ev.kind) {
      case HiEvent::Kind::kStore:
        events.push_back(StoreEvent(
            ev.hashes, ev.medium, /*block_size=*/16,
            labels ? std::optional<Mp>(Labels({"full"})) : std::nullopt));
        break;
      case HiEvent::Kind::kRemove:
        events.push_back(RemoveEvent(ev.hashes, ev.medium));
        break;
      case HiEvent::Kind::kClear:
        events.push_back(ClearEvent());
        break;
    }
  }
  return PackBatch(std::move(events));
}

std::optional<int> TierOfMedium(const std::string& medium) {
  if (medium == "GPU") return kv_indexer::v1::TIER_HBM;
  if (medium == "CPU_PINNED") return kv_indexer::v1::TIER_DRAM;
  if (medium == "DISK") return kv_indexer::v1::TIER_SSD;
  return std::nullopt;  // EXTERNAL: not a tier the index knows
}

// What the worker holds, per tier: a store or remove at a medium changes
// that tier only; EXTERNAL is no tier; a clear empties every tier.
Placement TierExactModel(const std::vector<HiBatch>& batches) {
  Placement held;
  for (const HiBatch& batch : batches) {
    for (const HiEvent& ev : batch) {
      if (ev.kind == HiEvent::Kind::kClear) {
        held.clear();
        continue;
      }
      const std::optional<int> tier = TierOfMedium(ev.medium);
      if (!tier) continue;
      for (int64_t h : ev.hashes) {
        if (ev.kind == HiEvent::Kind::kStore) {
          held[*tier].insert(h);
        } else {
          held[*tier].erase(h);
        }
      }
    }
  }
  std::erase_if(held, [](const auto& entry) { return entry.second.empty(); });
  return held;
}

// What a snapshot-v1 installs: every hash SGLang's v1 mirror holds (a store
// at any medium adds it, a remove at any medium drops it), all at HBM.
Placement TierBlindModel(const std::vector<HiBatch>& batches) {
  std::set<int64_t> held;
  for (const HiBatch& batch : batches) {
    for (const HiEvent& ev : batch) {
      if (ev.kind == HiEvent::Kind::kClear) held.clear();
      for (int64_t h : ev.hashes) {
        if (ev.kind == HiEvent::Kind::kStore) {
          held.insert(h);
        } else {
          held.erase(h);
        }
      }
    }
  }
  if (held.empty()) return {};
  return {{kv_indexer::v1::TIER_HBM, held}};
}

std::string Show(const Placement& placement) {
  std::string out = "{";
  for (const auto& [tier, hashes] : placement) {
    out += " tier " + std::to_string(tier) + ": [";
    for (int64_t h : hashes) out += " " + std::to_string(h);
    out += " ]";
  }
  return out + " }";
}

class HiCacheSnapshotE2eTest : public BridgeAndIndexerTest {
 protected:
  static FakeSglangPublisher::Options Options(
      FakeSglangPublisher::SnapshotProtocols protocols) {
    FakeSglangPublisher::Options options;
    options.epoch = "e1";
    options.snapshot = true;
    options.replay = false;
    options.snapshot_protocols = protocols;
    return options;
  }

  // Publishes the worker's history (nobody listens yet), then starts the
  // bridge in mode S.
  void PublishHistoryAndStart(FakeSglangPublisher& publisher, bool labels,
                              std::map<std::string, std::string> env = {}) {
    for (const HiBatch& batch : WorkerHistory()) {
      publisher.Publish(HiPayload(batch, labels));
    }
    Start(publisher, /*with_replay=*/false, std::move(env));
  }

  // Waits until the index holds exactly `expected` for the worker.
  ::testing::AssertionResult PlacementBecomes(const Placement& expected) {
    Placement last;
    if (WaitUntil(
            [&] {
              last = indexer_->HeldByTier(Universe()).value_or(Placement());
              return last == expected;
            },
            kEffectBound, 20ms)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "held " << Show(last) << ", expected " << Show(expected);
  }
};

// snapshot-v2: each block at exactly the tiers the worker holds it; the
// live stream continues from the barrier on top of it.
TEST_F(HiCacheSnapshotE2eTest, V2InstallsTierExactPlacement) {
  FakeSglangPublisher publisher(
      Options(FakeSglangPublisher::SnapshotProtocols::kV1AndV2));
  ASSERT_NO_FATAL_FAILURE(PublishHistoryAndStart(publisher, /*labels=*/false));
  const Placement expected = TierExactModel(WorkerHistory());
  ASSERT_EQ(Show(expected),
            "{ tier 1: [ 101 103 104 109 110 ] tier 2: [ 102 104 105 ] "
            "tier 3: [ 103 106 ] }");
  EXPECT_TRUE(PlacementBecomes(expected));
  EXPECT_GE(publisher.snapshot_requests(), 1u);
  EXPECT_EQ(publisher.refused_snapshot_requests(), 0u);
  EXPECT_EQ(indexer_->Fidelity(kWorkerId), "exact");
  EXPECT_THAT(bridge_->Output(), Not(HasSubstr(kTierBlindWarning)));

  // Live after the barrier: a DISK copy of 101 and 101 leaving GPU.
  const HiBatch live = {Stored({101}, "DISK"), Removed({101}, "GPU")};
  publisher.Publish(HiPayload(live, false));
  std::vector<HiBatch> all = WorkerHistory();
  all.push_back(live);
  EXPECT_TRUE(PlacementBecomes(TierExactModel(all)));
}

// snapshot-v2 for a component worker (KV_INDEXER_CACHE_COMPONENTS): masks
// and sizes installed as the live stores carry them, and the install is
// exact, not snapshot_without_components.
TEST_F(HiCacheSnapshotE2eTest, V2WithComponentsIsExact) {
  FakeSglangPublisher publisher(
      Options(FakeSglangPublisher::SnapshotProtocols::kV1AndV2));
  ASSERT_NO_FATAL_FAILURE(PublishHistoryAndStart(
      publisher, /*labels=*/true, {{"KV_INDEXER_CACHE_COMPONENTS", "full"}}));
  EXPECT_TRUE(PlacementBecomes(TierExactModel(WorkerHistory())));
  EXPECT_EQ(indexer_->Fidelity(kWorkerId), "exact");
  // The whole prefix 101 -> 103 -> 104 is at HBM with FULL components.
  EXPECT_EQ(indexer_->Prefix({101, 103, 104}), 3u);
}

// An SGLang that speaks snapshot-v1 only: the bridge's v2 request is
// refused, it falls back to v1 with the tier-blind WARN, and installs the
// v1 mirror at HBM.
TEST_F(HiCacheSnapshotE2eTest, V1OnlyPublisherInstallsEverythingAtHbm) {
  FakeSglangPublisher publisher(
      Options(FakeSglangPublisher::SnapshotProtocols::kV1Only));
  ASSERT_NO_FATAL_FAILURE(PublishHistoryAndStart(publisher, /*labels=*/false));
  const Placement expected = TierBlindModel(WorkerHistory());
  ASSERT_EQ(Show(expected), "{ tier 1: [ 101 103 105 106 107 110 ] }");
  EXPECT_TRUE(PlacementBecomes(expected));
  EXPECT_GE(publisher.refused_snapshot_requests(), 1u);
  EXPECT_GE(publisher.snapshot_requests(), 1u);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return bridge_->Output().find(kTierBlindWarning) != std::string::npos;
      },
      kEffectBound));
}

}  // namespace
}  // namespace kvindexer::bridge::testing
