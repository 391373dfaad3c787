#include "ctl/tests/fake_admin_server.h"

#include <grpcpp/health_check_service_interface.h>

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::ctl::testing {

void FakeAdminService::SetStats(admin_v1::GetStatsResponse stats,
                                uint64_t stats_step) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = std::move(stats);
  stats_step_ = stats_step;
  get_stats_calls_ = 0;
}

void FakeAdminService::SetWorkers(admin_v1::ListWorkersResponse workers) {
  std::lock_guard<std::mutex> lock(mu_);
  workers_ = std::move(workers);
}

void FakeAdminService::SetExplain(admin_v1::ExplainPrefixResponse explain) {
  std::lock_guard<std::mutex> lock(mu_);
  explain_ = std::move(explain);
}

void FakeAdminService::RequireToken(std::string token) {
  std::lock_guard<std::mutex> lock(mu_);
  token_ = std::move(token);
}

void FakeAdminService::FailWith(std::optional<grpc::Status> status) {
  std::lock_guard<std::mutex> lock(mu_);
  fail_ = std::move(status);
}

admin_v1::ExplainPrefixRequest FakeAdminService::last_explain() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_explain_;
}

admin_v1::RemoveWorkerRequest FakeAdminService::last_remove() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_remove_;
}

namespace {

std::string Authorization(const grpc::ServerContext& context) {
  auto it = context.client_metadata().find("authorization");
  if (it == context.client_metadata().end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

std::string FakeAdminService::last_read_authorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_read_authorization_;
}

std::string FakeAdminService::last_remove_authorization() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_remove_authorization_;
}

int FakeAdminService::get_stats_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return get_stats_calls_;
}

grpc::Status FakeAdminService::GetStats(grpc::ServerContext* context,
                                        const admin_v1::GetStatsRequest*,
                                        admin_v1::GetStatsResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  last_read_authorization_ = Authorization(*context);
  if (fail_) return *fail_;
  *response = stats_;
  const uint64_t growth = stats_step_ * static_cast<uint64_t>(get_stats_calls_);
  auto* backend = response->mutable_backend();
  backend->set_blocks(backend->blocks() + growth);
  backend->set_placements(backend->placements() + growth);
  ++get_stats_calls_;
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::ListWorkers(
    grpc::ServerContext* context, const admin_v1::ListWorkersRequest* request,
    admin_v1::ListWorkersResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  ++list_workers_calls_;
  last_read_authorization_ = Authorization(*context);
  if (fail_) return *fail_;
  if (page_size_ <= 0) {
    *response = workers_;
    return grpc::Status::OK;
  }
  // The token is the index of the page's first worker.
  int first = 0;
  if (!request->page_token().empty()) first = std::stoi(request->page_token());
  const int end = std::min(first + page_size_, workers_.workers_size());
  for (int i = first; i < end; ++i) {
    *response->add_workers() = workers_.workers(i);
  }
  if (end < workers_.workers_size()) {
    response->set_next_page_token(
        std::to_string(repeat_token_ ? page_size_ : end));
  }
  return grpc::Status::OK;
}

void FakeAdminService::PageWorkers(int page_size, bool repeat_token) {
  std::lock_guard<std::mutex> lock(mu_);
  page_size_ = page_size;
  repeat_token_ = repeat_token;
}

int FakeAdminService::list_workers_calls() const {
  std::lock_guard<std::mutex> lock(mu_);
  return list_workers_calls_;
}

grpc::Status FakeAdminService::ExplainPrefix(
    grpc::ServerContext* context, const admin_v1::ExplainPrefixRequest* request,
    admin_v1::ExplainPrefixResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  last_read_authorization_ = Authorization(*context);
  if (fail_) return *fail_;
  last_explain_ = *request;
  *response = explain_;
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::RemoveWorker(
    grpc::ServerContext* context, const admin_v1::RemoveWorkerRequest* request,
    admin_v1::RemoveWorkerResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  last_remove_authorization_ = Authorization(*context);
  if (fail_) return *fail_;
  if (!token_.empty()) {
    auto it = context->client_metadata().find("authorization");
    if (it == context->client_metadata().end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "a write token is required");
    }
    if (std::string(it->second.data(), it->second.size()) !=
        absl::StrCat("Bearer ", token_)) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                          "the write token does not match");
    }
  }
  last_remove_ = *request;
  // The stream the request names: stream_id, or the legacy stream.
  const std::string& ns = request->stream_id().namespace_();
  const uint32_t rank = request->stream_id().dp_rank();
  const std::string& id = request->has_stream_id()
                              ? request->stream_id().worker_id()
                              : request->worker_id();
  auto* workers = workers_.mutable_workers();
  for (int i = 0; i < workers->size(); ++i) {
    const admin_v1::WorkerInfo& w = workers->Get(i);
    if (w.worker_id() == id && w.namespace_() == ns && w.dp_rank() == rank) {
      *response->mutable_removed_placements() = workers->Get(i).placements();
      workers->DeleteSubrange(i, 1);
      return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no worker \"", id, "\""));
}

FakeAdminServer::FakeAdminServer(
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", std::move(credentials), &port_);
  builder.RegisterService(&service_);
  server_ = builder.BuildAndStart();
}

FakeAdminServer::~FakeAdminServer() {
  if (server_) server_->Shutdown();
}

std::string FakeAdminServer::endpoint() const {
  return absl::StrCat("http://127.0.0.1:", port_);
}

void FakeAdminServer::SetServing(bool serving) {
  server_->GetHealthCheckService()->SetServingStatus(serving);
}

}  // namespace kvindexer::ctl::testing
