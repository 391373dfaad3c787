// The head of an HTTP/1.x request (the request line and the header lines up
// to the blank line that ends them), looked at in the bytes received on a
// connection before anything parses it for real (cpp-httplib does that, in
// common/metrics_http_server.cc): where the head ends, whether it fits the
// cap, whether a body follows, and which method and path it names.
//
// Lines may end in CRLF or in a bare LF. Pure functions: no I/O, no state.
#ifndef KVINDEXER_COMMON_HTTP_REQUEST_HEAD_H_
#define KVINDEXER_COMMON_HTTP_REQUEST_HEAD_H_

#include <cstddef>
#include <string_view>

namespace kvindexer {

struct RequestHeadScan {
  enum class State {
    kIncomplete,  // no blank line yet, and fewer than the cap received
    kComplete,    // `size` bytes are a head that declares no body
    kTooLarge,    // the cap was reached without a blank line
    kHasBody,     // a complete head that declares a body (Content-Length
                  // other than 0, or any Transfer-Encoding)
  };
  State state = State::kIncomplete;
  size_t size = 0;  // bytes of the head, blank line included, once known
};

// Scans `received` (the bytes from the start of a request on) for the end of
// its head within the first `max_head_bytes` bytes. `scanned` is how many
// bytes an earlier call had already seen without finding the end: the search
// resumes just before them, so a head that arrives in many small pieces is
// not searched from the start each time.
RequestHeadScan ScanRequestHead(std::string_view received,
                                size_t max_head_bytes, size_t scanned = 0);

// The method and the path (the request target up to any '?') of a head's
// request line; empty when the line has no two spaces.
std::string_view RequestMethod(std::string_view head);
std::string_view RequestPath(std::string_view head);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HTTP_REQUEST_HEAD_H_
