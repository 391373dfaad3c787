// DurableStore: KV_INDEXER_DATA_DIR at work (docs/durability.md). Open()
// locks the directory, recovers the Indexer (newest valid checkpoint, then
// the log after it, replayed through the Indexer), attaches itself as the
// Indexer's MutationLog and starts a compaction thread that turns a full
// log generation into the next checkpoint without blocking queries, itself
// or through a builder process (options.checkpoint_builder).
//
// Files (docs/durability.md, "The data directory"): checkpoint-<g>.ckpt
// holds the state at the start of wal-<g>.log. Once the current log file
// holds checkpoint_bytes, the next Append (under the Indexer's mutation
// mutex, so between two mutations) closes it and continues in generation
// g + 1; the compaction thread then builds checkpoint-<g + 1>.ckpt from the
// newest checkpoint and the closed log files, and deletes what is older
// than that base, so that one earlier generation always remains as the
// fallback for a damaged checkpoint. A failed checkpoint is logged (ERROR),
// counted by reason and tried again at the next rotation; it never fails a
// mutation. A build that runs longer than options.checkpoint_timeout is
// abandoned (its process killed, or its thread stopped at its next check)
// and fails the same way.
//
// A failed log (durable/wal_writer.h: a failed fdatasync poisons the
// writer, which then refuses every write and leaves wal-<g>.poisoned) is
// final for the process: LogFailure() reports it and the server stops
// reporting SERVING (docs/health.md). The next Open never continues such a
// file: before it returns it builds the checkpoint of the next generation
// from what the files hold, and the log goes on in a new file behind it.
// The failed file's pages may be in the page cache but not on the disk;
// behind the new checkpoint, nothing acknowledged later depends on them.
//
// Thread safety: Append, Retract and end() are called under the Indexer's
// mutation mutex; WaitDurable, WaitForCheckpoints, checkpoints_written,
// figures, LogFailure and SetOnLogFailure from any thread.
#ifndef KVINDEXER_DURABLE_DURABLE_STORE_H_
#define KVINDEXER_DURABLE_DURABLE_STORE_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "core/durable_state.h"
#include "core/mutation_log.h"
#include "durable/checkpoint_failure.h"
#include "durable/file_io.h"
#include "durable/recovery_report.h"
#include "durable/replay_bound.h"
#include "durable/wal_failure_monitor.h"
#include "durable/wal_sync.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

struct DurableOptions {
  std::string dir;
  WalSync sync = WalSync::kAlways;
  // With kAlways: start each record's sync as it is appended, so that it
  // overlaps the backend's apply (durable/wal_writer.h). Tests that count
  // syncs turn it off.
  bool sync_ahead = true;
  // The log bytes since the last checkpoint that start the next one.
  uint64_t checkpoint_bytes = 64ull << 20;
  // The most log a restart may have to replay: a write that would pass it
  // waits for the checkpoint build in progress (durable/replay_bound.h).
  // 0: no bound. Below twice checkpoint_bytes a write that waited may still
  // pass it.
  uint64_t max_replay_bytes = 0;
  // Null: FileIo::Real(). For tests that inject write failures.
  FileIo* io = nullptr;
  // The serving Indexer's backend, read (GetStats) for the placement count
  // of the recovery line, asked by compactions how large their image will
  // be (durable/compactor.h) and, from ABI minor 4, told to take recovery as
  // a bulk load (durable/startup_bulk_load.h). Null: the checkpoint's
  // count is reported, and the image grows as it goes.
  IndexBackend* backend = nullptr;
  // The ABI minor the Indexer uses `backend` at (LoadedBackend::abi_minor()):
  // from 2 compactions ask it for placement counts (CountPlacements), from
  // 4 recovery sets its write mode (SetWriteMode).
  uint32_t backend_abi_minor = kBackendAbiMinor;
  // Empty: checkpoints are built by a thread of this process. Otherwise an
  // executable that runs RunCheckpointBuilder when called with
  // CheckpointBuilderCommand (durable/checkpoint_builder.h), for example
  // the server's own (/proc/self/exe): each checkpoint is built by a process
  // of its own and published here. When it cannot be started the build
  // falls back to the thread, with a WARN.
  std::string checkpoint_builder = {};
  // How long one checkpoint build may run (from its start to its
  // publication) before it is abandoned and counted as a failure.
  std::chrono::milliseconds checkpoint_timeout = std::chrono::minutes(10);
  // Raises a build (thread or process id) to normal priority while writes
  // wait for it; null: RaiseToNormal (durable/build_priority.h). Tests
  // refuse it to stand for a server without CAP_SYS_NICE.
  std::function<absl::Status(pid_t)> raise_priority = nullptr;
  // The clock of that timeout and of build durations, and the one of the
  // last checkpoint's timestamp; null: the real ones.
  const MonotonicClock* clock = nullptr;
  const WallClock* wall_clock = nullptr;
  // This boot's id for the epoch rule (durable/epoch_choice.h); nullopt:
  // read from the kernel (ReadBootId).
  std::optional<std::string> boot_id = std::nullopt;
};

// Figures for the metrics (docs/metrics.md, "Data directory").
struct DurableFigures {
  uint64_t log_end = 0;  // logical log offset: bytes of records appended
  uint64_t checkpoint_generation = 0;  // the newest committed checkpoint
  uint64_t checkpoints_written = 0;    // by this process
  // Idle builds that writes waited for and that could not be raised,
  // stopped and started over at normal priority, by this process.
  uint64_t checkpoint_restarts = 0;
  double last_checkpoint_seconds = 0;  // 0 before the first
  // When the last checkpoint of this process was in place, in seconds since
  // the Unix epoch; 0 before the first.
  double last_checkpoint_unix_seconds = 0;
  // True from a rotation until its checkpoint is written or has failed.
  bool checkpoint_in_progress = false;
  CheckpointFailureCounts checkpoint_failures;  // by this process, by reason
  uint64_t syncs = 0;                // fdatasyncs that acknowledged writes
  bool log_failed = false;           // LogFailure() has a value
  WalRefusalCounts append_refusals;  // appends the log refused, by reason
  // What the start-up recovery cut off or set aside (RecoveryReport).
  uint64_t recovery_cut_bytes = 0;
  uint64_t recovery_cut_records = 0;
  bool recovery_log_damaged = false;
  ReplayBoundFigures replay;  // the replay bound's figures
};

class DurableStore final : public MutationLog {
 public:
  // Recovers `indexer` (which must have applied nothing) from options.dir,
  // sets its indexer epoch (kept or new, durable/epoch_choice.h) and
  // rewrites the directory's INDEXER_EPOCH file, logs "recovered W workers, P
  // placements from checkpoint G plus R log records (B bytes) in T ms
  // (checkpoint C ms, log L ms: X MB/s)" at INFO
  // and attaches the store to it. A damaged checkpoint or log tail is set aside
  // as recovery_loader.h describes; the report says what happened. Errors that
  // must stop the server (exit 1): the directory cannot be created or locked
  // (FAILED_PRECONDITION naming the holder's PID), a file has a newer format
  // version (FAILED_PRECONDITION; nothing in the directory was changed), a
  // record with a valid checksum does not parse or apply (INTERNAL; the
  // Indexer then holds part of the state), I/O fails, the checkpoint that
  // must close a failed log cannot be written (the error names the log).
  // REQUIRES: `indexer` (and options.io, options.backend when set) outlive
  // the store.
  static absl::StatusOr<std::unique_ptr<DurableStore>> Open(
      const DurableOptions& options, DurableState* indexer);
  // Detaches from the Indexer, stops the compaction thread (a checkpoint in
  // progress is abandoned; its temporary file is deleted) and syncs the log.
  ~DurableStore() override;

  const RecoveryReport& recovery() const { return recovery_; }

  absl::StatusOr<uint64_t> Append(const state::v1::WalRecord& record) override;
  void Retract(uint64_t end) override;
  uint64_t end() const override;
  absl::Status WaitDurable(uint64_t offset) override;

  // From now on no write waits at the replay cap, and one waiting goes on:
  // the server is shutting down. Thread-safe.
  void ReleaseWaitingWrites();

  // Blocks until no checkpoint is being written. For tests and benchmarks.
  void WaitForCheckpoints();
  uint64_t checkpoints_written() const;
  // Thread-safe; takes the store's and the log's locks briefly.
  DurableFigures figures() const;

  // The log's failure: set once the log refuses every write until the
  // server restarts (WalFailureMonitor::Failure); nullopt while it works.
  std::optional<std::string> LogFailure() const;
  // Called once when the log fails; at once when it already has. Null
  // clears it. REQUIRES: the callback outlives its setting.
  void SetOnLogFailure(WalFailureMonitor::FailureCallback callback);

 private:
  DurableStore() = default;
  struct State;
  std::unique_ptr<State> state_;
  RecoveryReport recovery_;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_DURABLE_STORE_H_
