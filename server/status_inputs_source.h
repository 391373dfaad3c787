// The server's StatusInputsSource (server/status_report.h): what a status
// report says, read from the Indexer's worker directory, the server's
// health, the prefix-query admission and, on a replica, its place in the
// fleet event log.
//
// The stream records come from one read of the directory (one page of at
// most kMaxReportedStreams + 1 entries, or its counts when there are more),
// so a report never mixes two states of one record.
//
// Today every record is a legacy stream: namespace "", dp_rank 0, no
// generation, covered when ready (docs/fleet.md). StreamOf is the one place
// that maps a record to a reported stream.
//
// Thread safety: the source is called concurrently from the reporter's
// threads; everything it reads is thread-safe.
#ifndef KVINDEXER_SERVER_STATUS_INPUTS_SOURCE_H_
#define KVINDEXER_SERVER_STATUS_INPUTS_SOURCE_H_

#include <cstdint>
#include <functional>

#include "core/operator_view.h"
#include "core/worker_snapshot.h"
#include "server/prefix_admission.h"
#include "server/status_report.h"

namespace kvindexer {

struct StatusInputsParts {
  // REQUIRES (every pointer and function): valid until the reporter
  // stopped.
  OperatorView* indexer = nullptr;
  // grpc.health.v1 publishes SERVING (server/serving_health.h).
  std::function<bool()> serving;
  // A replica caught up with its log (ServerMode::CaughtUpWithLog).
  std::function<bool()> caught_up;
  const PrefixAdmission* admission = nullptr;
  // KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT.
  uint32_t permits_capacity = 0;
};

// One record as a reported stream.
ReportedStream StreamOf(const WorkerSnapshot& worker);

// One read of `parts`.
StatusInputs ReadStatusInputs(const StatusInputsParts& parts);

// A source that calls ReadStatusInputs(parts).
StatusInputsSource MakeStatusInputsSource(StatusInputsParts parts);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_INPUTS_SOURCE_H_
