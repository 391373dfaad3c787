#include "bridge/frame_parser.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bridge {

absl::StatusOr<LiveMessage> ParseLiveMessage(
    std::span<const std::string_view> frames) {
  if (frames.size() != 2 && frames.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("message has ", frames.size(),
                     " frames; expected 3 [topic, seq, payload] or 2 "
                     "[seq, payload]"));
  }
  LiveMessage message;
  const size_t seq_index = frames.size() - 2;
  if (frames.size() == 3) message.topic = frames[0];
  const std::string_view seq = frames[seq_index];
  if (seq.size() != 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequence frame has ", seq.size(),
                     " bytes; expected exactly 8 (big-endian uint64)"));
  }
  uint64_t value = 0;
  for (char c : seq) value = (value << 8) | static_cast<unsigned char>(c);
  message.seq = value;
  message.payload = frames[seq_index + 1];
  return message;
}

}  // namespace kvindexer::bridge
