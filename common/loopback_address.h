// Whether a numeric address can be reached only from this host, for the
// start-up warning of an endpoint that listens beyond loopback.
#ifndef KVINDEXER_COMMON_LOOPBACK_ADDRESS_H_
#define KVINDEXER_COMMON_LOOPBACK_ADDRESS_H_

#include <string_view>

namespace kvindexer {

// True for an IPv4 literal in 127.0.0.0/8, the IPv6 literal ::1, and an
// IPv4-mapped IPv6 literal of 127.0.0.0/8 (::ffff:127.0.0.1). False for every
// other literal (0.0.0.0 and :: included: they listen on every interface)
// and for anything that is not a literal.
bool IsLoopbackLiteral(std::string_view host);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_LOOPBACK_ADDRESS_H_
