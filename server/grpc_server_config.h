// GrpcServerConfig: what kv-indexer-server asks of the gRPC runtime beyond
// the contract's transport settings (server/transport_settings.h):
// a memory quota, a cap on open connections, and whether server reflection
// is offered (docs/configuration.md, "Queues and connections";
// docs/security.md; docs/health.md, "Reflection").
//
// | Variable                          | Default | Accepted               |
// | KV_INDEXER_GRPC_MEMORY_QUOTA_MIB  | 1024    | 0, or 16..1048576 MiB  |
// | KV_INDEXER_GRPC_MAX_CONNECTIONS   | 4096    | 1..1048576             |
// | KV_INDEXER_GRPC_REFLECTION        | on      | on/off, 1/0, true/false|
// |                                   |         | yes/no, any case       |
//
// The memory quota is a grpc::ResourceQuota of that size for the server's
// connections and calls: above it gRPC 1.51 reclaims memory by closing idle
// connections and then cancelling calls (RESOURCE_EXHAUSTED), instead of
// letting the process grow. 0: no quota, gRPC's default. The connection cap
// is enforced by server/connection_listener.h. Unset or blank keeps the
// default; a bad value names the variable.
#ifndef KVINDEXER_SERVER_GRPC_SERVER_CONFIG_H_
#define KVINDEXER_SERVER_GRPC_SERVER_CONFIG_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"

namespace kvindexer {

inline constexpr std::string_view kGrpcMemoryQuotaMibVar =
    "KV_INDEXER_GRPC_MEMORY_QUOTA_MIB";
inline constexpr std::string_view kGrpcMaxConnectionsVar =
    "KV_INDEXER_GRPC_MAX_CONNECTIONS";
inline constexpr std::string_view kGrpcReflectionVar =
    "KV_INDEXER_GRPC_REFLECTION";

// Room for 64 streams of 8 MiB requests on a connection and more, far
// above what the router's queries and the bridges' applies hold at once.
inline constexpr uint32_t kDefaultGrpcMemoryQuotaMib = 1024;
// A connection per bridge (one bridge per worker and rank) and per router
// process, with room to spare; each costs a file descriptor and buffers.
inline constexpr uint32_t kDefaultGrpcMaxConnections = 4096;
inline constexpr uint32_t kMaxGrpcMaxConnections = 1048576;
inline constexpr bool kDefaultGrpcReflection = true;

struct GrpcServerConfig {
  uint32_t memory_quota_mib = kDefaultGrpcMemoryQuotaMib;  // 0: no quota
  uint32_t max_connections = kDefaultGrpcMaxConnections;
  bool reflection = kDefaultGrpcReflection;
};

// Reads the three variables; unset or blank ones keep their defaults.
[[nodiscard]] absl::StatusOr<GrpcServerConfig> LoadGrpcServerConfig(
    const EnvLookup& env);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_GRPC_SERVER_CONFIG_H_
