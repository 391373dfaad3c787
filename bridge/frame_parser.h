// Splits one ZMQ live message into its sequence number and payload
// (docs/bridge-events.md, "The ZMQ stream", "Frames" and "Framing rules").
// The topic frame is never compared with the configured topic: the SUB prefix
// filter already selected the message (same page,
// "Topics and epoch suffixes").
#ifndef KVINDEXER_BRIDGE_FRAME_PARSER_H_
#define KVINDEXER_BRIDGE_FRAME_PARSER_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer::bridge {

struct LiveMessage {
  std::string_view topic;  // empty for 2-frame messages
  uint64_t seq = 0;
  std::string_view payload;
};

// Accepts [topic, seq, payload] and [seq, payload]. Any other frame count,
// or a sequence frame that is not exactly 8 bytes, is InvalidArgument. The
// sequence is an unsigned 64-bit big-endian integer. The views point into
// `frames`.
[[nodiscard]] absl::StatusOr<LiveMessage> ParseLiveMessage(
    std::span<const std::string_view> frames);

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_FRAME_PARSER_H_
