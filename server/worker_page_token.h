// The page token of ListWorkers (docs/admin-api.md, "ListWorkers > Pages"):
// "w1." followed by the hex of the backend id (core/stream_key.h) of the
// last stream the page held. Opaque to clients; the server resumes after
// that stream's key in key order (StreamIdOrder), so a token stays valid
// whatever is added or removed meanwhile (a stream added before the
// position is not listed by that walk).
#ifndef KVINDEXER_SERVER_WORKER_PAGE_TOKEN_H_
#define KVINDEXER_SERVER_WORKER_PAGE_TOKEN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kvindexer {

// ListWorkers' page sizes: what 0 asks for, and the most a request may.
inline constexpr size_t kDefaultWorkerPageSize = 1000;
inline constexpr size_t kMaxWorkerPageSize = 10000;

std::string EncodeWorkerPageToken(std::string_view last_worker_id);
// The backend id a token resumes after; "" for the empty token.
// INVALID_ARGUMENT for anything EncodeWorkerPageToken cannot have made.
absl::StatusOr<std::string> DecodeWorkerPageToken(std::string_view token);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_WORKER_PAGE_TOKEN_H_
