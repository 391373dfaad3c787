#include "bridge/status_classifier.h"

namespace kvindexer::bridge {

bool IsPermanentStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kDataLoss:
      return true;
    default:
      return false;
  }
}

}  // namespace kvindexer::bridge
