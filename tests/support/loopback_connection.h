// Plain TCP connections to a port on 127.0.0.1 that send nothing, for the
// tests of a listener's connection cap (server/connection_listener.h), and
// the check that the listener closed one.
#ifndef KVINDEXER_TESTS_SUPPORT_LOOPBACK_CONNECTION_H_
#define KVINDEXER_TESTS_SUPPORT_LOOPBACK_CONNECTION_H_

#include <chrono>

namespace kvindexer::test_support {

// A blocking, close-on-exec TCP connection to 127.0.0.1:`port`; -1 when
// the connection fails. OWNERSHIP: the caller closes the descriptor.
int ConnectToLoopback(int port);

// True when the peer closed `fd` (end of file or a reset) within `bound`.
bool ClosedByPeer(int fd, std::chrono::milliseconds bound);

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_LOOPBACK_CONNECTION_H_
