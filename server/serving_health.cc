#include "server/serving_health.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer_admin.grpc.pb.h"

namespace kvindexer {

void EnableHealthAndReflection() {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
}

namespace {

// Removes the reflection plugin, found by the name it reports.
class WithoutReflection final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>*
                         plugins) override {
    const std::string reflection =
        grpc::reflection::ProtoServerReflectionPlugin().name();
    std::erase_if(*plugins, [&](const auto& plugin) {
      return plugin->name() == reflection;
    });
  }
};

}  // namespace

void BuildWithoutReflection(grpc::ServerBuilder& builder) {
  builder.SetOption(std::make_unique<WithoutReflection>());
}

std::vector<std::string> HealthServiceNames() {
  return {"", ::kv_indexer::v1::KVIndexer::service_full_name(),
          ::kvindexer::admin::v1::KvIndexerAdmin::service_full_name()};
}

ServingHealth::ServingHealth(grpc::HealthCheckServiceInterface* health,
                             std::vector<std::string> service_names)
    : service_names_(std::move(service_names)), health_(health) {
  std::lock_guard<std::mutex> lock(mu_);
  PublishLocked();
}

void ServingHealth::PublishLocked() {
  if (health_ == nullptr) return;
  const bool serving = ServingLocked();
  for (const std::string& name : service_names_) {
    health_->SetServingStatus(name, serving);
  }
}

void ServingHealth::Listening() {
  std::lock_guard<std::mutex> lock(mu_);
  listening_ = true;
  PublishLocked();
}

void ServingHealth::BackendFailed(std::string_view failure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (backend_failure_.has_value()) return;
  backend_failure_ = std::string(failure);
  PublishLocked();
}

void ServingHealth::LogFailed(std::string_view failure) {
  std::lock_guard<std::mutex> lock(mu_);
  if (log_failure_.has_value()) return;
  log_failure_ = std::string(failure);
  PublishLocked();
}

void ServingHealth::LogFollowing(std::optional<std::string> behind) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was_behind = log_behind_.has_value();
  log_behind_ = std::move(behind);
  // Health is pushed only when the decision changes.
  if (was_behind != log_behind_.has_value()) PublishLocked();
}

void ServingHealth::ShuttingDown() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_) return;
  shutting_down_ = true;
  PublishLocked();
  if (health_ != nullptr) health_->Shutdown();
  health_ = nullptr;
}

bool ServingHealth::serving() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ServingLocked();
}

std::optional<std::string> ServingHealth::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!listening_ || ServingLocked()) return std::nullopt;
  if (backend_failure_.has_value()) return backend_failure_;
  if (log_failure_.has_value()) return log_failure_;
  if (shutting_down_) return std::string("shutting down");
  return log_behind_;
}

}  // namespace kvindexer
