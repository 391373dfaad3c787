#include "replica/snapshot_scheduler.h"

#include <chrono>
#include <string>
#include <utility>

#include "spdlog/spdlog.h"

namespace kvindexer::replica {

SnapshotScheduler::SnapshotScheduler(fleet::EventLog* log,
                                     fleet::SnapshotStore* store,
                                     fleet::LeaseRegister* lease,
                                     const SnapshotConfig& config,
                                     SnapshotRoundOptions round,
                                     const MonotonicClock* clock,
                                     std::function<int64_t()> unix_ms_now)
    : log_(log),
      store_(store),
      config_(config),
      round_(std::move(round)),
      clock_(clock),
      unix_ms_now_(std::move(unix_ms_now)),
      lease_(lease, round_.writer,
             std::chrono::milliseconds(config.lease_ttl_ms), clock) {
  round_.keep = config.keep;
}

SnapshotScheduler::~SnapshotScheduler() { Stop(); }

void SnapshotScheduler::Start() {
  thread_ = std::thread([this] {
    const auto tick = std::chrono::milliseconds(config_.lease_ttl_ms / 3);
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      Step();
      lock.lock();
      wake_.wait_for(lock, tick, [this] { return stopping_; });
    }
  });
}

void SnapshotScheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_ = true;
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (lease_.held()) {
    lease_.Release();
    std::lock_guard<std::mutex> lock(mu_);
    stats_.lease_held = false;
  }
}

void SnapshotScheduler::Step() {
  const bool was_held = lease_.held();
  const bool held = lease_.Tick();
  if (!lease_.last_error().ok()) {
    spdlog::warn("snapshot lease: cannot reach the lease register: {}",
                 lease_.last_error().ToString());
  }
  if (held != was_held) {
    spdlog::info("snapshot lease {} by replica {}", held ? "taken" : "lost",
                 round_.writer);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.lease_held = held;
  }
  const MonotonicClock::TimePoint now = clock_->Now();
  if (!held) {
    due_from_.reset();
    return;
  }
  if (!due_from_.has_value()) {
    due_from_ = now;  // the first round comes one interval after taking it
    return;
  }
  if (now - *due_from_ < std::chrono::milliseconds(config_.interval_ms)) {
    return;
  }
  due_from_ = now;
  round_.now_unix_ms = unix_ms_now_();
  const auto started = std::chrono::steady_clock::now();
  absl::StatusOr<SnapshotRound> round =
      WriteSnapshotRound(*log_, *store_, round_, stop_);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  std::lock_guard<std::mutex> lock(mu_);
  if (!round.ok()) {
    ++stats_.rounds_failed;
    if (round.status().code() != absl::StatusCode::kCancelled) {
      spdlog::warn("snapshot round failed (next try in {} ms): {}",
                   config_.interval_ms, round.status().ToString());
    }
    return;
  }
  if (round->written) {
    ++stats_.rounds_written;
    stats_.last_position = round->manifest.position();
    stats_.last_bytes = round->manifest.bytes();
    stats_.last_round_seconds = seconds;
    spdlog::info(
        "snapshot written: position={} parts={} bytes={} records={} "
        "seconds={:.3f} deleted={} log_first={} payloads_removed={}",
        round->manifest.position(), round->manifest.parts(),
        round->manifest.bytes(), round->records_applied, seconds,
        round->snapshots_deleted, round->trimmed_before,
        round->payloads_removed);
  }
}

SnapshotScheduler::Stats SnapshotScheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace kvindexer::replica
