// The secret key of the block-hash mixer (block_record.h, MixHash), drawn
// once per process, and the test-only variable that replaces it (DESIGN.md,
// "Keyed hash mixing").
//
//   KV_INDEXER_ROBIN_HASH_KEY  test only: 32 hex digits, the key's xor word
//                              then its multiplier (which must be odd and
//                              have 16 to 48 bits set). Unset: the random
//                              key. The fixed mixer of earlier builds is
//                              kLegacyHashKeyText.
//
// Thread safety: ProcessHashKey() may be read concurrently at any time; it
// changes only in ConfigureProcessHashKey until the first backend created
// fixes it, and in SetProcessHashKeyForTesting.
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HASH_KEY_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HASH_KEY_H_

#include <cstddef>
#include <cstdint>

namespace kvindexer::robin {

// The mixer computes (hash ^ xor_word) * multiplier as a 128-bit product and
// folds its halves together (block_record.h).
struct HashKey {
  uint64_t xor_word;
  uint64_t multiplier;

  friend bool operator==(const HashKey&, const HashKey&) = default;
};

// The constants of the unkeyed mixer this backend used before the key: under
// this key MixHash computes exactly what it did then.
inline constexpr HashKey kLegacyHashKey = {0x9E3779B97F4A7C15ull,
                                           0xD6E8FEB86659FD93ull};
inline constexpr char kLegacyHashKeyText[] = "9e3779b97f4a7c15d6e8feb86659fd93";

inline constexpr char kHashKeyVariable[] = "KV_INDEXER_ROBIN_HASH_KEY";

// True for a usable key: an odd multiplier with 16 to 48 of its 64 bits set,
// so that the product carries every bit of the hash into both halves. The
// random draw retries until this holds (it fails for about 1 in 40,000
// draws).
bool IsUsableHashKey(const HashKey& key) noexcept;

// Draws a random usable key (getrandom(2), or std::random_device where that
// call fails) into `key`. False when no random source works.
bool DrawHashKey(HashKey* key) noexcept;

// Parses the variable's value: exactly 32 hex digits (either case), the xor
// word then the multiplier, each most significant digit first. On success
// stores the key and returns true; otherwise writes a message naming the
// variable, the value and what is accepted into `error` and returns false.
bool ParseHashKey(const char* value, HashKey* key, char* error,
                  size_t error_size) noexcept;

// Where a process's key stands. Fixed once a backend has been created with
// it: tables built under one key cannot be read under another.
struct HashKeyState {
  HashKey key;
  bool ready;  // key is usable: drawn, or given (false: the draw failed)
  bool fixed;  // a backend has been created with it
};

// What creating a backend does with the variable's value (`value` null:
// unset). Unset keeps the current key, failing if there is none (the draw
// failed); set, the value must parse and, once the key is fixed, equal it.
// Then fixes the key. Otherwise returns false with a message in `error` and
// `state` unchanged.
bool ConfigureHashKey(const char* value, HashKeyState* state, char* error,
                      size_t error_size) noexcept;

// ConfigureHashKey on this process's key, under a mutex; the plugin's
// create() calls it first. A backend constructed directly (tests, tools)
// skips it and mixes with the drawn key.
bool ConfigureProcessHashKey(const char* value, char* error,
                             size_t error_size) noexcept;

namespace hash_key_internal {
// The key MixHash reads. Holds kLegacyHashKey until the static initializer
// of hash_key.cc replaces it with random bits (so it is never a degenerate
// key, even for a reader that ran earlier), or for good if no random source
// works (the plugin's create() then fails). Written only as the header
// comment says.
extern HashKey process_key;
}  // namespace hash_key_internal

// The key this process's backends mix block hashes with.
inline const HashKey& ProcessHashKey() {
  return hash_key_internal::process_key;
}

// Test and tool use only: replaces the process key without fixing it.
// REQUIRES: no backend exists in the process and no thread reads the key.
void SetProcessHashKeyForTesting(const HashKey& key) noexcept;

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_HASH_KEY_H_
