// The file descriptors the gRPC connection cap needs
// (KV_INDEXER_GRPC_MAX_CONNECTIONS; server/connection_listener.h): one per
// connection, plus kReservedDescriptors for everything else the server
// opens (the data directory's files, the metrics endpoint's 64
// connections, NATS, gRPC's own pipes and epoll sets, the backend).
//
// Thread safety: call from the main thread at start.
#ifndef KVINDEXER_SERVER_DESCRIPTOR_LIMIT_H_
#define KVINDEXER_SERVER_DESCRIPTOR_LIMIT_H_

#include <cstddef>
#include <optional>
#include <string>

namespace kvindexer {

inline constexpr size_t kReservedDescriptors = 1024;

// Raises the soft RLIMIT_NOFILE, never above the hard limit, so that
// `max_connections` + kReservedDescriptors descriptors fit. Returns the
// warning to log when they still do not fit (the hard limit is lower):
// the server then refuses connections once it runs out, before the cap,
// and says so in its log; nullopt when they fit.
std::optional<std::string> EnsureDescriptorsFor(size_t max_connections);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_DESCRIPTOR_LIMIT_H_
