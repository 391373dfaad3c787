// The one translation unit that includes cpp-httplib (it is large).
#include "common/metrics_http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "common/prometheus_text.h"
#include "fmt/format.h"

namespace kvindexer {
namespace {

constexpr size_t kRequestThreads = 2;
// A scraper that keeps its connection open holds a request thread; a short
// keep-alive frees it for a probe soon.
constexpr time_t kKeepAliveSeconds = 2;
constexpr time_t kReadTimeoutSeconds = 5;
// How long Start waits for the listening thread to report it runs.
constexpr auto kStartTimeout = std::chrono::seconds(10);

}  // namespace

struct MetricsHttpServer::Impl {
  httplib::Server server;
  std::thread thread;
};

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl,
                                     MetricsAddress address, uint16_t port)
    : impl_(std::move(impl)), address_(std::move(address)), port_(port) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsAddress& address, const MetricsRegistry& registry,
    ReadinessCheck not_ready_reason) {
  auto impl = std::make_unique<Impl>();
  httplib::Server& server = impl->server;
  server.new_task_queue = [] {
    return new httplib::ThreadPool(kRequestThreads);
  };
  // httplib's default also sets SO_REUSEPORT, which would let a second
  // process bind the same port and take half of the scrapes: keep only
  // SO_REUSEADDR (a restart can rebind at once).
  server.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  server.set_keep_alive_timeout(kKeepAliveSeconds);
  server.set_read_timeout(kReadTimeoutSeconds, 0);
  server.Get("/metrics",
             [&registry](const httplib::Request&, httplib::Response& response) {
               const std::vector<MetricFamily> families = registry.Collect();
               response.set_content(RenderPrometheusText(families),
                                    std::string(kPrometheusContentType));
             });
  server.Get("/healthz",
             [](const httplib::Request&, httplib::Response& response) {
               response.set_content("ok\n", "text/plain");
             });
  server.Get("/readyz",
             [check = std::move(not_ready_reason)](
                 const httplib::Request&, httplib::Response& response) {
               const std::optional<std::string> reason =
                   check ? check() : std::optional<std::string>();
               if (reason.has_value()) {
                 response.status = 503;
                 response.set_content(fmt::format("not ready: {}\n", *reason),
                                      "text/plain");
               } else {
                 response.set_content("ready\n", "text/plain");
               }
             });

  int port = address.port;
  if (port == 0) {
    port = server.bind_to_any_port(address.host);
  } else if (!server.bind_to_port(address.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return absl::UnavailableError(
        fmt::format("cannot listen on {}: the address is in use, not local, "
                    "or not permitted",
                    address.ToString()));
  }
  impl->thread = std::thread([&server] { server.listen_after_bind(); });
  // httplib's stop() does nothing until the listening loop runs: wait for it
  // so that a Stop() right after Start() cannot miss it.
  const auto give_up = std::chrono::steady_clock::now() + kStartTimeout;
  while (!server.is_running() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server.is_running()) {
    // The loop never started; the thread has returned or will not serve.
    impl->thread.join();
    return absl::UnavailableError(
        fmt::format("the HTTP server on {} did not start", address.ToString()));
  }
  return std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer(
      std::move(impl), address, static_cast<uint16_t>(port)));
}

std::string MetricsHttpServer::bound_address() const {
  MetricsAddress bound = address_;
  bound.port = port_;
  return bound.ToString();
}

void MetricsHttpServer::Stop() {
  if (impl_ == nullptr || !impl_->thread.joinable()) return;
  impl_->server.stop();
  impl_->thread.join();
}

}  // namespace kvindexer
