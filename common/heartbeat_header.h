// HeartbeatHeader: what the `kv-indexer-heartbeat-ttl-ms` request metadata of
// one ApplyExternalKvBatch says (docs/contract.md, "Recovery > Worker
// liveness and removal").
//
// The value is a decimal number of milliseconds, 1..4294967295: ASCII digits
// only, no sign, no spaces. The service reads the metadata and hands the
// parsed form to the Indexer, which stays free of transport types.
//
// Thread safety: a plain value type.
#ifndef KVINDEXER_COMMON_HEARTBEAT_HEADER_H_
#define KVINDEXER_COMMON_HEARTBEAT_HEADER_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace kvindexer {

// The metadata key (gRPC keys are lower case).
inline constexpr std::string_view kHeartbeatTtlHeader =
    "kv-indexer-heartbeat-ttl-ms";

struct HeartbeatHeader {
  enum class Kind {
    kAbsent,     // no header: an ordinary apply
    kValid,      // a heartbeat with time to live `ttl`
    kMalformed,  // present but not 1..4294967295: ignored (and logged)
  };

  // The longest prefix of a malformed value that is kept for the log line.
  static constexpr size_t kMaxKeptValueBytes = 64;

  // Parses the value of a header that is present.
  static HeartbeatHeader Parse(std::string_view value);
  static HeartbeatHeader Valid(std::chrono::milliseconds ttl) {
    return HeartbeatHeader{Kind::kValid, ttl, {}};
  }

  Kind kind = Kind::kAbsent;
  std::chrono::milliseconds ttl{0};  // > 0 when kValid
  std::string value;                 // when kMalformed, cut to the limit
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HEARTBEAT_HEADER_H_
