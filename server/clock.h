// Clock: the time source the server reads when it stamps arrivals and decides
// deadline shedding. Injectable so that tests control time without sleeping.
//
// The time base is the system (wall) clock, because that is the base in which
// gRPC reports a call's absolute deadline (grpc::ServerContext::deadline()).
//
// Thread safety: Now() may be called concurrently from any thread.
#ifndef KVINDEXER_SERVER_CLOCK_H_
#define KVINDEXER_SERVER_CLOCK_H_

#include <chrono>

namespace kvindexer {

class Clock {
 public:
  using TimePoint = std::chrono::system_clock::time_point;
  using Duration = std::chrono::system_clock::duration;

  virtual ~Clock() = default;
  virtual TimePoint Now() const = 0;

  // The process-wide real clock (std::chrono::system_clock). Never destroyed.
  static const Clock& Real();
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_CLOCK_H_
