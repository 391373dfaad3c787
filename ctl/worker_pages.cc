#include "ctl/worker_pages.h"

#include <string>

namespace kvindexer::ctl {

grpc::Status ListAllWorkers(const CommandContext& context,
                            admin_v1::ListWorkersResponse* out) {
  admin_v1::ListWorkersRequest request;
  for (int page = 0; page < kMaxWorkerPages; ++page) {
    admin_v1::ListWorkersResponse response;
    const grpc::Status status = context.stub.ListWorkers(
        context.NewContext().get(), request, &response);
    if (!status.ok()) return status;
    for (admin_v1::WorkerInfo& worker : *response.mutable_workers()) {
      *out->add_workers() = std::move(worker);
    }
    if (response.next_page_token().empty()) return grpc::Status::OK;
    if (response.next_page_token() == request.page_token()) {
      return grpc::Status(grpc::StatusCode::INTERNAL,
                          "the server gave the same page token twice");
    }
    request.set_page_token(response.next_page_token());
  }
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                      "the listing did not end after " +
                          std::to_string(kMaxWorkerPages) + " pages");
}

}  // namespace kvindexer::ctl
