// One of the two translation units that include cpp-httplib (it is large);
// the other is common/http_exchange_stream.cc.
#include "common/metrics_http_server.h"

#include <httplib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "common/bounded_http_listener.h"
#include "common/http_exchange_stream.h"
#include "common/http_refusal.h"
#include "common/http_request_head.h"
#include "common/loopback_address.h"
#include "common/prometheus_text.h"
#include "common/request_lane.h"
#include "fmt/format.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// True for the requests the probe lane answers.
bool IsProbe(std::string_view head) {
  const std::string_view method = RequestMethod(head);
  const std::string_view path = RequestPath(head);
  return (method == "GET" || method == "HEAD") &&
         (path == "/healthz" || path == "/readyz");
}

}  // namespace

struct MetricsHttpServer::Impl {
  // cpp-httplib's server with its request processing opened to streams it
  // does not own. It never binds or listens.
  class Router final : public httplib::Server {
   public:
    // Parses one request from `stream`, runs its handler and writes the
    // response to `stream`. False when no response was written.
    bool Answer(httplib::Stream& stream, bool close_connection,
                bool& client_closes) {
      return process_request(stream, close_connection, client_closes, nullptr);
    }
  };

  explicit Impl(const MetricsHttpLimits& l) : limits(l) {}
  ~Impl() {
    if (stop_fd >= 0) close(stop_fd);
  }

  // Answers the complete request at the start of `connection`, then hands
  // the connection back to the listener for its next request or closes it.
  // `wait_for_reader`: whether sending the response may wait for the client
  // (up to write_timeout) or must not wait at all.
  void Answer(HttpConnection connection, bool wait_for_reader);

  const MetricsHttpLimits limits;
  Router router;
  // An eventfd that becomes readable when Stop begins and stays so: sends
  // waiting for a slow reader give up.
  int stop_fd = -1;
  bool stopped = false;
  std::unique_ptr<BoundedHttpListener> listener;
  std::unique_ptr<RequestLane> probes;
  std::unique_ptr<RequestLane> scrapes;
};

void MetricsHttpServer::Impl::Answer(HttpConnection connection,
                                     bool wait_for_reader) {
  const bool last =
      connection.requests_answered() + 1 >= limits.max_requests_per_connection;
  bool client_closes = false;
  ExchangeStream stream(connection);
  bool answered = false;
  try {
    answered = router.Answer(stream, last, client_closes);
  } catch (...) {
    // cpp-httplib turns a handler's exception into a 500 itself; anything
    // that still escapes leaves the request unanswered.
    answered = false;
  }
  if (answered) {
    std::optional<std::chrono::steady_clock::time_point> deadline;
    if (wait_for_reader) {
      deadline = std::chrono::steady_clock::now() + limits.write_timeout;
    }
    answered = stream.Send(deadline, stop_fd);
  }
  connection.CountAnswer();
  if (!answered || last || client_closes || stream.read_past_end()) {
    return;  // `connection` closes
  }
  stream.DropConsumed();
  listener->Resume(std::move(connection));
}

MetricsHttpServer::MetricsHttpServer(std::unique_ptr<Impl> impl,
                                     MetricsAddress address, uint16_t port)
    : impl_(std::move(impl)), address_(std::move(address)), port_(port) {}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsAddress& address, const MetricsRegistry& registry,
    ReadinessCheck not_ready_reason, const MetricsHttpLimits& limits) {
  auto impl = std::make_unique<Impl>(limits);
  httplib::Server& router = impl->router;
  // The Keep-Alive header of each response announces these.
  router.set_keep_alive_timeout(
      std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(
                              limits.keep_alive_timeout)
                              .count()));
  router.set_keep_alive_max_count(limits.max_requests_per_connection);
  router.Get("/metrics",
             [&registry](const httplib::Request&, httplib::Response& response) {
               const std::vector<MetricFamily> families = registry.Collect();
               response.set_content(RenderPrometheusText(families),
                                    std::string(kPrometheusContentType));
             });
  router.Get("/healthz",
             [](const httplib::Request&, httplib::Response& response) {
               response.set_content("ok\n", "text/plain");
             });
  router.Get("/readyz",
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

  // Its errors name the address.
  auto listener = BoundedHttpListener::Bind(address, limits);
  if (!listener.ok()) return listener.status();
  impl->listener = *std::move(listener);
  impl->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (impl->stop_fd < 0) {
    return absl::UnavailableError(
        fmt::format("cannot serve on {}: no eventfd", address.ToString()));
  }
  Impl* const raw = impl.get();
  // Every open connection may be a probe: the probe lane's queue is bounded
  // by the connection cap.
  impl->probes = std::make_unique<RequestLane>(
      limits.max_connections, [raw](HttpConnection connection) {
        raw->Answer(std::move(connection), /*wait_for_reader=*/false);
      });
  impl->scrapes = std::make_unique<RequestLane>(
      limits.max_waiting_scrapes, [raw](HttpConnection connection) {
        raw->Answer(std::move(connection), /*wait_for_reader=*/true);
      });
  impl->listener->Start([raw](HttpConnection connection) {
    RequestLane& lane =
        IsProbe(connection.received()) ? *raw->probes : *raw->scrapes;
    if (!lane.Offer(connection)) {
      RefuseAndClose(connection, HttpRefusal::kBusy);
    }
  });

  const uint16_t port = impl->listener->port();
  if (const std::optional<std::string> warning = BeyondLoopbackWarning(
          MetricsAddress{.host = impl->listener->bound_host(), .port = port},
          limits)) {
    spdlog::warn("{}", *warning);
  }
  return std::unique_ptr<MetricsHttpServer>(
      new MetricsHttpServer(std::move(impl), address, port));
}

std::optional<std::string> BeyondLoopbackWarning(
    const MetricsAddress& bound, const MetricsHttpLimits& limits) {
  if (IsLoopbackLiteral(bound.host)) return std::nullopt;
  return fmt::format(
      "metrics endpoint listening beyond loopback on {}: it is plain HTTP "
      "without authentication, so anyone who can reach the port can read "
      "every metric and hold up to {} of its connections. Bind it to "
      "127.0.0.1 or [::1], or let a firewall admit only Prometheus and the "
      "probes. See docs/security.md",
      bound.ToString(), limits.max_connections);
}

std::string MetricsHttpServer::bound_address() const {
  MetricsAddress bound = address_;
  bound.port = port_;
  return bound.ToString();
}

void MetricsHttpServer::Stop() {
  if (impl_ == nullptr || impl_->stopped) return;
  impl_->stopped = true;
  const uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof(one));
  // The listener first: nothing new reaches the lanes, and a lane that
  // hands a connection back after this closes it.
  impl_->listener->Stop();
  impl_->probes->Stop();
  impl_->scrapes->Stop();
}

}  // namespace kvindexer
