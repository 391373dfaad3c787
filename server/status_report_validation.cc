#include "server/status_report_validation.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <tuple>

#include "fmt/format.h"
#include "server/status_report_parser.h"

namespace kvindexer {
namespace {

bool IsWhiteSpace(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

absl::Status Refused(std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("status report refused: {}", why));
}

}  // namespace

bool IsBlankText(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (b0 < 0x80) {
      cp = b0;
      n = 1;
    } else if ((b0 & 0xE0) == 0xC0) {
      cp = b0 & 0x1F;
      n = 2;
    } else if ((b0 & 0xF0) == 0xE0) {
      cp = b0 & 0x0F;
      n = 3;
    } else {
      // Four-byte sequences hold no white space; anything else is invalid.
      return false;
    }
    if (i + n > text.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (!IsWhiteSpace(cp)) return false;
    i += n;
  }
  return true;
}

absl::Status ValidateStatusReport(const StatusReport& report) {
  if (IsBlankText(report.indexer_id)) return Refused("indexer_id is blank");
  if (IsBlankText(report.endpoint)) return Refused("endpoint is blank");
  if (!std::isfinite(report.normalized_load) || report.normalized_load < 0 ||
      report.normalized_load > 1) {
    return Refused(fmt::format("normalized_load {} is not in [0, 1]",
                               report.normalized_load));
  }
  if (report.ready_workers > report.total_workers) {
    return Refused(fmt::format("ready_workers {} > total_workers {}",
                               report.ready_workers, report.total_workers));
  }
  std::set<std::tuple<std::string_view, std::string_view, uint32_t>> keys;
  uint64_t ready_entries = 0;
  for (size_t i = 0; i < report.streams.size(); ++i) {
    const StatusReportStream& s = report.streams[i];
    if (s.worker_id.empty()) {
      return Refused(fmt::format("streams[{}] has an empty worker_id", i));
    }
    if (s.ready && !s.ns.empty() &&
        (s.worker_epoch.empty() || s.worker_generation.empty())) {
      return Refused(fmt::format(
          "streams[{}] is ready in a namespace without an epoch or a "
          "generation",
          i));
    }
    if (!keys.emplace(s.ns, s.worker_id, s.dp_rank).second) {
      return Refused(fmt::format("streams[{}] repeats a key", i));
    }
    if (s.ready) ++ready_entries;
  }
  if (!report.streams.empty()) {
    if (report.streams.size() != report.total_workers) {
      return Refused(fmt::format("{} streams listed, total_workers {}",
                                 report.streams.size(), report.total_workers));
    }
    if (ready_entries != report.ready_workers) {
      return Refused(fmt::format("{} streams ready, ready_workers {}",
                                 ready_entries, report.ready_workers));
    }
  }
  const bool all_ready =
      report.total_workers > 0 && report.ready_workers == report.total_workers;
  if (report.ready != all_ready) {
    return Refused(
        fmt::format("ready is {} with ready_workers {} of total_workers {}",
                    report.ready, report.ready_workers, report.total_workers));
  }
  return absl::OkStatus();
}

absl::Status ValidateStatusReportBody(std::string_view json) {
  absl::StatusOr<StatusReport> report = ParseStatusReport(json);
  if (!report.ok()) return report.status();
  return ValidateStatusReport(*report);
}

}  // namespace kvindexer
