// RpcMetrics: per-method request counts by status code and latency
// histograms of the KVIndexer and admin services (docs/metrics.md, "gRPC"):
//   kvindexer_grpc_requests_total{method,code}
//   kvindexer_grpc_request_duration_seconds{method}
//
// Every (method, code) series is created up front, so that recording a call
// is two array lookups, one counter increment and one histogram observation:
// no lock, no allocation, no lookup by name. That keeps the prefix query
// path as fast as it was (BENCHMARKS.md).
//
// Thread safety: Record may be called concurrently.
#ifndef KVINDEXER_SERVER_RPC_METRICS_H_
#define KVINDEXER_SERVER_RPC_METRICS_H_

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/metrics_registry.h"

namespace kvindexer {

enum class RpcMethod : uint8_t {
  kApplyExternalKvBatch,
  kReplaceExternalKvSnapshot,
  kConfigureExpectedWorkers,
  kMatchExternalKv,
  kMatchExternalKvPrefix,
  kGetExternalKvHitCounts,
  kInvalidateWorker,
  // kvindexer.admin.v1.KvIndexerAdmin (docs/admin-api.md).
  kListWorkers,
  kExplainPrefix,
  kRemoveWorker,
  kGetStats,
  // The staged snapshot calls of kv_indexer.v1.KVIndexer.
  kBeginExternalKvSnapshot,
  kAppendExternalKvSnapshot,
  kCommitExternalKvSnapshot,
  kAbortExternalKvSnapshot,
};
inline constexpr size_t kRpcMethodCount = 15;
// gRPC status codes 0 (OK) to 16 (UNAUTHENTICATED).
inline constexpr size_t kGrpcCodeCount = 17;

// The method's name as the proto spells it ("MatchExternalKvPrefix").
std::string_view RpcMethodName(RpcMethod method);

class RpcMetrics {
 public:
  // Registers the series in `registry`, which must outlive this object.
  explicit RpcMetrics(MetricsRegistry& registry);
  RpcMetrics(const RpcMetrics&) = delete;
  RpcMetrics& operator=(const RpcMetrics&) = delete;

  // `code` is a gRPC status code; an unknown one counts as UNKNOWN.
  void Record(RpcMethod method, int code, std::chrono::nanoseconds elapsed) {
    const auto m = static_cast<size_t>(method);
    const size_t c =
        code >= 0 && static_cast<size_t>(code) < kGrpcCodeCount ? code : 2;
    requests_[m][c]->Increment();
    durations_[m]->ObserveDuration(elapsed);
  }

 private:
  std::array<std::array<Counter*, kGrpcCodeCount>, kRpcMethodCount> requests_;
  std::array<Histogram*, kRpcMethodCount> durations_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_RPC_METRICS_H_
