// Randomised differential test: seeded sequences of applies, worker removals
// (ABI 1.1 backends) and queries run against backend+Indexer and against
// ReferenceModel; after every step the results, statuses and the whole
// observable state must agree.
//
//   KV_INDEXER_CONFORMANCE_SEED        base seed (sequence i uses seed + i)
//   KV_INDEXER_CONFORMANCE_ITERATIONS  number of sequences
//
// A failure prints the seed, the step and the recent operations, and how to
// rerun exactly that sequence.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/env.h"
#include "conformance_fixture.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/support/reference_model.h"

namespace kvindexer::conformance {
namespace {

using test_support::ReferenceModel;

constexpr uint64_t kDefaultSeed = 20261130;
constexpr int kDefaultSequences = 48;
constexpr int kStepsPerSequence = 300;

// The variable's value, or `fallback` when it is unset or blank. A value that
// is not a whole number fails the calling test with common/env.h's message
// (naming the variable, the value and what is accepted) and yields nullopt.
std::optional<uint64_t> EnvNumber(std::string_view name, uint64_t fallback) {
  const std::optional<std::string> value =
      LookupTrimmed(ProcessEnvironment(), name);
  if (!value) return fallback;
  absl::StatusOr<uint32_t> n = ParseEnvUint32(name, *value, Uint32Syntax{},
                                              "a whole number 0..4294967295");
  if (!n.ok()) {
    ADD_FAILURE() << n.status().message();
    return std::nullopt;
  }
  return *n;
}

// Small deterministic generator helpers (no std distributions, whose output
// differs between standard libraries).
class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  uint64_t Below(uint64_t n) { return rng_() % n; }
  bool Percent(int p) { return Below(100) < static_cast<uint64_t>(p); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Below(v.size())];
  }

 private:
  std::mt19937_64 rng_;
};

const std::vector<int64_t> kUniverse = {-4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};
const std::vector<uint32_t> kMaskValues = {0, 1, 3, 5, 7, 2,          4,
                                           1, 3, 3, 1, 8, 0xFFFFFFFFu};
const std::vector<uint32_t> kSizeValues = {0, 16, 50, 100, 30, 64};

std::vector<std::optional<v1::WorkerCacheSpec>> SpecPool() {
  const uint32_t servable = kTierBitHbm | kTierBitDram;
  return {
      std::nullopt,
      Spec(kComponentFull | kComponentSwa, 100, servable, kTierBitHbm),
      Spec(kComponentFull | kComponentMamba, 0, servable, 0, servable),
      Spec(kComponentFull, 0, servable),
      Spec(kComponentFull | kComponentSwa | kComponentMamba, 64,
           servable | kTierBitSsd, servable, kTierBitDram),
      Spec(0, 100, servable, servable),  // invalid
      Spec(kComponentFull | kComponentSwa, 100, servable, servable, 0,
           2),                                                      // invalid
      Spec(kComponentFull | kComponentSwa, 0, servable, servable),  // invalid
      Spec(kComponentFull | kComponentSwa, 50, servable, servable, 0,
           0),                                         // version 0
      Spec(kComponentFull, 0, kTierBitSsd),            // never servable
      Spec(kComponentSwa, 10, servable, kTierBitHbm),  // FULL still needed
  };
}

class DifferentialTest : public ConformanceTest {
 protected:
  // Runs one sequence; returns false after the first disagreement.
  bool RunSequence(uint64_t seed);
};
KVINDEXER_INSTANTIATE_CONFORMANCE(DifferentialTest);

std::vector<int64_t> RandomHashes(Random& r, int min, int max) {
  std::vector<int64_t> out;
  const int n = min + static_cast<int>(r.Below(max - min + 1));
  for (int i = 0; i < n; ++i) out.push_back(r.Pick(kUniverse));
  return out;
}

// A run of consecutive universe hashes, so that multi-block prefixes (and
// the SWA window and MAMBA boundary rules) come up often.
std::vector<int64_t> RandomRun(Random& r, int min, int max) {
  const int n = min + static_cast<int>(r.Below(max - min + 1));
  const size_t first = r.Below(kUniverse.size());
  std::vector<int64_t> out;
  for (int i = 0; i < n && first + i < kUniverse.size(); ++i) {
    out.push_back(kUniverse[first + i]);
  }
  return out;
}

v1::ApplyExternalKvBatchRequest RandomBatch(Random& r) {
  static const auto specs = SpecPool();
  const int w = static_cast<int>(r.Below(5));
  // Each worker has a home spec it usually sends; worker 4 has none.
  const size_t home[] = {0, 1, 2, 0, 3};
  Batch b(r.Percent(1) ? "" : absl::StrCat("w", w),
          r.Percent(15) ? "" : absl::StrCat("10.0.0.", w, ":1"));
  const auto& spec = (w == 4 || r.Percent(20)) ? r.Pick(specs) : specs[home[w]];
  if (spec.has_value()) b.Spec(*spec);
  const int actions = static_cast<int>(r.Below(5));
  for (int i = 0; i < actions; ++i) {
    int type;
    const uint64_t t = r.Below(100);
    if (t < 3) {
      type = r.Percent(50) ? 0 : 999;
    } else if (t < 50) {
      type = kActionReport;
    } else if (t < 85) {
      type = kActionRevoke;
    } else {
      type = kActionClearAllAtTier;
    }
    int tier = 1 + static_cast<int>(r.Below(3));
    if (r.Percent(2)) tier = r.Pick(std::vector<int>{0, 4, -1});
    std::vector<int64_t> hashes;
    if (type == kActionClearAllAtTier) {
      if (r.Percent(20)) hashes = RandomHashes(r, 1, 2);
    } else if (!r.Percent(2)) {
      hashes = r.Percent(50) ? RandomRun(r, 2, 8) : RandomHashes(r, 1, 6);
    }
    std::vector<uint32_t> masks, sizes;
    if (type == kActionReport || r.Percent(3)) {
      // Mostly masks that suit the worker's home spec (so that prefixes
      // are often long), otherwise anything.
      static const std::vector<uint32_t> kSuited[] = {
          {}, {3, 3, 3, 1, 7}, {1, 1, 5, 5, 7}, {}, {1, 1, 3}};
      const std::vector<uint32_t>& suited = kSuited[w];
      if (r.Percent(70)) {
        for (size_t k = 0; k < hashes.size() && !suited.empty(); ++k) {
          masks.push_back(r.Pick(suited));
        }
      } else if (r.Percent(60)) {
        for (size_t k = 0; k < hashes.size(); ++k) {
          masks.push_back(r.Pick(kMaskValues));
        }
      }
      if (r.Percent(50)) {
        for (size_t k = 0; k < hashes.size(); ++k) {
          sizes.push_back(r.Pick(kSizeValues));
        }
      }
      if (r.Percent(2)) masks.push_back(1);  // misaligned
      if (r.Percent(2)) sizes.push_back(16);
    }
    b.Action(type, tier, hashes, masks, sizes);
  }
  v1::ApplyExternalKvBatchRequest req = b.request();
  req.set_seq(r.Below(1000));  // never validated or used
  return req;
}

bool SameStatus(const absl::Status& a, const absl::Status& b) {
  return a.code() == b.code() && a.message() == b.message();
}

bool DifferentialTest::RunSequence(uint64_t seed) {
  Random r(seed);
  BackendInstance instance(descriptor());
  if (instance.get() == nullptr) {
    ADD_FAILURE() << "create() failed: " << instance.error();
    return false;
  }
  Indexer indexer(instance.get(), /*gate_log=*/nullptr, RequestLimits{},
                  abi_minor());
  ReferenceModel model;
  const bool removes = SupportsAbiMinor(1);  // RemoveWorker is ABI 1.1
  std::deque<std::string> recent;
  int step = 0;

  const auto fail = [&](const std::string& what) {
    ADD_FAILURE() << "differential mismatch at seed " << seed << ", step "
                  << step << ": " << what << "\nrecent operations (oldest "
                  << "first):\n  " << absl::StrJoin(recent, "\n  ")
                  << "\nrerun with KV_INDEXER_CONFORMANCE_SEED=" << seed
                  << " KV_INDEXER_CONFORMANCE_ITERATIONS=1";
    return false;
  };
  const auto note = [&](const std::string& what) {
    recent.push_back(absl::StrCat(step, ": ", what));
    if (recent.size() > 12) recent.pop_front();
  };

  const auto compare_match = [&](const v1::MatchExternalKvRequest& req) {
    v1::MatchExternalKvResponse got, want;
    const absl::Status gs = indexer.operations().Match(req, &got);
    const absl::Status ws = model.Match(req, &want);
    if (!SameStatus(gs, ws)) {
      return fail(absl::StrCat("match status ", gs.ToString(), ", model ",
                               ws.ToString(), " for ", Text(req)));
    }
    if (!gs.ok()) return true;
    if (auto order = MatchOrderHolds(req, got); !order) {
      return fail(order.message());
    }
    CanonicalizeMatch(req, &got);
    CanonicalizeMatch(req, &want);
    if (!google::protobuf::util::MessageDifferencer::Equals(got, want)) {
      return fail(absl::StrCat("match for ", Text(req), "\n  got   ", Text(got),
                               "\n  model ", Text(want)));
    }
    return true;
  };
  const auto compare_prefix = [&](const v1::MatchExternalKvPrefixRequest& req) {
    v1::MatchExternalKvPrefixResponse got, want;
    const absl::Status gs = MatchPrefix(indexer.operations(), req, &got);
    const absl::Status ws = model.MatchPrefix(req, &want);
    if (!SameStatus(gs, ws)) {
      return fail(absl::StrCat("prefix status ", gs.ToString(), ", model ",
                               ws.ToString(), " for ", Text(req)));
    }
    if (!gs.ok()) return true;
    if (auto order = PrefixOrderHolds(got); !order) {
      return fail(order.message());
    }
    CanonicalizePrefix(&got);
    CanonicalizePrefix(&want);
    if (!google::protobuf::util::MessageDifferencer::Equals(got, want)) {
      return fail(absl::StrCat("prefix for ", Text(req), "\n  got   ",
                               Text(got), "\n  model ", Text(want)));
    }
    return true;
  };
  const auto compare_hits = [&](const v1::GetExternalKvHitCountsRequest& req) {
    v1::GetExternalKvHitCountsResponse got, want;
    const absl::Status gs = indexer.operations().HitCounts(req, &got);
    const absl::Status ws = model.HitCounts(req, &want);
    if (!SameStatus(gs, ws)) {
      return fail(absl::StrCat("hit-count status ", gs.ToString(), ", model ",
                               ws.ToString(), " for ", Text(req)));
    }
    if (gs.ok() &&
        !google::protobuf::util::MessageDifferencer::Equals(got, want)) {
      return fail(absl::StrCat("hit counts for ", Text(req), "\n  got   ",
                               Text(got), "\n  model ", Text(want)));
    }
    return true;
  };

  for (step = 0; step < kStepsPerSequence; ++step) {
    const uint64_t op = r.Below(100);
    if (op < 55) {
      const auto req = RandomBatch(r);
      note(absl::StrCat("apply ", Text(req)));
      v1::ApplyExternalKvBatchResponse resp;
      const absl::Status gs = indexer.operations().Apply(req, &resp).Wait();
      const absl::Status ws = model.Apply(req);
      if (!SameStatus(gs, ws)) {
        return fail(absl::StrCat("apply status ", gs.ToString(), ", model ",
                                 ws.ToString()));
      }
    } else if (op < 72) {
      const auto req = MatchRequest(
          r.Percent(2) ? Hashes() : RandomHashes(r, 1, 8), r.Percent(40));
      note(absl::StrCat("match ", Text(req)));
      if (!compare_match(req)) return false;
    } else if (op < 90) {
      const Hashes hashes = r.Percent(2)    ? Hashes()
                            : r.Percent(50) ? RandomRun(r, 1, 12)
                                            : RandomHashes(r, 1, 10);
      const uint32_t max_blocks =
          r.Percent(60) ? 0 : static_cast<uint32_t>(r.Below(hashes.size() + 3));
      const auto req = PrefixRequest(hashes, max_blocks);
      note(absl::StrCat("prefix ", Text(req)));
      if (!compare_prefix(req)) return false;
    } else if (op < 95) {
      // RemoveWorker (ABI 1.1), straight to the backend as the host would
      // call it; an ABI 1.0 backend skips the step (the draws stay the same,
      // so a seed means the same sequence for every backend).
      const uint64_t pick = r.Below(6);
      const std::string id = pick < 5 ? absl::StrCat("w", pick) : "nobody";
      if (removes) {
        note(absl::StrCat("remove worker ", id));
        uint32_t existed = 7;
        const BackendStatus gs = instance.get()->RemoveWorker(
            StringView{id.data(), id.size()}, &existed);
        const bool want = model.RemoveWorker(id);
        if (gs.code != BackendCode::kOk) {
          return fail(absl::StrCat("remove worker ", id, ": code ",
                                   static_cast<int>(gs.code), " ", gs.message));
        }
        if (existed != (want ? 1u : 0u)) {
          return fail(absl::StrCat("remove worker ", id, ": existed ", existed,
                                   ", model ", want ? 1 : 0));
        }
      }
    } else {
      const auto req =
          HitCountsRequest(r.Percent(2) ? Hashes() : RandomHashes(r, 1, 8));
      note(absl::StrCat("hit counts ", Text(req)));
      if (!compare_hits(req)) return false;
    }

    // The whole observable state after every step.
    if (!compare_match(MatchRequest(kUniverse))) return false;
    if (!compare_hits(HitCountsRequest(kUniverse))) return false;
    // A prefix query over the whole universe: shuffled, or in order from a
    // random start (where reported runs give long prefixes).
    Hashes query = kUniverse;
    if (r.Percent(50)) {
      for (size_t i = query.size(); i > 1; --i) {
        std::swap(query[i - 1], query[r.Below(i)]);
      }
    } else {
      std::rotate(query.begin(),
                  query.begin() + static_cast<ptrdiff_t>(r.Below(query.size())),
                  query.end());
    }
    if (!compare_prefix(PrefixRequest(query))) return false;
    BackendStats stats{};
    stats.struct_size = sizeof(stats);
    instance.get()->GetStats(&stats);
    if (stats.blocks != model.block_count() ||
        stats.placements != model.placement_count() ||
        stats.workers != model.worker_count() ||
        stats.hit_counters != model.hit_counter_count()) {
      return fail(absl::StrCat(
          "stats blocks/placements/workers/hit_counters ", stats.blocks, "/",
          stats.placements, "/", stats.workers, "/", stats.hit_counters,
          ", model ", model.block_count(), "/", model.placement_count(), "/",
          model.worker_count(), "/", model.hit_counter_count()));
    }
  }
  return true;
}

TEST_P(DifferentialTest, RandomSequencesAgreeWithReferenceModel) {
  const std::optional<uint64_t> seed_var =
      EnvNumber("KV_INDEXER_CONFORMANCE_SEED", kDefaultSeed);
  const std::optional<uint64_t> sequences_var =
      EnvNumber("KV_INDEXER_CONFORMANCE_ITERATIONS", kDefaultSequences);
  if (!seed_var || !sequences_var) return;
  const uint64_t seed = *seed_var;
  const uint64_t sequences = *sequences_var;
  std::printf("differential: seeds %llu..%llu, %d steps each\n",
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed + sequences - 1),
              kStepsPerSequence);
  for (uint64_t i = 0; i < sequences; ++i) {
    if (!RunSequence(seed + i)) break;
  }
}

// The model itself must pass the hand-written behaviours it is used to
// stand in for; a few spot checks keep it honest.
TEST(ReferenceModelTest, SpotChecks) {
  ReferenceModel m;
  ASSERT_TRUE(
      m.Apply(Batch("w-long", "10.0.0.1:1").Report(kTierHbm, {1, 2, 3, 4}))
          .ok());
  ASSERT_TRUE(
      m.Apply(Batch("w-hole", "10.0.0.3:1").Report(kTierHbm, {1, 3, 4})).ok());
  v1::MatchExternalKvPrefixResponse resp;
  ASSERT_TRUE(m.MatchPrefix(PrefixRequest({1, 2, 3, 4}), &resp).ok());
  ASSERT_EQ(resp.matches_size(), 2);
  EXPECT_EQ(At(resp.matches(), 0).worker_id(), "w-long");
  EXPECT_EQ(At(resp.matches(), 1).matched_prefix_blocks(), 1u);
  const uint32_t fs = kComponentFull | kComponentSwa;
  ASSERT_TRUE(m.Apply(Batch("w", "a")
                          .Spec(Spec(kComponentFull | kComponentSwa, 100,
                                     kTierBitHbm, kTierBitHbm))
                          .Report(kTierHbm, {11, 12, 13, 14, 15},
                                  {fs, fs, fs, kComponentFull, fs},
                                  {50, 50, 50, 50, 50}))
                  .ok());
  ASSERT_TRUE(m.MatchPrefix(PrefixRequest({11, 12, 13, 14, 15}), &resp).ok());
  ASSERT_EQ(resp.matches_size(), 1);
  EXPECT_EQ(At(resp.matches(), 0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(m.Apply(Batch("x").Action(999, 0, {1})).message(),
            "tier must not be TIER_UNKNOWN");
}

}  // namespace
}  // namespace kvindexer::conformance
