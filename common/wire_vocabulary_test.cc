#include "common/wire_vocabulary.h"

#include "gtest/gtest.h"

namespace kvindexer {
namespace {

// The numbers are fixed by kv_indexer.v1; these spell them out once more so
// that a careless edit of the header shows up as a failing test.
TEST(WireVocabularyTest, TierNumbersAndBits) {
  EXPECT_EQ(TierNumber(Tier::kHbm), 1u);
  EXPECT_EQ(TierNumber(Tier::kDram), 2u);
  EXPECT_EQ(TierNumber(Tier::kSsd), 3u);
  EXPECT_EQ(kTierBitHbm, 0x2u);
  EXPECT_EQ(kTierBitDram, 0x4u);
  EXPECT_EQ(kTierBitSsd, 0x8u);
  EXPECT_EQ(kServableTierMask, 0x6u);
}

TEST(WireVocabularyTest, ActionNumbers) {
  EXPECT_EQ(ActionNumber(ActionType::kReport), 1u);
  EXPECT_EQ(ActionNumber(ActionType::kRevoke), 2u);
  EXPECT_EQ(ActionNumber(ActionType::kClearAllAtTier), 3u);
}

TEST(WireVocabularyTest, ComponentBits) {
  EXPECT_EQ(kComponentFull, 1u);
  EXPECT_EQ(kComponentSwa, 2u);
  EXPECT_EQ(kComponentMamba, 4u);
}

TEST(WireVocabularyTest, ContractLimits) {
  EXPECT_EQ(kMaxHashesPerRequest, 16384u);
  EXPECT_EQ(kMaxActionsPerBatch, 256u);
  EXPECT_EQ(kMaxRequestBytes, 8u * 1024 * 1024);
  EXPECT_EQ(kMaxConcurrentStreams, 64);
  EXPECT_EQ(kSupportedSpecVersion, 1u);
}

}  // namespace
}  // namespace kvindexer
