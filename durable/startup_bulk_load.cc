#include "durable/startup_bulk_load.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

// SetWriteMode is the call ABI 1.4 added.
constexpr uint32_t kWriteModeAbiMinor = 4;

}  // namespace

StartupBulkLoad::StartupBulkLoad(IndexBackend* backend, uint32_t abi_minor) {
  if (backend == nullptr || abi_minor < kWriteModeAbiMinor) return;
  const BackendStatus status = backend->SetWriteMode(WriteMode::kBulkLoad);
  if (status.code != BackendCode::kOk) {
    spdlog::info(
        "start-up load: the backend fills its index as in service ({})",
        status.message);
    return;
  }
  backend_ = backend;
}

StartupBulkLoad::~StartupBulkLoad() {
  if (absl::Status s = Finish(); !s.ok()) {
    spdlog::error("{}", std::string(s.message()));
  }
}

absl::Status StartupBulkLoad::Finish() {
  if (backend_ == nullptr) return absl::OkStatus();
  IndexBackend* const backend = backend_;
  backend_ = nullptr;
  const BackendStatus status = backend->SetWriteMode(WriteMode::kServing);
  if (status.code == BackendCode::kOk) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(
      "the backend could not publish the index it loaded at start-up: ",
      status.message));
}

}  // namespace kvindexer::durable
