// TestLogCapture: routes spdlog's default logger into memory while it
// lives, so that tests can check the lines the code under test logs.
#ifndef KVINDEXER_TESTS_SUPPORT_TEST_LOG_CAPTURE_H_
#define KVINDEXER_TESTS_SUPPORT_TEST_LOG_CAPTURE_H_

#include <memory>
#include <string>
#include <vector>

#include "spdlog/sinks/ringbuffer_sink.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {

class TestLogCapture {
 public:
  TestLogCapture()
      : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)),
        previous_(spdlog::default_logger()) {
    auto logger = std::make_shared<spdlog::logger>("durable-test", sink_);
    logger->set_level(spdlog::level::trace);
    spdlog::set_default_logger(std::move(logger));
  }
  ~TestLogCapture() { spdlog::set_default_logger(previous_); }
  TestLogCapture(const TestLogCapture&) = delete;
  TestLogCapture& operator=(const TestLogCapture&) = delete;

  // The payloads of the lines logged at `level`, oldest first.
  std::vector<std::string> Lines(spdlog::level::level_enum level) const {
    std::vector<std::string> out;
    for (const auto& msg : sink_->last_raw()) {
      if (msg.level == level) {
        out.emplace_back(msg.payload.data(), msg.payload.size());
      }
    }
    return out;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_TESTS_SUPPORT_TEST_LOG_CAPTURE_H_
