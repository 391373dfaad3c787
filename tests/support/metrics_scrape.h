// ScrapedValue: one sample's value in a Prometheus text scrape, for the tests
// that check /metrics of a real binary after known traffic.
#ifndef KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_
#define KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_

#include <optional>
#include <string_view>

namespace kvindexer::test_support {

// The value of the sample whose name and labels are exactly `series`
// (`name{a="b",...}` as the binary writes them), nullopt when absent.
std::optional<double> ScrapedValue(std::string_view scrape,
                                   std::string_view series);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_METRICS_SCRAPE_H_
