// The JSON body of a status report (docs/fleet.md, "Status reports to
// routers"): keys and value types exactly as line-A routers read them.
//
//   {"indexer_id":"...","endpoint":"...","ready":false,
//    "normalized_load":0.25,"total_workers":2,"ready_workers":1,
//    "streams":[{"namespace":"","worker_id":"w","dp_rank":0,
//                "worker_address":"http://w:8000","ready":true,
//                "worker_epoch":"e","watermark":7,"worker_generation":""},
//               ...]}
//
// What the builders guarantee, whatever the inputs (every body passes
// ValidateStatusReport, server/status_report_validation.h):
//   - streams sorted by (namespace, worker_id, dp_rank), strings compared
//     bytewise; one entry per key (a repeated key keeps its first record);
//     a record with an empty worker_id is left out;
//   - a stream is ready when its record is covered and, if namespaced, has
//     an epoch and a generation; ready_workers counts the ready entries;
//   - `streams` is empty above kMaxReportedStreams records, the counts then
//     stand alone;
//   - `ready` is true only when the indexer is SERVING (and, on a replica,
//     caught up with its log), at least one stream exists and every stream
//     is ready. While the indexer itself is not ready, every stream is
//     reported not ready and ready_workers is 0: routers demand
//     ready == (ready_workers == total_workers > 0);
//   - normalized_load is permits held / capacity, clamped to [0, 1];
//   - strings are escaped as JSON requires (quote, backslash, control
//     characters); other characters pass through as UTF-8, with each byte
//     of an invalid UTF-8 sequence replaced by U+FFFD.
//
// Thread safety: pure functions.
#ifndef KVINDEXER_SERVER_STATUS_REPORT_BODY_H_
#define KVINDEXER_SERVER_STATUS_REPORT_BODY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "server/status_report.h"

namespace kvindexer {

// Who reports: KV_INDEXER_ID and KV_INDEXER_ADVERTISE_ENDPOINT.
struct StatusReportIdentity {
  std::string indexer_id;
  std::string endpoint;
};

// The report of one tick.
std::string BuildStatusReportBody(const StatusReportIdentity& identity,
                                  const StatusInputs& inputs);

// The last report, sent at shutdown: `ready` false, every stream listed
// with `ready` false, ready_workers 0. It describes the indexer going away,
// not the workers.
std::string BuildFinalStatusReportBody(const StatusReportIdentity& identity,
                                       const StatusInputs& inputs);

// held / capacity clamped to [0, 1]; with no capacity, 1 when anything is
// held and 0 otherwise.
double NormalizedLoad(uint32_t held, uint32_t capacity);

// Appends `text` as a JSON string literal, quotes included.
void AppendJsonString(std::string& out, std::string_view text);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_BODY_H_
