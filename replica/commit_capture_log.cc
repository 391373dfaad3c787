#include "replica/commit_capture_log.h"

namespace kvindexer::replica {
namespace {

thread_local CommitCaptureLog::Capture* current_capture = nullptr;

}  // namespace

CommitCaptureLog::Capture::Capture() { current_capture = this; }

CommitCaptureLog::Capture::~Capture() { current_capture = nullptr; }

absl::StatusOr<uint64_t> CommitCaptureLog::Append(
    const state::v1::WalRecord& record) {
  if (record.has_snapshot_commit()) {
    if (current_capture == nullptr) {
      return absl::FailedPreconditionError(
          "a staged snapshot commit on a replica installs only from the "
          "fleet event log");
    }
    current_capture->commit = record.snapshot_commit();
    return absl::UnavailableError(
        "the staged snapshot commit goes to the fleet event log first");
  }
  return end_.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace kvindexer::replica
