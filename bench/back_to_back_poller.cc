#include "back_to_back_poller.h"

#include <chrono>

namespace kvindexer::bench {
namespace {

// Reads timed per run; later ones are counted as dropped.
constexpr size_t kMaxReadSamples = 1'000'000;

}  // namespace

BackToBackPoller::BackToBackPoller(OperatorReader* reader, OperatorRead read)
    : reader_(reader),
      read_(read),
      latency_(kMaxReadSamples),
      thread_([this] { Loop(); }) {}

BackToBackPoller::~BackToBackPoller() {
  if (thread_.joinable()) Stop();
}

PollFigures BackToBackPoller::Stop() {
  stop_.store(true);
  thread_.join();
  figures_.latency = latency_.Summarize();
  return figures_;
}

void BackToBackPoller::Loop() {
  using Clock = std::chrono::steady_clock;
  while (!stop_.load()) {
    const Clock::time_point t0 = Clock::now();
    const absl::StatusOr<OperatorReadResult> result = reader_->Read(read_);
    const int64_t nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0)
            .count();
    if (result.ok()) {
      latency_.Record(nanos);
      ++figures_.reads_ok;
      figures_.bytes += result->bytes;
      figures_.last = *result;
      continue;
    }
    ++figures_.reads_failed;
    if (figures_.first_error.empty()) {
      figures_.first_error = result.status().ToString();
    }
  }
}

}  // namespace kvindexer::bench
