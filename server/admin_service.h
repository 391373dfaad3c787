// AdminService: kvindexer.admin.v1.KvIndexerAdmin, the operator's view of a
// running server (docs/admin-api.md). Served on the same port as
// kv_indexer.v1.KVIndexer, which it never changes.
//
// Every method's work runs on the service's own executor (one thread, named
// kvidx-admin), never on gRPC's callback threads: ListWorkers and
// RemoveWorker take the Indexer's mutation mutex and wait behind a mutation
// in progress, ExplainPrefix scans a whole window. One thread keeps an
// operator's calls from taking more than one core from the router's queries.
// RemoveWorker's write-token check runs first, on the callback thread, and
// a replica of the fleet event log refuses it next.
//
// On the callback thread, before a call is queued: with an admin read token
// configured (server/read_authorizer.h) every method needs the read token or
// the write token, else UNAUTHENTICATED or PERMISSION_DENIED; a full queue
// (KV_INDEXER_ADMIN_QUEUE_MAX) answers RESOURCE_EXHAUSTED
// (server/queue_refusal.h); and ExplainPrefix takes one of
// kExplainPrefixMaxInflight permits, held until its answer is written, or
// is refused with RESOURCE_EXHAUSTED, so that explanations cannot take the
// admin thread from the other calls.
//
// Thread safety: all methods may run concurrently.
#ifndef KVINDEXER_SERVER_ADMIN_SERVICE_H_
#define KVINDEXER_SERVER_ADMIN_SERVICE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/metrics_counter.h"
#include "core/operator_view.h"
#include "durable/durable_store.h"
#include "grpcpp/grpcpp.h"
#include "kvindexer/backend.h"
#include "kvindexer_admin.grpc.pb.h"
#include "server/prefix_admission.h"
#include "server/queue_config.h"
#include "server/read_authorizer.h"
#include "server/rpc_metrics.h"
#include "server/task_executor.h"
#include "server/write_authorizer.h"

namespace kvindexer {

namespace admin_v1 = ::kvindexer::admin::v1;

// Most worker ids one ExplainPrefix may name.
inline constexpr int kMaxExplainedWorkerIds = 1024;
// ExplainPrefix calls queued or running at once: one explained while the
// next waits. An explanation scans a whole window, which the admin thread
// would otherwise spend on every queued one before it reached a GetStats.
inline constexpr uint32_t kExplainPrefixMaxInflight = 2;
inline constexpr std::string_view kExplainOverloadMessage =
    "too many ExplainPrefix calls in flight: at most 2 are queued or running "
    "at once; retry when one has finished";

// What the admin service reads. Pointers are borrowed: REQUIRES each one
// set outlives the service. Only `indexer` is required.
struct AdminSources {
  // The Indexer, through its operator face: workers, removal, the backend's
  // figures and ExplainPrefix's scan.
  OperatorView* indexer = nullptr;
  // The loaded backend's identity (LoadedBackend::descriptor(), path()).
  std::string backend_name;
  std::string backend_version;
  std::string backend_path;
  uint32_t backend_abi_major = kBackendAbiMajor;
  uint32_t backend_abi_minor = kBackendAbiMinor;
  // The KVIndexer service's prefix admission; null: figures are 0.
  const PrefixAdmission* admission = nullptr;
  uint32_t prefix_query_max_inflight = 0;
  // Null: durability off.
  const durable::DurableStore* store = nullptr;
  std::string data_dir;
  std::string wal_sync;
  // Null: every admin mutation is allowed (no write token configured).
  const WriteAuthorizer* authorizer = nullptr;
  // Null or disabled: every admin call is allowed without a token (no admin
  // read token configured).
  const ReadAuthorizer* read_authorizer = nullptr;
  // Admin calls that may wait for the admin thread; more are refused.
  uint32_t queue_max = kDefaultAdminQueueMax;
  // A replica of the fleet event log (KV_INDEXER_EVENT_SOURCE=jetstream):
  // RemoveWorker answers FAILED_PRECONDITION after the write-token check
  // (replica/replica_refusal.h).
  bool follows_log = false;
  // Bounds worker ids (the server's RequestLimits).
  uint32_t max_worker_id_bytes = 0;
  std::string server_version;
  // When the server started, on the Indexer's clock (uptime).
  MonotonicClock::TimePoint started{};
  // The backend failure as OperatorView::BackendFailure() reports it.
  // Null: healthy.
  std::function<std::optional<std::string>()> backend_failure;
  // "SERVING" or "NOT_SERVING" as grpc.health.v1 reports the server
  // (server/serving_health.h). Null: derived from backend_failure alone.
  std::function<std::string()> health;
  // Per-method counts and latencies (docs/metrics.md, "gRPC"); null: not
  // recorded.
  RpcMetrics* metrics = nullptr;
  // Calls refused by a full admin queue, and ExplainPrefix calls refused
  // for want of a permit; null: not counted.
  Counter* queue_rejections = nullptr;
  Counter* explain_rejections = nullptr;
};

class AdminService final : public admin_v1::KvIndexerAdmin::CallbackService {
 public:
  // REQUIRES: sources.indexer set.
  explicit AdminService(AdminSources sources);
  AdminService(const AdminService&) = delete;
  AdminService& operator=(const AdminService&) = delete;

  grpc::ServerUnaryReactor* ListWorkers(
      grpc::CallbackServerContext* context,
      const admin_v1::ListWorkersRequest* request,
      admin_v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* ExplainPrefix(
      grpc::CallbackServerContext* context,
      const admin_v1::ExplainPrefixRequest* request,
      admin_v1::ExplainPrefixResponse* response) override;
  grpc::ServerUnaryReactor* RemoveWorker(
      grpc::CallbackServerContext* context,
      const admin_v1::RemoveWorkerRequest* request,
      admin_v1::RemoveWorkerResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(
      grpc::CallbackServerContext* context,
      const admin_v1::GetStatsRequest* request,
      admin_v1::GetStatsResponse* response) override;

  // Admin calls waiting for the admin thread; ExplainPrefix calls holding a
  // permit.
  size_t queue_depth() const { return executor_.depth(); }
  uint32_t explains_in_flight() const { return explains_.in_flight(); }

 private:
  // OK, or the read token's refusal of a call of `method`.
  grpc::Status CheckReadToken(const grpc::CallbackServerContext& context,
                              RpcMethod method) const;
  // Runs `work` on `executor` and finishes `call` (the RPC metrics' record
  // of it) with its status; a full queue finishes it with
  // RESOURCE_EXHAUSTED instead. Enqueue does only that; RunOn checks the
  // read token first. Defined in admin_service.cc, their only user.
  template <typename Call, typename Work>
  grpc::ServerUnaryReactor* Enqueue(TaskExecutor& executor,
                                    grpc::CallbackServerContext* context,
                                    const Call& call, Work work);
  template <typename Call, typename Work>
  grpc::ServerUnaryReactor* RunOn(TaskExecutor& executor,
                                  grpc::CallbackServerContext* context,
                                  const Call& call, Work work);

  grpc::Status DoListWorkers(const admin_v1::ListWorkersRequest& request,
                             admin_v1::ListWorkersResponse* response);
  grpc::Status DoExplainPrefix(const admin_v1::ExplainPrefixRequest& request,
                               admin_v1::ExplainPrefixResponse* response);
  grpc::Status DoRemoveWorker(const admin_v1::RemoveWorkerRequest& request,
                              std::string_view peer,
                              admin_v1::RemoveWorkerResponse* response);
  grpc::Status DoGetStats(admin_v1::GetStatsResponse* response);

  AdminSources sources_;
  PrefixAdmission explains_{kExplainPrefixMaxInflight};
  // Last: its destructor runs the calls still queued, which use sources_
  // and hold explains_' permits.
  TaskExecutor executor_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_ADMIN_SERVICE_H_
