#include "common/http_request_head.h"

#include <algorithm>
#include <cctype>

namespace kvindexer {
namespace {

std::string_view TrimSpaces(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(" \t\r");
  return text.substr(first, last - first + 1);
}

bool SameHeaderName(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// One past the blank line that ends the head ("\n\n" or "\n\r\n"), searching
// from `from` on; npos when `window` holds none.
size_t FindHeadEnd(std::string_view window, size_t from) {
  for (size_t i = window.find('\n', from); i != std::string_view::npos;
       i = window.find('\n', i + 1)) {
    if (i + 1 < window.size() && window[i + 1] == '\n') return i + 2;
    if (i + 2 < window.size() && window[i + 1] == '\r' &&
        window[i + 2] == '\n') {
      return i + 3;
    }
  }
  return std::string_view::npos;
}

// True when a header line of `head` says a body follows.
bool DeclaresBody(std::string_view head) {
  size_t line_start = head.find('\n');
  while (line_start != std::string_view::npos && line_start + 1 < head.size()) {
    ++line_start;
    const size_t line_end = head.find('\n', line_start);
    const std::string_view line = head.substr(
        line_start, line_end == std::string_view::npos ? std::string_view::npos
                                                       : line_end - line_start);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string_view name = TrimSpaces(line.substr(0, colon));
      const std::string_view value = TrimSpaces(line.substr(colon + 1));
      if (SameHeaderName(name, "Transfer-Encoding")) return true;
      if (SameHeaderName(name, "Content-Length") &&
          (value.empty() ||
           value.find_first_not_of('0') != std::string_view::npos)) {
        return true;
      }
    }
    line_start = line_end;
  }
  return false;
}

std::string_view RequestLine(std::string_view head) {
  return head.substr(0, head.find('\n'));
}

}  // namespace

RequestHeadScan ScanRequestHead(std::string_view received,
                                size_t max_head_bytes, size_t scanned) {
  const std::string_view window =
      received.substr(0, std::min(received.size(), max_head_bytes));
  const size_t from = scanned >= 2 ? scanned - 2 : 0;
  const size_t end = FindHeadEnd(window, std::min(from, window.size()));
  if (end != std::string_view::npos) {
    return RequestHeadScan{.state = DeclaresBody(window.substr(0, end))
                                        ? RequestHeadScan::State::kHasBody
                                        : RequestHeadScan::State::kComplete,
                           .size = end};
  }
  if (received.size() >= max_head_bytes) {
    return RequestHeadScan{.state = RequestHeadScan::State::kTooLarge};
  }
  return RequestHeadScan{};
}

std::string_view RequestMethod(std::string_view head) {
  const std::string_view line = RequestLine(head);
  const size_t first = line.find(' ');
  if (first == std::string_view::npos ||
      line.find(' ', first + 1) == std::string_view::npos) {
    return {};
  }
  return line.substr(0, first);
}

std::string_view RequestPath(std::string_view head) {
  const std::string_view line = RequestLine(head);
  const size_t first = line.find(' ');
  if (first == std::string_view::npos) return {};
  const size_t second = line.find(' ', first + 1);
  if (second == std::string_view::npos) return {};
  const std::string_view target = line.substr(first + 1, second - first - 1);
  return target.substr(0, target.find('?'));
}

}  // namespace kvindexer
