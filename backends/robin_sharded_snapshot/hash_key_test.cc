// The keyed block-hash mixer (block_record.h, hash_key.h): block hashes
// crafted against the old fixed mixer pile up in one shard and one bucket
// under it and spread under any other key; KV_INDEXER_ROBIN_HASH_KEY's
// accepted values, refusals, and its path through the plugin's create().
#include "hash_key.h"

#include <stdlib.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "block_record.h"
#include "core/backend_loader.h"
#include "gtest/gtest.h"
#include "recording_visitor.h"
#include "robin_backend.h"
#include "tests/support/crafted_keys_hashes.h"
#include "tests/support/requests.h"

namespace kvindexer::robin {
namespace {

using bench::CraftLegacyCollisions;
using bench::LegacyMixHash;
using test_support::Batch;
using testing::Ok;
using testing::RecordingVisitor;

constexpr uint32_t kBucketBits = 16;
constexpr size_t kCrafted = 1 << kBucketBits;  // 1,024 per shard if spread

// Two keys picked by hand, neither the legacy one.
constexpr HashKey kKeyA = {0x0123456789ABCDEFull, 0x5851F42D4C957F2Dull};
constexpr HashKey kKeyB = {0xF0E1D2C3B4A59687ull, 0xA0761D6478BD642Full};

struct Loads {
  size_t max_shard = 0;   // most hashes in one of the 64 shards
  size_t max_bucket = 0;  // most hashes sharing their low kBucketBits bits
};

template <typename Mix>
Loads LoadsUnder(const std::vector<int64_t>& hashes, Mix mix) {
  std::vector<size_t> shards(size_t{1} << kShardBits, 0);
  std::vector<size_t> buckets(size_t{1} << kBucketBits, 0);
  Loads loads;
  for (const int64_t hash : hashes) {
    const uint64_t mixed = mix(hash);
    loads.max_shard =
        std::max(loads.max_shard, ++shards[mixed >> (64 - kShardBits)]);
    loads.max_bucket =
        std::max(loads.max_bucket,
                 ++buckets[mixed & ((uint64_t{1} << kBucketBits) - 1)]);
  }
  return loads;
}

// Bounds far above what any fair mixer gives these 65,536 hashes (a shard's
// share is 1,024 +- 32; a bucket's 1, rarely above 9) and far below the
// crafted pile-up (all 65,536 in one).
void ExpectSpread(const Loads& loads, const char* under) {
  EXPECT_LT(loads.max_shard, 2 * kCrafted / (size_t{1} << kShardBits)) << under;
  EXPECT_LT(loads.max_bucket, 32u) << under;
}

TEST(HashKeyTest, LegacyKeyIsTheOldFixedMixer) {
  EXPECT_TRUE(IsUsableHashKey(kLegacyHashKey));
  std::mt19937_64 rng(11);
  for (int i = 0; i < 10000; ++i) {
    const int64_t hash = static_cast<int64_t>(rng());
    ASSERT_EQ(MixHashWithKey(kLegacyHashKey, hash), LegacyMixHash(hash));
  }
  for (const int64_t hash :
       {int64_t{0}, int64_t{1}, int64_t{-1}, INT64_MIN, INT64_MAX}) {
    EXPECT_EQ(MixHashWithKey(kLegacyHashKey, hash), LegacyMixHash(hash));
  }
}

TEST(HashKeyTest, CraftedHashesCollideUnderTheOldMixer) {
  const std::vector<int64_t> crafted = CraftLegacyCollisions(kCrafted, 20);
  ASSERT_EQ(crafted.size(), kCrafted);
  std::vector<int64_t> sorted = crafted;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  size_t elsewhere = 0;  // outside shard 0, or with a low bit set
  for (const int64_t hash : crafted) {
    const uint64_t mixed = MixHashWithKey(kLegacyHashKey, hash);
    elsewhere += (mixed >> (64 - kShardBits)) != 0 || (mixed & 0xFFFFF) != 0;
  }
  EXPECT_EQ(elsewhere, 0u);
  const Loads loads = LoadsUnder(
      crafted, [](int64_t h) { return MixHashWithKey(kLegacyHashKey, h); });
  EXPECT_EQ(loads.max_shard, kCrafted);
  EXPECT_EQ(loads.max_bucket, kCrafted);
}

TEST(HashKeyTest, CraftedHashesSpreadUnderOtherKeys) {
  const std::vector<int64_t> crafted = CraftLegacyCollisions(kCrafted, 20);
  ExpectSpread(
      LoadsUnder(crafted, [](int64_t h) { return MixHashWithKey(kKeyA, h); }),
      "key A");
  ExpectSpread(
      LoadsUnder(crafted, [](int64_t h) { return MixHashWithKey(kKeyB, h); }),
      "key B");
}

// Fails on a build whose MixHash is the fixed mixer.
TEST(HashKeyTest, CraftedHashesSpreadUnderTheProcessKey) {
  EXPECT_NE(ProcessHashKey(), kLegacyHashKey);
  EXPECT_TRUE(IsUsableHashKey(ProcessHashKey()));
  ExpectSpread(LoadsUnder(CraftLegacyCollisions(kCrafted, 20), MixHash),
               "the process key");
}

// The same check on ordinary hashes: keying costs no spread.
TEST(HashKeyTest, SequentialHashesSpreadUnderEveryKey) {
  std::vector<int64_t> sequential(kCrafted);
  for (size_t i = 0; i < sequential.size(); ++i) {
    sequential[i] = static_cast<int64_t>(i);
  }
  for (const HashKey& key : {kLegacyHashKey, kKeyA, kKeyB}) {
    ExpectSpread(LoadsUnder(sequential,
                            [&](int64_t h) { return MixHashWithKey(key, h); }),
                 "sequential");
  }
}

TEST(HashKeyTest, DrawsDifferentUsableKeys) {
  HashKey first;
  HashKey second;
  ASSERT_TRUE(DrawHashKey(&first));
  ASSERT_TRUE(DrawHashKey(&second));
  EXPECT_TRUE(IsUsableHashKey(first));
  EXPECT_TRUE(IsUsableHashKey(second));
  EXPECT_NE(first, second);  // 2^-127 to fail
}

TEST(HashKeyTest, ParsesThirtyTwoHexDigits) {
  char error[256] = "";
  HashKey key{};
  ASSERT_TRUE(ParseHashKey(kLegacyHashKeyText, &key, error, sizeof(error)))
      << error;
  EXPECT_EQ(key, kLegacyHashKey);
  ASSERT_TRUE(ParseHashKey("0123456789ABCDEF5851f42d4c957F2d", &key, error,
                           sizeof(error)))
      << error;
  EXPECT_EQ(key, kKeyA);
}

TEST(HashKeyTest, RefusesAnythingElseNamingTheVariable) {
  for (const char* text : {
           "",
           "9e3779b97f4a7c15",                    // 16 digits
           "9e3779b97f4a7c15d6e8feb86659fd9",     // 31
           "9e3779b97f4a7c15d6e8feb86659fd930",   // 33
           "0x9e3779b97f4a7c15d6e8feb86659fd93",  // prefix
           "9e3779b97f4a7c15d6e8feb86659fd9g",    // not hex
           " 9e3779b97f4a7c15d6e8feb86659fd93",
           "9e3779b97f4a7c15d6e8feb86659fd92",  // even multiplier
           "9e3779b97f4a7c150000000000000001",  // multiplier with 1 bit set
           "9e3779b97f4a7c15ffffffffffffffff",  // and with 64
       }) {
    HashKey key = kKeyA;
    char error[256] = "";
    EXPECT_FALSE(ParseHashKey(text, &key, error, sizeof(error))) << text;
    EXPECT_EQ(key, kKeyA) << text;
    EXPECT_NE(std::string(error).find("KV_INDEXER_ROBIN_HASH_KEY=\"" +
                                      std::string(text) + "\""),
              std::string::npos)
        << error;
  }
}

TEST(HashKeyTest, TheFirstBackendFixesTheKey) {
  char error[256] = "";
  // Unset: the drawn key is kept, and fixed.
  HashKeyState state{kKeyA, true, false};
  ASSERT_TRUE(ConfigureHashKey(nullptr, &state, error, sizeof(error)));
  EXPECT_EQ(state.key, kKeyA);
  EXPECT_TRUE(state.fixed);
  // Then the variable may only name that key.
  EXPECT_FALSE(
      ConfigureHashKey(kLegacyHashKeyText, &state, error, sizeof(error)));
  EXPECT_NE(std::string(error).find("the first backend created has fixed"),
            std::string::npos)
      << error;
  EXPECT_EQ(state.key, kKeyA);
  EXPECT_TRUE(ConfigureHashKey("0123456789abcdef5851f42d4c957f2d", &state,
                               error, sizeof(error)))
      << error;

  // Set before any backend: replaces the drawn key.
  state = HashKeyState{kKeyA, true, false};
  ASSERT_TRUE(
      ConfigureHashKey(kLegacyHashKeyText, &state, error, sizeof(error)));
  EXPECT_EQ(state.key, kLegacyHashKey);
  EXPECT_TRUE(state.fixed);
  EXPECT_TRUE(ConfigureHashKey(nullptr, &state, error, sizeof(error)));
  EXPECT_EQ(state.key, kLegacyHashKey);

  // A bad value changes nothing.
  state = HashKeyState{kKeyA, true, false};
  EXPECT_FALSE(ConfigureHashKey("zz", &state, error, sizeof(error)));
  EXPECT_EQ(state.key, kKeyA);
  EXPECT_FALSE(state.fixed);
}

TEST(HashKeyTest, AFailedDrawRefusesCreationUnlessAKeyIsGiven) {
  char error[256] = "";
  HashKeyState state{kLegacyHashKey, false, false};
  EXPECT_FALSE(ConfigureHashKey(nullptr, &state, error, sizeof(error)));
  EXPECT_NE(std::string(error).find("random hash key"), std::string::npos)
      << error;
  EXPECT_FALSE(state.fixed);
  EXPECT_TRUE(ConfigureHashKey("0123456789abcdef5851f42d4c957f2d", &state,
                               error, sizeof(error)))
      << error;
  EXPECT_EQ(state.key, kKeyA);
}

// Sets this process's key for one test, restoring it afterwards.
class ScopedProcessHashKey {
 public:
  explicit ScopedProcessHashKey(const HashKey& key) : saved_(ProcessHashKey()) {
    SetProcessHashKeyForTesting(key);
  }
  ~ScopedProcessHashKey() { SetProcessHashKeyForTesting(saved_); }

 private:
  HashKey saved_;
};

// Reports, finds and revokes crafted hashes under `key`, merging deltas of
// over 256 blocks, so after every batch.
void ExpectCraftedHashesServed(const HashKey& key) {
  constexpr size_t kBatch = 300;
  constexpr size_t kRevoked = 400;
  ScopedProcessHashKey scoped(key);
  const std::vector<int64_t> crafted = CraftLegacyCollisions(4 * kBatch, 20);
  RobinShardedSnapshotBackend backend;
  backend.SetMergePolicy(256, RobinShardedSnapshotBackend::kMergeBaseRatio);
  for (size_t i = 0; i < crafted.size(); i += kBatch) {
    Batch batch("w", "a");
    batch.Report(kTierHbm, std::vector<int64_t>(crafted.begin() + i,
                                                crafted.begin() + i + kBatch));
    ASSERT_TRUE(Ok(backend.Apply(test_support::BatchView(batch).view())));
  }
  Batch revoke("w", "a");
  revoke.Revoke(kTierHbm, std::vector<int64_t>(crafted.begin(),
                                               crafted.begin() + kRevoked));
  ASSERT_TRUE(Ok(backend.Apply(test_support::BatchView(revoke).view())));

  RecordingVisitor visitor;
  ASSERT_TRUE(Ok(
      backend.PrefixScan(HashSpan{crafted.data(), crafted.size()}, &visitor)));
  ASSERT_TRUE(visitor.errors.empty()) << visitor.errors.front();
  ASSERT_EQ(visitor.blocks.size(), crafted.size());
  for (size_t i = 0; i < crafted.size(); ++i) {
    ASSERT_EQ(visitor.blocks[i].placements.size(), i < kRevoked ? 0u : 1u) << i;
  }
}

TEST(HashKeyTest, BackendServesCraftedHashesUnderTheOldMixer) {
  ExpectCraftedHashesServed(kLegacyHashKey);  // all in one bucket
}

TEST(HashKeyTest, BackendServesCraftedHashesUnderAnotherKey) {
  ExpectCraftedHashesServed(kKeyA);
}

// Sets an environment variable for one test, unsetting it afterwards.
class ScopedVariable {
 public:
  explicit ScopedVariable(const char* name) : name_(name) {}
  ~ScopedVariable() { unsetenv(name_); }
  void Set(const char* value) { setenv(name_, value, 1); }
  void Unset() { unsetenv(name_); }

 private:
  const char* name_;
};

// The plugin's create() reads the variable: a bad value, and a change once
// a backend exists, are creation errors that name it.
TEST(HashKeyPluginTest, CreateReadsTheVariable) {
  ScopedVariable variable(kHashKeyVariable);
  variable.Set("not-a-key");
  absl::StatusOr<std::unique_ptr<LoadedBackend>> bad =
      LoadedBackend::Load(KVINDEXER_ROBIN_PLUGIN, "");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("KV_INDEXER_ROBIN_HASH_KEY=\"not-a-key\""),
      std::string::npos)
      << bad.status();

  variable.Set(kLegacyHashKeyText);
  absl::StatusOr<std::unique_ptr<LoadedBackend>> legacy =
      LoadedBackend::Load(KVINDEXER_ROBIN_PLUGIN, "");
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  // The library stays loaded, and its key fixed, while `legacy` lives.
  variable.Set("0123456789abcdef5851f42d4c957f2d");
  absl::StatusOr<std::unique_ptr<LoadedBackend>> changed =
      LoadedBackend::Load(KVINDEXER_ROBIN_PLUGIN, "");
  ASSERT_FALSE(changed.ok());
  EXPECT_NE(
      changed.status().message().find("the first backend created has fixed"),
      std::string::npos)
      << changed.status();
  variable.Set(kLegacyHashKeyText);
  EXPECT_TRUE(LoadedBackend::Load(KVINDEXER_ROBIN_PLUGIN, "").ok());
  variable.Unset();
  EXPECT_TRUE(LoadedBackend::Load(KVINDEXER_ROBIN_PLUGIN, "").ok());
}

}  // namespace
}  // namespace kvindexer::robin
