// RouterClient: one kept-alive HTTP or HTTPS connection to one router, over
// which the status reporter posts its reports (docs/fleet.md, "Status
// reports to routers"). It sends no credentials and follows no redirects.
// Connecting, sending and waiting for the answer are each bounded by the
// timeout given. Over https the router's certificate is verified against
// the CA file given, or the system's roots; no client certificate is sent.
//
// Thread safety: Post from one thread at a time; Abort from any thread.
#ifndef KVINDEXER_SERVER_ROUTER_CLIENT_H_
#define KVINDEXER_SERVER_ROUTER_CLIENT_H_

#include <chrono>
#include <memory>
#include <string>

#include "server/status_reporter_config.h"

namespace httplib {
class ClientImpl;
}  // namespace httplib

namespace kvindexer {

struct RouterPostResult {
  enum class Outcome {
    kAccepted,  // a 2xx answer
    kRejected,  // any other answer
    kFailed,    // no answer: a timeout or a connection error
  };
  Outcome outcome = Outcome::kFailed;
  int status = 0;  // the HTTP status, when answered
  // For the log: why it failed, or the status and, for a 400, up to 256
  // bytes of the answer's body (escaped by LogText).
  std::string detail;
};

class RouterClient {
 public:
  // `ca_file`: PEM roots for https; empty: the system's. Connects lazily.
  RouterClient(const RouterUrl& router, std::chrono::milliseconds timeout,
               const std::string& ca_file);
  ~RouterClient();
  RouterClient(const RouterClient&) = delete;
  RouterClient& operator=(const RouterClient&) = delete;

  // POSTs `body` as application/json to the router's status path.
  RouterPostResult Post(const std::string& body);

  // Ends a Post in progress (it fails) by shutting its connection down, or
  // closes the kept connection when none is; the next Post connects again.
  void Abort();

 private:
  const RouterUrl router_;
  std::unique_ptr<httplib::ClientImpl> client_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_ROUTER_CLIENT_H_
