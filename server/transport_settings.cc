#include "server/transport_settings.h"

#include "grpc/grpc.h"

namespace kvindexer {

void ApplyTransportSettings(grpc::ServerBuilder& builder) {
  builder.SetMaxReceiveMessageSize(kTransportReceiveCeilingBytes);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             kMaxConcurrentStreams);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             kHandshakeTimeoutMs);
}

}  // namespace kvindexer
