// ScrapedValue: one sample's value in a Prometheus text scrape, for the tests
// that check /metrics of a real binary after known traffic; and
// WaitForMetricsPort: where that binary's metrics endpoint listens.
#ifndef KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_
#define KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_

#include <chrono>
#include <optional>
#include <string_view>

#include "tests/support/server_process.h"

namespace kvindexer::test_support {

// The port of the "metrics http addr=127.0.0.1:<port>" line that `process`
// (kv-indexer-server or kv-indexer-bridge, started with its metrics address
// on port 0) logs, waiting up to `timeout` for it; 0 when the line does not
// come or names no port.
int WaitForMetricsPort(ServerProcess& process,
                       std::chrono::milliseconds timeout);

// The value of the sample whose name and labels are exactly `series`
// (`name{a="b",...}` as the binary writes them), nullopt when absent.
std::optional<double> ScrapedValue(std::string_view scrape,
                                   std::string_view series);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_
