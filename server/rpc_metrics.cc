#include "server/rpc_metrics.h"

#include <string>

#include "absl/status/status.h"

namespace kvindexer {

std::string_view RpcMethodName(RpcMethod method) {
  switch (method) {
    case RpcMethod::kApplyExternalKvBatch:
      return "ApplyExternalKvBatch";
    case RpcMethod::kReplaceExternalKvSnapshot:
      return "ReplaceExternalKvSnapshot";
    case RpcMethod::kConfigureExpectedWorkers:
      return "ConfigureExpectedWorkers";
    case RpcMethod::kMatchExternalKv:
      return "MatchExternalKv";
    case RpcMethod::kMatchExternalKvPrefix:
      return "MatchExternalKvPrefix";
    case RpcMethod::kGetExternalKvHitCounts:
      return "GetExternalKvHitCounts";
    case RpcMethod::kInvalidateWorker:
      return "InvalidateWorker";
    case RpcMethod::kListWorkers:
      return "ListWorkers";
    case RpcMethod::kExplainPrefix:
      return "ExplainPrefix";
    case RpcMethod::kRemoveWorker:
      return "RemoveWorker";
    case RpcMethod::kGetStats:
      return "GetStats";
    case RpcMethod::kBeginExternalKvSnapshot:
      return "BeginExternalKvSnapshot";
    case RpcMethod::kAppendExternalKvSnapshot:
      return "AppendExternalKvSnapshot";
    case RpcMethod::kCommitExternalKvSnapshot:
      return "CommitExternalKvSnapshot";
    case RpcMethod::kAbortExternalKvSnapshot:
      return "AbortExternalKvSnapshot";
  }
  return "unknown";
}

RpcMetrics::RpcMetrics(MetricsRegistry& registry) {
  for (size_t m = 0; m < kRpcMethodCount; ++m) {
    const std::string method(RpcMethodName(static_cast<RpcMethod>(m)));
    for (size_t c = 0; c < kGrpcCodeCount; ++c) {
      // absl's codes are gRPC's, with the same names.
      requests_[m][c] = &registry.AddCounter(
          "kvindexer_grpc_requests",
          "Calls answered (KVIndexer and admin), by method and gRPC status "
          "code.",
          {{"method", method},
           {"code", absl::StatusCodeToString(
                        static_cast<absl::StatusCode>(static_cast<int>(c)))}});
    }
    durations_[m] = &registry.AddHistogram(
        "kvindexer_grpc_request_duration_seconds",
        "Time from a call's arrival at its handler to its answer, by "
        "method.",
        kLatencyBucketsSeconds, {{"method", method}});
  }
}

}  // namespace kvindexer
