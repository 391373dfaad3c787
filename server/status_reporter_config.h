// StatusReporterConfig: where and how kv-indexer-server posts its status
// reports to line-A routers (docs/fleet.md, "Status reports to routers";
// docs/configuration.md, "Status reports").
//
// | Variable                       | Default              | Accepted       |
// | KV_INDEXER_ROUTER_URLS         | unset: no reports    | comma list of  |
// |                                |                      | http(s) URLs   |
// | KV_INDEXER_ID                  | $HOSTNAME, else      | non-blank text |
// |                                | kv-indexer           |                |
// | KV_INDEXER_ADVERTISE_ENDPOINT  | required with URLs   | http://host[:  |
// |                                |                      | port], https:  |
// |                                |                      | //..., unix:.. |
// | KV_INDEXER_STATUS_INTERVAL_MS  | 100                  | 1..4294967295  |
// | KV_INDEXER_ROUTER_TLS_CA_FILE  | unset: system roots  | readable file  |
//
// Router URLs: items are trimmed and empty items dropped (a value with no
// item leaves reports off); each is http:// or https:// (any letter case)
// with a host (a name, an IPv4 literal or a bracketed IPv6 literal), an
// optional port 1..65535 and an optional path; a query, a fragment or user
// info is refused, since reports carry no credentials. Trailing slashes are
// dropped, and a URL given twice is used once. The advertise endpoint is
// checked by the rules routers apply to it (common/indexer_endpoint.h,
// docs/contract.md behaviour 54). An interval of 500 ms or more is
// accepted; the reporter then logs a WARN, since routers drop reports older
// than 500 ms.
//
// Every variable that is set is checked, whether reports are on or not; an
// error names the variable, quotes the value and says what is accepted
// (common/env.h), and the server exits 2.
#ifndef KVINDEXER_SERVER_STATUS_REPORTER_CONFIG_H_
#define KVINDEXER_SERVER_STATUS_REPORTER_CONFIG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer {

inline constexpr std::string_view kRouterUrlsVar = "KV_INDEXER_ROUTER_URLS";
inline constexpr std::string_view kIndexerIdVar = "KV_INDEXER_ID";
inline constexpr std::string_view kAdvertiseEndpointVar =
    "KV_INDEXER_ADVERTISE_ENDPOINT";
inline constexpr std::string_view kStatusIntervalMsVar =
    "KV_INDEXER_STATUS_INTERVAL_MS";
inline constexpr std::string_view kRouterTlsCaFileVar =
    "KV_INDEXER_ROUTER_TLS_CA_FILE";

inline constexpr uint32_t kDefaultStatusIntervalMs = 100;
// Routers drop reports older than this.
inline constexpr uint32_t kRouterReportMaxAgeMs = 500;
inline constexpr std::string_view kDefaultIndexerId = "kv-indexer";
// Appended to a router URL's path.
inline constexpr std::string_view kStatusReportPath = "/v1/kv-indexer/status";

// One router, parsed.
struct RouterUrl {
  // scheme://authority/path, scheme in lower case, no trailing slash: how
  // logs and the metric's `router` label name the router.
  std::string url;
  bool https = false;
  // A name or an IP literal (an IPv6 literal without its brackets).
  std::string host;
  uint16_t port = 0;
  // The path to post to: the URL's path, then kStatusReportPath.
  std::string status_path;

  bool operator==(const RouterUrl&) const = default;
};

struct StatusReporterConfig {
  // Empty: reports are off.
  std::vector<RouterUrl> routers;
  std::string indexer_id{kDefaultIndexerId};
  // Empty only while reports are off.
  std::string advertise_endpoint;
  uint32_t interval_ms = kDefaultStatusIntervalMs;
  // PEM roots for https:// routers; empty: the system's.
  std::string router_tls_ca_file;

  bool enabled() const { return !routers.empty(); }
};

// One item of KV_INDEXER_ROUTER_URLS (already trimmed). The error names the
// variable and quotes the item.
[[nodiscard]] absl::StatusOr<RouterUrl> ParseRouterUrl(std::string_view item);

// Reads the five variables (and HOSTNAME, for KV_INDEXER_ID's default).
[[nodiscard]] absl::StatusOr<StatusReporterConfig> LoadStatusReporterConfig(
    const EnvLookup& env);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STATUS_REPORTER_CONFIG_H_
