// Compile-time proof that the three spellings of the kv_indexer.v1 numbers
// agree: this library's vocabulary, the backend ABI header (which must stay
// self-contained, so it cannot use ours) and the generated protobuf enums.
#include "common/wire_vocabulary.h"

#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

static_assert(TierNumber(Tier::kHbm) == kTierHbm);
static_assert(TierNumber(Tier::kDram) == kTierDram);
static_assert(TierNumber(Tier::kSsd) == kTierSsd);
static_assert(TierNumber(Tier::kSsd) == kMaxTier);

static_assert(TierNumber(Tier::kHbm) == static_cast<uint32_t>(v1::TIER_HBM));
static_assert(TierNumber(Tier::kDram) == static_cast<uint32_t>(v1::TIER_DRAM));
static_assert(TierNumber(Tier::kSsd) == static_cast<uint32_t>(v1::TIER_SSD));
static_assert(v1::TierType_MAX == v1::TIER_SSD);

static_assert(ActionNumber(ActionType::kReport) == kActionReport);
static_assert(ActionNumber(ActionType::kRevoke) == kActionRevoke);
static_assert(ActionNumber(ActionType::kClearAllAtTier) ==
              kActionClearAllAtTier);

static_assert(ActionNumber(ActionType::kReport) ==
              static_cast<uint32_t>(v1::ACTION_REPORT));
static_assert(ActionNumber(ActionType::kRevoke) ==
              static_cast<uint32_t>(v1::ACTION_REVOKE));
static_assert(ActionNumber(ActionType::kClearAllAtTier) ==
              static_cast<uint32_t>(v1::ACTION_CLEAR_ALL_AT_TIER));
static_assert(v1::ExternalKvActionType_MAX == v1::ACTION_CLEAR_ALL_AT_TIER);

}  // namespace
}  // namespace kvindexer
