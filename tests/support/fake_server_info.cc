#include "tests/support/fake_server_info.h"

#include <utility>

#include "absl/status/status.h"
#include "httplib.h"

namespace kvindexer::test_support {

std::string ServerInfoBody(const AdvertisedKvEvents* kv_events) {
  std::string body =
      R"({"model_path":"fake-model","page_size":1,"version":"fake",)"
      R"("internal_states":[{"last_gen_throughput":0.0}],"kv_events":)";
  if (kv_events == nullptr) {
    body += "null";
  } else {
    // The test's own strings: plain ASCII without quotes or backslashes.
    body += R"({"publisher":")" + kv_events->publisher +
            R"(","endpoint_host":")" + kv_events->endpoint_host +
            R"(","endpoint_port_base":)" +
            std::to_string(kv_events->endpoint_port_base) + R"(,"topic":")" +
            kv_events->topic + R"(","block_size":)" +
            std::to_string(kv_events->block_size) + R"(,"dp_size":)" +
            std::to_string(kv_events->dp_size) + "}";
  }
  body += "}";
  return body;
}

FakeServerInfo::FakeServerInfo()
    : server_(std::make_unique<httplib::Server>()),
      body_(ServerInfoBody(nullptr)) {}

absl::StatusOr<std::unique_ptr<FakeServerInfo>> FakeServerInfo::Start() {
  std::unique_ptr<FakeServerInfo> fake(new FakeServerInfo());
  FakeServerInfo* const self = fake.get();
  self->server_->Get(R"(.*/server_info)", [self](const httplib::Request& req,
                                                 httplib::Response& res) {
    std::lock_guard<std::mutex> lock(self->mu_);
    ++self->requests_;
    self->last_path_ = req.path;
    self->changed_.notify_all();
    res.status = self->status_;
    res.set_content(self->body_, "application/json");
  });
  self->port_ = self->server_->bind_to_any_port("127.0.0.1");
  if (self->port_ <= 0) {
    return absl::InternalError("fake /server_info: cannot bind 127.0.0.1");
  }
  self->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // The socket listens already; Stop needs the accept loop running, or
  // cpp-httplib's stop() would miss it.
  for (int attempt = 0; attempt < 2500; ++attempt) {
    if (self->server_->is_running()) return fake;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::InternalError("fake /server_info: the server did not start");
}

FakeServerInfo::~FakeServerInfo() { Stop(); }

std::string FakeServerInfo::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

void FakeServerInfo::Answer(int status, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  status_ = status;
  body_ = std::move(body);
}

void FakeServerInfo::Advertise(const AdvertisedKvEvents& kv_events) {
  Answer(200, ServerInfoBody(&kv_events));
}

size_t FakeServerInfo::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

std::string FakeServerInfo::last_path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_path_;
}

bool FakeServerInfo::WaitForRequests(size_t n,
                                     std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return requests_ >= n; });
}

void FakeServerInfo::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kvindexer::test_support
