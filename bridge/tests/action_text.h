// Renders actions and requests as short strings so that tests can state the
// expected result in the notation of docs/bridge-events.md, "Reference
// behaviours", e.g. "REPORT HBM [1,2]".
#ifndef KVINDEXER_BRIDGE_TESTS_ACTION_TEXT_H_
#define KVINDEXER_BRIDGE_TESTS_ACTION_TEXT_H_

#include <string>
#include <string_view>
#include <vector>

#include "bridge/action_builder.h"
#include "bridge/kv_events.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge::testing {

// "REPORT HBM [1,2]", "REVOKE SSD [100,200]", "CLEAR DRAM", and for REPORTs
// with side arrays "REPORT HBM [1] masks=[3] sizes=[64]".
std::vector<std::string> DescribeActions(const ActionList& actions);
std::vector<std::string> DescribeActions(
    const kv_indexer::v1::ApplyExternalKvBatchRequest& request);

// Decodes `payload` and builds actions with the given clear tiers (default
// HBM, DRAM, SSD). A batch-level error yields {"BATCH ERROR"}.
std::vector<std::string> DecodeAndDescribe(
    std::string_view payload, const std::vector<Tier>& clear_tiers = {
                                  Tier::kHbm, Tier::kDram, Tier::kSsd});

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_ACTION_TEXT_H_
