#include "hash_key.h"

#include <errno.h>
#include <sys/random.h>

#include <bit>
#include <cstring>
#include <mutex>
#include <random>

#include "kvindexer/backend_kit.h"

namespace kvindexer::robin {
namespace hash_key_internal {

constinit HashKey process_key = kLegacyHashKey;

}  // namespace hash_key_internal
namespace {

// Fills `out` from getrandom(2), falling back to std::random_device where the
// call does not exist or fails. False when
// neither works.
bool RandomBytes(unsigned char* out, size_t size) noexcept {
  size_t filled = 0;
  while (filled < size) {
    const ssize_t got = getrandom(out + filled, size - filled, 0);
    if (got > 0) {
      filled += static_cast<size_t>(got);
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  if (filled == size) return true;
  try {
    std::random_device device;
    for (size_t i = 0; i < size; ++i) {
      out[i] = static_cast<unsigned char>(device());
    }
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

bool DrawHashKey(HashKey* key) noexcept {
  for (int attempt = 0; attempt < 64; ++attempt) {
    unsigned char bytes[16];
    if (!RandomBytes(bytes, sizeof(bytes))) return false;
    HashKey drawn;
    std::memcpy(&drawn.xor_word, bytes, 8);
    std::memcpy(&drawn.multiplier, bytes + 8, 8);
    drawn.multiplier |= 1;
    if (IsUsableHashKey(drawn)) {
      *key = drawn;
      return true;
    }
  }
  return false;
}

namespace {

HashKeyState DrawProcessKey() noexcept {
  HashKeyState state{kLegacyHashKey, false, false};
  state.ready = DrawHashKey(&state.key);
  if (state.ready) hash_key_internal::process_key = state.key;
  return state;
}

std::mutex process_mu;
// Initialised when the library is loaded (or the program starts), before
// any backend can be created.
HashKeyState process_state = DrawProcessKey();

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool IsUsableHashKey(const HashKey& key) noexcept {
  const int bits = std::popcount(key.multiplier);
  return (key.multiplier & 1) != 0 && bits >= 16 && bits <= 48;
}

bool ParseHashKey(const char* value, HashKey* key, char* error,
                  size_t error_size) noexcept {
  uint64_t words[2] = {0, 0};
  size_t digits = 0;
  bool valid = true;
  for (const char* c = value; *c != '\0'; ++c, ++digits) {
    const int digit = HexDigit(*c);
    if (digit < 0 || digits >= 32) {
      valid = false;
      break;
    }
    uint64_t& word = words[digits / 16];
    word = (word << 4) | static_cast<uint64_t>(digit);
  }
  if (!valid || digits != 32) {
    kit::WriteCreateError(error, error_size,
                          "%s=\"%.64s\" is not a hash key: 32 hex digits "
                          "expected (the xor word, then the multiplier)",
                          kHashKeyVariable, value);
    return false;
  }
  const HashKey parsed{words[0], words[1]};
  if (!IsUsableHashKey(parsed)) {
    kit::WriteCreateError(error, error_size,
                          "%s=\"%.64s\" is not a usable hash key: its "
                          "multiplier (the last 16 digits) must be odd and "
                          "have 16 to 48 bits set",
                          kHashKeyVariable, value);
    return false;
  }
  *key = parsed;
  return true;
}

bool ConfigureHashKey(const char* value, HashKeyState* state, char* error,
                      size_t error_size) noexcept {
  if (value == nullptr) {
    if (!state->ready) {
      kit::WriteCreateError(error, error_size,
                            "could not draw a random hash key for "
                            "robin_sharded_snapshot (getrandom and "
                            "std::random_device both failed)");
      return false;
    }
    state->fixed = true;
    return true;
  }
  HashKey key;
  if (!ParseHashKey(value, &key, error, error_size)) return false;
  if (state->fixed && key != state->key) {
    kit::WriteCreateError(error, error_size,
                          "%s=\"%.64s\" differs from the hash key of this "
                          "process's robin_sharded_snapshot backends, which "
                          "the first backend created has fixed",
                          kHashKeyVariable, value);
    return false;
  }
  state->key = key;
  state->ready = true;
  state->fixed = true;
  return true;
}

bool ConfigureProcessHashKey(const char* value, char* error,
                             size_t error_size) noexcept {
  std::lock_guard<std::mutex> lock(process_mu);
  if (!ConfigureHashKey(value, &process_state, error, error_size)) {
    return false;
  }
  // Written only when it changes, which can happen only before the key is
  // fixed, while no backend reads it.
  if (hash_key_internal::process_key != process_state.key) {
    hash_key_internal::process_key = process_state.key;
  }
  return true;
}

void SetProcessHashKeyForTesting(const HashKey& key) noexcept {
  std::lock_guard<std::mutex> lock(process_mu);
  process_state.key = key;
  process_state.ready = true;
  hash_key_internal::process_key = key;
}

}  // namespace kvindexer::robin
