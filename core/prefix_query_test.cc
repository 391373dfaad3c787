#include "core/prefix_query.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/backend_status.h"
#include "core/indexer.h"
#include "core/request_limits.h"
#include "tests/support/make_backend_status.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
namespace {

using test_support::BackendOk;
using test_support::Batch;
using test_support::FillPrefixResponse;
using test_support::MakeBackendStatus;
using test_support::MatchPrefix;
using test_support::MatchRequest;
using test_support::ModelBackend;
using test_support::PrefixRequest;
using test_support::Spec;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

class PrefixQueryTest : public ::testing::Test {
 protected:
  void Apply(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    ASSERT_TRUE(indexer_.operations().Apply(req, &resp).Wait().ok());
  }

  v1::MatchExternalKvPrefixResponse Query(const std::vector<int64_t>& hashes,
                                          uint32_t max_blocks = 0) {
    v1::MatchExternalKvPrefixResponse resp;
    const absl::Status s = MatchPrefix(
        indexer_.operations(), PrefixRequest(hashes, max_blocks), &resp);
    EXPECT_TRUE(s.ok()) << s;
    return resp;
  }

  // (worker_id, prefix) pairs in response order.
  static std::vector<std::pair<std::string, uint32_t>> Entries(
      const v1::MatchExternalKvPrefixResponse& resp) {
    std::vector<std::pair<std::string, uint32_t>> out;
    for (const auto& m : resp.matches()) {
      out.emplace_back(m.worker_id(), m.matched_prefix_blocks());
    }
    return out;
  }

  ModelBackend backend_;
  Indexer indexer_{&backend_};
};

TEST_F(PrefixQueryTest, Behaviour4LongerPrefixFirst) {
  Apply(Batch("long", "10.0.0.1:9000").Report(kTierHbm, {1, 2, 3}));
  Apply(Batch("short", "10.0.0.2:9000").Report(kTierHbm, {1}));
  const auto resp = Query({1, 2, 3});
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);
  EXPECT_EQ(resp.blocks_read(), 3u);
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).worker_id(), "long");
  EXPECT_EQ(resp.matches(0).worker_address(), "10.0.0.1:9000");
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(resp.matches(1).worker_id(), "short");
  EXPECT_EQ(resp.matches(1).worker_address(), "10.0.0.2:9000");
  EXPECT_EQ(resp.matches(1).matched_prefix_blocks(), 1u);
}

TEST_F(PrefixQueryTest, Behaviour24EmptyAddressExcludedAndSorted) {
  Apply(Batch("w-long", "10.0.0.1:1").Report(kTierHbm, {1, 2, 3, 4}));
  Apply(Batch("w-short", "10.0.0.2:1").Report(kTierHbm, {1, 2}));
  Apply(Batch("w-hole", "10.0.0.3:1").Report(kTierHbm, {1, 3, 4}));
  Apply(Batch("w-noaddr", "").Report(kTierHbm, {1, 2}));
  const auto resp = Query({1, 2, 3, 4});
  EXPECT_THAT(
      Entries(resp),
      ElementsAre(Pair("w-long", 4u), Pair("w-short", 2u), Pair("w-hole", 1u)));
  EXPECT_EQ(resp.best_prefix_blocks(), 4u);
  EXPECT_EQ(resp.blocks_read(), 4u);
  for (const auto& m : resp.matches()) EXPECT_FALSE(m.worker_address().empty());
}

TEST_F(PrefixQueryTest, Behaviour25FirstBlockMissReadsOneBlock) {
  Apply(Batch("w1", "a1").Report(kTierHbm, {2, 3}));
  const auto resp = Query({1, 2, 3});
  EXPECT_THAT(resp.matches(), IsEmpty());
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
  EXPECT_EQ(resp.blocks_read(), 1u);
  EXPECT_EQ(backend_.blocks_visited, 1u);
}

TEST_F(PrefixQueryTest, Behaviour26MaxBlocksCapsTheWindow) {
  Apply(Batch("w1", "a1").Report(kTierHbm, {1, 2, 3, 4}));
  const auto resp = Query({1, 2, 3, 4}, 2);
  EXPECT_THAT(Entries(resp), ElementsAre(Pair("w1", 2u)));
  EXPECT_EQ(resp.best_prefix_blocks(), 2u);
  EXPECT_EQ(resp.blocks_read(), 2u);
  ASSERT_EQ(backend_.prefix_scans.size(), 1u);
  EXPECT_THAT(backend_.prefix_scans[0], ElementsAre(1, 2));
  // A cap above the length changes nothing.
  EXPECT_EQ(Query({1, 2, 3, 4}, 100).blocks_read(), 4u);
}

TEST_F(PrefixQueryTest, Behaviour27ComponentAwareWorker) {
  Batch req("w-swa", "10.0.0.9:1");
  req.Spec(Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm | kTierBitDram,
                kTierBitHbm));
  req.Report(kTierHbm, {1, 2, 3, 4},
             {kComponentFull | kComponentSwa, kComponentFull | kComponentSwa,
              kComponentFull | kComponentSwa, kComponentFull},
             {50, 50, 50, 50});
  Apply(req);
  EXPECT_THAT(Entries(Query({1, 2, 3, 4})), ElementsAre(Pair("w-swa", 3u)));
}

TEST_F(PrefixQueryTest, Behaviour28ReportReplacesComponents) {
  const auto spec = Spec(kComponentFull | kComponentSwa, 100,
                         kTierBitHbm | kTierBitDram, kTierBitHbm);
  Batch first("w", "a");
  first.Spec(spec);
  first.Report(kTierHbm, {1, 2},
               {kComponentFull | kComponentSwa, kComponentFull | kComponentSwa},
               {80, 80});
  Apply(first);
  EXPECT_EQ(Query({1, 2}).best_prefix_blocks(), 2u);
  Batch second("w", "a");
  second.Spec(spec);
  second.Report(kTierHbm, {2}, {kComponentFull}, {80});
  Apply(second);
  EXPECT_EQ(Query({1, 2}).best_prefix_blocks(), 1u);

  v1::MatchExternalKvResponse match;
  ASSERT_TRUE(indexer_.operations().Match(MatchRequest({1, 2}), &match).ok());
  ASSERT_EQ(match.matches_size(), 1);
  ASSERT_EQ(match.matches(0).hashes_by_tier_size(), 1);
  const auto& tier = match.matches(0).hashes_by_tier(0);
  EXPECT_EQ(tier.tier(), v1::TIER_HBM);
  EXPECT_THAT(tier.component_masks(),
              ElementsAre(kComponentFull | kComponentSwa, kComponentFull));
  EXPECT_THAT(tier.block_sizes(), ElementsAre(80u, 80u));
}

TEST_F(PrefixQueryTest, Behaviour29ComponentsWithoutSpec) {
  Batch req("w", "a");
  req.Report(kTierHbm, {1, 2}, {kComponentFull, kComponentFull}, {16, 16});
  Apply(req);
  const auto resp = Query({1, 2});
  EXPECT_THAT(resp.matches(), IsEmpty());
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
  EXPECT_EQ(resp.blocks_read(), 2u);
}

TEST_F(PrefixQueryTest, Behaviour30RepeatedHashLastEntryWins) {
  Batch req("w", "a");
  req.Spec(Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm, kTierBitHbm));
  req.Report(kTierHbm, {1, 1}, {kComponentFull | kComponentSwa, kComponentFull},
             {80, 80});
  Apply(req);
  EXPECT_EQ(Query({1}).best_prefix_blocks(), 0u);
}

TEST_F(PrefixQueryTest, Behaviour31BatchWithoutSpecClearsIt) {
  Batch with_spec("w", "a");
  with_spec.Spec(
      Spec(kComponentFull | kComponentSwa, 100, kTierBitHbm, kTierBitHbm));
  with_spec.Report(kTierHbm, {1}, {kComponentFull | kComponentSwa}, {200});
  Apply(with_spec);
  EXPECT_EQ(Query({1}).best_prefix_blocks(), 1u);
  Batch without("w", "a");
  without.Report(kTierDram, {2});
  Apply(without);
  const auto resp = Query({1});
  EXPECT_THAT(resp.matches(), IsEmpty());
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
}

TEST_F(PrefixQueryTest, CandidatesComeOnlyFromTheFirstBlock) {
  Apply(Batch("head", "a-head").Report(kTierHbm, {1}));
  Apply(Batch("tail", "a-tail").Report(kTierHbm, {2, 3, 4}));
  EXPECT_THAT(Entries(Query({1, 2, 3, 4})), ElementsAre(Pair("head", 1u)));
}

TEST_F(PrefixQueryTest, SsdOnlyHolderOfBlockZeroIsACandidate) {
  Batch req("ssd", "a-ssd");
  req.Report(kTierSsd, {1, 2});
  Apply(req);
  EXPECT_THAT(Entries(Query({1, 2, 3})), ElementsAre(Pair("ssd", 2u)));
}

TEST_F(PrefixQueryTest, RepeatedHashesInAPrefixQueryAreNotCollapsed) {
  Apply(Batch("w", "a").Report(kTierHbm, {7}));
  const auto resp = Query({7, 7, 7, 8});
  EXPECT_THAT(Entries(resp), ElementsAre(Pair("w", 3u)));
  EXPECT_EQ(resp.blocks_read(), 4u);
}

TEST_F(PrefixQueryTest, HeldFirstBlockWithNoSurvivorStillReadsTheWindow) {
  Apply(Batch("noaddr", "").Report(kTierHbm, {1, 2, 3}));
  const auto resp = Query({1, 2, 3});
  EXPECT_THAT(resp.matches(), IsEmpty());
  EXPECT_EQ(resp.best_prefix_blocks(), 0u);
  EXPECT_EQ(resp.blocks_read(), 3u);
}

TEST_F(PrefixQueryTest, EarlyStopWhenEveryCandidateIsSettled) {
  // Invalid spec: settled from the start.
  Apply([] {
    Batch req("bad", "a-bad");
    req.Spec(Spec(0, 0, kTierBitHbm, 0));
    req.Report(kTierHbm, {1, 2, 3},
               {kComponentFull, kComponentFull, kComponentFull});
    return req;
  }());
  // Component-aware: FULL breaks at block 2.
  Apply([] {
    Batch req("ca", "a-ca");
    req.Spec(Spec(kComponentFull, 0, kTierBitHbm, 0));
    req.Report(kTierHbm, {1, 2}, {kComponentFull, kComponentFull});
    return req;
  }());
  std::vector<int64_t> hashes(10);
  std::iota(hashes.begin(), hashes.end(), 1);
  const auto resp = Query(hashes);
  EXPECT_THAT(Entries(resp), ElementsAre(Pair("ca", 2u)));
  EXPECT_EQ(resp.blocks_read(), 10u);
  EXPECT_EQ(backend_.blocks_visited, 3u);  // stopped after block index 2
}

TEST_F(PrefixQueryTest, LegacyCandidatesKeepScanningForFailClosed) {
  Apply(Batch("legacy", "a").Report(kTierHbm, {1, 2}));
  Batch late_mask("legacy", "a");
  late_mask.Report(kTierHbm, {1, 2});
  late_mask.Report(kTierDram, {9}, {kComponentMamba});
  Apply(late_mask);
  const auto resp = Query({1, 2, 3, 4, 5, 9});
  EXPECT_THAT(resp.matches(), IsEmpty());
  EXPECT_EQ(resp.blocks_read(), 6u);

  const auto no_mask_in_window = Query({1, 2, 3, 4, 5});
  EXPECT_THAT(Entries(no_mask_in_window), ElementsAre(Pair("legacy", 2u)));
  EXPECT_EQ(backend_.blocks_visited, 5u);
}

TEST_F(PrefixQueryTest, SortIsStableAndDescending) {
  Apply(Batch("a", "addr-a").Report(kTierHbm, {1}));
  Apply(Batch("b", "addr-b").Report(kTierHbm, {1, 2, 3}));
  Apply(Batch("c", "addr-c").Report(kTierHbm, {1, 2}));
  Apply(Batch("d", "addr-d").Report(kTierHbm, {1, 2, 3}));
  const auto resp = Query({1, 2, 3});
  ASSERT_EQ(resp.matches_size(), 4);
  std::vector<uint32_t> prefixes;
  for (const auto& m : resp.matches())
    prefixes.push_back(m.matched_prefix_blocks());
  EXPECT_THAT(prefixes, ElementsAre(3u, 3u, 2u, 1u));
  EXPECT_EQ(resp.best_prefix_blocks(), 3u);
  // ModelBackend reports block 0's placements in worker-ordinal order, so the
  // stable sort keeps b before d.
  EXPECT_EQ(resp.matches(0).worker_id(), "b");
  EXPECT_EQ(resp.matches(1).worker_id(), "d");
}

TEST_F(PrefixQueryTest, BackendErrorIsPassedThrough) {
  Apply(Batch("w", "a").Report(kTierHbm, {1}));
  backend_.fail_with =
      MakeBackendStatus(BackendCode::kUnavailable, "scan refused");
  v1::MatchExternalKvPrefixResponse resp;
  const absl::Status s =
      MatchPrefix(indexer_.operations(), PrefixRequest({1}), &resp);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(std::string(s.message()), "scan refused");
}

// A deliver callback that fills *resp.
auto Filler(v1::MatchExternalKvPrefixResponse* resp) {
  return
      [resp](const PrefixAnswer& answer) { FillPrefixResponse(answer, resp); };
}

// A backend that serves fixed blocks and may end the scan too soon.
class ScriptedBackend final : public IndexBackend {
 public:
  std::vector<std::vector<Placement>> blocks;
  size_t stop_after = SIZE_MAX;
  std::string address = "addr";

  BackendStatus Apply(const ApplyBatchView&) noexcept override {
    return BackendOk();
  }
  BackendStatus Match(HashSpan, bool, BlockVisitor*) noexcept override {
    return BackendOk();
  }
  BackendStatus PrefixScan(HashSpan hashes,
                           BlockVisitor* visitor) noexcept override {
    for (size_t i = 0; i < hashes.size && i < stop_after; ++i) {
      const std::vector<Placement>& placements =
          i < blocks.size() ? blocks[i] : empty_;
      for (const Placement& p : placements) {
        WorkerView w{p.worker, StringView{"w", 1},
                     StringView{address.data(), address.size()}, 0,
                     CacheSpec{}};
        visitor->OnWorker(w);
      }
      if (!visitor->OnBlock(
              BlockView{i, 0, placements.data(), placements.size()})) {
        break;
      }
    }
    return BackendOk();
  }
  BackendStatus HitCounts(HashSpan, uint64_t*) noexcept override {
    return BackendOk();
  }
  void GetStats(BackendStats*) noexcept override {}
  BackendStatus RemoveWorker(StringView, uint32_t* existed) noexcept override {
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kOk, {}};
  }
  BackendStatus CountPlacements(StringView, uint64_t* counts,
                                uint32_t* existed) noexcept override {
    for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts[tier] = 0;
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kOk, {}};
  }

 private:
  std::vector<Placement> empty_;
};

TEST(PrefixQueryScripted, ShortScanIsAnInternalError) {
  ScriptedBackend backend;
  backend.blocks = {{Placement{0, kTierHbm, 0}}, {Placement{0, kTierHbm, 0}}};
  backend.stop_after = 1;
  v1::MatchExternalKvPrefixResponse resp;
  const absl::Status s =
      RunPrefixQuery(&backend, PrefixRequest({1, 2}),
                     kDefaultMaxPrefixAnswerBytes, Filler(&resp));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
}

TEST(PrefixQueryScripted, LargeSparseOrdinalsWork) {
  ScriptedBackend backend;
  const uint32_t huge = 4000000000u;
  backend.blocks = {{Placement{huge, kTierHbm, 0}, Placement{3, kTierDram, 0}},
                    {Placement{huge, kTierHbm, 0}}};
  v1::MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(RunPrefixQuery(&backend, PrefixRequest({1, 2}),
                             kDefaultMaxPrefixAnswerBytes, Filler(&resp))
                  .ok());
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(resp.matches(0).matched_prefix_blocks(), 2u);
  EXPECT_EQ(resp.matches(1).matched_prefix_blocks(), 1u);
}

// docs/contract.md, "Limits > Bounds": the 22 MB answer in small.
// Three workers with long addresses share the first block; with a ceiling
// below the answer's encoded size the query is refused whole, and nothing is
// delivered.
TEST(PrefixQueryScripted, AnswerOverTheCeilingIsRefusedWhole) {
  ScriptedBackend backend;
  backend.address = std::string(1000, 'a');
  backend.blocks = {{Placement{0, kTierHbm, 0}, Placement{1, kTierHbm, 0},
                     Placement{2, kTierHbm, 0}}};
  // Each entry: tag, length (2 bytes), address field (1 + 2 + 1000), prefix
  // field (2), id field (3); then blocks_read and best_prefix_blocks (2 + 2).
  const size_t answer_bytes = 3 * (1 + 2 + 1003 + 2 + 3) + 4;

  v1::MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(
      RunPrefixQuery(&backend, PrefixRequest({1}), answer_bytes, Filler(&resp))
          .ok());
  EXPECT_EQ(resp.matches_size(), 3);
  EXPECT_EQ(resp.ByteSizeLong(), answer_bytes);

  int delivered = 0;
  const absl::Status s =
      RunPrefixQuery(&backend, PrefixRequest({1}), answer_bytes - 1,
                     [&](const PrefixAnswer&) { ++delivered; });
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_EQ(std::string(s.message()),
            "prefix answer is 3037 bytes; maximum is 3036 "
            "(KV_INDEXER_MAX_PREFIX_ANSWER_BYTES)");
  EXPECT_EQ(delivered, 0);
}

TEST(PrefixQueryScripted, EmptyAnswerIsMeasuredToo) {
  ScriptedBackend backend;  // no blocks: a first-block miss
  const absl::Status s = RunPrefixQuery(&backend, PrefixRequest({1}), 1,
                                        [](const PrefixAnswer&) {});
  // best 0 and blocks_read 1: two bytes.
  EXPECT_EQ(s, PrefixAnswerTooLarge(2, 1));
  EXPECT_TRUE(
      RunPrefixQuery(&backend, PrefixRequest({1}), 2, [](const PrefixAnswer&) {
      }).ok());
}

TEST(PrefixLimit, Rules) {
  EXPECT_EQ(PrefixLimit(5, 0), 5u);
  EXPECT_EQ(PrefixLimit(5, 2), 2u);
  EXPECT_EQ(PrefixLimit(5, 9), 5u);
}

// Drives PrefixQuery directly with random windows whose placement lists often
// repeat (the runs PrefixQuery collapses) and compares it with one
// PrefixScanner per candidate fed block by block.
TEST(PrefixQueryRuns, MatchesPerBlockScanners) {
  struct Worker {
    std::string id;
    std::string address;
    bool has_spec;
    CacheSpec spec;
  };
  const std::vector<Worker> workers = {
      {"legacy", "a-legacy", false, {}},
      {"legacy2", "a-legacy2", false, {}},
      {"full",
       "a-full",
       true,
       {1, kComponentFull, 0, kTierBitHbm | kTierBitDram, 0, 0}},
      {"swa",
       "a-swa",
       true,
       {1, kComponentFull | kComponentSwa, 40, kTierBitHbm,
        kTierBitHbm | kTierBitDram, 0}},
      {"mamba",
       "a-mamba",
       true,
       {1, kComponentFull | kComponentMamba, 0, kTierBitHbm, 0, kTierBitDram}},
      {"all",
       "a-all",
       true,
       {0, kComponentFull | kComponentSwa | kComponentMamba, 24, kTierBitHbm,
        kTierBitHbm, kTierBitHbm}},
      {"invalid", "a-invalid", true, {2, kComponentFull, 0, kTierBitHbm, 0, 0}},
      {"noaddr", "", false, {}},
  };
  // 0x100 | kComponentFull: a bit above the components, which only the legacy
  // rule reads.
  const uint32_t masks[] = {0,
                            kComponentFull,
                            kComponentFull | kComponentSwa,
                            kComponentSwa,
                            kComponentMamba,
                            kComponentFull | kComponentMamba,
                            kComponentFull | kComponentSwa | kComponentMamba,
                            0x100 | kComponentFull};
  for (uint32_t seed = 1; seed <= 2000; ++seed) {
    std::mt19937 rng(seed);
    // The window: runs of one placement list, sometimes reordered, sometimes
    // with one copy moved between tiers.
    std::vector<std::vector<Placement>> lists;
    std::vector<uint32_t> tokens;
    const uint32_t run_count = 1 + rng() % 6;
    for (uint32_t r = 0; r < run_count; ++r) {
      std::vector<Placement> list;
      for (uint32_t w = 0; w < workers.size(); ++w) {
        if (rng() % 3 == 0) continue;
        for (uint32_t tier = kTierHbm; tier <= kTierSsd; ++tier) {
          if (rng() % 2 == 0) continue;
          // Masks mostly follow the worker's kind so that runs survive.
          const uint32_t mask =
              rng() % 8 == 0 ? masks[rng() % 8]
              : workers[w].has_spec
                  ? (kComponentFull | kComponentSwa | kComponentMamba)
                  : 0;
          list.push_back(Placement{w, tier, mask});
        }
      }
      const uint32_t length = 1 + rng() % 5;
      for (uint32_t b = 0; b < length; ++b) {
        if (b > 0 && rng() % 6 == 0)
          std::shuffle(list.begin(), list.end(), rng);
        // A copy moving between HBM and DRAM: a different list that often
        // looks the same to every candidate (the class-run path).
        if (b > 0 && !list.empty() && rng() % 3 == 0) {
          Placement& p = list[rng() % list.size()];
          if (p.tier == kTierHbm || p.tier == kTierDram) {
            p.tier = p.tier == kTierHbm ? kTierDram : kTierHbm;
          }
        }
        lists.push_back(list);
        tokens.push_back(rng() % 5 == 0 ? 0 : 4 + rng() % 20);
      }
    }
    const size_t limit = lists.size();

    // Reference: candidates from block 0, in placement order.
    std::vector<uint32_t> candidates;
    for (const Placement& p : lists[0]) {
      if (std::find(candidates.begin(), candidates.end(), p.worker) ==
          candidates.end()) {
        candidates.push_back(p.worker);
      }
    }
    std::vector<PrefixScanner> scanners;
    for (const uint32_t w : candidates) {
      scanners.emplace_back(workers[w].has_spec ? &workers[w].spec : nullptr);
    }
    for (size_t b = 0; b < limit && !candidates.empty(); ++b) {
      for (size_t c = 0; c < candidates.size(); ++c) {
        WorkerBlock view;
        for (const Placement& p : lists[b]) {
          if (p.worker == candidates[c]) view.Add(p.tier, p.mask);
        }
        view.token_count = tokens[b];
        scanners[c].Push(view);
      }
    }
    std::vector<std::pair<std::string, uint32_t>> expected;
    for (size_t c = 0; c < candidates.size(); ++c) {
      const Worker& w = workers[candidates[c]];
      if (scanners[c].result() > 0 && !w.address.empty()) {
        expected.emplace_back(w.id, scanners[c].result());
      }
    }
    std::stable_sort(
        expected.begin(), expected.end(),
        [](const auto& a, const auto& b) { return a.second > b.second; });

    // The query, fed as a backend would.
    PrefixQuery query(limit);
    for (uint32_t w = 0; w < workers.size(); ++w) {
      WorkerView view{};
      view.worker = w;
      view.id = StringView{workers[w].id.data(), workers[w].id.size()};
      view.address =
          StringView{workers[w].address.data(), workers[w].address.size()};
      view.has_cache_spec = workers[w].has_spec ? 1 : 0;
      view.cache_spec = workers[w].spec;
      query.OnWorker(view);
    }
    for (size_t b = 0; b < limit; ++b) {
      const BlockView view{b, tokens[b], lists[b].data(), lists[b].size()};
      if (!query.OnBlock(view)) break;
    }
    v1::MatchExternalKvPrefixResponse resp;
    ASSERT_TRUE(query.Answer(Filler(&resp)).ok()) << "seed " << seed;
    std::vector<std::pair<std::string, uint32_t>> actual;
    for (const auto& m : resp.matches()) {
      actual.emplace_back(m.worker_id(), m.matched_prefix_blocks());
    }
    ASSERT_EQ(actual, expected) << "seed " << seed;
    ASSERT_EQ(resp.best_prefix_blocks(),
              expected.empty() ? 0u : expected.front().second)
        << "seed " << seed;
    ASSERT_EQ(resp.blocks_read(), candidates.empty() ? 1u : limit)
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace kvindexer
