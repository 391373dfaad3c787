// An in-process kvindexer.admin.v1 server on 127.0.0.1:<free port> with
// canned answers, plus gRPC's own health service, for the CLI tests. It
// records what the CLI sent and enforces a write token on RemoveWorker the
// way the real server does when one is configured.
#ifndef KVINDEXER_CTL_TESTS_FAKE_ADMIN_SERVER_H_
#define KVINDEXER_CTL_TESTS_FAKE_ADMIN_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kvindexer_admin.grpc.pb.h"

namespace kvindexer::ctl::testing {

namespace admin_v1 = ::kvindexer::admin::v1;

// Thread safety: every member is guarded by mu_; set answers before or
// between CLI runs.
class FakeAdminService final : public admin_v1::KvIndexerAdmin::Service {
 public:
  // Every GetStats answers `stats` with blocks and placements grown by
  // `stats_step` per earlier call, so `top` sees changes.
  void SetStats(admin_v1::GetStatsResponse stats, uint64_t stats_step = 0);
  void SetWorkers(admin_v1::ListWorkersResponse workers);
  // Positive: ListWorkers answers pages of this many workers with a page
  // token, as the server does; `repeat_token` gives the first page's
  // token again on every page (a broken server).
  void PageWorkers(int page_size, bool repeat_token = false);
  int list_workers_calls() const;
  void SetExplain(admin_v1::ExplainPrefixResponse explain);
  // Non-empty: RemoveWorker needs "authorization: Bearer <token>".
  void RequireToken(std::string token);
  // Every RPC fails with `status` (nullopt: answer normally).
  void FailWith(std::optional<grpc::Status> status);

  admin_v1::ExplainPrefixRequest last_explain() const;
  // The `authorization` metadata of the last read (GetStats, ListWorkers,
  // ExplainPrefix) and of the last RemoveWorker; "" when absent.
  std::string last_read_authorization() const;
  std::string last_remove_authorization() const;
  admin_v1::RemoveWorkerRequest last_remove() const;
  int get_stats_calls() const;

  grpc::Status GetStats(grpc::ServerContext* context,
                        const admin_v1::GetStatsRequest* request,
                        admin_v1::GetStatsResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const admin_v1::ListWorkersRequest* request,
                           admin_v1::ListWorkersResponse* response) override;
  grpc::Status ExplainPrefix(
      grpc::ServerContext* context,
      const admin_v1::ExplainPrefixRequest* request,
      admin_v1::ExplainPrefixResponse* response) override;
  grpc::Status RemoveWorker(grpc::ServerContext* context,
                            const admin_v1::RemoveWorkerRequest* request,
                            admin_v1::RemoveWorkerResponse* response) override;

 private:
  mutable std::mutex mu_;
  admin_v1::GetStatsResponse stats_;
  uint64_t stats_step_ = 0;
  int get_stats_calls_ = 0;
  admin_v1::ListWorkersResponse workers_;
  int page_size_ = 0;
  bool repeat_token_ = false;
  int list_workers_calls_ = 0;
  admin_v1::ExplainPrefixResponse explain_;
  std::string token_;
  std::string last_read_authorization_;
  std::string last_remove_authorization_;
  std::optional<grpc::Status> fail_;
  admin_v1::ExplainPrefixRequest last_explain_;
  admin_v1::RemoveWorkerRequest last_remove_;
};

class FakeAdminServer {
 public:
  // Listens on 127.0.0.1 at a port the kernel picks; plaintext unless
  // `credentials` says otherwise.
  explicit FakeAdminServer(std::shared_ptr<grpc::ServerCredentials>
                               credentials = grpc::InsecureServerCredentials());
  ~FakeAdminServer();

  FakeAdminService& service() { return service_; }
  // "http://127.0.0.1:<port>"
  std::string endpoint() const;
  int port() const { return port_; }
  // What grpc.health.v1 answers for "".
  void SetServing(bool serving);

 private:
  FakeAdminService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace kvindexer::ctl::testing

#endif  // KVINDEXER_CTL_TESTS_FAKE_ADMIN_SERVER_H_
