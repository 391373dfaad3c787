#include "ctl/units.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvindexer::ctl {

std::string FormatDurationMs(uint64_t ms) {
  if (ms < 1000) return absl::StrCat(ms, "ms");
  if (ms < 60'000) {
    return absl::StrFormat("%.1fs", static_cast<double>(ms) / 1000.0);
  }
  const uint64_t s = ms / 1000;
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s / 60) % 60);
  return absl::StrFormat("%dd%02dh", s / 86400, (s / 3600) % 24);
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, units[unit]);
}

std::string FormatDelta(uint64_t previous, uint64_t current) {
  if (current >= previous) {
    const uint64_t d = current - previous;
    return d == 0 ? std::string("0") : absl::StrCat("+", d);
  }
  return absl::StrCat("-", previous - current);
}

}  // namespace kvindexer::ctl
