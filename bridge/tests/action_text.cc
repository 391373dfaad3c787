#include "bridge/tests/action_text.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bridge/cache_names.h"
#include "bridge/event_decoder.h"

namespace kvindexer::bridge::testing {
namespace {

std::string Describe(int type, int tier, const std::vector<int64_t>& hashes,
                     const std::vector<uint32_t>& masks,
                     const std::vector<uint32_t>& sizes) {
  std::string tier_name = tier >= 1 && tier <= 3
                              ? std::string(TierName(static_cast<Tier>(tier)))
                              : absl::StrCat("TIER", tier);
  switch (type) {
    case 3: {
      std::string out = absl::StrCat("CLEAR ", tier_name);
      if (!hashes.empty())
        absl::StrAppend(&out, " [", absl::StrJoin(hashes, ","), "]");
      return out;
    }
    case 1:
    case 2: {
      std::string out =
          absl::StrCat(type == 1 ? "REPORT " : "REVOKE ", tier_name, " [",
                       absl::StrJoin(hashes, ","), "]");
      if (!masks.empty() || !sizes.empty()) {
        absl::StrAppend(&out, " masks=[", absl::StrJoin(masks, ","),
                        "] sizes=[", absl::StrJoin(sizes, ","), "]");
      }
      return out;
    }
    default:
      return absl::StrCat("TYPE", type);
  }
}

}  // namespace

std::vector<std::string> DescribeActions(const ActionList& actions) {
  std::vector<std::string> out;
  for (const KvAction& a : actions.actions) {
    auto b = static_cast<std::ptrdiff_t>(a.hash_begin);
    auto e = static_cast<std::ptrdiff_t>(a.hash_begin + a.hash_count);
    std::vector<int64_t> hashes(actions.hashes.begin() + b,
                                actions.hashes.begin() + e);
    std::vector<uint32_t> masks, sizes;
    if (a.has_side_arrays) {
      masks.assign(actions.masks.begin() + b, actions.masks.begin() + e);
      sizes.assign(actions.sizes.begin() + b, actions.sizes.begin() + e);
    }
    out.push_back(Describe(static_cast<int>(a.kind), static_cast<int>(a.tier),
                           hashes, masks, sizes));
  }
  return out;
}

std::vector<std::string> DescribeActions(
    const kv_indexer::v1::ApplyExternalKvBatchRequest& request) {
  std::vector<std::string> out;
  for (const auto& a : request.actions()) {
    out.push_back(Describe(
        a.type(), a.tier(),
        std::vector<int64_t>(a.hashes().begin(), a.hashes().end()),
        std::vector<uint32_t>(a.component_masks().begin(),
                              a.component_masks().end()),
        std::vector<uint32_t>(a.block_sizes().begin(), a.block_sizes().end())));
  }
  return out;
}

std::vector<std::string> DecodeAndDescribe(
    std::string_view payload, const std::vector<Tier>& clear_tiers) {
  DecodedBatch batch;
  if (!EventDecoder().Decode(payload, &batch).ok()) return {"BATCH ERROR"};
  ActionList actions;
  BuildActions(batch, clear_tiers, &actions);
  return DescribeActions(actions);
}

}  // namespace kvindexer::bridge::testing
