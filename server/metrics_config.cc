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

}  // namespace kvindexer
