// LogText: a string that came from outside the process (a worker id, an
// epoch, an address, a gRPC peer, an operator's reason, a medium name, or a
// status message that may echo one of them) made safe to put in a log line.
//
// Every byte outside printable ASCII (0x20..0x7e), and the backslash and the
// double quote, is written as \xNN with two lowercase hex digits. So a value
// can neither end the line, forge another one, move a terminal's cursor nor
// close a quoted field, and the original bytes can be read back from the
// line. Bytes of UTF-8 beyond ASCII are escaped one by one too.
//
// At most `max_bytes` bytes of the input are shown; the rest is replaced by
// the marker "...(+N bytes)", N being the input bytes left out. The result
// is therefore at most 4 * max_bytes bytes plus the marker, whatever the
// input's size.
//
// Thread safety: a pure function.
#ifndef KVINDEXER_COMMON_LOG_TEXT_H_
#define KVINDEXER_COMMON_LOG_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace kvindexer {

// Input bytes shown of a name: a worker id, an epoch, an address, a peer.
// Covers the default worker id and epoch bounds (256 bytes) whole.
inline constexpr size_t kLogTextBytes = 256;
// Input bytes shown of free text: a status message, an error, a reason.
inline constexpr size_t kLogMessageBytes = 1024;

// `text`, escaped and cut as above.
std::string LogText(std::string_view text, size_t max_bytes = kLogTextBytes);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_LOG_TEXT_H_
