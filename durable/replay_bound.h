// ReplayBound: keeps the log a restart would replay within a configured
// size whatever the write rate (docs/durability.md, "The replay bound").
//
// What a restart replays is every log byte after the newest checkpoint in
// place: the files a checkpoint build is covering (closed at its rotation)
// plus the file being appended to. Writes can outrun builds, which redo the
// whole index and run at idle priority, so without a bound that tail grows
// with the length of a write burst. Here a write that would take the tail
// past the bound waits, once, for the build in progress to end; a finished
// build leaves only the current file to replay. Nothing waits when no build
// is running (there is nothing that would shrink the tail) or when the last
// build failed (failures are loud on their own, and blocking every writer
// behind a disk that refuses checkpoints would turn them into an outage).
//
// With a bound of at least twice the rotation size a waiting write always
// finds room once the build ends: the closed files held at least the
// rotation size, so the current file alone is at most the bound less that.
//
// Thread safety: Appended, Rotated and WaitForRoom are called by the one
// appender (under the Indexer's mutation mutex); BuildEnded by the
// compaction thread; Stop and the getters from any thread.
#ifndef KVINDEXER_DURABLE_REPLAY_BOUND_H_
#define KVINDEXER_DURABLE_REPLAY_BOUND_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "common/clock.h"

namespace kvindexer::durable {

struct ReplayBoundFigures {
  uint64_t max_bytes = 0;   // the bound; 0: none
  uint64_t tail_bytes = 0;  // what a restart would replay now
  uint64_t stalls = 0;      // writes that waited for a build
  double stall_seconds = 0;
  bool stalled = false;  // a write is waiting now
};

class ReplayBound {
 public:
  // `max_bytes` 0: no bound (nothing ever waits). REQUIRES: `clock`
  // outlives the bound.
  ReplayBound(uint64_t max_bytes, const MonotonicClock* clock);

  // Log bytes a restart replays from files before the current one, found by
  // the start-up recovery; REQUIRES: before the first Appended.
  void SetClosedBytes(uint64_t bytes);
  // The current file now holds `current_file_bytes` record bytes.
  void Appended(uint64_t current_file_bytes);
  // The current file (`closed_file_bytes`) was closed and a build that
  // covers it and every file closed before it has begun.
  void Rotated(uint64_t closed_file_bytes);
  // The build begun at the last Rotated ended: `covered` when its
  // checkpoint is in place (the closed files leave the tail), false when it
  // failed or was abandoned.
  void BuildEnded(bool covered);

  // Before appending `record_bytes` to a current file of
  // `current_file_bytes`: when that would take the tail past the bound
  // while a build runs and the last one did not fail, calls `on_stall`
  // (once) and waits until the build ends or Stop. Answers whether it
  // waited; the caller then rotates if its file is due before appending.
  bool WaitForRoom(uint64_t current_file_bytes, uint64_t record_bytes,
                   const std::function<void()>& on_stall);
  // Wakes a waiting write and makes every later one pass.
  void Stop();
  // Whether a write waits now.
  bool stalled() const;

  ReplayBoundFigures figures() const;

 private:
  const uint64_t max_bytes_;
  const MonotonicClock* const clock_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  uint64_t closed_bytes_ = 0;
  bool building_ = false;
  bool last_build_failed_ = false;
  bool stopped_ = false;
  bool stalled_ = false;
  uint64_t stalls_ = 0;
  MonotonicClock::Duration stalled_for_{};
  // Appender only; read by figures() under mu_.
  std::atomic<uint64_t> current_bytes_{0};
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_REPLAY_BOUND_H_
