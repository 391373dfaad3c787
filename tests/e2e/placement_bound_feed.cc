#include "tests/e2e/placement_bound_feed.h"

#include <algorithm>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::e2e {
namespace {

namespace v1 = ::kv_indexer::v1;

constexpr char kNamespace[] = "bound-ns";
constexpr uint32_t kMaxRevoke = 30;

// A tier drawn 40% HBM, 35% DRAM, 25% SSD.
v1::TierType DrawTier(std::mt19937_64& rng) {
  const uint64_t roll = rng() % 100;
  if (roll < 40) return v1::TIER_HBM;
  if (roll < 75) return v1::TIER_DRAM;
  return v1::TIER_SSD;
}

}  // namespace

PlacementBoundFeed::PlacementBoundFeed(
    const PlacementBoundFeedOptions& options) {
  std::mt19937_64 rng(options.seed);
  // What each stream has reported and not revoked, per tier.
  std::vector<std::array<std::vector<int64_t>, 4>> held(
      static_cast<size_t>(options.streams));
  std::vector<uint64_t> seq(static_cast<size_t>(options.streams), 0);
  int64_t next_hash = 1'000'000;
  for (size_t n = 0; n < options.batches; ++n) {
    const size_t s = n % static_cast<size_t>(options.streams);
    const std::string worker = absl::StrCat("bound-w", s);
    v1::ApplyExternalKvBatchRequest req;
    if (options.line_a) {
      v1::StreamId* id = req.mutable_stream_id();
      id->set_namespace_(kNamespace);
      id->set_worker_id(worker);
      id->set_dp_rank(0);
    } else {
      req.set_worker_id(worker);
    }
    req.set_worker_address(absl::StrCat("10.0.9.", s, ":8000"));
    req.set_seq(++seq[s]);

    const v1::TierType tier = DrawTier(rng);
    const bool small =
        static_cast<int>(s) >= options.streams - options.small_streams;
    const uint32_t count =
        small ? 1 + static_cast<uint32_t>(rng() % 3)
              : options.min_report +
                    static_cast<uint32_t>(
                        rng() % (options.max_report - options.min_report + 1));
    v1::ExternalKvAction* report = req.add_actions();
    report->set_type(v1::ACTION_REPORT);
    report->set_tier(tier);
    for (uint32_t i = 0; i < count; ++i) {
      const int64_t hash = next_hash++;
      report->add_hashes(hash);
      held[s][tier].push_back(hash);
      universe_.push_back(hash);
    }

    // Two batches in five also revoke some of what one tier holds.
    if (rng() % 5 < 2) {
      const v1::TierType from = DrawTier(rng);
      std::vector<int64_t>& pool = held[s][from];
      const size_t revoke =
          std::min<size_t>(pool.size(), 1 + rng() % kMaxRevoke);
      if (revoke > 0) {
        v1::ExternalKvAction* action = req.add_actions();
        action->set_type(v1::ACTION_REVOKE);
        action->set_tier(from);
        for (size_t i = 0; i < revoke; ++i) {
          const size_t at = rng() % pool.size();
          action->add_hashes(pool[at]);
          pool[at] = pool.back();
          pool.pop_back();
        }
      }
    }
    requests_.push_back(std::move(req));
  }
  for (const auto& tiers : held) {
    for (const auto& hashes : tiers) reported_ += hashes.size();
  }
  std::sort(universe_.begin(), universe_.end());
}

uint64_t BoundState::total() const {
  uint64_t sum = 0;
  for (const auto& [key, stream] : streams) sum += stream.total();
  return sum;
}

size_t BoundState::evicted() const {
  size_t count = 0;
  for (const auto& [key, stream] : streams) count += stream.evicted ? 1 : 0;
  return count;
}

std::string BoundState::Text() const {
  std::string text;
  for (const auto& [key, stream] : streams) {
    absl::StrAppend(&text, key, ": hbm=", stream.tiers[1],
                    " dram=", stream.tiers[2], " ssd=", stream.tiers[3],
                    stream.evicted ? " evicted" : "", "\n");
  }
  return text;
}

void PrintTo(const BoundState& state, std::ostream* os) {
  *os << "\n" << state.Text();
}

absl::StatusOr<BoundState> BoundStateOf(
    const ::kvindexer::admin::v1::ListWorkersResponse& listed) {
  if (!listed.next_page_token().empty()) {
    return absl::OutOfRangeError("ListWorkers answered with more pages");
  }
  BoundState state;
  for (const auto& w : listed.workers()) {
    const std::string key =
        absl::StrCat(w.namespace_(), "/", w.worker_id(), "/", w.dp_rank());
    if (!w.placement_counts_known()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no placement counts for ", key));
    }
    StreamBoundState& stream = state.streams[key];
    for (const auto& count : w.placements()) {
      const int tier = static_cast<int>(count.tier());
      if (tier < 1 || tier > 3) {
        return absl::InvalidArgumentError(
            absl::StrCat(key, " has placements at tier ", tier));
      }
      stream.tiers[static_cast<size_t>(tier)] = count.placements();
    }
    stream.evicted =
        w.fidelity() == ::kvindexer::admin::v1::FIDELITY_DEGRADED &&
        w.fidelity_reason() == "evicted";
  }
  return state;
}

}  // namespace kvindexer::e2e
