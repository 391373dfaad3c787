// ParseStatusReport: reads a status report body (server/status_report_body.h)
// the way a line-A router deserialises it, strictly, so that a test can
// tell whether a body would be accepted at all before its content is
// checked (server/status_report_validation.h).
//
// Accepted: one JSON document (RFC 8259; UTF-8, white space around tokens)
// whose top level is an object holding every key of StatusReport with its
// type:
//   indexer_id, endpoint                      string
//   ready                                     true or false
//   normalized_load                           number
//   total_workers, ready_workers              integer 0..2^64-1
//   streams                                   array of objects holding
//     namespace, worker_id, worker_address,   string
//     worker_epoch, worker_generation
//     dp_rank                                 integer 0..2^32-1
//     ready                                   true or false
//     watermark                               integer 0..2^64-1
// An integer is a number without fraction or exponent. Keys that are not
// listed are ignored; a repeated key, a missing key, a wrong type, invalid
// UTF-8, nesting deeper than 64 or anything after the document is an
// error (InvalidArgument naming what and where).
//
// Thread safety: a pure function.
#ifndef KVINDEXER_SERVER_STATUS_REPORT_PARSER_H_
#define KVINDEXER_SERVER_STATUS_REPORT_PARSER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "server/status_report.h"

namespace kvindexer {

[[nodiscard]] absl::StatusOr<StatusReport> ParseStatusReport(
    std::string_view json);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORT_PARSER_H_
