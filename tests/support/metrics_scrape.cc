#include "tests/support/metrics_scrape.h"

#include <string>

#include "absl/strings/numbers.h"

namespace kvindexer::test_support {

int WaitForMetricsPort(ServerProcess& process,
                       std::chrono::milliseconds timeout) {
  const std::optional<std::string> line =
      process.WaitForLineContaining("metrics http addr=", timeout);
  if (!line.has_value()) return 0;
  const std::string addr = LogField(*line, "addr").value_or("");
  int port = 0;
  if (!absl::SimpleAtoi(addr.substr(addr.rfind(':') + 1), &port)) return 0;
  return port;
}

std::optional<double> ScrapedValue(std::string_view scrape,
                                   std::string_view series) {
  size_t at = 0;
  while (at < scrape.size()) {
    size_t end = scrape.find('\n', at);
    if (end == std::string_view::npos) end = scrape.size();
    const std::string_view line = scrape.substr(at, end - at);
    if (line.size() > series.size() && line.starts_with(series) &&
        line[series.size()] == ' ') {
      double value = 0;
      if (absl::SimpleAtod(std::string(line.substr(series.size() + 1)),
                           &value)) {
        return value;
      }
      return std::nullopt;
    }
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace kvindexer::test_support
