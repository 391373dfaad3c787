// RejectionLog: counts prefix-query rejections per class and logs a line only
// when a class's running total is a power of two (1, 2, 4, 8, ...), so the
// first rejection is visible at the default level while sustained overload
// grows the log only logarithmically (docs/contract.md, "Rejection logging").
//
// | Class              | Level | Fields                              |
// | deadline shed      | INFO  | shed_total, waited_ms, budget_ms    |
// | admission overload | WARN  | rejected_total                      |
// Validation errors are not logged.
//
// Lines have the form "<message> key=value key=value ...".
//
// The throttle is common/doubling_throttle.h.
//
// Thread safety: every method may be called concurrently; the counters are
// atomics and the sink is called outside any lock.
#ifndef KVINDEXER_SERVER_REJECTION_LOG_H_
#define KVINDEXER_SERVER_REJECTION_LOG_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string_view>

#include "common/doubling_throttle.h"
#include "spdlog/common.h"

namespace kvindexer {

inline constexpr std::string_view kShedLogMessage =
    "shedding prefix query whose caller deadline already passed";
inline constexpr std::string_view kOverloadLogMessage =
    "rejecting prefix query: too many in-flight prefix queries";

class RejectionLog {
 public:
  // Receives each emitted line. Must be thread-safe.
  using Sink =
      std::function<void(spdlog::level::level_enum level, std::string_view)>;

  // Logs through spdlog's default logger.
  RejectionLog();
  explicit RejectionLog(Sink sink);
  RejectionLog(const RejectionLog&) = delete;
  RejectionLog& operator=(const RejectionLog&) = delete;

  void RecordShed(std::chrono::nanoseconds waited,
                  std::chrono::nanoseconds budget);
  void RecordOverload();

  uint64_t shed_total() const { return shed_.total(); }
  uint64_t rejected_total() const { return rejected_.total(); }

 private:
  Sink sink_;
  DoublingThrottle shed_;
  DoublingThrottle rejected_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_REJECTION_LOG_H_
