#include "bridge/configure_broadcaster.h"

namespace kvindexer::bridge {

absl::Status ConfigureBroadcaster::Send(const Sender& send) {
  std::lock_guard<std::mutex> lock(mu_);
  return SendLocked(send);
}

std::optional<absl::Status> ConfigureBroadcaster::TrySend(const Sender& send) {
  std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;
  return SendLocked(send);
}

absl::Status ConfigureBroadcaster::SendLocked(const Sender& send) {
  const kv_indexer::v1::ConfigureExpectedWorkersRequest request = list_();
  if (request.workers_size() == 0) return absl::OkStatus();
  kv_indexer::v1::ConfigureExpectedWorkersResponse response;
  absl::Status status = send(request, &response);
  if (status.ok()) epochs_->Observe(response.indexer_epoch());
  return status;
}

}  // namespace kvindexer::bridge
