// Transport settings of kv-indexer-server (docs/contract.md, "Transport").
//
// Request size: the contract's limit is 8 MiB (kMaxRequestBytes). A request
// of exactly that size is served; a larger one is refused with OUT_OF_RANGE
// by the service itself, before decoding, because gRPC C++ would refuse it
// with RESOURCE_EXHAUSTED. For that the runtime's receive limit is raised to
// a hard ceiling, kTransportReceiveCeilingBytes = 16 MiB: requests above the
// ceiling are refused by the runtime with RESOURCE_EXHAUSTED ("overloaded"
// to sgl-router, which falls back to least-loaded routing exactly as for
// OUT_OF_RANGE). The ceiling widens the buffering bound (docs/contract.md,
// "Transport > Transport settings") from
// 64 x 8 MiB to 64 x 16 MiB of undecoded requests per connection.
//
// Also: 64 concurrent HTTP/2 streams per connection; SO_REUSEPORT off, so that
// a port already in use fails the bind instead of being shared; and a
// connection that has not finished its handshake (TLS, and the client's
// HTTP/2 SETTINGS) within kHandshakeTimeoutMs is closed, instead of gRPC's
// 120 s, so that silent connections give their place under the connection
// cap back soon (server/connection_listener.h).
#ifndef KVINDEXER_SERVER_TRANSPORT_SETTINGS_H_
#define KVINDEXER_SERVER_TRANSPORT_SETTINGS_H_

#include "common/wire_vocabulary.h"
#include "grpcpp/server_builder.h"

namespace kvindexer {

// kMaxRequestBytes and kMaxConcurrentStreams are the contract's limits, in
// common/wire_vocabulary.h.

// Runtime receive limit; see above.
inline constexpr int kTransportReceiveCeilingBytes = 16 * 1024 * 1024;
// Time a new connection has to complete its handshake; see above.
inline constexpr int kHandshakeTimeoutMs = 20'000;

// Applies every setting above to `builder`. Adds no services and no ports.
void ApplyTransportSettings(grpc::ServerBuilder& builder);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_TRANSPORT_SETTINGS_H_
