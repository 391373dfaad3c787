// OperatorReader: the reads an operator's tools poll, each done whole and
// checked:
//   Health       one grpc.health.v1 Health/Check of the whole server, which
//                reads no worker state: the control, what any RPC polled
//                back-to-back costs;
//   GetStats     one kvindexer.admin.v1 GetStats;
//   ListWorkers  a walk through every page of ListWorkers (page_token
//                followed until next_page_token is empty); the ids must come
//                sorted and none twice, also across pages. A server that
//                predates pages answers everything in one page;
//   scrape       one GET /metrics over loopback HTTP/1.0, status 200.
// Each result says how big the answer was and how many workers it counted.
//
// Thread safety: one thread at a time per OperatorReader.
#ifndef KVINDEXER_BENCH_OPERATOR_READS_H_
#define KVINDEXER_BENCH_OPERATOR_READS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "kvindexer_admin.grpc.pb.h"

namespace kvindexer::bench {

enum class OperatorRead { kHealth, kGetStats, kListWorkers, kScrape };
// "Health", "GetStats", "ListWorkers", "scrape".
const char* OperatorReadName(OperatorRead read);
// False for Health, which counts no workers.
bool CountsWorkers(OperatorRead read);

struct OperatorReadResult {
  // Serialized bytes of the answers (ListWorkers: of every page), or the
  // body of the scrape.
  uint64_t bytes = 0;
  // ListWorkers: pages; scrape: samples (lines that are not comments);
  // GetStats and Health: 1.
  uint64_t parts = 0;
  // Workers the answer accounts for: workers_total, the workers listed, or
  // the scrape's kvindexer_workers; 0 for Health.
  uint64_t workers = 0;
};

class OperatorReader {
 public:
  // `page_size` 0 asks for the server's default page. `channel` carries the
  // admin service and the health service.
  OperatorReader(std::shared_ptr<grpc::Channel> channel, int metrics_port,
                 uint32_t page_size, std::chrono::milliseconds deadline);

  [[nodiscard]] absl::StatusOr<OperatorReadResult> Read(OperatorRead read);

 private:
  absl::StatusOr<OperatorReadResult> Health();
  absl::StatusOr<OperatorReadResult> GetStats();
  absl::StatusOr<OperatorReadResult> WalkWorkers();
  absl::StatusOr<OperatorReadResult> Scrape();

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::kvindexer::admin::v1::KvIndexerAdmin::Stub> stub_;
  int metrics_port_;
  uint32_t page_size_;
  std::chrono::milliseconds deadline_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_OPERATOR_READS_H_
