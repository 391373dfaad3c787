#include "tests/support/recovered_line.h"

#include <cstdio>
#include <string_view>

namespace kvindexer::test_support {

std::optional<RecoveredLine> FindRecoveredLine(const std::string& output) {
  constexpr std::string_view kMarker = "recovered ";
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(start, end - start);
    start = end + 1;
    for (size_t at = line.find(kMarker); at != std::string::npos;
         at = line.find(kMarker, at + 1)) {
      unsigned long long w = 0, p = 0, g = 0, r = 0, b = 0, t = 0, c = 0, l = 0;
      const int read = std::sscanf(
          line.c_str() + at,
          "recovered %llu workers, %llu placements from checkpoint %llu plus "
          "%llu log records (%llu bytes) in %llu ms (checkpoint %llu ms, log "
          "%llu ms",
          &w, &p, &g, &r, &b, &t, &c, &l);
      if (read < 6) continue;
      RecoveredLine parsed;
      parsed.workers = w;
      parsed.placements = p;
      parsed.checkpoint = g;
      parsed.log_records = r;
      parsed.log_bytes = b;
      parsed.ms = t;
      if (read == 8) {
        parsed.checkpoint_ms = c;
        parsed.log_ms = l;
      }
      parsed.text = line;
      return parsed;
    }
  }
  return std::nullopt;
}

}  // namespace kvindexer::test_support
