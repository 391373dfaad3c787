#include "server/router_client.h"

#include <string_view>

#include "common/log_text.h"
#include "fmt/format.h"
#include "httplib.h"

namespace kvindexer {
namespace {

// Bytes of a 400's body that are logged: the router says there why the
// report was refused.
constexpr size_t kLoggedRejectionBytes = 256;

std::unique_ptr<httplib::ClientImpl> MakeClient(const RouterUrl& router,
                                                const std::string& ca_file) {
  if (!router.https) {
    return std::make_unique<httplib::ClientImpl>(router.host, router.port);
  }
  auto client = std::make_unique<httplib::SSLClient>(router.host, router.port);
  client->enable_server_certificate_verification(true);
  if (!ca_file.empty()) client->set_ca_cert_path(ca_file);
  return client;
}

}  // namespace

RouterClient::RouterClient(const RouterUrl& router,
                           std::chrono::milliseconds timeout,
                           const std::string& ca_file)
    : router_(router), client_(MakeClient(router, ca_file)) {
  const auto seconds = static_cast<time_t>(timeout.count() / 1000);
  const auto micros = static_cast<time_t>((timeout.count() % 1000) * 1000);
  client_->set_connection_timeout(seconds, micros);
  client_->set_read_timeout(seconds, micros);
  client_->set_write_timeout(seconds, micros);
  client_->set_keep_alive(true);
  client_->set_follow_location(false);
}

RouterClient::~RouterClient() = default;

RouterPostResult RouterClient::Post(const std::string& body) {
  RouterPostResult result;
  httplib::Result answer =
      client_->Post(router_.status_path.c_str(), body, "application/json");
  if (!answer) {
    result.outcome = RouterPostResult::Outcome::kFailed;
    result.detail =
        fmt::format("no answer ({})", httplib::to_string(answer.error()));
    return result;
  }
  result.status = answer->status;
  if (answer->status >= 200 && answer->status < 300) {
    result.outcome = RouterPostResult::Outcome::kAccepted;
    return result;
  }
  result.outcome = RouterPostResult::Outcome::kRejected;
  result.detail = fmt::format("HTTP {}", answer->status);
  if (answer->status == 400) {
    result.detail +=
        fmt::format(": {}", LogText(answer->body, kLoggedRejectionBytes));
  }
  return result;
}

void RouterClient::Abort() { client_->stop(); }

}  // namespace kvindexer
