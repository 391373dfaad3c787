#include "common/heartbeat_header.h"

#include <limits>

namespace kvindexer {

HeartbeatHeader HeartbeatHeader::Parse(std::string_view value) {
  uint64_t ms = 0;
  bool ok = !value.empty();
  for (const char c : value) {
    if (c < '0' || c > '9') {
      ok = false;
      break;
    }
    ms = ms * 10 + static_cast<uint64_t>(c - '0');
    if (ms > std::numeric_limits<uint32_t>::max()) {
      ok = false;
      break;
    }
  }
  if (ok && ms > 0) return Valid(std::chrono::milliseconds(ms));
  return HeartbeatHeader{Kind::kMalformed, std::chrono::milliseconds(0),
                         std::string(value.substr(0, kMaxKeptValueBytes))};
}

}  // namespace kvindexer
