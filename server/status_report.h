// What the status reporter (docs/fleet.md, "Status reports to routers")
// reads from the server at each report, as plain data, and the report as a
// router reads it. The reporter depends on nothing else of the server: a
// StatusInputsSource (server/status_inputs_source.h) fills StatusInputs,
// BuildStatusReportBody (server/status_report_body.h) turns them into the
// JSON a router receives, and ParseStatusReport
// (server/status_report_parser.h) reads that JSON back into a StatusReport
// for ValidateStatusReport (server/status_report_validation.h).
#ifndef KVINDEXER_SERVER_STATUS_REPORT_H_
#define KVINDEXER_SERVER_STATUS_REPORT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kvindexer {

// Above this many stream records a report carries an empty `streams` array
// (routers then skip their per-stream checks) and only the counts.
inline constexpr size_t kMaxReportedStreams = 4096;

// One stream record, keyed by (ns, worker_id, dp_rank).
struct ReportedStream {
  std::string ns;  // "" for a legacy stream
  std::string worker_id;
  uint32_t dp_rank = 0;
  std::string worker_address;
  // Ready and, for a namespaced stream, with an epoch and a non-empty
  // generation (docs/fleet.md; "covered" in the fleet protocol).
  bool covered = false;
  std::string worker_epoch;  // "" without a checkpoint
  uint64_t watermark = 0;    // the checkpoint's sequence number, 0 without
  std::string worker_generation;

  bool operator==(const ReportedStream&) const = default;
};

// The stream records counted, for a read that lists none of them (more
// than kMaxReportedStreams).
struct StreamCounts {
  uint64_t total = 0;
  uint64_t covered = 0;
};

// One consistent read of what a report says.
struct StatusInputs {
  // grpc.health.v1 reports SERVING.
  bool serving = false;
  // A fleet replica has caught up with its log, is not reloading a
  // snapshot and lags by no more than KV_INDEXER_FLEET_MAX_LAG_RECORDS;
  // always true for a server that is no replica.
  bool replica_caught_up = true;
  // Every stream record, in any order; or, with `counts` set, none.
  std::vector<ReportedStream> streams;
  // Set instead of `streams` when there are more than kMaxReportedStreams
  // records.
  std::optional<StreamCounts> counts;
  // Prefix-query admission permits held now, and how many there are
  // (KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT).
  uint32_t permits_held = 0;
  uint32_t permits_capacity = 0;
  // The index's epoch; not part of the body today.
  std::string indexer_epoch;
};

// Called by the reporter at each report, on its own threads: must be
// thread-safe.
using StatusInputsSource = std::function<StatusInputs()>;

// A report as the router reads it: every key of the body, typed as the
// router types it.
struct StatusReportStream {
  std::string ns;
  std::string worker_id;
  uint32_t dp_rank = 0;
  std::string worker_address;
  bool ready = false;
  std::string worker_epoch;
  uint64_t watermark = 0;
  std::string worker_generation;
};

struct StatusReport {
  std::string indexer_id;
  std::string endpoint;
  bool ready = false;
  double normalized_load = 0;
  uint64_t total_workers = 0;
  uint64_t ready_workers = 0;
  std::vector<StatusReportStream> streams;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_H_
