#include "response_order.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kvindexer::conformance {
namespace {

// Position of each distinct request hash after first-occurrence collapsing.
std::map<int64_t, size_t> Positions(const v1::MatchExternalKvRequest& req) {
  std::map<int64_t, size_t> pos;
  for (int64_t h : req.hashes()) pos.emplace(h, pos.size());
  return pos;
}

size_t FirstMet(const std::map<int64_t, size_t>& pos,
                const v1::ExternalKvNodeMatch& m) {
  size_t first = std::numeric_limits<size_t>::max();
  for (const auto& t : m.hashes_by_tier()) {
    for (int64_t h : t.hashes()) {
      const auto it = pos.find(h);
      if (it != pos.end()) first = std::min(first, it->second);
    }
  }
  return first;
}

}  // namespace

std::string Text(const google::protobuf::Message& m) {
  std::string s = m.ShortDebugString();
  return s.empty() ? "{}" : "{" + s + "}";
}

::testing::AssertionResult MatchOrderHolds(
    const v1::MatchExternalKvRequest& req,
    const v1::MatchExternalKvResponse& resp) {
  const auto pos = Positions(req);
  size_t previous = 0;
  std::map<std::string, int> seen_workers;
  for (const auto& m : resp.matches()) {
    if (++seen_workers[m.worker_id()] > 1) {
      return ::testing::AssertionFailure()
             << "worker " << m.worker_id() << " listed twice in " << Text(resp);
    }
    if (m.hashes_by_tier().empty()) {
      return ::testing::AssertionFailure()
             << "worker " << m.worker_id() << " has no tiers in " << Text(resp);
    }
    const size_t first = FirstMet(pos, m);
    if (first == std::numeric_limits<size_t>::max()) {
      return ::testing::AssertionFailure()
             << "worker " << m.worker_id()
             << " lists a hash that was not requested: " << Text(resp);
    }
    if (first < previous) {
      return ::testing::AssertionFailure()
             << "workers are not in first-met order: " << Text(resp);
    }
    previous = first;
    int previous_tier = -1;
    for (const auto& t : m.hashes_by_tier()) {
      if (static_cast<int>(t.tier()) <= previous_tier) {
        return ::testing::AssertionFailure()
               << "tiers not strictly ascending for " << m.worker_id() << ": "
               << Text(resp);
      }
      previous_tier = static_cast<int>(t.tier());
      if (t.hashes().empty() || t.component_masks_size() != t.hashes_size() ||
          t.block_sizes_size() != t.hashes_size()) {
        return ::testing::AssertionFailure()
               << "empty tier or side arrays not aligned with hashes for "
               << m.worker_id() << ": " << Text(resp);
      }
      size_t last = 0;
      bool first_hash = true;
      for (int64_t h : t.hashes()) {
        const size_t p = pos.at(h);
        if (!first_hash && p <= last) {
          return ::testing::AssertionFailure()
                 << "hashes within a tier not in request order (or repeated) "
                 << "for " << m.worker_id() << ": " << Text(resp);
        }
        first_hash = false;
        last = p;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

void CanonicalizeMatch(const v1::MatchExternalKvRequest& req,
                       v1::MatchExternalKvResponse* resp) {
  const auto pos = Positions(req);
  std::vector<v1::ExternalKvNodeMatch> matches(resp->matches().begin(),
                                               resp->matches().end());
  std::stable_sort(matches.begin(), matches.end(),
                   [&](const auto& a, const auto& b) {
                     return std::make_tuple(FirstMet(pos, a), a.worker_id()) <
                            std::make_tuple(FirstMet(pos, b), b.worker_id());
                   });
  resp->clear_matches();
  for (auto& m : matches) *resp->add_matches() = std::move(m);
}

::testing::AssertionResult PrefixOrderHolds(
    const v1::MatchExternalKvPrefixResponse& resp) {
  uint32_t previous = std::numeric_limits<uint32_t>::max();
  for (const auto& m : resp.matches()) {
    if (m.worker_address().empty() || m.matched_prefix_blocks() == 0) {
      return ::testing::AssertionFailure()
             << "entry with empty address or zero prefix: " << Text(resp);
    }
    if (m.matched_prefix_blocks() > previous) {
      return ::testing::AssertionFailure()
             << "entries not sorted by prefix, descending: " << Text(resp);
    }
    previous = m.matched_prefix_blocks();
  }
  const uint32_t best =
      resp.matches().empty() ? 0 : resp.matches(0).matched_prefix_blocks();
  if (resp.best_prefix_blocks() != best) {
    return ::testing::AssertionFailure()
           << "best_prefix_blocks is not the first entry's prefix: "
           << Text(resp);
  }
  return ::testing::AssertionSuccess();
}

void CanonicalizePrefix(v1::MatchExternalKvPrefixResponse* resp) {
  std::vector<v1::ExternalKvPrefixMatch> matches(resp->matches().begin(),
                                                 resp->matches().end());
  std::stable_sort(
      matches.begin(), matches.end(), [](const auto& a, const auto& b) {
        if (a.matched_prefix_blocks() != b.matched_prefix_blocks()) {
          return a.matched_prefix_blocks() > b.matched_prefix_blocks();
        }
        return a.worker_id() < b.worker_id();
      });
  resp->clear_matches();
  for (auto& m : matches) *resp->add_matches() = std::move(m);
}

}  // namespace kvindexer::conformance
