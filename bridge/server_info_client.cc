#include "bridge/server_info_client.h"

#include <ctime>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace kvindexer::bridge {
namespace {

std::unique_ptr<httplib::ClientImpl> MakeClient(const WorkerUrl& url) {
  if (!url.https) {
    return std::make_unique<httplib::ClientImpl>(url.host, url.port);
  }
  auto client = std::make_unique<httplib::SSLClient>(url.host, url.port);
  client->enable_server_certificate_verification(true);
  return client;
}

}  // namespace

absl::StatusOr<KvEventsDescriptor> FetchKvEventsDescriptor(
    const WorkerUrl& url, std::chrono::milliseconds timeout) {
  std::unique_ptr<httplib::ClientImpl> client = MakeClient(url);
  const auto seconds = static_cast<time_t>(timeout.count() / 1000);
  const auto micros = static_cast<time_t>((timeout.count() % 1000) * 1000);
  client->set_connection_timeout(seconds, micros);
  client->set_read_timeout(seconds, micros);
  client->set_write_timeout(seconds, micros);
  client->set_keep_alive(false);
  client->set_follow_location(false);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string body;
  bool too_large = false;
  bool too_slow = false;
  const std::string path = ServerInfoPath(url);
  httplib::Result answer =
      client->Get(path.c_str(), [&](const char* data, size_t length) {
        if (body.size() + length > kMaxServerInfoBytes) {
          too_large = true;
          return false;
        }
        if (std::chrono::steady_clock::now() > deadline) {
          too_slow = true;
          return false;
        }
        body.append(data, length);
        return true;
      });
  const std::string where = absl::StrCat(url.https ? "https://" : "http://",
                                         url.host.find(':') != std::string::npos
                                             ? absl::StrCat("[", url.host, "]")
                                             : url.host,
                                         ":", url.port, path);
  if (too_large) {
    return absl::UnavailableError(absl::StrCat(where, " answered more than ",
                                               kMaxServerInfoBytes, " bytes"));
  }
  if (too_slow) {
    return absl::UnavailableError(
        absl::StrCat(where, " did not answer within ", timeout.count(), " ms"));
  }
  if (!answer) {
    return absl::UnavailableError(absl::StrCat(
        where, " gave no answer (", httplib::to_string(answer.error()), ")"));
  }
  if (answer->status >= 500) {
    return absl::UnavailableError(
        absl::StrCat(where, " answered HTTP ", answer->status));
  }
  if (answer->status < 200 || answer->status >= 300) {
    return absl::FailedPreconditionError(absl::StrCat(
        "/server_info refused: ", where, " answered HTTP ", answer->status));
  }
  return ParseKvEventsDescriptor(body);
}

}  // namespace kvindexer::bridge
