// The IndexBackend obligations of include/kvindexer/backend.h that the
// Indexer does not make visible on its own, checked through the raw ABI:
// callback order and content, early stop, worker records and specs given
// back verbatim, PrefixScan with repeats, HitCounts zeroes.
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "conformance_fixture.h"
#include "recording_visitor.h"

namespace kvindexer::conformance {
namespace {

class BackendAbiTest : public ConformanceTest {
 protected:
  static HashSpan Span(const Hashes& h) { return HashSpan{h.data(), h.size()}; }
  void ExpectOk(const BackendStatus& s) {
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    EXPECT_EQ(s.message[0], '\0') << "an OK status carries no message";
  }
};
KVINDEXER_INSTANTIATE_CONFORMANCE(BackendAbiTest);

TEST_P(BackendAbiTest, MatchVisitsEveryHashInOrderWithWorkersFirst) {
  ApplyOk(Batch("w1", "addr-1")
              .Report(kTierHbm, {10, 20}, {kComponentFull, 0}, {16, 0})
              .Report(kTierSsd, {20}, {0xF0u}));
  ApplyOk(Batch("w2", "").Report(kTierDram, {30}, {}, {99}));
  const Hashes hashes = {30, 99, 20, 10};
  RecordingVisitor v;
  ExpectOk(backend()->Match(Span(hashes), false, &v));
  EXPECT_TRUE(v.WorkersAnnouncedFirst());
  const auto blocks = v.Blocks();
  ASSERT_EQ(blocks.size(), 4u);
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(blocks[i]->index, i);
  // 30: one placement, w2 at DRAM, size 99.
  ASSERT_EQ(blocks[0]->placements.size(), 1u);
  EXPECT_EQ(blocks[0]->placements[0].tier, kTierDram);
  EXPECT_EQ(blocks[0]->token_count, 99u);
  // 99: absent.
  EXPECT_EQ(blocks[1]->placements.size(), 0u);
  EXPECT_EQ(blocks[1]->token_count, 0u);
  // 20: w1 at HBM (legacy) and SSD (odd mask, given back verbatim).
  ASSERT_EQ(blocks[2]->placements.size(), 2u);
  std::map<uint32_t, uint32_t> tier_mask;
  for (const Placement& p : blocks[2]->placements) tier_mask[p.tier] = p.mask;
  EXPECT_EQ(tier_mask,
            (std::map<uint32_t, uint32_t>{{kTierHbm, 0}, {kTierSsd, 0xF0u}}));
  EXPECT_EQ(blocks[2]->token_count, 0u);
  // 10: FULL at HBM, size 16.
  ASSERT_EQ(blocks[3]->placements.size(), 1u);
  EXPECT_EQ(blocks[3]->placements[0].mask, kComponentFull);
  EXPECT_EQ(blocks[3]->token_count, 16u);
  // Worker records come back with their ids and addresses.
  const auto* w1 = v.Worker("w1");
  const auto* w2 = v.Worker("w2");
  ASSERT_NE(w1, nullptr);
  ASSERT_NE(w2, nullptr);
  EXPECT_EQ(w1->address, "addr-1");
  EXPECT_EQ(w2->address, "");
  EXPECT_NE(w1->worker, w2->worker);
  EXPECT_EQ(blocks[0]->placements[0].worker, w2->worker);
  EXPECT_EQ(blocks[3]->placements[0].worker, w1->worker);
}

TEST_P(BackendAbiTest, VisitorReturningFalseStopsEverything) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {3}));
  const Hashes hashes = {1, 2, 3, 4};
  RecordingVisitor match(2);
  ExpectOk(backend()->Match(Span(hashes), false, &match));
  EXPECT_EQ(match.Blocks().size(), 2u);
  EXPECT_EQ(match.Worker("w2"), nullptr) << "OnWorker after the stop";
  RecordingVisitor scan(1);
  ExpectOk(backend()->PrefixScan(Span(hashes), &scan));
  EXPECT_EQ(scan.Blocks().size(), 1u);
  EXPECT_EQ(scan.Worker("w2"), nullptr) << "OnWorker after the stop";
}

TEST_P(BackendAbiTest, PrefixScanVisitsRepeatsAndNeverChangesState) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}, {}, {8, 8}));
  Match({1}, /*count_as_hit=*/true);
  const Hashes hashes = {1, 2, 1, 5, 2};
  RecordingVisitor v;
  ExpectOk(backend()->PrefixScan(Span(hashes), &v));
  EXPECT_TRUE(v.WorkersAnnouncedFirst());
  const auto blocks = v.Blocks();
  ASSERT_EQ(blocks.size(), 5u);
  for (size_t i = 0; i < blocks.size(); ++i) {
    EXPECT_EQ(blocks[i]->index, i);
    EXPECT_EQ(blocks[i]->placements.size(), hashes[i] == 5 ? 0u : 1u);
    EXPECT_EQ(blocks[i]->token_count, hashes[i] == 5 ? 0u : 8u);
  }
  EXPECT_EQ(Hits({1, 2}), (std::map<int64_t, uint64_t>{{1, 1}}));
}

TEST_P(BackendAbiTest, HitCountsWritesZeroForMissingCounters) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1, 2}));
  const Hashes counted = {1};
  RecordingVisitor v;
  ExpectOk(backend()->Match(Span(counted), true, &v));
  ExpectOk(backend()->Match(Span(counted), true, &v));
  const Hashes query = {2, 1, 7};
  uint64_t counts[3] = {11, 11, 11};
  ExpectOk(backend()->HitCounts(Span(query), counts));
  EXPECT_EQ(counts[0], 0u);
  EXPECT_EQ(counts[1], 2u);
  EXPECT_EQ(counts[2], 0u);
}

TEST_P(BackendAbiTest, CountingMatchCountsOnlyHeldHashes) {
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  const Hashes hashes = {1, 2};
  RecordingVisitor v;
  ExpectOk(backend()->Match(Span(hashes), true, &v));
  uint64_t counts[2] = {};
  ExpectOk(backend()->HitCounts(Span(hashes), counts));
  EXPECT_EQ(counts[0], 1u);
  EXPECT_EQ(counts[1], 0u);
}

TEST_P(BackendAbiTest, SpecIsStoredAndGivenBackVerbatim) {
  // Even values the rule engine rejects are stored as sent.
  v1::WorkerCacheSpec spec = Spec(0xFFu, 123, 0x1Fu, 0x3u, 0x9u, 7);
  ApplyOk(Batch("w1", "a").Spec(spec).Report(kTierHbm, {1}));
  const Hashes hashes = {1};
  RecordingVisitor with_spec;
  ExpectOk(backend()->Match(Span(hashes), false, &with_spec));
  const auto* w = with_spec.Worker("w1");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->has_spec);
  EXPECT_EQ(w->spec.version, 7u);
  EXPECT_EQ(w->spec.components, 0xFFu);
  EXPECT_EQ(w->spec.swa_window_tokens, 123u);
  EXPECT_EQ(w->spec.full_tier_mask, 0x1Fu);
  EXPECT_EQ(w->spec.swa_tier_mask, 0x3u);
  EXPECT_EQ(w->spec.mamba_tier_mask, 0x9u);
  // A present all-zero spec is still present.
  ApplyOk(Batch("w1", "a").Spec(v1::WorkerCacheSpec()));
  RecordingVisitor zero;
  ExpectOk(backend()->Match(Span(hashes), false, &zero));
  ASSERT_NE(zero.Worker("w1"), nullptr);
  EXPECT_TRUE(zero.Worker("w1")->has_spec);
  EXPECT_EQ(zero.Worker("w1")->spec.components, 0u);
  // A batch without a spec clears it.
  ApplyOk(Batch("w1", "b"));
  RecordingVisitor cleared;
  ExpectOk(backend()->Match(Span(hashes), false, &cleared));
  ASSERT_NE(cleared.Worker("w1"), nullptr);
  EXPECT_FALSE(cleared.Worker("w1")->has_spec);
  EXPECT_EQ(cleared.Worker("w1")->address, "b");
}

TEST_P(BackendAbiTest, WorkerOrdinalsAreStableAndDistinct) {
  // Without RemoveWorker (remove_worker_test.cc) an ordinal is never freed.
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  ApplyOk(Batch("w2", "b").Report(kTierHbm, {2}));
  const Hashes hashes = {1, 2};
  RecordingVisitor before;
  ExpectOk(backend()->Match(Span(hashes), false, &before));
  ASSERT_NE(before.Worker("w1"), nullptr);
  ASSERT_NE(before.Worker("w2"), nullptr);
  const uint32_t w1 = before.Worker("w1")->worker;
  const uint32_t w2 = before.Worker("w2")->worker;
  // w1 loses everything, then new workers arrive.
  ApplyOk(Batch("w1", "a").Clear(kTierHbm));
  for (int i = 3; i < 10; ++i) {
    ApplyOk(Batch("w" + std::to_string(i), "x").Report(kTierHbm, {i}));
  }
  ApplyOk(Batch("w1", "a").Report(kTierHbm, {1}));
  const Hashes all = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  RecordingVisitor after;
  ExpectOk(backend()->Match(Span(all), false, &after));
  EXPECT_TRUE(after.WorkersAnnouncedFirst());
  ASSERT_NE(after.Worker("w1"), nullptr);
  EXPECT_EQ(after.Worker("w1")->worker, w1);
  EXPECT_EQ(after.Worker("w2")->worker, w2);
  std::set<uint32_t> ordinals;
  for (const auto& e : after.events) {
    if (e.is_worker) ordinals.insert(e.worker);
  }
  EXPECT_EQ(ordinals.size(), 9u) << "ordinals must be distinct per worker";
}

TEST_P(BackendAbiTest, ApplyTakesAHandBuiltView) {
  // A batch built directly against the ABI, as a host other than Indexer
  // would: strings not NUL-terminated, side arrays present.
  const char id[] = {'r', 'a', 'w', 'X'};
  const char address[] = {'h', 'o', 's', 't', 'Y'};
  const int64_t hashes[] = {-7, 8};
  const uint32_t masks[] = {kComponentFull, kComponentSwa};
  const uint32_t sizes[] = {0, 12};
  ActionView action{kActionReport, kTierDram, HashSpan{hashes, 2},
                    U32Span{masks, 2}, U32Span{sizes, 2}};
  ApplyBatchView batch{};
  batch.worker_id = StringView{id, 3};
  batch.worker_address = StringView{address, 4};
  batch.has_cache_spec = 0;
  batch.actions = &action;
  batch.action_count = 1;
  ExpectOk(backend()->Apply(batch));
  const auto resp = Match({-7, 8});
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(resp.matches(), 0).worker_id(), "raw");
  EXPECT_EQ(At(resp.matches(), 0).address(), "host");
  const auto& t = At(At(resp.matches(), 0).hashes_by_tier(), 0);
  EXPECT_EQ(t.tier(), v1::TIER_DRAM);
  EXPECT_EQ(Masks(t.component_masks().begin(), t.component_masks().end()),
            Masks({kComponentFull, kComponentSwa}));
  EXPECT_EQ(Masks(t.block_sizes().begin(), t.block_sizes().end()),
            Masks({0, 12}));
}

}  // namespace
}  // namespace kvindexer::conformance
