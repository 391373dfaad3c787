#include "server/metrics_config.h"

namespace kvindexer {

absl::StatusOr<std::optional<MetricsAddress>> LoadMetricsAddr(
    const EnvLookup& env) {
  const std::optional<std::string> value = LookupTrimmed(env, kMetricsAddrVar);
  if (!value.has_value()) return std::optional<MetricsAddress>();
  absl::StatusOr<MetricsAddress> parsed =
      ParseMetricsAddress(kMetricsAddrVar, *value);
  if (!parsed.ok()) return parsed.status();
  return std::optional<MetricsAddress>(*std::move(parsed));
}

absl::StatusOr<uint32_t> LoadMetricsWorkerSeries(const EnvLookup& env) {
  uint32_t series = kDefaultMetricsWorkerSeries;
  if (absl::Status s = ReadEnvUint32(
          env, kMetricsWorkerSeriesVar, {.max = kMaxMetricsWorkerSeries},
          "a number of workers from 0 (no per-worker series) to 100000",
          &series);
      !s.ok()) {
    return s;
  }
  return series;
}

}  // namespace kvindexer
