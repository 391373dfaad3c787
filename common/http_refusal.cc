#include "common/http_refusal.h"

#include <sys/socket.h>

#include "fmt/format.h"

namespace kvindexer {

std::string RefusalResponse(HttpRefusal refusal) {
  int status = 0;
  const char* reason = "";
  switch (refusal) {
    case HttpRefusal::kRequestTimeout:
      status = 408;
      reason = "Request Timeout";
      break;
    case HttpRefusal::kBodyNotAccepted:
      status = 413;
      reason = "Payload Too Large";
      break;
    case HttpRefusal::kHeadTooLarge:
      status = 431;
      reason = "Request Header Fields Too Large";
      break;
    case HttpRefusal::kBusy:
      status = 503;
      reason = "Service Unavailable";
      break;
  }
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
      status, reason);
}

void RefuseAndClose(HttpConnection& connection, HttpRefusal refusal) {
  if (!connection.is_open()) return;
  const std::string response = RefusalResponse(refusal);
  // Best effort by contract: the result does not change what follows.
  (void)send(connection.fd(), response.data(), response.size(),
             MSG_DONTWAIT | MSG_NOSIGNAL);
  connection.Close();
}

}  // namespace kvindexer
