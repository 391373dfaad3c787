#include "common/request_lane.h"

#include <utility>

namespace kvindexer {

RequestLane::RequestLane(size_t max_waiting, Answer answer)
    : max_waiting_(max_waiting), answer_(std::move(answer)) {
  thread_ = std::thread([this] { Run(); });
}

RequestLane::~RequestLane() { Stop(); }

bool RequestLane::Offer(HttpConnection& connection) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ || queue_.size() >= max_waiting_) return false;
    queue_.push_back(std::move(connection));
  }
  wake_.notify_one();
  return true;
}

void RequestLane::Stop() {
  std::deque<HttpConnection> dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    dropped.swap(queue_);
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void RequestLane::Run() {
  for (;;) {
    HttpConnection connection;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      connection = std::move(queue_.front());
      queue_.pop_front();
    }
    answer_(std::move(connection));
  }
}

}  // namespace kvindexer
