// Block hashes crafted to collide under the fixed mixer that
// robin_sharded_snapshot used before its mixing was keyed (BENCHMARKS.md,
// "Crafted block hashes"): all of them land in shard 0 and share their low
// bucket bits. The backend's tests check that its keyed mixer spreads them;
// kv-indexer-crafted-keys-bench times the backend under them.
//
// Header-only, so that the backend's tests can use it without the
// benchmarks being built. Thread safety: every function is pure.
#ifndef KVINDEXER_TESTS_SUPPORT_CRAFTED_KEYS_HASHES_H_
#define KVINDEXER_TESTS_SUPPORT_CRAFTED_KEYS_HASHES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvindexer::bench {

inline constexpr uint64_t kLegacyXorWord = 0x9E3779B97F4A7C15ull;
inline constexpr uint64_t kLegacyMultiplier = 0xD6E8FEB86659FD93ull;
// The top bits of a mixed hash that picked the shard.
inline constexpr uint32_t kLegacyShardBits = 6;

// The unkeyed mixer, kept here only to attack it: the 128-bit product of
// (hash ^ kLegacyXorWord) and kLegacyMultiplier, low half xor high half.
inline uint64_t LegacyMixHash(int64_t hash) {
  const unsigned __int128 product =
      static_cast<unsigned __int128>(static_cast<uint64_t>(hash) ^
                                     kLegacyXorWord) *
      kLegacyMultiplier;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

namespace crafted_internal {

using U128 = unsigned __int128;
inline constexpr U128 kModulus = (U128{1} << 64) + 1;

// kLegacyMultiplier's inverse modulo 2^64 + 1 (they are coprime), by the
// extended Euclidean algorithm.
constexpr U128 LegacyMultiplierInverse() {
  __int128 r0 = static_cast<__int128>(kModulus);
  __int128 r1 = kLegacyMultiplier;
  __int128 t0 = 0;
  __int128 t1 = 1;
  while (r1 != 0) {
    const __int128 q = r0 / r1;
    const __int128 r2 = r0 - q * r1;
    const __int128 t2 = t0 - q * t1;
    r0 = r1;
    r1 = r2;
    t0 = t1;
    t1 = t2;
  }
  if (t0 < 0) t0 += static_cast<__int128>(kModulus);
  return static_cast<U128>(t0);
}

inline constexpr U128 kInverse = LegacyMultiplierInverse();
static_assert((kInverse * kLegacyMultiplier) % kModulus == 1);
static_assert(kInverse < (U128{1} << 64), "products below must fit 128 bits");

}  // namespace crafted_internal

// `n` distinct hashes whose LegacyMixHash has its top kLegacyShardBits bits
// and its low `bucket_bits` bits all zero: one shard, and one bucket in any
// table of up to 2^bucket_bits buckets indexed by the low bits. The bits
// in between vary, so the base tables' directories (which read the bits just
// below the shard bits) still spread them.
//
// How: for x = e / M modulo 2^64 + 1 (M the multiplier), x * M = v * 2^64 +
// v + e for some v, so the product's halves are v + e and v, and the mixed
// hash is (v + e) ^ v when that sum does not overflow. With e a multiple of
// 2^bucket_bits below 2^58, it has the low bits of e (zero) and no bit
// above e's top bit except the run of carries; the few whose carries reach
// the shard bits are skipped.
// REQUIRES: 1 <= bucket_bits <= 40; n small enough for the candidates
// (2^(58 - bucket_bits), about two thirds of which qualify).
inline std::vector<int64_t> CraftLegacyCollisions(size_t n,
                                                  uint32_t bucket_bits) {
  using crafted_internal::kInverse;
  using crafted_internal::kModulus;
  using crafted_internal::U128;
  const uint32_t spread_bits = 64 - kLegacyShardBits - bucket_bits;
  const uint64_t spread_mask = (uint64_t{1} << spread_bits) - 1;
  const uint64_t bucket_mask = (uint64_t{1} << bucket_bits) - 1;
  std::vector<int64_t> hashes;
  hashes.reserve(n);
  // i -> i * odd is a bijection modulo 2^spread_bits, so the multiples e
  // below are distinct, and so are their quotients x.
  for (uint64_t i = 1; hashes.size() < n && i <= spread_mask; ++i) {
    const uint64_t e = ((i * 0x9E3779B97F4A7C15ull) & spread_mask)
                       << bucket_bits;
    if (e == 0) continue;
    const U128 x = (U128{e} * kInverse) % kModulus;
    if (x >> 64 != 0) continue;
    const int64_t hash =
        static_cast<int64_t>(static_cast<uint64_t>(x) ^ kLegacyXorWord);
    const uint64_t mixed = LegacyMixHash(hash);
    if ((mixed >> (64 - kLegacyShardBits)) != 0 || (mixed & bucket_mask) != 0) {
      continue;
    }
    hashes.push_back(hash);
  }
  return hashes;
}

}  // namespace kvindexer::bench

#endif  // KVINDEXER_TESTS_SUPPORT_CRAFTED_KEYS_HASHES_H_
