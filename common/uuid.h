// UUIDs as text: the lowercase, hyphenated, 36-character form of RFC 9562
// ("8-4-4-4-12" hex digits), used for snapshot transaction ids and the
// indexer epoch (fleet-protocol.md, sections 5 and 6.2).
//
// Thread safety: every function may be called concurrently.
#ifndef KVINDEXER_COMMON_UUID_H_
#define KVINDEXER_COMMON_UUID_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvindexer {

using UuidBytes = std::array<uint8_t, 16>;

// `bytes` as lowercase hyphenated text, unchanged (no version or variant
// bits are set).
std::string FormatUuid(const UuidBytes& bytes);

// A new random (version 4, variant 10) UUID as text. The bits come from a
// per-thread 64-bit Mersenne Twister seeded from std::random_device: unique
// with overwhelming probability, not a secret.
std::string NewRandomUuid();

// Whether `text` has the form FormatUuid produces: 36 characters, hyphens
// at 8, 13, 18 and 23, lowercase hex digits elsewhere (any version).
bool IsUuidText(std::string_view text);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_UUID_H_
