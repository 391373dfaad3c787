#include "durable/durable_store.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/uuid.h"
#include "durable/build_deadline.h"
#include "durable/build_priority.h"
#include "durable/builder_process.h"
#include "durable/checkpoint_builder.h"
#include "durable/checkpoint_file.h"
#include "durable/compactor.h"
#include "durable/data_dir.h"
#include "durable/epoch_choice.h"
#include "durable/indexer_epoch_file.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"
#include "durable/recovery_loader.h"
#include "durable/replay_bound.h"
#include "durable/startup_bulk_load.h"
#include "durable/wal_writer.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

uint64_t MillisecondsSince(const MonotonicClock& clock,
                           MonotonicClock::TimePoint start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now() - start)
          .count());
}

}  // namespace

struct DurableStore::State {
  DurableOptions options;
  FileIo* io = nullptr;
  const MonotonicClock* clock = nullptr;
  const WallClock* wall_clock = nullptr;
  DurableState* indexer = nullptr;
  std::unique_ptr<DataDir> dir;
  // Before the writer, which reports to it.
  WalFailureMonitor monitor;
  std::unique_ptr<WalWriter> writer;

  // Used by Append only, under the Indexer's mutation mutex.
  std::string payload;
  // The current log file's size that rotates it next: checkpoint_bytes, or
  // one more checkpoint_bytes after a rotation that failed.
  uint64_t rotate_at = 0;

  // True from a rotation until its compaction ended; Append reads it
  // without the lock (a stale true only delays the next rotation).
  std::atomic<bool> compacting{false};
  // Keeps what a restart replays within options.max_replay_bytes.
  std::unique_ptr<ReplayBound> bound;
  // A raise was refused for want of privilege: said once, not tried again.
  std::atomic<bool> raise_refused{false};
  // The thread that builds the checkpoint in progress in this process, if
  // one does, its priority and its deadline, for raising it while a write
  // waits (durable/build_priority.h), or abandoning it when it cannot be
  // raised. priority_mu orders Hurry with the start and end of that thread.
  std::mutex priority_mu;
  pid_t build_tid = 0;  // guarded by priority_mu; 0: no thread build
  BuildPriority build_priority = BuildPriority::kIdle;  // priority_mu
  const BuildDeadline* build_deadline = nullptr;        // priority_mu
  std::atomic<bool> stop{false};

  std::mutex mu;
  std::condition_variable cv;
  // Guarded by mu.
  std::optional<CompactionJob> pending;
  uint64_t base = 0;  // the newest committed checkpoint
  std::set<uint64_t> checkpoints;
  std::set<uint64_t> wals;
  uint64_t checkpoints_written = 0;
  uint64_t checkpoint_restarts = 0;
  MonotonicClock::Duration last_checkpoint{};
  std::optional<WallClock::TimePoint> last_checkpoint_at;
  CheckpointFailureCounts failures;
  // The builder process of the checkpoint in progress, if any; the
  // destructor kills it.
  BuilderProcess* builder = nullptr;
  // Who built the last checkpoint, for its INFO line. Compaction thread.
  std::string built_by;
  // options.checkpoint_builder ran but did not take the builder call (it is
  // not a kv-indexer-server, say a wrapper script): the thread builds from
  // then on. Compaction thread.
  bool builder_refused = false;

  std::thread thread;

  // Rotates the log and hands the closed generations to the compaction
  // thread. REQUIRES: the Indexer's mutation mutex held (or the Indexer not
  // yet attached); compacting is false.
  void StartCompaction();
  void CompactionLoop();
  // OK once the job's checkpoint is in place (even when only the directory
  // sync after its rename failed); otherwise the error, naming the files.
  absl::Status Compact(const CompactionJob& job);
  // The job that turns `last_wal` and the files before it into the next
  // checkpoint. REQUIRES: mu held, or no compaction thread yet.
  CompactionJob JobUpTo(uint64_t last_wal) const;
  // Open's answer to a log file that must not be continued (a failed-log
  // marker among the generations recovery replayed, or a file of an older
  // format version): builds the checkpoint of wal_generation + 1 so that
  // the file is never appended to. REQUIRES: before the compaction thread
  // starts and before the writer is opened.
  // `subject` says what the file is ("the previous run's log <file>
  // failed"), `detail` why, for the WARN.
  absl::Status CloseLogBehindCheckpoint(uint64_t wal_generation,
                                        std::string_view subject,
                                        std::string_view detail);
  // Deletes the markers of generations `markers` and syncs the directory;
  // a failure is logged (WARN): a marker left behind only costs the next
  // start an extra checkpoint.
  void RemoveMarkers(const std::vector<uint64_t>& markers);
  // Builds and publishes the job's checkpoint: in a builder process when
  // options.checkpoint_builder is set and it starts, else in this thread.
  // DEADLINE_EXCEEDED when `deadline` timed out (a builder process is
  // killed then, a thread stops at its next check); CANCELLED when the
  // store closes.
  absl::Status Build(const CompactionJob& job, const BuildDeadline& deadline);
  // A thread of its own that starts at `priority`. One at idle priority
  // that writes come to wait for and that cannot be raised is abandoned at
  // its next check, and the build starts over in a thread at normal
  // priority.
  absl::Status BuildInThread(const CompactionJob& job,
                             const BuildDeadline& deadline,
                             BuildPriority priority);
  // Raises the thread build in progress, or abandons it when it is idle and
  // the raise is refused for want of privilege. REQUIRES: priority_mu held,
  // build_tid != 0.
  void HurryThreadLocked();
  // A builder process that starts at `priority`. One at idle priority that
  // writes come to wait for and that cannot be raised is killed, and the
  // build starts over in a process at normal priority.
  absl::Status BuildInProcess(const CompactionJob& job,
                              const BuildDeadline& deadline,
                              BuildPriority priority);
  // A write waits for the build in progress: raise it to normal priority
  // (the build thread, when this process builds; a builder process is
  // raised by the wait for it).
  void Hurry();
  // Raises `tid` to normal priority and says so at INFO. Otherwise says
  // why at WARN and answers it: PERMISSION_DENIED for want of privilege
  // (said once, and answered without a try from then on).
  absl::Status Raise(pid_t tid, std::string_view who);
  void CountFailure(CheckpointFailure failure) {
    std::lock_guard<std::mutex> lock(mu);
    ++failures.by_reason[static_cast<size_t>(failure)];
  }
  void CountRestart() {
    std::lock_guard<std::mutex> lock(mu);
    ++checkpoint_restarts;
  }
};

void DurableStore::State::StartCompaction() {
  const uint64_t closing = writer->generation();
  const uint64_t closing_bytes = writer->bytes_in_generation();
  absl::Status s = writer->Rotate(closing + 1);
  if (!s.ok()) {
    // Serving goes on in the current file; the next attempt comes after
    // another checkpoint_bytes of log.
    rotate_at = writer->bytes_in_generation() + options.checkpoint_bytes;
    CountFailure(CheckpointFailure::kRotate);
    spdlog::error(
        "wal: rotating {} to generation {} failed ({}); the checkpoint is "
        "retried after another {} bytes of log",
        dir->WalPath(closing), closing + 1, std::string(s.message()),
        options.checkpoint_bytes);
    return;
  }
  rotate_at = options.checkpoint_bytes;
  bound->Rotated(closing_bytes);
  {
    std::lock_guard<std::mutex> lock(mu);
    wals.insert(closing + 1);
    pending = JobUpTo(closing);
    compacting.store(true, std::memory_order_relaxed);
  }
  cv.notify_all();
}

CompactionJob DurableStore::State::JobUpTo(uint64_t last_wal) const {
  return CompactionJob{.base = base,
                       .last_wal = last_wal,
                       .sizes = options.backend,
                       .counts_placements = options.backend != nullptr &&
                                            options.backend_abi_minor >= 2};
}

// Checkpoints built by a thread of the server run at the lowest nice value (a
// thread of their own, which ends with the build): a build takes a core for
// seconds (ten million placements: about five), and at normal priority it
// tripled prefix p99 on a 2-core machine (BENCHMARKS.md, "Restart-safe
// state", which also has what was tried besides). Not SCHED_IDLE: a thread
// of that class that is preempted while it holds a lock the query threads
// need (the allocator's, the address space's) can stall them for as long as
// the machine stays busy; it failed queries at half load.
namespace {
void LowerCompactionPriority() {
  pthread_setname_np(pthread_self(), "kvidx-ckpt");
  // Linux: the nice value of PRIO_PROCESS 0 is the calling thread's.
  if (setpriority(PRIO_PROCESS, 0, 19) != 0) {
    spdlog::warn("checkpoint thread keeps its CPU priority: {}",
                 std::strerror(errno));
  }
}
}  // namespace

void DurableStore::State::CompactionLoop() {
  // At the server's priority, which the builder processes it spawns
  // inherit: the build thread lowers only itself. What this thread does
  // around a build (asking the backend for sizes, publishing, deleting old
  // files) is short and mostly waits for the disk.
  pthread_setname_np(pthread_self(), "kvidx-compact");
  std::unique_lock<std::mutex> lock(mu);
  while (true) {
    cv.wait(lock, [this] {
      return stop.load(std::memory_order_relaxed) || pending.has_value();
    });
    if (stop.load(std::memory_order_relaxed)) break;
    const CompactionJob job = *pending;
    pending.reset();
    lock.unlock();
    absl::Status built = Compact(job);
    if (!built.ok() && built.code() != absl::StatusCode::kCancelled) {
      // The log keeps everything; the next rotation tries again from the
      // same base with more log.
      spdlog::error(
          "checkpoint: {}; serving is unaffected and the next rotation "
          "retries{}",
          std::string(built.message()),
          built.code() == absl::StatusCode::kDeadlineExceeded
              ? " (raise KV_INDEXER_CHECKPOINT_TIMEOUT_MS if builds of this "
                "size need longer)"
              : "");
    }
    lock.lock();
    compacting.store(false, std::memory_order_relaxed);
    bound->BuildEnded(built.ok());
    cv.notify_all();
  }
  pending.reset();
  compacting.store(false, std::memory_order_relaxed);
  cv.notify_all();
}

absl::Status DurableStore::State::Build(const CompactionJob& job,
                                        const BuildDeadline& deadline) {
  built_by = "a thread of the server";
  // Writes already wait, and an idle build could not be raised: this one
  // does not lower itself in the first place.
  const BuildPriority priority =
      raise_refused.load(std::memory_order_relaxed) && bound->stalled()
          ? BuildPriority::kNormal
          : BuildPriority::kIdle;
  if (options.checkpoint_builder.empty() || builder_refused) {
    return BuildInThread(job, deadline, priority);
  }
  return BuildInProcess(job, deadline, priority);
}

absl::Status DurableStore::State::BuildInThread(const CompactionJob& job,
                                                const BuildDeadline& deadline,
                                                BuildPriority priority) {
  absl::Status built;
  std::thread build_thread;
  try {
    build_thread = std::thread([&] {
      if (priority == BuildPriority::kIdle) {
        LowerCompactionPriority();
      } else {
        pthread_setname_np(pthread_self(), "kvidx-ckpt");
      }
      {
        std::lock_guard<std::mutex> lock(priority_mu);
        build_tid = static_cast<pid_t>(::syscall(SYS_gettid));
        build_priority = priority;
        build_deadline = &deadline;
        if (bound->stalled()) HurryThreadLocked();
      }
      built = BuildCheckpoint(dir->path(), job, io, deadline,
                              CheckpointFinish::kPublish);
      std::lock_guard<std::mutex> lock(priority_mu);
      build_tid = 0;
      build_deadline = nullptr;
    });
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot start the checkpoint thread: ", e.what()));
  }
  build_thread.join();
  // Abandoned but done before its next check: published, nothing to redo;
  // one that failed for a reason of its own is a failure as any other.
  // Otherwise it stopped at that check, and what it wrote is a temporary
  // file the next build replaces.
  const bool start_over =
      deadline.abandoned() && built.code() == absl::StatusCode::kCancelled &&
      !stop.load(std::memory_order_relaxed) && !deadline.timed_out();
  deadline.Resume();
  if (start_over) {
    CountRestart();
    spdlog::info(
        "checkpoint: the build in an idle thread stopped; it starts over "
        "in a thread at normal priority");
    return BuildInThread(job, deadline, BuildPriority::kNormal);
  }
  if (built.code() == absl::StatusCode::kCancelled &&
      !stop.load(std::memory_order_relaxed) && deadline.timed_out()) {
    return absl::DeadlineExceededError(
        absl::StrCat("the build in ", built_by,
                     " was abandoned at its next check: ", deadline.Why()));
  }
  return built;
}

absl::Status DurableStore::State::BuildInProcess(const CompactionJob& job,
                                                 const BuildDeadline& deadline,
                                                 BuildPriority priority) {
  CompactionJob sized = job;
  if (job.sizes != nullptr) {
    BackendStats stats{};
    stats.struct_size = sizeof(BackendStats);
    job.sizes->GetStats(&stats);
    sized.reserve_blocks = stats.blocks + stats.blocks / 8;
  }
  absl::StatusOr<std::unique_ptr<BuilderProcess>> child = BuilderProcess::Spawn(
      options.checkpoint_builder,
      CheckpointBuilderCommand(dir->path(), sized, ::getpid(), priority));
  if (!child.ok()) {
    spdlog::warn("checkpoint: {}; building in the server process instead",
                 std::string(child.status().message()));
    return BuildInThread(job, deadline, priority);
  }
  built_by = absl::StrCat("builder process ", (*child)->pid());
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stop.load(std::memory_order_relaxed)) (*child)->Kill();
    builder = child->get();
  }
  // Killed at the deadline; the store's closing kills it at once (the
  // destructor), without waiting for the next look at the deadline.
  // An idle child lowers its own priority as it starts; a raise is tried
  // once it has, while a write waits. When the raise is refused for want
  // of privilege, the idle child is killed and the build starts over, once,
  // at normal priority: a process that never lowered itself needs no
  // privilege, and under a busy CPU an idle one could keep the writes
  // waiting until its deadline. What it built so far was made of CPU time
  // nobody else wanted. (A normal child of a niced server runs below nice
  // 0 too; it is not started over.)
  bool tried = false;
  bool start_over = false;
  const pid_t child_pid = (*child)->pid();
  absl::Status built = (*child)->Wait([&] {
    if (!tried && bound->stalled() && RunsBelowNormal(child_pid)) {
      tried = true;
      start_over = priority == BuildPriority::kIdle &&
                   absl::IsPermissionDenied(Raise(child_pid, built_by));
      if (start_over) return true;
    }
    return deadline.Expired();
  });
  {
    std::lock_guard<std::mutex> lock(mu);
    builder = nullptr;
  }
  const std::string tmp = CheckpointTmpPath(dir->path(), job.target());
  if (stop.load(std::memory_order_relaxed)) {
    // Killed, or done but no longer wanted: nothing is published while
    // the store closes.
    ::unlink(tmp.c_str());
    return absl::CancelledError("checkpoint abandoned: the store is closing");
  }
  if (!built.ok()) {
    ::unlink(tmp.c_str());
    if (start_over && !deadline.timed_out()) {
      CountRestart();
      spdlog::info(
          "checkpoint: writes wait for {}, which cannot be raised; the build "
          "starts over in a builder process at normal priority",
          built_by);
      return BuildInProcess(job, deadline, BuildPriority::kNormal);
    }
    if (deadline.timed_out()) {
      return absl::DeadlineExceededError(
          absl::StrCat(built_by, " was killed: ", deadline.Why(), " (",
                       built.message(), ")"));
    }
    // 2: our usage error; 127: the loader or a shell could not run it.
    const std::optional<int> code = (*child)->exit_code();
    if (code == kBuilderUsage || code == 127) {
      builder_refused = true;
      spdlog::warn(
          "checkpoint: {} does not build checkpoints ({}); they are built "
          "in the server process from now on",
          options.checkpoint_builder, std::string(built.message()));
      built_by = "a thread of the server";
      return BuildInThread(job, deadline, priority);
    }
    return built;
  }
  // Sealed in time (a build that ended as its deadline passed included):
  // a complete checkpoint is worth publishing.
  absl::Status published = PublishCheckpoint(dir->path(), job.target(), io);
  if (!published.ok()) ::unlink(tmp.c_str());
  return published;
}

void DurableStore::State::Hurry() {
  // A builder process is raised by the wait for it, at its next poll; a
  // thread build that has not begun raises itself as it begins.
  std::lock_guard<std::mutex> lock(priority_mu);
  if (build_tid != 0) HurryThreadLocked();
}

void DurableStore::State::HurryThreadLocked() {
  const absl::Status raised = Raise(build_tid, "the checkpoint thread");
  if (build_priority != BuildPriority::kIdle ||
      !absl::IsPermissionDenied(raised) || build_deadline == nullptr ||
      build_deadline->abandoned()) {
    return;
  }
  build_deadline->Abandon();
  spdlog::info(
      "checkpoint: writes wait for the checkpoint thread, which cannot be "
      "raised; it stops at its next check and the build starts over at "
      "normal priority");
}

absl::Status DurableStore::State::Raise(pid_t tid, std::string_view who) {
  if (raise_refused.load(std::memory_order_relaxed)) {
    return absl::PermissionDeniedError("raising a build was refused before");
  }
  absl::Status s =
      options.raise_priority ? options.raise_priority(tid) : RaiseToNormal(tid);
  if (s.ok()) {
    spdlog::info(
        "checkpoint: writes wait for the build ({} bytes of log to replay, "
        "KV_INDEXER_MAX_REPLAY_BYTES {}): {} runs at normal priority until "
        "it ends",
        bound->figures().tail_bytes, bound->figures().max_bytes, who);
    return absl::OkStatus();
  }
  if (absl::IsPermissionDenied(s)) {
    raise_refused.store(true, std::memory_order_relaxed);
    spdlog::warn(
        "checkpoint: writes wait for the build, but {} cannot be raised to "
        "normal priority ({}); from now on an idle build that writes wait "
        "for starts over at normal priority",
        who, std::string(s.message()));
    return s;
  }
  spdlog::warn("checkpoint: raising {} for waiting writes failed: {}", who,
               std::string(s.message()));
  return s;
}

absl::Status DurableStore::State::Compact(const CompactionJob& job) {
  const MonotonicClock::TimePoint start = clock->Now();
  const BuildDeadline deadline(&stop, clock, options.checkpoint_timeout);
  absl::Status s = Build(job, deadline);
  if (s.code() == absl::StatusCode::kCancelled) return s;
  // Renamed into place, but the directory sync after the rename failed: the
  // file is complete (it was synced before the rename), so it is used, not
  // left untracked for ever. Nothing older is deleted this time: until a
  // later checkpoint's directory sync succeeds, a crash may bring back the
  // previous checkpoint, and it must still have its logs.
  const bool in_place_unsynced =
      !s.ok() && ::access(dir->CheckpointPath(job.target()).c_str(), F_OK) == 0;
  if (in_place_unsynced) {
    spdlog::warn(
        "checkpoint: {} is in place but {}; it is used, and older "
        "files are kept until a later checkpoint syncs",
        dir->CheckpointPath(job.target()), std::string(s.message()));
  } else if (!s.ok()) {
    CountFailure(s.code() == absl::StatusCode::kDeadlineExceeded
                     ? CheckpointFailure::kTimeout
                     : CheckpointFailure::kBuild);
    return absl::Status(
        s.code(), absl::StrCat("building ", dir->CheckpointPath(job.target()),
                               " from ", dir->CheckpointPath(job.base), " and ",
                               job.last_wal - job.base + 1,
                               " log file(s) failed: ", s.message()));
  }
  // Keep the base generation (checkpoint and logs) as the fallback for a
  // damaged new checkpoint; everything older goes.
  std::vector<std::string> victims;
  {
    std::lock_guard<std::mutex> lock(mu);
    base = job.target();
    checkpoints.insert(job.target());
    ++checkpoints_written;
    last_checkpoint = clock->Now() - start;
    last_checkpoint_at = wall_clock->Now();
    const uint64_t keep_from = in_place_unsynced ? 0 : job.base;
    for (auto it = checkpoints.begin();
         it != checkpoints.end() && *it < keep_from;) {
      victims.push_back(dir->CheckpointPath(*it));
      it = checkpoints.erase(it);
    }
    for (auto it = wals.begin(); it != wals.end() && *it < keep_from;) {
      victims.push_back(dir->WalPath(*it));
      it = wals.erase(it);
    }
  }
  for (const std::string& path : victims) {
    absl::Status r = dir->Remove(path);
    if (!r.ok()) {
      spdlog::warn("checkpoint: cannot delete {}: {}", path,
                   std::string(r.message()));
    }
  }
  if (!victims.empty()) {
    absl::Status r = dir->SyncDir();
    if (!r.ok()) {
      spdlog::warn("checkpoint: syncing {} failed: {}", dir->path(),
                   std::string(r.message()));
    }
  }
  spdlog::info("checkpoint: wrote {} in {} ms (built by {})",
               dir->CheckpointPath(job.target()),
               MillisecondsSince(*clock, start), built_by);
  return absl::OkStatus();
}

absl::Status DurableStore::State::CloseLogBehindCheckpoint(
    uint64_t wal_generation, std::string_view subject,
    std::string_view detail) {
  spdlog::warn(
      "wal: {} ({}); it is not continued: checkpoint {} is built from the "
      "files first, and the log goes on in {}",
      subject, detail, wal_generation + 1, dir->WalPath(wal_generation + 1));
  absl::Status built = Compact(JobUpTo(wal_generation));
  if (!built.ok() || base != wal_generation + 1) {
    return absl::Status(
        built.ok() ? absl::StatusCode::kInternal : built.code(),
        absl::StrCat(std::string(subject),
                     " and must not be continued, but the checkpoint that "
                     "closes it could not be written: ",
                     built.message()));
  }
  return absl::OkStatus();
}

void DurableStore::State::RemoveMarkers(const std::vector<uint64_t>& markers) {
  if (markers.empty()) return;
  for (uint64_t g : markers) {
    const std::string path = JoinPath(dir->path(), PoisonMarkerFileName(g));
    if (absl::Status r = dir->Remove(path); !r.ok()) {
      spdlog::warn("wal: cannot delete {}: {}", path, std::string(r.message()));
    }
  }
  if (absl::Status r = dir->SyncDir(); !r.ok()) {
    spdlog::warn("wal: syncing {} after deleting failed-log markers: {}",
                 dir->path(), std::string(r.message()));
  }
}

absl::StatusOr<std::unique_ptr<DurableStore>> DurableStore::Open(
    const DurableOptions& options, DurableState* indexer) {
  const MonotonicClock& clock =
      options.clock != nullptr ? *options.clock : MonotonicClock::Real();
  const MonotonicClock::TimePoint start = clock.Now();
  auto state = std::make_unique<State>();
  state->options = options;
  state->io = options.io != nullptr ? options.io : &FileIo::Real();
  state->clock = &clock;
  state->wall_clock =
      options.wall_clock != nullptr ? options.wall_clock : &WallClock::Real();
  state->indexer = indexer;

  absl::StatusOr<std::unique_ptr<DataDir>> dir = DataDir::Open(options.dir);
  if (!dir.ok()) return dir.status();
  state->dir = *std::move(dir);

  // No client can reach the Indexer yet (the server listens only after
  // Open returns), so the backend may fill itself as a bulk load.
  StartupBulkLoad bulk_load(options.backend, options.backend_abi_minor);
  absl::StatusOr<RecoveredDirectory> recovered =
      RecoverDirectory(*state->dir, indexer, state->io);
  const absl::Status published = bulk_load.Finish();
  if (!recovered.ok()) return recovered.status();
  if (!published.ok()) return published;

  state->rotate_at = options.checkpoint_bytes;
  state->bound =
      std::make_unique<ReplayBound>(options.max_replay_bytes, &clock);
  state->base = recovered->base;
  state->checkpoints.insert(recovered->checkpoints.begin(),
                            recovered->checkpoints.end());
  state->wals.insert(recovered->wals.begin(), recovered->wals.end());

  // A marker among the generations just replayed: the previous run's log
  // failed there, and the newest file must not be continued. Other markers
  // belong to files a checkpoint already covers, or that recovery set aside.
  std::vector<uint64_t> failed_logs;
  std::vector<uint64_t> stale_markers;
  for (uint64_t g : recovered->poison_markers) {
    const bool replayed = g >= recovered->base &&
                          g <= recovered->wal_generation &&
                          !recovered->report.started_empty;
    (replayed ? failed_logs : stale_markers).push_back(g);
  }
  uint64_t wal_generation = recovered->wal_generation;
  if (!failed_logs.empty()) {
    // The marker holds why; its presence is what counts.
    std::string reason;
    const std::string marker =
        JoinPath(state->dir->path(), PoisonMarkerFileName(failed_logs.back()));
    if (!ReadWholeFile(marker, &reason).ok() || reason.empty()) {
      reason = "the marker says no more";
    }
    absl::Status closed = state->CloseLogBehindCheckpoint(
        wal_generation,
        absl::StrCat("the previous run's log ",
                     state->dir->WalPath(failed_logs.back()), " failed"),
        std::string(absl::StripTrailingAsciiWhitespace(reason)));
    if (!closed.ok()) return closed;
    wal_generation = state->base;
    stale_markers.insert(stale_markers.end(), failed_logs.begin(),
                         failed_logs.end());
  }
  if (failed_logs.empty() && recovered->continued_log_older_format) {
    // A binary of the older version reads that file; records of this
    // version in it would be misread there rather than refused.
    absl::Status closed = state->CloseLogBehindCheckpoint(
        wal_generation,
        absl::StrCat("the log ", state->dir->WalPath(wal_generation),
                     " is of an older format version"),
        absl::StrCat("this build writes version ", kFormatVersion));
    if (!closed.ok()) return closed;
    wal_generation = state->base;
  }
  state->RemoveMarkers(stale_markers);

  absl::StatusOr<std::unique_ptr<WalWriter>> writer =
      WalWriter::Open(state->dir->path(), wal_generation, options.sync,
                      state->io, &state->monitor, options.sync_ahead);
  if (!writer.ok()) return writer.status();
  state->writer = *std::move(writer);
  state->wals.insert(wal_generation);
  // The files before the one continued are replayed by the next start too,
  // until a checkpoint covers them.
  const uint64_t continued = state->writer->bytes_in_generation();
  state->bound->SetClosedBytes(state->base == recovered->base &&
                                       recovered->report.log_bytes > continued
                                   ? recovered->report.log_bytes - continued
                                   : 0);
  state->bound->Appended(continued);

  // The epoch, recorded before any request can be acknowledged under it.
  const std::string boot_id =
      options.boot_id.has_value() ? *options.boot_id : ReadBootId();
  const EpochChoice epoch =
      ChooseEpoch(ReadEpochFile(state->dir->path()), recovered->report,
                  options.sync, boot_id, NewRandomUuid());
  if (absl::Status s = WriteEpochFile(
          state->dir->path(), EpochFile{epoch.epoch, boot_id}, *state->io);
      !s.ok()) {
    return s;
  }
  indexer->SetIndexerEpoch(epoch.epoch);
  if (epoch.kept) {
    spdlog::info("indexer epoch {} kept: recovery was exact", epoch.epoch);
  } else {
    spdlog::info("indexer epoch {} is new: {}", epoch.epoch, epoch.reason);
  }

  std::unique_ptr<DurableStore> store(new DurableStore());
  RecoveryReport& report = store->recovery_;
  report = recovered->report;
  report.failed_log_closed = !failed_logs.empty();
  report.epoch_kept = epoch.kept;
  report.workers = indexer->worker_count();
  if (options.backend != nullptr) {
    BackendStats stats{};
    stats.struct_size = sizeof(BackendStats);
    options.backend->GetStats(&stats);
    report.placements = stats.placements;
  }
  report.elapsed_ms = MillisecondsSince(clock, start);
  // The log's rate tells an operator what a full replay bound would cost
  // (docs/durability.md, "The replay bound").
  const double log_mb_per_s =
      report.log_ms == 0 ? 0.0
                         : static_cast<double>(report.log_bytes) / 1e3 /
                               static_cast<double>(report.log_ms);
  spdlog::info(
      "recovered {} workers, {} placements from checkpoint {} plus {} log "
      "records ({} bytes) in {} ms (checkpoint {} ms, log {} ms: {:.1f} "
      "MB/s)",
      report.workers, report.placements, report.checkpoint_generation,
      report.log_records, report.log_bytes, report.elapsed_ms,
      report.checkpoint_ms, report.log_ms, log_mb_per_s);

  State* s = state.get();
  store->state_ = std::move(state);
  s->thread = std::thread([s] { s->CompactionLoop(); });
  // Replay covered a checkpoint's worth of log already: bound the next
  // start-up's replay at once (unless a failed log was just closed behind
  // a checkpoint).
  if (report.log_bytes >= options.checkpoint_bytes &&
      !report.failed_log_closed) {
    s->StartCompaction();
  }
  indexer->AttachLog(store.get());
  return store;
}

DurableStore::~DurableStore() {
  if (state_ == nullptr) return;
  // First, so that a write waiting for a build cannot hold the Indexer's
  // mutation mutex that detaching takes.
  state_->bound->Stop();
  state_->indexer->AttachLog(nullptr);
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->stop.store(true, std::memory_order_relaxed);
    if (state_->builder != nullptr) state_->builder->Kill();
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
  if (state_->monitor.poisoned()) {
    spdlog::warn(
        "wal: {} is closed without a final sync: the log failed "
        "earlier",
        state_->dir->WalPath(state_->writer->generation()));
    return;
  }
  absl::Status s = state_->writer->WaitDurable(state_->writer->end());
  if (!s.ok()) {
    spdlog::error("wal: final sync of {} failed: {}",
                  state_->dir->WalPath(state_->writer->generation()),
                  std::string(s.message()));
  }
}

absl::StatusOr<uint64_t> DurableStore::Append(
    const state::v1::WalRecord& record) {
  State& s = *state_;
  // Rotating here, before the record, is the consistent cut: the previous
  // mutation is complete and the next has not begun.
  if (s.writer->bytes_in_generation() >= s.rotate_at &&
      !s.compacting.load(std::memory_order_relaxed)) {
    s.StartCompaction();
  }
  if (!record.SerializeToString(&s.payload)) {
    absl::Status refused = absl::UnavailableError(
        "state log write failed: the record does not serialise");
    s.monitor.Refused(WalRefusal::kInvalidRecord,
                      std::string(refused.message()));
    return refused;
  }
  const auto due = [&s] {
    return s.writer->bytes_in_generation() >= s.rotate_at &&
           !s.compacting.load(std::memory_order_relaxed);
  };
  if (s.bound->WaitForRoom(s.writer->bytes_in_generation(),
                           s.payload.size() + kRecordHeaderBytes,
                           [&s] { s.Hurry(); }) &&
      due()) {
    s.StartCompaction();
  }
  absl::StatusOr<uint64_t> end = s.writer->Append(s.payload);
  s.bound->Appended(s.writer->bytes_in_generation());
  return end;
}

void DurableStore::ReleaseWaitingWrites() { state_->bound->Stop(); }

void DurableStore::Retract(uint64_t end) {
  state_->writer->Retract(end);
  state_->bound->Appended(state_->writer->bytes_in_generation());
}

uint64_t DurableStore::end() const { return state_->writer->end(); }

absl::Status DurableStore::WaitDurable(uint64_t offset) {
  return state_->writer->WaitDurable(offset);
}

void DurableStore::WaitForCheckpoints() {
  std::unique_lock<std::mutex> lock(state_->mu);
  state_->cv.wait(lock, [this] {
    return !state_->pending.has_value() &&
           !state_->compacting.load(std::memory_order_relaxed);
  });
}

uint64_t DurableStore::checkpoints_written() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->checkpoints_written;
}

DurableFigures DurableStore::figures() const {
  DurableFigures figures;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    figures.checkpoint_generation = state_->base;
    figures.checkpoints_written = state_->checkpoints_written;
    figures.checkpoint_restarts = state_->checkpoint_restarts;
    figures.last_checkpoint_seconds =
        std::chrono::duration<double>(state_->last_checkpoint).count();
    if (state_->last_checkpoint_at.has_value()) {
      figures.last_checkpoint_unix_seconds =
          std::chrono::duration<double>(
              state_->last_checkpoint_at->time_since_epoch())
              .count();
    }
    figures.checkpoint_failures = state_->failures;
  }
  figures.checkpoint_in_progress =
      state_->compacting.load(std::memory_order_relaxed);
  figures.recovery_cut_bytes = recovery_.cut_bytes;
  figures.recovery_cut_records = recovery_.cut_records;
  figures.recovery_log_damaged = recovery_.log_damaged;
  figures.log_end = state_->writer->end();
  figures.syncs = state_->writer->syncs();
  figures.log_failed = state_->monitor.poisoned();
  figures.append_refusals = state_->monitor.counts();
  figures.replay = state_->bound->figures();
  return figures;
}

std::optional<std::string> DurableStore::LogFailure() const {
  return state_->monitor.Failure();
}

void DurableStore::SetOnLogFailure(
    WalFailureMonitor::FailureCallback callback) {
  state_->monitor.SetOnFailure(std::move(callback));
}

}  // namespace kvindexer::durable
