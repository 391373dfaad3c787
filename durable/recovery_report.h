// RecoveryReport: what start-up recovery found in the data directory, for
// the server's INFO line and for tests (docs/durability.md, "Recovery").
#ifndef KVINDEXER_DURABLE_RECOVERY_REPORT_H_
#define KVINDEXER_DURABLE_RECOVERY_REPORT_H_

#include <cstdint>

namespace kvindexer::durable {

struct RecoveryReport {
  uint64_t checkpoint_generation = 0;  // 0: none was loaded
  uint64_t workers = 0;  // DurableState::worker_count() afterwards
  // Placements held afterwards: the backend's count when the store was given
  // the backend, else those the checkpoint restored.
  uint64_t placements = 0;
  uint64_t log_records = 0;  // replayed
  uint64_t log_bytes = 0;    // record bytes replayed (file headers excluded)
  uint64_t elapsed_ms = 0;
  // Of elapsed_ms: loading the checkpoint (damaged ones tried first
  // included) and replaying the log after it, on the steady clock (figures
  // for operators; elapsed_ms follows the store's clock). The rest is
  // mostly the backend's end of the start-up load (StartupBulkLoad), then
  // listing and setting files aside and the epoch. Both 0 when recovery
  // started empty.
  uint64_t checkpoint_ms = 0;
  uint64_t log_ms = 0;
  bool torn_tail = false;  // a log tail was cut off
  // Log bytes cut off or set aside (whole files after a cut or a missing
  // generation, and the logs of a directory that started empty), and the
  // intact records among them.
  uint64_t cut_bytes = 0;
  uint64_t cut_records = 0;
  // Some of them were damage rather than a torn tail: intact records were
  // lost, acknowledged ones among them (durable/wal_damage.h). Logged at
  // ERROR; the bytes are kept in the directory.
  bool log_damaged = false;
  // Whole log files were set aside (*.corrupt) after a cut or a missing
  // generation: their records were not replayed.
  bool logs_set_aside = false;
  bool checkpoint_fallback = false;  // a corrupt checkpoint was set aside
  bool started_empty = false;        // no usable checkpoint: state was lost
  // The previous run's log failed (a wal-<g>.poisoned marker): it was closed
  // behind a new checkpoint, and writing goes on in a new log file.
  bool failed_log_closed = false;
  // The indexer epoch of the previous run was kept (durable/epoch_choice.h).
  bool epoch_kept = false;
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_RECOVERY_REPORT_H_
