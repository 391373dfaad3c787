// The PromQL queries of the monitoring that ships in monitoring/ (the
// Grafana dashboard's JSON and the Prometheus rules' YAML), and the metric
// names they read: what monitoring_e2e_test.cc checks against real scrapes.
//
// Only as much of JSON and YAML is read as those files use: JSON string
// members named "expr", "query" and "definition" (panel targets and template
// variables), and YAML `expr:` keys with a plain, quoted or block (`|`,
// `>`) value.
//
// Thread safety: plain functions of their arguments.
#ifndef KVINDEXER_TESTS_E2E_MONITORING_QUERIES_H_
#define KVINDEXER_TESTS_E2E_MONITORING_QUERIES_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace kvindexer::e2e {

// The values of the string members "expr", "query" and "definition" of a
// JSON document, unescaped, in document order.
std::vector<std::string> DashboardQueries(std::string_view json);

// The values of the `expr:` keys of a YAML document, in document order; a
// block value is its lines joined with newlines.
std::vector<std::string> RuleQueries(std::string_view yaml);

// The metric names `query` reads whose name starts with `prefix`: every
// identifier outside string literals that starts with it. PromQL functions,
// keywords and label names do not start with a metric prefix, so they are
// never taken.
std::set<std::string> MetricNames(std::string_view query,
                                  std::string_view prefix);

}  // namespace kvindexer::e2e

#endif  // KVINDEXER_TESTS_E2E_MONITORING_QUERIES_H_
