#include "core/stream_log_fields.h"

#include "fmt/format.h"

namespace kvindexer {

std::string StreamLogFields(const StreamKey& key, LogQuotes quotes,
                            size_t max_bytes) {
  const std::string_view q = quotes == LogQuotes::kDouble ? "\"" : "";
  std::string out =
      fmt::format("worker={}{}{}", q, LogText(key.worker_id, max_bytes), q);
  if (!key.legacy()) {
    out += fmt::format(" namespace={}{}{} dp_rank={}", q,
                       LogText(key.ns, max_bytes), q, key.dp_rank);
  }
  return out;
}

std::string StreamLogFields(std::string_view backend_id, LogQuotes quotes,
                            size_t max_bytes) {
  // A legacy id is shown from its own bytes, without a copy.
  if (!IsEncodedStreamKey(backend_id)) {
    const std::string_view q = quotes == LogQuotes::kDouble ? "\"" : "";
    return fmt::format("worker={}{}{}", q, LogText(backend_id, max_bytes), q);
  }
  return StreamLogFields(DecodeStreamKey(backend_id), quotes, max_bytes);
}

}  // namespace kvindexer
