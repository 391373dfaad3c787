#include "tests/support/fake_status_router.h"

#include <utility>

#include "absl/status/status.h"
#include "httplib.h"

namespace kvindexer::test_support {

FakeStatusRouter::FakeStatusRouter(std::string path_prefix, const TlsFiles* tls)
    : path_prefix_(std::move(path_prefix)),
      tls_(tls != nullptr),
      server_(tls == nullptr
                  ? std::make_unique<httplib::Server>()
                  : std::make_unique<httplib::SSLServer>(
                        tls->cert_file.c_str(), tls->key_file.c_str())) {}

absl::StatusOr<std::unique_ptr<FakeStatusRouter>> FakeStatusRouter::Start(
    std::string path_prefix, const TlsFiles* tls) {
  std::unique_ptr<FakeStatusRouter> router(
      new FakeStatusRouter(std::move(path_prefix), tls));
  FakeStatusRouter* const self = router.get();
  if (!self->server_->is_valid()) {
    return absl::InternalError("fake router: cannot load the certificate");
  }
  const auto record = [self](const httplib::Request& req,
                             httplib::Response& res) {
    std::unique_lock<std::mutex> lock(self->mu_);
    self->requests_.push_back(Request{
        .method = req.method,
        .path = req.path,
        .content_type = req.get_header_value("Content-Type"),
        .authorization = req.get_header_value("Authorization"),
        .body = req.body,
        .received = std::chrono::steady_clock::now(),
    });
    self->changed_.notify_all();
    if (req.path != self->path_prefix_ + "/v1/kv-indexer/status") {
      res.status = 404;
      return;
    }
    self->changed_.wait(lock,
                        [self] { return !self->hang_ || self->stopping_; });
    res.status = self->status_;
    res.set_content(self->answer_body_, "text/plain");
  };
  self->server_->Post(".*", record);
  self->server_->Get(".*", record);
  self->port_ = self->server_->bind_to_any_port("127.0.0.1");
  if (self->port_ <= 0) {
    return absl::InternalError("fake router: cannot bind 127.0.0.1");
  }
  self->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // The socket listens already; Stop needs the accept loop running, or
  // cpp-httplib's stop() would miss it.
  for (int attempt = 0; attempt < 2500; ++attempt) {
    if (self->server_->is_running()) return router;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return absl::InternalError("fake router: the server did not start");
}

FakeStatusRouter::~FakeStatusRouter() { Stop(); }

std::string FakeStatusRouter::url() const {
  return std::string(tls_ ? "https" : "http") +
         "://127.0.0.1:" + std::to_string(port_) + path_prefix_;
}

void FakeStatusRouter::Answer(int status, std::string body) {
  std::lock_guard<std::mutex> lock(mu_);
  status_ = status;
  answer_body_ = std::move(body);
}

void FakeStatusRouter::Hang(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  hang_ = on;
  changed_.notify_all();
}

std::vector<FakeStatusRouter::Request> FakeStatusRouter::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t FakeStatusRouter::request_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

bool FakeStatusRouter::WaitFor(
    const std::function<bool(const std::vector<Request>&)>& predicate,
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return changed_.wait_for(lock, timeout, [&] { return predicate(requests_); });
}

bool FakeStatusRouter::WaitForRequests(size_t n,
                                       std::chrono::milliseconds timeout) {
  return WaitFor([n](const std::vector<Request>& r) { return r.size() >= n; },
                 timeout);
}

void FakeStatusRouter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    changed_.notify_all();
  }
  server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kvindexer::test_support
