// ValidateStatusReport: the checks a line-A router makes of every status
// report before it uses it (docs/fleet.md, "Status reports to routers").
// A report that fails any of them is refused whole (HTTP 400). Every body
// BuildStatusReportBody and BuildFinalStatusReportBody produce passes them;
// the unit tests assert it on every body they build.
//
// The checks, the first failure wins:
//   1. indexer_id and endpoint are not blank (empty after trimming Unicode
//      white space);
//   2. normalized_load is finite and in [0, 1];
//   3. ready_workers <= total_workers;
//   4. every stream's worker_id is non-empty;
//   5. every ready stream with a non-empty namespace has a worker_epoch and
//      a worker_generation;
//   6. no two streams share (namespace, worker_id, dp_rank);
//   7. `streams` is empty or has exactly total_workers entries;
//   8. when `streams` is not empty, its ready entries number ready_workers;
//   9. ready == (ready_workers == total_workers && total_workers > 0).
//
// Thread safety: pure functions.
#ifndef KVINDEXER_SERVER_STATUS_REPORT_VALIDATION_H_
#define KVINDEXER_SERVER_STATUS_REPORT_VALIDATION_H_

#include <string_view>

#include "absl/status/status.h"
#include "server/status_report.h"

namespace kvindexer {

// OK, or InvalidArgument saying which check failed and why.
[[nodiscard]] absl::Status ValidateStatusReport(const StatusReport& report);

// ParseStatusReport (server/status_report_parser.h), then the checks.
[[nodiscard]] absl::Status ValidateStatusReportBody(std::string_view json);

// Whether `text` is empty once Unicode white space (the White_Space
// property) is trimmed from both ends. Bytes that are not valid UTF-8
// count as not blank.
bool IsBlankText(std::string_view text);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_VALIDATION_H_
