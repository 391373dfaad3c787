#include "common/http_connection.h"

#include <unistd.h>

#include <utility>

namespace kvindexer {

HttpConnection::HttpConnection(int fd,
                               std::shared_ptr<std::atomic<size_t>> open_count)
    : fd_(fd), open_count_(std::move(open_count)) {
  open_count_->fetch_add(1, std::memory_order_relaxed);
}

HttpConnection::~HttpConnection() { Close(); }

HttpConnection::HttpConnection(HttpConnection&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      open_count_(std::move(other.open_count_)),
      received_(std::move(other.received_)),
      requests_answered_(other.requests_answered_) {}

HttpConnection& HttpConnection::operator=(HttpConnection&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    open_count_ = std::move(other.open_count_);
    received_ = std::move(other.received_);
    requests_answered_ = other.requests_answered_;
  }
  return *this;
}

void HttpConnection::Close() {
  if (fd_ < 0) return;
  close(fd_);
  fd_ = -1;
  open_count_->fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace kvindexer
