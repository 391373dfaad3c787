#include "durable/replay_bound.h"

namespace kvindexer::durable {

ReplayBound::ReplayBound(uint64_t max_bytes, const MonotonicClock* clock)
    : max_bytes_(max_bytes), clock_(clock) {}

void ReplayBound::SetClosedBytes(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_bytes_ = bytes;
}

void ReplayBound::Appended(uint64_t current_file_bytes) {
  current_bytes_.store(current_file_bytes, std::memory_order_relaxed);
}

void ReplayBound::Rotated(uint64_t closed_file_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  closed_bytes_ += closed_file_bytes;
  building_ = true;
  current_bytes_.store(0, std::memory_order_relaxed);
}

void ReplayBound::BuildEnded(bool covered) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    building_ = false;
    last_build_failed_ = !covered;
    // One build runs at a time and rotations wait for it, so a build in
    // place covers every file closed so far.
    if (covered) closed_bytes_ = 0;
  }
  cv_.notify_all();
}

bool ReplayBound::WaitForRoom(uint64_t current_file_bytes,
                              uint64_t record_bytes,
                              const std::function<void()>& on_stall) {
  if (max_bytes_ == 0) return false;
  std::unique_lock<std::mutex> lock(mu_);
  if (closed_bytes_ + current_file_bytes + record_bytes <= max_bytes_ ||
      !building_ || last_build_failed_ || stopped_) {
    return false;
  }
  stalled_ = true;
  ++stalls_;
  const MonotonicClock::TimePoint start = clock_->Now();
  lock.unlock();
  if (on_stall) on_stall();
  lock.lock();
  cv_.wait(lock, [this] { return !building_ || stopped_; });
  stalled_ = false;
  stalled_for_ += clock_->Now() - start;
  return true;
}

void ReplayBound::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool ReplayBound::stalled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stalled_;
}

ReplayBoundFigures ReplayBound::figures() const {
  ReplayBoundFigures figures;
  std::lock_guard<std::mutex> lock(mu_);
  figures.max_bytes = max_bytes_;
  figures.tail_bytes =
      closed_bytes_ + current_bytes_.load(std::memory_order_relaxed);
  figures.stalls = stalls_;
  figures.stall_seconds = std::chrono::duration<double>(stalled_for_).count();
  figures.stalled = stalled_;
  return figures;
}

}  // namespace kvindexer::durable
