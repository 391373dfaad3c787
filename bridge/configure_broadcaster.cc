#include "bridge/configure_broadcaster.h"

namespace kvindexer::bridge {

absl::Status ConfigureBroadcaster::Send(const Sender& send) {
  std::lock_guard<std::mutex> lock(mu_);
  const kv_indexer::v1::ConfigureExpectedWorkersRequest request = list_();
  if (request.workers_size() == 0) return absl::OkStatus();
  kv_indexer::v1::ConfigureExpectedWorkersResponse response;
  absl::Status status = send(request, &response);
  if (status.ok()) epochs_->Observe(response.indexer_epoch());
  return status;
}

}  // namespace kvindexer::bridge
