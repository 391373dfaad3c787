// IndexBackend::SetWriteMode (ABI 1.4, include/kvindexer/backend.h;
// docs/backend-abi.md, "ABI 1.4: bulk loading"): a load that begins on an
// empty backend ends, at kServing, in exactly the state the same mutations
// leave in service, and the backend then takes further mutations as any
// other; a load is refused once a worker exists; setting the mode in force
// changes nothing; a read during the load sees the state before it or after
// some whole mutation. Skipped for a backend used at an older minor (the
// host then recovers through ordinary mutations; durable_store_test.cc
// checks that side).
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "conformance_fixture.h"
#include "recording_visitor.h"

namespace kvindexer::conformance {
namespace {

inline constexpr uint32_t kWriteModeAbiMinor = 4;

// Enough blocks (about 150,000) that a backend which merges layers as its
// index grows (robin_sharded_snapshot: past 1,024 blocks in each of 64
// shards) does so during the load.
constexpr int kBatches = 36;
constexpr int64_t kHashesPerBatch = 4096;

class BulkLoadTest : public ConformanceTest {
 protected:
  void SetUp() override {
    if (!SupportsAbiMinor(kWriteModeAbiMinor)) {
      GTEST_SKIP() << "backend \"" << descriptor().name
                   << "\" is used as backend " << AbiInUse()
                   << ", which has no SetWriteMode (added in 1."
                   << kWriteModeAbiMinor << ")";
    }
    ConformanceTest::SetUp();
  }

  static BackendCode SetMode(IndexBackend* backend, WriteMode mode) {
    return backend->SetWriteMode(mode).code;
  }

  // Everything a reader can see about `hashes` through the raw ABI, with
  // workers by id rather than ordinal, plus the stats' counts.
  static std::string Dump(IndexBackend* backend,
                          const std::vector<int64_t>& hashes) {
    RecordingVisitor v;
    const BackendStatus s =
        backend->PrefixScan(HashSpan{hashes.data(), hashes.size()}, &v);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    std::map<uint32_t, std::string> ids;
    std::string out;
    for (const RecordingVisitor::Event& e : v.events) {
      if (e.is_worker) {
        ids[e.worker] = e.id;
        absl::StrAppend(&out, "worker ", e.id, " at ", e.address, " spec ",
                        e.has_spec ? e.spec.swa_window_tokens + 1 : 0, "\n");
        continue;
      }
      if (e.placements.empty()) continue;
      std::vector<std::string> placements;
      for (const Placement& p : e.placements) {
        placements.push_back(
            absl::StrCat(ids[p.worker], "/", p.tier, "/", p.mask));
      }
      std::sort(placements.begin(), placements.end());
      absl::StrAppend(&out, hashes[e.index], " ", e.token_count, ":");
      for (const std::string& p : placements) absl::StrAppend(&out, " ", p);
      absl::StrAppend(&out, "\n");
    }
    BackendStats stats{};
    stats.struct_size = sizeof(stats);
    backend->GetStats(&stats);
    absl::StrAppend(&out, "blocks ", stats.blocks, " placements ",
                    stats.placements, " workers ", stats.workers);
    return out;
  }

  // Empty when the dumps are equal; otherwise their first differing line
  // (a whole dump runs to tens of thousands of lines).
  static std::string Difference(const std::string& got,
                                const std::string& want) {
    if (got == want) return "";
    size_t at = 0;
    while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
    const size_t line = want.rfind('\n', at == 0 ? 0 : at - 1);
    const size_t from = line == std::string::npos ? 0 : line + 1;
    return absl::StrCat("got  \"", got.substr(from, 160), "\"\nwant \"",
                        want.substr(from, 160), "\"");
  }

  static std::vector<uint64_t> Counts(IndexBackend* backend,
                                      const std::string& id) {
    std::vector<uint64_t> counts(kMaxTier + 1, 99);
    uint32_t existed = 0;
    const BackendStatus s = backend->CountPlacements(
        StringView{id.data(), id.size()}, counts.data(), &existed);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    counts.push_back(existed);
    return counts;
  }

  // Batch i of the load: four workers take turns; each batch reports a
  // fresh run of hashes at one tier (some shared with the worker before,
  // masks and sizes varying), revokes part of the worker's previous run,
  // and every eleventh batch clears a tier.
  static Batch LoadBatch(int i) {
    const std::string worker = absl::StrCat("w", i % 4);
    Batch batch(worker, absl::StrCat("10.0.0.", i % 4, ":", 1000 + i % 3));
    if (i % 5 == 0) batch.Spec(CacheSpec{1, 3, 64u * (i % 3), 1, 1, 0});
    const uint32_t tier = 1 + static_cast<uint32_t>(i % 3);
    std::vector<int64_t> hashes;
    std::vector<uint32_t> masks, sizes;
    const int64_t start = (i - 1) * kHashesPerBatch;  // overlaps batch i-1
    for (int64_t h = 0; h < kHashesPerBatch; ++h) {
      hashes.push_back((start + h) * 7919 + 13);
      masks.push_back(static_cast<uint32_t>(h % 4));
      sizes.push_back(h % 3 == 0 ? 0 : 16);
    }
    batch.Report(tier, hashes, masks, sizes);
    if (i >= 4) {
      std::vector<int64_t> revoked;
      const int64_t before = (i - 5) * kHashesPerBatch;
      for (int64_t h = 0; h < kHashesPerBatch; h += 3) {
        revoked.push_back((before + h) * 7919 + 13);
      }
      batch.Revoke(1 + static_cast<uint32_t>((i - 4) % 3), revoked);
    }
    if (i % 11 == 10) batch.Clear(1 + static_cast<uint32_t>(i % 2));
    return batch;
  }

  static void ApplyTo(IndexBackend* backend, const Batch& batch) {
    const test_support::BatchView view(batch);
    const BackendStatus s = backend->Apply(view.view());
    ASSERT_EQ(s.code, BackendCode::kOk) << s.message;
  }

  static std::vector<int64_t> Universe() {
    std::vector<int64_t> hashes;
    for (int64_t h = -kHashesPerBatch; h < (kBatches + 1) * kHashesPerBatch;
         h += 5) {
      hashes.push_back(h * 7919 + 13);
    }
    return hashes;
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(BulkLoadTest);

TEST_P(BulkLoadTest, ALoadEndsInTheStateTheSameMutationsLeaveInService) {
  BackendInstance served(descriptor());
  ASSERT_NE(served.get(), nullptr) << served.error();
  IndexBackend* const loaded = backend();
  ASSERT_EQ(SetMode(loaded, WriteMode::kBulkLoad), BackendCode::kOk);
  for (int i = 0; i < kBatches; ++i) {
    const Batch batch = LoadBatch(i);
    ApplyTo(loaded, batch);
    ApplyTo(served.get(), batch);
    if (i == kBatches / 2 && SupportsAbiMinor(1)) {
      for (IndexBackend* b : {loaded, served.get()}) {
        uint32_t existed = 0;
        ASSERT_EQ(b->RemoveWorker(StringView{"w1", 2}, &existed).code,
                  BackendCode::kOk);
        EXPECT_EQ(existed, 1u);
      }
    }
    if (HasFatalFailure()) return;
    // Mutations take effect during the load: the writer's counts follow.
    EXPECT_EQ(Counts(loaded, "w0"), Counts(served.get(), "w0")) << i;
  }
  ASSERT_EQ(SetMode(loaded, WriteMode::kServing), BackendCode::kOk);
  const std::vector<int64_t> universe = Universe();
  EXPECT_EQ(Difference(Dump(loaded, universe), Dump(served.get(), universe)),
            "");
  for (const char* id : {"w0", "w1", "w2", "w3", "nobody"}) {
    EXPECT_EQ(Counts(loaded, id), Counts(served.get(), id)) << id;
  }

  // In service again: further mutations and counting reads behave as in
  // the backend that never loaded in bulk.
  for (int i = kBatches; i < kBatches + 12; ++i) {
    const Batch batch = LoadBatch(i);
    ApplyTo(loaded, batch);
    ApplyTo(served.get(), batch);
    if (HasFatalFailure()) return;
    // After the first and the last: a backend that keeps copies (robin's
    // two) reads the one the end of the load made after one of them.
    if (i == kBatches || i == kBatches + 11) {
      EXPECT_EQ(
          Difference(Dump(loaded, universe), Dump(served.get(), universe)), "")
          << "after batch " << i;
    }
  }
  const std::vector<int64_t> counted(universe.begin(), universe.begin() + 50);
  RecordingVisitor v1, v2;
  ASSERT_EQ(
      loaded->Match(HashSpan{counted.data(), counted.size()}, true, &v1).code,
      BackendCode::kOk);
  ASSERT_EQ(served.get()
                ->Match(HashSpan{counted.data(), counted.size()}, true, &v2)
                .code,
            BackendCode::kOk);
  std::vector<uint64_t> hits1(counted.size()), hits2(counted.size());
  ASSERT_EQ(
      loaded->HitCounts(HashSpan{counted.data(), counted.size()}, hits1.data())
          .code,
      BackendCode::kOk);
  ASSERT_EQ(
      served.get()
          ->HitCounts(HashSpan{counted.data(), counted.size()}, hits2.data())
          .code,
      BackendCode::kOk);
  EXPECT_EQ(hits1, hits2);
}

TEST_P(BulkLoadTest, ReadsDuringALoadSeeWholeMutations) {
  // The states a reader may see: before the load, or after any whole
  // mutation of it, as the same mutations in service leave them.
  BackendInstance served(descriptor());
  ASSERT_NE(served.get(), nullptr) << served.error();
  std::vector<int64_t> universe;
  for (int64_t h = 0; h < 64; ++h) universe.push_back(h * 104729 + 1);
  std::set<std::string> allowed = {Dump(served.get(), universe)};
  ASSERT_EQ(SetMode(backend(), WriteMode::kBulkLoad), BackendCode::kOk);
  for (int i = 0; i < 8; ++i) {
    Batch batch(absl::StrCat("w", i % 3), "a");
    std::vector<int64_t> hashes(universe.begin() + i * 4,
                                universe.begin() + i * 4 + 24);
    batch.Report(kTierHbm, hashes);
    if (i % 3 == 2) batch.Revoke(kTierHbm, {universe[i]});
    ApplyTo(backend(), batch);
    ApplyTo(served.get(), batch);
    if (HasFatalFailure()) return;
    allowed.insert(Dump(served.get(), universe));
    const std::string seen = Dump(backend(), universe);
    EXPECT_TRUE(allowed.count(seen) != 0)
        << "after mutation " << i << " a read saw a state no whole prefix "
        << "of the load leaves:\n"
        << seen;
  }
  ASSERT_EQ(SetMode(backend(), WriteMode::kServing), BackendCode::kOk);
  EXPECT_EQ(Dump(backend(), universe), Dump(served.get(), universe));
}

TEST_P(BulkLoadTest, ALoadIsRefusedOnceAWorkerExists) {
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2, 3}));
  const std::vector<int64_t> universe = {1, 2, 3, 4};
  const std::string before = Dump(backend(), universe);
  const BackendStatus s = backend()->SetWriteMode(WriteMode::kBulkLoad);
  EXPECT_EQ(s.code, BackendCode::kFailedPrecondition) << s.message;
  EXPECT_NE(s.message[0], '\0') << "a refusal says why";
  EXPECT_EQ(Dump(backend(), universe), before);
  // Still in service: a mutation is visible at once.
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {4}));
  EXPECT_EQ(Tiers(4), (std::vector<int>{kTierHbm}));
}

TEST_P(BulkLoadTest, SettingTheModeInForceChangesNothing) {
  EXPECT_EQ(SetMode(backend(), WriteMode::kServing), BackendCode::kOk);
  ASSERT_EQ(SetMode(backend(), WriteMode::kBulkLoad), BackendCode::kOk);
  ApplyOk(Batch("w1", "a1").Report(kTierHbm, {1, 2}));
  // A worker exists now, but the load is already in force.
  EXPECT_EQ(SetMode(backend(), WriteMode::kBulkLoad), BackendCode::kOk);
  ApplyOk(Batch("w2", "a2").Report(kTierDram, {2}));
  ASSERT_EQ(SetMode(backend(), WriteMode::kServing), BackendCode::kOk);
  EXPECT_EQ(SetMode(backend(), WriteMode::kServing), BackendCode::kOk);
  EXPECT_EQ(Tiers(1), (std::vector<int>{kTierHbm}));
  EXPECT_EQ(Tiers(2), (std::vector<int>{kTierHbm, kTierDram}));
}

TEST_P(BulkLoadTest, AnEmptyLoadLeavesAnEmptyBackendThatServes) {
  ASSERT_EQ(SetMode(backend(), WriteMode::kBulkLoad), BackendCode::kOk);
  ASSERT_EQ(SetMode(backend(), WriteMode::kServing), BackendCode::kOk);
  EXPECT_EQ(Dump(backend(), {1, 2}), "blocks 0 placements 0 workers 0");
  ApplyOk(Batch("w1", "a1").Report(kTierSsd, {1}));
  EXPECT_EQ(Tiers(1, "w1"), (std::vector<int>{kTierSsd}));
}

}  // namespace
}  // namespace kvindexer::conformance
