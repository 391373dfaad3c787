// WalWriter: appends framed records to wal-<generation>.log files and makes
// them durable with group commit (docs/durability.md, "Write-ahead log").
//
// One thread at a time appends, retracts or rotates (the Indexer's mutation
// mutex serialises them); any number of threads wait for durability. With
// WalSync::kAlways the first waiter that finds no sync in flight syncs
// everything appended so far, for itself and for every waiter it covers;
// the others wait for it. A failed write cuts the file back to the end of
// the last whole record and reports UNAVAILABLE; a failed sync poisons the
// writer (every later Append and WaitDurable fails), because after a failed
// fdatasync Linux no longer says which writes reached the disk. A poisoned
// writer leaves wal-<generation>.poisoned beside its file, so that the next
// start does not continue that file (durable/durable_store.h), and reports
// the poisoning, like every refused append, to its WalFailureMonitor.
//
// With WalSync::kAlways and `sync_ahead`, a thread of the writer syncs
// ahead: as soon as a record is appended and no sync is running, it starts
// one, so that the sync overlaps whatever the caller does between appending
// and waiting (the Indexer applies the mutation to the backend meanwhile). A
// caller that waits then finds its record durable, or a sync in flight that
// will make it so; concurrent appends still share syncs.
//
// Logical offsets count every record byte appended since Open, across
// rotations (file headers excluded).
#ifndef KVINDEXER_DURABLE_WAL_WRITER_H_
#define KVINDEXER_DURABLE_WAL_WRITER_H_

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "durable/file_io.h"
#include "durable/wal_failure_monitor.h"
#include "durable/wal_sync.h"

namespace kvindexer::durable {

class WalWriter {
 public:
  // Continues wal-<generation>.log in `dir` when it exists (recovery has
  // already cut it to its last whole record), else creates it with its
  // header; the file and the directory are synced before returning.
  // REQUIRES: io and monitor (when given) outlive the writer; a null io
  // means FileIo::Real(), a null monitor one of the writer's own.
  // `sync_ahead` (with kAlways): see the file comment; off, a record is
  // synced only when someone waits for it.
  static absl::StatusOr<std::unique_ptr<WalWriter>> Open(
      const std::string& dir, uint64_t generation, WalSync sync,
      FileIo* io = nullptr, WalFailureMonitor* monitor = nullptr,
      bool sync_ahead = false);
  ~WalWriter();
  WalWriter(const WalWriter&) = delete;
  WalWriter& operator=(const WalWriter&) = delete;

  // Writes one framed record (durable/record_framing.h) with `payload` and
  // returns the logical offset just past it. On failure nothing of it stays
  // in the file, UNAVAILABLE "state log write failed: <reason>" is returned
  // and the refusal is reported to the monitor.
  absl::StatusOr<uint64_t> Append(std::string_view payload);
  // Takes back the last record (its end was `end`). REQUIRES: no Append
  // since; waits for a sync in flight to finish first.
  void Retract(uint64_t end);
  uint64_t end() const;
  // See the class comment. Thread-safe.
  absl::Status WaitDurable(uint64_t offset);

  // Syncs the current file and continues in wal-<generation>.log (created
  // with its header, file and directory synced). REQUIRES: as Append;
  // generation > this->generation().
  absl::Status Rotate(uint64_t generation);
  uint64_t generation() const;
  // Record bytes in the current file.
  uint64_t bytes_in_generation() const;
  // fdatasync calls WaitDurable made, for the metrics. Thread-safe.
  uint64_t syncs() const;
  // The status every write now gets once the writer is poisoned; OK before.
  // Thread-safe.
  absl::Status poison() const;

 private:
  WalWriter(std::string dir, WalSync sync, FileIo* io,
            WalFailureMonitor* monitor);
  // Hands a poisoning that happened since the last call to the monitor and
  // leaves the marker file; once the writer is poisoned, returns only when
  // the poisoning is reported, by this thread or another. REQUIRES: the
  // State mutex not held.
  void ReportPoison();
  // The sync-ahead thread's body (kAlways): waits for records beyond what
  // is durable and syncs them, until the writer closes or is poisoned.
  void SyncAhead();
  class ReportPoisonOnReturn;
  std::string dir_;
  WalSync sync_;
  FileIo* io_;
  std::unique_ptr<WalFailureMonitor> own_monitor_;
  WalFailureMonitor* monitor_;
  // Implementation state (fd, offsets, sync mutex, poison status) is the
  // implementer's; see wal_writer.cc.
  struct State;
  std::unique_ptr<State> state_;
  std::thread sync_ahead_;  // kAlways only; joined by the destructor
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_WAL_WRITER_H_
