// StreamLogFields: how a log line names a stream (docs/contract.md,
// "Streams"). A legacy stream is named exactly as a seed-era worker always
// was, `worker=<id>`; any other stream by its fields, `worker=<id>
// namespace=<ns> dp_rank=<n>`, never by its encoded backend id. Values are
// escaped and cut by LogText (common/log_text.h).
//
// Thread safety: pure functions.
#ifndef KVINDEXER_CORE_STREAM_LOG_FIELDS_H_
#define KVINDEXER_CORE_STREAM_LOG_FIELDS_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "common/log_text.h"
#include "core/stream_key.h"

namespace kvindexer {

// Whether a line puts its values in double quotes (`worker="w"`), as lines
// that also carry free text do, or not (`worker=w`).
enum class LogQuotes { kNone, kDouble };

// The fields naming `key`; each string shows at most `max_bytes` input
// bytes.
std::string StreamLogFields(const StreamKey& key,
                            LogQuotes quotes = LogQuotes::kNone,
                            size_t max_bytes = kLogTextBytes);
// The fields naming the stream whose backend id is `backend_id`.
std::string StreamLogFields(std::string_view backend_id,
                            LogQuotes quotes = LogQuotes::kNone,
                            size_t max_bytes = kLogTextBytes);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_STREAM_LOG_FIELDS_H_
