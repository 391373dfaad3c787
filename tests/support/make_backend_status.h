// BackendStatus values for test backends. Test-only: the host only reads
// statuses (core/backend_status.h), and every backend makes its own.
#ifndef KVINDEXER_TESTS_SUPPORT_MAKE_BACKEND_STATUS_H_
#define KVINDEXER_TESTS_SUPPORT_MAKE_BACKEND_STATUS_H_

#include <algorithm>
#include <cstring>
#include <string_view>

#include "kvindexer/backend.h"

namespace kvindexer::test_support {

// The message is truncated to fit and always NUL-terminated.
inline BackendStatus MakeBackendStatus(BackendCode code,
                                       std::string_view message) {
  BackendStatus status;
  status.code = code;
  const size_t n = std::min(message.size(), sizeof(status.message) - 1);
  if (n > 0) std::memcpy(status.message, message.data(), n);
  status.message[n] = '\0';
  return status;
}

inline BackendStatus BackendOk() {
  return MakeBackendStatus(BackendCode::kOk, {});
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_MAKE_BACKEND_STATUS_H_
