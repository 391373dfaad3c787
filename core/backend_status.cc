#include "core/backend_status.h"

#include <stdint.h>
#include <string.h>

#include "absl/strings/str_cat.h"

namespace kvindexer {

absl::Status ToAbslStatus(const BackendStatus& status) {
  const int32_t code = static_cast<int32_t>(status.code);
  if (code == 0) return absl::OkStatus();
  // Debian's abseil has its own string_view type, not std::string_view.
  const absl::string_view message(
      status.message, strnlen(status.message, sizeof(status.message)));
  // 1..16 are the canonical codes; 0 (OK) was handled above.
  if (code < 1 || code > 16) {
    return absl::InternalError(absl::StrCat(
        "backend returned unknown status code ", code, ": ", message));
  }
  if (message.empty()) {
    return absl::Status(static_cast<absl::StatusCode>(code),
                        "backend failed without a message");
  }
  return absl::Status(static_cast<absl::StatusCode>(code), message);
}

}  // namespace kvindexer
