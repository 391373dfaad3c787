#include "common/metrics_family.h"

namespace kvindexer {
namespace {

bool IsNameChar(char c, bool first, bool colon_ok) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
    return true;
  }
  if (c == ':') return colon_ok;
  return !first && c >= '0' && c <= '9';
}

bool IsValidName(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool IsValidMetricName(std::string_view name) {
  return IsValidName(name, /*colon_ok=*/true);
}

bool IsValidLabelName(std::string_view name) {
  // Names starting with "__" are reserved for Prometheus itself.
  return IsValidName(name, /*colon_ok=*/false) && !name.starts_with("__");
}

}  // namespace kvindexer
