// KV_INDEXER_METRICS_ADDR: where kv-indexer-server serves /metrics, /healthz
// and /readyz (docs/metrics.md). Unset or empty: no metrics endpoint. The
// value is host:port as common/metrics_address.h accepts it; port 0 picks a
// free port, which the server logs ("metrics listening addr=...").
//
// KV_INDEXER_METRICS_WORKER_SERIES: how many workers get series of their
// own (kvindexer_worker_*), the first by worker id; 0 turns them off. The
// aggregate worker gauges are always there.
#ifndef KVINDEXER_SERVER_METRICS_CONFIG_H_
#define KVINDEXER_SERVER_METRICS_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "common/metrics_address.h"

namespace kvindexer {

inline constexpr std::string_view kMetricsAddrVar = "KV_INDEXER_METRICS_ADDR";
inline constexpr std::string_view kMetricsWorkerSeriesVar =
    "KV_INDEXER_METRICS_WORKER_SERIES";
inline constexpr uint32_t kDefaultMetricsWorkerSeries = 1000;
inline constexpr uint32_t kMaxMetricsWorkerSeries = 100000;

// nullopt when the variable is unset or empty; an error naming the variable
// when its value is not an accepted address.
[[nodiscard]] absl::StatusOr<std::optional<MetricsAddress>> LoadMetricsAddr(
    const EnvLookup& env);
// kDefaultMetricsWorkerSeries when unset or empty; an error naming the
// variable when the value is not a number in [0, kMaxMetricsWorkerSeries].
[[nodiscard]] absl::StatusOr<uint32_t> LoadMetricsWorkerSeries(
    const EnvLookup& env);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_METRICS_CONFIG_H_
