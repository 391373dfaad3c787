// ServingHealth: what the server answers on grpc.health.v1 (docs/health.md),
// decided in one place and pushed to gRPC's own health service.
//
// SERVING once the server listens (it binds only after its state is
// recovered, so there is no "recovering" status to publish: the port is
// closed until then) and until the backend fails in a way it cannot
// continue from (OperatorView::BackendFailure), the state log fails
// (durable::DurableStore::LogFailure: every write is refused until a
// restart), or a graceful shutdown begins. All three are final: nothing
// turns them back to SERVING.
//
// A replica of the fleet event log (KV_INDEXER_EVENT_SOURCE=jetstream) is
// also NOT_SERVING while it is behind the log: until it has first caught up,
// whenever it lags by more than its bound, and once the log has not
// answered it for longer than its silence bound, until it answers and the
// replica has caught up again (replica/log_follower.h; docs/fleet.md,
// "Replicas follow the log"). That reason alone comes and goes.
//
// Thread safety: every method may be called concurrently; each decision is
// pushed under this object's mutex, so the health service always ends up
// with the latest one.
#ifndef KVINDEXER_SERVER_SERVING_HEALTH_H_
#define KVINDEXER_SERVER_SERVING_HEALTH_H_

#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_builder.h"

namespace kvindexer {

// Turns on, for every gRPC server built afterwards in this process, gRPC's
// default grpc.health.v1 service and server reflection. Process-wide, as
// gRPC makes both. REQUIRES: called before the grpc::ServerBuilder is
// created, while no other thread builds a server.
void EnableHealthAndReflection();

// Leaves server reflection out of the server `builder` builds
// (KV_INDEXER_GRPC_REFLECTION=off). Linking gRPC's reflection library
// registers its plugin for every builder at static initialisation, so
// this removes the plugin from this builder rather than not registering
// it. The health service stays.
void BuildWithoutReflection(grpc::ServerBuilder& builder);

// The names whose status is published: "" (the whole server),
// kv_indexer.v1.KVIndexer and kvindexer.admin.v1.KvIndexerAdmin.
std::vector<std::string> HealthServiceNames();

class ServingHealth {
 public:
  // Publishes NOT_SERVING for every name in `service_names` at once.
  // `health` is the server's (grpc::Server::GetHealthCheckService()); null
  // when health checking is off: the decisions are then only kept.
  // REQUIRES: `health` stays valid until ShuttingDown() returns or this
  // object is destroyed, whichever comes first. OWNERSHIP: not taken.
  ServingHealth(grpc::HealthCheckServiceInterface* health,
                std::vector<std::string> service_names);
  ServingHealth(const ServingHealth&) = delete;
  ServingHealth& operator=(const ServingHealth&) = delete;

  // The server listens with its state recovered.
  void Listening();
  // The backend cannot continue (OperatorView::BackendFailure's text).
  void BackendFailed(std::string_view failure);
  // The state log refuses every write until a restart
  // (durable::DurableStore::LogFailure's text).
  void LogFailed(std::string_view failure);
  // A replica's place in the fleet event log: `behind` says why it is not
  // to be served yet (not caught up, lagging beyond the bound, the log
  // silent beyond the bound), nullopt once it is current. Not final; the
  // latest call holds.
  void LogFollowing(std::optional<std::string> behind);
  // A graceful shutdown begins: NOT_SERVING for good, then the health
  // service is frozen (it goes on answering until the server stops) and is
  // never touched again.
  void ShuttingDown();

  // The status now published for every name.
  bool serving() const;
  // The reason for NOT_SERVING after Listening(), the first that applies:
  // the backend's failure, the state log's failure, "shutting down", or why
  // the replica is behind its log; nullopt while serving or before
  // Listening().
  std::optional<std::string> reason() const;

 private:
  // REQUIRES: mu_ held.
  bool ServingLocked() const {
    return listening_ && !backend_failure_.has_value() &&
           !log_failure_.has_value() && !shutting_down_ &&
           !log_behind_.has_value();
  }
  void PublishLocked();

  const std::vector<std::string> service_names_;
  mutable std::mutex mu_;
  // Guarded by mu_.
  grpc::HealthCheckServiceInterface* health_;
  bool listening_ = false;
  bool shutting_down_ = false;
  std::optional<std::string> backend_failure_;
  std::optional<std::string> log_failure_;
  std::optional<std::string> log_behind_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_SERVING_HEALTH_H_
