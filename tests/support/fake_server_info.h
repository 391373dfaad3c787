// FakeServerInfo: the part of an SGLang worker's HTTP server that bridge
// discovery reads, for tests. An HTTP server on 127.0.0.1 (a free port)
// that answers GET <any prefix>/server_info with the status and body the
// test chose (by default 200 and a body whose kv_events is null) and 404 to
// anything else, and counts those requests. Waits are bounded and wake on each
// request, never on a timer.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_TESTS_SUPPORT_FAKE_SERVER_INFO_H_
#define KVINDEXER_TESTS_SUPPORT_FAKE_SERVER_INFO_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace httplib {
class Server;
}  // namespace httplib

namespace kvindexer::test_support {

// What a worker advertises under kv_events.
struct AdvertisedKvEvents {
  std::string publisher = "zmq";
  std::string endpoint_host = "*";
  uint32_t endpoint_port_base = 5557;
  std::string topic;
  uint32_t block_size = 1;
  uint32_t dp_size = 1;
};

// A /server_info body as SGLang writes it: a few other fields and
// kv_events (`null` for nullptr).
std::string ServerInfoBody(const AdvertisedKvEvents* kv_events);

class FakeServerInfo {
 public:
  // Listens on 127.0.0.1:<free port> and serves on a thread of its own.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<FakeServerInfo>> Start();
  // Stop().
  ~FakeServerInfo();
  FakeServerInfo(const FakeServerInfo&) = delete;
  FakeServerInfo& operator=(const FakeServerInfo&) = delete;

  // "http://127.0.0.1:<port>": the worker_address to give the bridge.
  std::string url() const;
  int port() const { return port_; }

  // The answer to later GET /server_info requests.
  void Answer(int status, std::string body);
  // Answer(200, ServerInfoBody(&kv_events)).
  void Advertise(const AdvertisedKvEvents& kv_events);

  size_t request_count() const;
  // The path of the last GET .../server_info; "" before any.
  std::string last_path() const;
  // Waits until at least `n` GET /server_info requests have arrived.
  bool WaitForRequests(size_t n, std::chrono::milliseconds timeout);

  // Stops serving. Idempotent.
  void Stop();

 private:
  FakeServerInfo();

  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  size_t requests_ = 0;    // guarded by mu_
  std::string last_path_;  // guarded by mu_
  int status_ = 200;       // guarded by mu_
  std::string body_;       // guarded by mu_
  bool stopped_ = false;   // guarded by mu_
};

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_FAKE_SERVER_INFO_H_
