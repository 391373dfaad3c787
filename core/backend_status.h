// Conversion from the backend ABI's BackendStatus to absl::Status.
#ifndef KVINDEXER_CORE_BACKEND_STATUS_H_
#define KVINDEXER_CORE_BACKEND_STATUS_H_

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// Maps a backend status to the absl::Status with the same canonical code and
// message. The codes are gRPC canonical codes, so the mapping is one to one;
// a code outside the canonical range becomes INTERNAL and says so.
[[nodiscard]] absl::Status ToAbslStatus(const BackendStatus& status);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_BACKEND_STATUS_H_
