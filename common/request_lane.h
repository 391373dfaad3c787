// RequestLane: one thread that answers the connections handed to it, one at
// a time and in order, with a bounded queue in front. The metrics endpoint
// runs two: one for the probes and one for everything else, so that a slow
// scrape (a slow collector, a client that reads its answer slowly) never
// delays /healthz or /readyz.
//
// Thread safety: Offer from any thread; Stop from the owning thread. `answer`
// runs on the lane's thread.
#ifndef KVINDEXER_COMMON_REQUEST_LANE_H_
#define KVINDEXER_COMMON_REQUEST_LANE_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "common/http_connection.h"

namespace kvindexer {

class RequestLane {
 public:
  using Answer = std::function<void(HttpConnection)>;

  // Starts the thread. `max_waiting`: connections queued behind the one
  // being answered.
  RequestLane(size_t max_waiting, Answer answer);
  ~RequestLane();  // Stop()
  RequestLane(const RequestLane&) = delete;
  RequestLane& operator=(const RequestLane&) = delete;

  // Queues `connection` (moving it out) and returns true; when `max_waiting`
  // connections already wait, or after Stop, returns false and leaves it
  // with the caller.
  [[nodiscard]] bool Offer(HttpConnection& connection);

  // Closes the queued connections, lets the one being answered finish and
  // joins the thread. Idempotent.
  void Stop();

 private:
  void Run();

  const size_t max_waiting_;
  const Answer answer_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;             // guarded by mutex_
  std::deque<HttpConnection> queue_;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_COMMON_REQUEST_LANE_H_
