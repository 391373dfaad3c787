// The Prometheus text exposition format, version 0.0.4: what GET /metrics
// answers (docs/metrics.md).
//
// Per family: a `# HELP <name> <text>` line, a `# TYPE <name> <type>` line,
// then one line per sample, `name{label="value",...} value`. Label values
// escape backslash, double quote and newline; help text escapes backslash
// and newline. Values print in the shortest form that reads back exactly
// ("3", "0.25"), with +Inf, -Inf and NaN spelt as Prometheus spells them.
#ifndef KVINDEXER_COMMON_PROMETHEUS_TEXT_H_
#define KVINDEXER_COMMON_PROMETHEUS_TEXT_H_

#include <span>
#include <string>
#include <string_view>

#include "common/metrics_family.h"

namespace kvindexer {

inline constexpr std::string_view kPrometheusContentType =
    "text/plain; version=0.0.4; charset=utf-8";

std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelpText(std::string_view text);
std::string FormatSampleValue(double value);

std::string RenderPrometheusText(std::span<const MetricFamily> families);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_PROMETHEUS_TEXT_H_
