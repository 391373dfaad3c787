// Builds BackendStatus values: a code plus a printf-style message truncated
// to the fixed buffer.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_STATUS_MESSAGE_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_STATUS_MESSAGE_H_

#include <stdarg.h>
#include <stdio.h>

#include "kvindexer/backend.h"

namespace kvindexer::absl_rwlock {

inline BackendStatus OkStatus() noexcept {
  BackendStatus status;
  status.code = BackendCode::kOk;
  status.message[0] = '\0';
  return status;
}

__attribute__((format(printf, 2, 3))) inline BackendStatus ErrorStatus(
    BackendCode code, const char* format, ...) noexcept {
  BackendStatus status;
  status.code = code;
  va_list args;
  va_start(args, format);
  vsnprintf(status.message, sizeof(status.message), format, args);
  va_end(args);
  return status;
}

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_STATUS_MESSAGE_H_
