// Conversion between the backend ABI's BackendStatus and absl::Status.
#ifndef KVINDEXER_CORE_BACKEND_STATUS_H_
#define KVINDEXER_CORE_BACKEND_STATUS_H_

#include <string_view>

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// Maps a backend status to the absl::Status with the same canonical code and
// message. The codes are gRPC canonical codes, so the mapping is one to one;
// a code outside the canonical range becomes INTERNAL and says so.
[[nodiscard]] absl::Status ToAbslStatus(const BackendStatus& status);

// Builds a BackendStatus; the message is truncated to fit and always
// NUL-terminated. Meant for backends' and tests' own use.
[[nodiscard]] BackendStatus MakeBackendStatus(BackendCode code,
                                              std::string_view message);

inline BackendStatus BackendOk() {
  return MakeBackendStatus(BackendCode::kOk, {});
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_BACKEND_STATUS_H_
