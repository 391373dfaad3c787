// ExplainPrefix (core/prefix_explain.h): one hand-written case per stop
// reason, then a seeded randomized comparison with the production prefix
// query over the model backend: the same answer, the same per-worker
// results, and stop reasons that agree with the placements.
#include "core/prefix_explain.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/wire_vocabulary.h"
#include "core/indexer.h"
#include "core/prefix_query.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/support/model_backend.h"
#include "tests/support/prefix_response.h"
#include "tests/support/requests.h"

namespace kvindexer {
// Named rather than anonymous: CI compiles test files in batches (unity
// builds), where anonymous namespaces of neighbouring files merge.
namespace prefix_explain_test {

using test_support::Batch;
using test_support::Hashes;
using test_support::Masks;
using test_support::ModelBackend;
using test_support::PrefixRequest;
using test_support::Spec;

constexpr uint32_t kHbm = kTierHbm;
constexpr uint32_t kDram = kTierDram;
constexpr uint32_t kSsd = kTierSsd;
constexpr uint32_t kBitHbm = kTierBitHbm;
constexpr uint32_t kBitDram = kTierBitDram;
constexpr uint32_t kBitSsd = kTierBitSsd;

class ExplainTest : public ::testing::Test {
 protected:
  void ApplyOk(const v1::ApplyExternalKvBatchRequest& req) {
    v1::ApplyExternalKvBatchResponse resp;
    ASSERT_TRUE(indexer_.operations().Apply(req, &resp).Wait().ok());
  }

  PrefixExplanation Explain(const Hashes& hashes, uint32_t max_blocks = 0,
                            std::vector<std::string> named = {}) {
    PrefixExplanation out;
    const auto req = PrefixRequest(hashes, max_blocks);
    const absl::Status s = ExplainPrefix(
        &backend_, req, named,
        [this](std::string_view id) -> std::optional<KnownWorker> {
          std::optional<WorkerRecord> r =
              indexer_.operator_view().WorkerState(id);
          if (!r) return std::nullopt;
          return KnownWorker{r->address, r->spec};
        },
        &out);
    EXPECT_TRUE(s.ok()) << s;
    // Whatever the case, the answer is production's.
    v1::MatchExternalKvPrefixResponse production;
    EXPECT_TRUE(
        test_support::MatchPrefix(indexer_.operations(), req, &production)
            .ok());
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(out.answer,
                                                                   production))
        << out.answer.DebugString() << "\nvs production\n"
        << production.DebugString();
    return out;
  }

  // A copy: callers pass the temporary Explain() returns.
  static WorkerExplanation Find(const PrefixExplanation& e,
                                const std::string& id) {
    for (const WorkerExplanation& w : e.workers) {
      if (w.worker_id == id) return w;
    }
    ADD_FAILURE() << "no explanation for " << id;
    return WorkerExplanation{};
  }

  ModelBackend backend_;
  Indexer indexer_{&backend_};
};

TEST_F(ExplainTest, WindowEnd) {
  ApplyOk(Batch("w", "a").Report(kHbm, {1, 2, 3}));
  const auto e = Explain({1, 2, 3});
  const auto& w = Find(e, "w");
  EXPECT_EQ(w.matched, 3u);
  EXPECT_EQ(w.stop_reason, StopReason::kWindowEnd);
  EXPECT_FALSE(w.excluded);
  EXPECT_TRUE(w.candidate);
}

TEST_F(ExplainTest, LegacyBlockMissing) {
  ApplyOk(Batch("w", "a").Report(kSsd, {1, 2, 4}));
  const auto& w = Find(Explain({1, 2, 3, 4}), "w");
  EXPECT_EQ(w.matched, 2u);
  EXPECT_EQ(w.stop_reason, StopReason::kBlockMissing);
  EXPECT_EQ(w.stop_block, 2u);
  EXPECT_EQ(w.mode, PrefixScanner::Mode::kLegacy);
  EXPECT_NE(w.detail.find("block 2 has no placement"), std::string::npos)
      << w.detail;
}

TEST_F(ExplainTest, ComponentAwareBlockMissing) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kBitHbm))
              .Report(kHbm, {1, 2}, {1, 1}));
  const auto& w = Find(Explain({1, 2, 3}), "w");
  EXPECT_EQ(w.matched, 2u);
  EXPECT_EQ(w.stop_reason, StopReason::kBlockMissing);
  EXPECT_EQ(w.stop_block, 2u);
  EXPECT_EQ(w.stop_component, kComponentFull);
}

TEST_F(ExplainTest, TierNotAllowed) {
  // FULL only from HBM; block 1 is in DRAM.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kBitHbm))
              .Report(kHbm, {1}, {1})
              .Report(kDram, {2}, {1}));
  const auto& w = Find(Explain({1, 2}), "w");
  EXPECT_EQ(w.matched, 1u);
  EXPECT_EQ(w.stop_reason, StopReason::kTierNotAllowed);
  EXPECT_EQ(w.stop_block, 1u);
  EXPECT_EQ(w.stop_component, kComponentFull);
  EXPECT_NE(w.detail.find("DRAM mask 0x1"), std::string::npos) << w.detail;
}

TEST_F(ExplainTest, SsdIsNeverAllowed) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull, 0, kBitSsd))
              .Report(kSsd, {1}, {1}));
  const auto e = Explain({1});
  const auto& w = Find(e, "w");
  EXPECT_EQ(w.matched, 0u);
  EXPECT_TRUE(w.excluded);
  EXPECT_EQ(w.stop_reason, StopReason::kTierNotAllowed);
  EXPECT_EQ(w.stop_block, 0u);
}

TEST_F(ExplainTest, ComponentHole) {
  // FULL+MAMBA; block 2 lacks MAMBA, block 3 lacks FULL.
  ApplyOk(
      Batch("w", "a")
          .Spec(Spec(kComponentFull | kComponentMamba, 0, kBitHbm, 0, kBitHbm))
          .Report(kHbm, {1, 2, 3}, {5, 5, 1}));
  const auto& w = Find(Explain({1, 2, 3, 4}), "w");
  EXPECT_EQ(w.matched, 2u);
  EXPECT_EQ(w.stop_reason, StopReason::kComponentHole);
  EXPECT_EQ(w.stop_block, 2u);
  EXPECT_EQ(w.stop_component, kComponentMamba);
  EXPECT_NE(w.detail.find("FULL ends at block 3"), std::string::npos)
      << w.detail;
}

TEST_F(ExplainTest, SwaHoleWithNothingAfterIt) {
  // SWA window 10 tokens: block 0 serves; blocks 1 and 2 hold FULL only.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 10, kBitHbm, kBitHbm))
              .Report(kHbm, {1, 2, 3}, {3, 1, 1}, {4, 4, 4}));
  const auto& w = Find(Explain({1, 2, 3}), "w");
  EXPECT_EQ(w.matched, 1u);
  EXPECT_EQ(w.stop_reason, StopReason::kComponentHole);
  EXPECT_EQ(w.stop_block, 1u);
  EXPECT_EQ(w.stop_component, kComponentSwa);
}

TEST_F(ExplainTest, SwaWindowNotMet) {
  // Block 1 is an SWA hole; blocks 2 and 3 hold SWA again, 8 tokens in all,
  // short of the 10-token window.
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentFull | kComponentSwa, 10, kBitHbm, kBitHbm))
              .Report(kHbm, {1, 2, 3, 4, 5}, {3, 1, 3, 3, 3}, {4, 4, 4, 4, 4}));
  const auto& w = Find(Explain({1, 2, 3, 4}), "w");
  EXPECT_EQ(w.matched, 1u);
  EXPECT_EQ(w.stop_reason, StopReason::kSwaWindowNotMet);
  EXPECT_EQ(w.stop_block, 1u);
  EXPECT_EQ(w.stop_component, kComponentSwa);
  EXPECT_NE(w.detail.find("at most 8 tokens"), std::string::npos) << w.detail;
  // One more block brings the run to 12: every block matches.
  EXPECT_EQ(Find(Explain({1, 2, 3, 4, 5}), "w").stop_reason,
            StopReason::kWindowEnd);
}

TEST_F(ExplainTest, FailClosed) {
  ApplyOk(Batch("w", "a").Report(kHbm, {1, 2}).Report(kDram, {4}, {1}));
  const auto e = Explain({1, 2, 3, 4});
  const auto& w = Find(e, "w");
  EXPECT_EQ(w.matched, 0u);
  EXPECT_TRUE(w.excluded);
  EXPECT_EQ(w.stop_reason, StopReason::kFailClosed);
  EXPECT_EQ(w.stop_block, 3u);
}

TEST_F(ExplainTest, InvalidSpec) {
  ApplyOk(Batch("w", "a")
              .Spec(Spec(kComponentSwa | kComponentFull, 0, kBitHbm, kBitHbm))
              .Report(kHbm, {1}, {3}));
  const auto& w = Find(Explain({1}), "w");
  EXPECT_EQ(w.stop_reason, StopReason::kInvalidSpec);
  EXPECT_EQ(w.mode, PrefixScanner::Mode::kInvalid);
  EXPECT_NE(w.detail.find("swa_window_tokens = 0"), std::string::npos);
}

TEST_F(ExplainTest, NotCandidateAndUnknownWorker) {
  ApplyOk(Batch("w", "a").Report(kHbm, {1, 2}));
  ApplyOk(Batch("x", "b").Report(kHbm, {2}));
  ApplyOk(Batch("y", "c").Report(kHbm, {9}));
  const auto e = Explain({1, 2}, 0, {"x", "y", "nobody", "w", "x"});
  ASSERT_EQ(e.workers.size(), 4u);  // w (candidate), x, y, nobody
  EXPECT_EQ(e.workers[0].worker_id, "w");
  const auto& x = Find(e, "x");
  EXPECT_EQ(x.stop_reason, StopReason::kNotCandidate);
  EXPECT_EQ(x.address, "b");  // announced by the scan
  EXPECT_FALSE(x.candidate);
  const auto& y = Find(e, "y");
  EXPECT_EQ(y.stop_reason, StopReason::kNotCandidate);
  EXPECT_EQ(y.address, "c");  // from the host's record
  EXPECT_EQ(Find(e, "nobody").stop_reason, StopReason::kUnknownWorker);
  // Nobody holds block 0: no candidates, blocks_read 1.
  const auto none = Explain({7, 1}, 0, {"w"});
  EXPECT_EQ(none.answer.blocks_read(), 1u);
  EXPECT_EQ(Find(none, "w").stop_reason, StopReason::kNotCandidate);
}

TEST_F(ExplainTest, EmptyAddressIsExcluded) {
  ApplyOk(Batch("w", "").Report(kHbm, {1, 2}));
  const auto e = Explain({1, 2});
  const auto& w = Find(e, "w");
  EXPECT_EQ(w.matched, 2u);
  EXPECT_TRUE(w.excluded);
  EXPECT_NE(w.excluded_reason.find("address is empty"), std::string::npos);
  EXPECT_EQ(e.answer.matches_size(), 0);
}

// --- The randomized comparison ---

v1::WorkerCacheSpec RandomSpec(std::mt19937_64& rng) {
  auto pick = [&](uint32_t n) {
    return static_cast<uint32_t>(
        std::uniform_int_distribution<uint32_t>(0, n - 1)(rng));
  };
  auto tiers = [&] {
    uint32_t mask = 0;
    if (pick(3) != 0) mask |= kBitHbm;
    if (pick(2) != 0) mask |= kBitDram;
    if (pick(4) == 0) mask |= kBitSsd;
    return mask;
  };
  uint32_t components = kComponentFull;
  if (pick(2) != 0) components |= kComponentSwa;
  if (pick(3) == 0) components |= kComponentMamba;
  if (pick(20) == 0) components &= ~kComponentFull;  // FULL is required anyway
  uint32_t window = 1 + pick(24);
  uint32_t version = 1;
  switch (pick(25)) {
    case 0:
      components = 0;  // invalid
      break;
    case 1:
      version = 2;  // invalid
      break;
    case 2:
      if ((components & kComponentSwa) != 0) window = 0;  // invalid
      break;
    default:
      break;
  }
  return Spec(components, window, tiers(), tiers(), tiers(), version);
}

TEST(ExplainProperty, AgreesWithProductionOnRandomStates) {
  std::mt19937_64 rng(0x5eed'ab1e);
  auto pick = [&](uint32_t n) {
    return static_cast<uint32_t>(
        std::uniform_int_distribution<uint32_t>(0, n - 1)(rng));
  };
  std::map<StopReason, int> seen;
  size_t compared = 0;
  for (int state = 0; state < 300; ++state) {
    ModelBackend backend;
    Indexer indexer(&backend);
    const uint32_t workers = 1 + pick(5);
    std::vector<std::string> ids;
    for (uint32_t i = 0; i < workers; ++i) {
      const std::string id = "w" + std::to_string(i);
      ids.push_back(id);
      const bool legacy = pick(3) == 0;
      const std::optional<v1::WorkerCacheSpec> spec =
          legacy ? std::nullopt : std::optional(RandomSpec(rng));
      const std::string address = pick(10) == 0 ? "" : "addr-" + id;
      // One to three batches: reports, then perhaps a revoke.
      const uint32_t batches = 1 + pick(3);
      for (uint32_t b = 0; b < batches; ++b) {
        Batch batch(id, address);
        if (spec) batch.Spec(*spec);
        for (uint32_t tier = kHbm; tier <= kSsd; ++tier) {
          Hashes hashes;
          Masks masks;
          Masks sizes;
          for (int64_t h = 1; h <= 10; ++h) {
            if (pick(2) == 0) continue;
            hashes.push_back(h);
            // Legacy workers mostly send no masks; a few fail closed.
            masks.push_back(legacy ? (pick(12) == 0 ? 1 : 0) : pick(8));
            sizes.push_back(pick(8));
          }
          if (hashes.empty()) continue;
          if (legacy && pick(2) == 0) masks.clear();
          if (pick(4) == 0) sizes.clear();
          batch.Report(static_cast<int>(tier), hashes, masks, sizes);
        }
        if (b > 0 && pick(2) == 0) {
          batch.Revoke(static_cast<int>(1 + pick(3)),
                       {static_cast<int64_t>(1 + pick(10))});
        }
        v1::ApplyExternalKvBatchResponse resp;
        ASSERT_TRUE(indexer.operations().Apply(batch, &resp).Wait().ok());
      }
    }
    for (int query = 0; query < 20; ++query) {
      Hashes hashes;
      const uint32_t length = 1 + pick(10);
      // Mostly the prompt 1, 2, 3, ... with an occasional stranger.
      for (uint32_t i = 0; i < length; ++i) {
        hashes.push_back(pick(8) == 0 ? static_cast<int64_t>(1 + pick(12))
                                      : static_cast<int64_t>(i + 1));
      }
      const uint32_t max_blocks = pick(3) == 0 ? pick(length + 2) : 0;
      const auto req = PrefixRequest(hashes, max_blocks);
      const size_t window = PrefixLimit(hashes.size(), max_blocks);
      std::vector<std::string> named;
      if (pick(2) == 0) named = {ids[pick(workers)], "stranger"};

      v1::MatchExternalKvPrefixResponse production;
      ASSERT_TRUE(
          test_support::MatchPrefix(indexer.operations(), req, &production)
              .ok());
      PrefixExplanation e;
      ASSERT_TRUE(ExplainPrefix(
                      &backend, req, named,
                      [&](std::string_view id) -> std::optional<KnownWorker> {
                        std::optional<WorkerRecord> r =
                            indexer.operator_view().WorkerState(id);
                        if (!r) return std::nullopt;
                        return KnownWorker{r->address, r->spec};
                      },
                      &e)
                      .ok());
      const std::string where =
          "state " + std::to_string(state) + " query " + std::to_string(query);
      ASSERT_TRUE(google::protobuf::util::MessageDifferencer::Equals(
          e.answer, production))
          << where << "\n"
          << e.answer.DebugString() << "\nvs production\n"
          << production.DebugString();
      std::map<std::string, uint32_t> answered;
      for (const auto& m : production.matches()) {
        answered[m.worker_id()] = m.matched_prefix_blocks();
      }
      const auto& model_workers = backend.model().workers();
      for (const WorkerExplanation& w : e.workers) {
        ++compared;
        ++seen[w.stop_reason];
        const std::string who = where + " worker " + w.worker_id + " (" +
                                std::string(StopReasonName(w.stop_reason)) +
                                "): " + w.detail;
        const auto in_answer = answered.find(w.worker_id);
        if (in_answer != answered.end()) {
          EXPECT_EQ(w.matched, in_answer->second) << who;
          EXPECT_FALSE(w.excluded) << who;
        } else {
          EXPECT_TRUE(w.excluded) << who;
          EXPECT_TRUE(w.matched == 0 || w.address.empty()) << who;
        }
        // What the worker holds on a block of the window, from the model.
        auto holds = [&](uint32_t block) {
          const auto it = model_workers.find(w.worker_id);
          if (it == model_workers.end()) return false;
          for (const auto& [tier, set] : it->second.holdings) {
            if (set.contains(hashes[block])) return true;
          }
          return false;
        };
        switch (w.stop_reason) {
          case StopReason::kWindowEnd:
            EXPECT_EQ(w.matched, window) << who;
            break;
          case StopReason::kBlockMissing:
            ASSERT_LT(w.stop_block, window) << who;
            EXPECT_FALSE(holds(w.stop_block)) << who;
            EXPECT_EQ(w.stop_block, w.matched) << who;
            break;
          case StopReason::kTierNotAllowed:
          case StopReason::kComponentHole:
          case StopReason::kSwaWindowNotMet:
            ASSERT_LT(w.stop_block, window) << who;
            EXPECT_TRUE(holds(w.stop_block)) << who;
            EXPECT_EQ(w.stop_block, w.matched) << who;
            EXPECT_NE(w.stop_component, 0u) << who;
            EXPECT_EQ(w.mode, PrefixScanner::Mode::kComponentAware) << who;
            break;
          case StopReason::kFailClosed:
            EXPECT_EQ(w.matched, 0u) << who;
            EXPECT_FALSE(w.spec.has_value()) << who;
            EXPECT_TRUE(holds(w.stop_block)) << who;
            break;
          case StopReason::kInvalidSpec:
            EXPECT_EQ(w.matched, 0u) << who;
            EXPECT_EQ(w.mode, PrefixScanner::Mode::kInvalid) << who;
            break;
          case StopReason::kNotCandidate:
            EXPECT_FALSE(w.candidate) << who;
            EXPECT_FALSE(holds(0)) << who;
            break;
          case StopReason::kUnknownWorker:
            EXPECT_EQ(model_workers.count(w.worker_id), 0u) << who;
            break;
          case StopReason::kNotSelected:
          case StopReason::kNotReady:
            // Only a coverage query, which this test does not make.
            ADD_FAILURE() << who << ": " << StopReasonName(w.stop_reason);
            break;
          case StopReason::kUnspecified:
            ADD_FAILURE() << who;
            break;
        }
      }
    }
  }
  // The generator reaches every reason.
  for (StopReason r : {StopReason::kWindowEnd, StopReason::kBlockMissing,
                       StopReason::kTierNotAllowed, StopReason::kComponentHole,
                       StopReason::kSwaWindowNotMet, StopReason::kFailClosed,
                       StopReason::kInvalidSpec, StopReason::kNotCandidate,
                       StopReason::kUnknownWorker}) {
    EXPECT_GT(seen[r], 0) << StopReasonName(r);
  }
  EXPECT_GT(compared, 5000u);
}

}  // namespace prefix_explain_test
}  // namespace kvindexer
