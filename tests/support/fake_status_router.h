// FakeStatusRouter: the router's side of status reports, for tests. An HTTP
// (or, given a certificate and its key, HTTPS) server on 127.0.0.1 (a free
// port) that records every request it gets and
// answers each POST to /v1/kv-indexer/status (under an optional path
// prefix) with the status the test chose; or, while told to hang, answers
// nothing until released or stopped. Waits are bounded and wake on each
// request, never on a timer.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_STATUS_ROUTER_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_STATUS_ROUTER_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kvindexer::test_support {

class FakeStatusRouter {
 public:
  struct Request {
    std::string method;
    std::string path;
    std::string content_type;
    std::string authorization;  // the header's value, "" when absent
    std::string body;
    std::chrono::steady_clock::time_point received;
  };

  // PEM files of the certificate an HTTPS router presents, and its key.
  struct TlsFiles {
    std::string cert_file;
    std::string key_file;
  };

  // Listens on 127.0.0.1:<free port> and serves on a thread of its own.
  // `path_prefix` ("" or "/base") goes before /v1/kv-indexer/status. With
  // `tls`, speaks HTTPS only.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeStatusRouter>> Start(
      std::string path_prefix = "", const TlsFiles* tls = nullptr);
  // Stop().
  ~FakeStatusRouter();
  FakeStatusRouter(const FakeStatusRouter&) = delete;
  FakeStatusRouter& operator=(const FakeStatusRouter&) = delete;

  // "http://127.0.0.1:<port>" (https with TLS) followed by the path
  // prefix.
  std::string url() const;
  int port() const { return port_; }

  // The answer to later status posts: `status` with `body`.
  void Answer(int status, std::string body = "");
  // While on, status posts get no answer until Hang(false) or Stop().
  void Hang(bool on);

  // Every request so far, in arrival order, including hung ones.
  std::vector<Request> requests() const;
  size_t request_count() const;
  // Waits until `predicate` holds for the requests so far; false after
  // `timeout`.
  bool WaitFor(
      const std::function<bool(const std::vector<Request>&)>& predicate,
      std::chrono::milliseconds timeout);
  // Waits until at least `n` requests have arrived.
  bool WaitForRequests(size_t n, std::chrono::milliseconds timeout);

  // Releases hung requests and stops serving. Idempotent.
  void Stop();

 private:
  FakeStatusRouter(std::string path_prefix, const TlsFiles* tls);

  const std::string path_prefix_;
  const bool tls_;
  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<Request> requests_;  // guarded by mu_
  int status_ = 200;               // guarded by mu_
  std::string answer_body_;        // guarded by mu_
  bool hang_ = false;              // guarded by mu_
  bool stopping_ = false;          // guarded by mu_
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_STATUS_ROUTER_H_
