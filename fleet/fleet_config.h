// Fleet mode's configuration (docs/fleet.md, "Configuration"): how to reach
// NATS and which stream holds the event log. Shared by the bridge
// (KV_INDEXER_SINK=jetstream) and the server
// (KV_INDEXER_EVENT_SOURCE=jetstream); each bad value is a start-up error
// naming its variable.
#ifndef KVINDEXER_FLEET_FLEET_CONFIG_H_
#define KVINDEXER_FLEET_FLEET_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer::fleet {

inline constexpr char kNatsUrlVar[] = "KV_INDEXER_NATS_URL";
inline constexpr char kNatsCredsFileVar[] = "KV_INDEXER_NATS_CREDS_FILE";
inline constexpr char kNatsTokenFileVar[] = "KV_INDEXER_NATS_TOKEN_FILE";
inline constexpr char kNatsTlsCaFileVar[] = "KV_INDEXER_NATS_TLS_CA_FILE";
inline constexpr char kNatsTlsCertFileVar[] = "KV_INDEXER_NATS_TLS_CERT_FILE";
inline constexpr char kNatsTlsKeyFileVar[] = "KV_INDEXER_NATS_TLS_KEY_FILE";
inline constexpr char kNatsStreamVar[] = "KV_INDEXER_NATS_STREAM";
inline constexpr char kNatsSubjectPrefixVar[] =
    "KV_INDEXER_NATS_SUBJECT_PREFIX";
inline constexpr char kNatsReplicasVar[] = "KV_INDEXER_NATS_REPLICAS";
inline constexpr char kNatsDedupWindowVar[] = "KV_INDEXER_NATS_DEDUP_WINDOW_MS";
inline constexpr char kNatsTimeoutVar[] = "KV_INDEXER_NATS_TIMEOUT_MS";

// How to reach the NATS servers.
struct NatsConnection {
  // KV_INDEXER_NATS_URL: one or more comma-separated nats:// or tls://
  // URLs (required in fleet mode).
  std::vector<std::string> urls;
  std::string creds_file;     // a NATS .creds file (user JWT and NKey seed)
  std::string token_file;     // a file holding a bearer token
  std::string tls_ca_file;    // verify the servers against these CAs
  std::string tls_cert_file;  // client certificate (with tls_key_file)
  std::string tls_key_file;
  uint32_t timeout_ms = 5000;  // connect and per-request timeout
};

// `urls` joined with commas for log lines and error messages, with the
// credentials of any URL (nats://user:password@host, nats://token@host)
// replaced by "***", so that they never reach a log.
std::string RedactedNatsUrls(const std::vector<std::string>& urls);

// The stream that holds the event log.
struct EventLogConfig {
  NatsConnection nats;
  std::string stream = "KVINDEXER_EVENTS";  // KV_INDEXER_NATS_STREAM
  // Records of worker W go to <prefix>.w.<W in lowercase hex>.
  std::string subject_prefix = "kvindexer";  // KV_INDEXER_NATS_SUBJECT_PREFIX
  uint32_t replicas = 1;  // KV_INDEXER_NATS_REPLICAS, 1..5 (R=3 in a cluster)
  uint32_t dedup_window_ms = 120000;  // KV_INDEXER_NATS_DEDUP_WINDOW_MS
};

// Reads the variables above; KV_INDEXER_NATS_URL must be set. Errors name
// the variable (InvalidArgument).
[[nodiscard]] absl::StatusOr<EventLogConfig> ParseEventLogConfig(
    const EnvLookup& env);

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_FLEET_CONFIG_H_
