// The answers the metrics endpoint gives, on its own and without cpp-httplib,
// to a request it will not serve, each followed by closing the connection
// (docs/metrics.md, "Limits").
#ifndef KVINDEXER_COMMON_HTTP_REFUSAL_H_
#define KVINDEXER_COMMON_HTTP_REFUSAL_H_

#include <string>

#include "common/http_connection.h"

namespace kvindexer {

enum class HttpRefusal {
  kRequestTimeout,   // 408: the request did not arrive whole in time
  kBodyNotAccepted,  // 413: no path takes a request body
  kHeadTooLarge,     // 431: the head passed its cap
  kBusy,             // 503: too many requests wait for an answer
};

// The status line and headers of `refusal`: no body, "Connection: close".
std::string RefusalResponse(HttpRefusal refusal);

// Sends RefusalResponse(refusal) without waiting (a client whose socket
// cannot take it at once misses it), then closes `connection`.
void RefuseAndClose(HttpConnection& connection, HttpRefusal refusal);

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_HTTP_REFUSAL_H_
