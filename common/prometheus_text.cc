#include "common/prometheus_text.h"

#include <cmath>

#include "fmt/format.h"

namespace kvindexer {
namespace {

std::string Escape(std::string_view in, bool quotes) {
  std::string out;
  out.reserve(in.size());
  for (const char c : in) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  return Escape(value, /*quotes=*/true);
}

std::string EscapeHelpText(std::string_view text) {
  return Escape(text, /*quotes=*/false);
}

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string RenderPrometheusText(std::span<const MetricFamily> families) {
  std::string out;
  for (const MetricFamily& family : families) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n",
                   family.name, EscapeHelpText(family.help), family.name,
                   MetricTypeName(family.type));
    for (const MetricSample& sample : family.samples) {
      out += sample.name;
      if (!sample.labels.empty()) {
        out += '{';
        for (size_t i = 0; i < sample.labels.size(); ++i) {
          if (i > 0) out += ',';
          fmt::format_to(std::back_inserter(out), "{}=\"{}\"",
                         sample.labels[i].first,
                         EscapeLabelValue(sample.labels[i].second));
        }
        out += '}';
      }
      out += ' ';
      out += FormatSampleValue(sample.value);
      out += '\n';
    }
  }
  return out;
}

}  // namespace kvindexer
