// Test helpers that build msgpack payloads in SGLang's layouts
// (docs/bridge-events.md, "Event batches" and "Golden payloads") with
// msgpack-cxx's packer, plus a tiny value tree for arbitrary
// (including malformed) shapes.
#ifndef KVINDEXER_TESTS_SUPPORT_MSGPACK_BUILDERS_H_
#define KVINDEXER_TESTS_SUPPORT_MSGPACK_BUILDERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kvindexer::bridge::testing {

struct Mp;
using MpArray = std::vector<Mp>;
using MpMap = std::vector<std::pair<Mp, Mp>>;
struct MpBin {
  std::string bytes;
};

// A msgpack value. Integers pack with the smallest marker, like SGLang's
// encoder: non-negative values with unsigned markers, negative with signed.
struct Mp {
  std::variant<std::nullptr_t, bool, int64_t, uint64_t, double, std::string,
               MpBin, MpArray, MpMap>
      v;
  Mp() : v(nullptr) {}
  Mp(std::nullptr_t) : v(nullptr) {}
  Mp(bool b) : v(b) {}
  Mp(int i) : v(static_cast<int64_t>(i)) {}
  Mp(int64_t i) : v(i) {}
  Mp(uint64_t u) : v(u) {}
  Mp(double d) : v(d) {}
  Mp(const char* s) : v(std::string(s)) {}
  Mp(std::string s) : v(std::move(s)) {}
  Mp(MpBin b) : v(std::move(b)) {}
  Mp(MpArray a) : v(std::move(a)) {}
  Mp(MpMap m) : v(std::move(m)) {}
};

std::string Pack(const Mp& value);

// Hash list as msgpack ints.
Mp Hashes(const std::vector<int64_t>& hashes);

// ["BlockStored", hashes, parent, token_ids, block_size, lora_id, medium]
// plus slot 7 when `slot7` is given. A nullopt medium writes nil.
Mp StoreEvent(const std::vector<int64_t>& hashes,
              std::optional<std::string> medium, int64_t block_size = 4,
              std::optional<Mp> slot7 = std::nullopt);
// ["BlockRemoved", hashes, medium]
Mp RemoveEvent(const std::vector<int64_t>& hashes,
               std::optional<std::string> medium);
// ["AllBlocksCleared"]
Mp ClearEvent();
// Labels array for slot 7, e.g. Labels({"full", "swa"}).
Mp Labels(const std::vector<std::string>& labels);

// [ts, events, dp_rank]; dp_rank nil when nullopt.
Mp Batch(MpArray events, double ts = 1.5, std::optional<int64_t> dp_rank = 0);
std::string PackBatch(MpArray events, double ts = 1.5,
                      std::optional<int64_t> dp_rank = 0);

// Hex string (no separators) to bytes; aborts the test binary on bad input.
std::string FromHex(std::string_view hex);
std::string ToHex(std::string_view bytes);

// 8-byte big-endian sequence frame.
std::string SeqFrame(uint64_t seq);

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_TESTS_SUPPORT_MSGPACK_BUILDERS_H_
