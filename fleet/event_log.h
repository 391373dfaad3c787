// The replicated event log of fleet mode (docs/fleet.md): an ordered,
// append-only sequence of opaque records, each filed under one worker.
// Bridges append; replicas read everything in order. Positions are the
// log's own sequence numbers: 1 for the first record ever appended,
// increasing by one per record, never reused, and still counted after the
// records before them have been trimmed away.
//
// The JetStream driver (fleet/jetstream_event_log.h) is the production
// implementation; MemoryEventLog (fleet/memory_event_log.h) has the same
// semantics in one process, for tests. A Redis/Valkey Streams driver would
// be a third implementation of this interface and nothing else.
//
// Thread safety: implementations are thread-safe.
#ifndef KVINDEXER_FLEET_EVENT_LOG_H_
#define KVINDEXER_FLEET_EVENT_LOG_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kvindexer::fleet {

// What Append answers once the log holds the record durably (for JetStream:
// once the stream's quorum has stored it).
struct AppendAck {
  uint64_t position = 0;   // where the record is (the earlier copy's position
                           // when duplicate)
  bool duplicate = false;  // an earlier append had the same dedup id
};

// The worker id ConfigureExpectedWorkers records are filed under: the one
// byte 0xFE (JetStream subject <prefix>.w.fe). 0xFE never occurs in UTF-8,
// so no worker id equals it, and it does not start an encoded stream key
// (core/stream_key.h, which start with 0xFF).
inline constexpr std::string_view kConfigureLogKey = "\xfe";

// The worker id index-wide placement evictions are filed under
// (replica/eviction_proposer.h): the one byte 0xFD (subject <prefix>.w.fd),
// which, as kConfigureLogKey, no worker id or stream key equals.
inline constexpr std::string_view kEvictionLogKey = "\xfd";

struct LoggedRecord {
  uint64_t position = 0;
  std::string worker_id;
  std::string payload;
};

// The positions the log holds now: [first, last]. An empty log has
// first == last + 1 (first == 1, last == 0 when nothing was ever appended).
struct LogBounds {
  uint64_t first = 1;
  uint64_t last = 0;
};

// What identifies one life of a log: a log deleted and created again under
// the same name is another log (fleet/fleet_epoch.h).
struct LogIdentity {
  std::string stream;
  std::string subject_prefix;
  // When the log was created, in nanoseconds since the Unix epoch, as its
  // store reports it (the same value to every reader).
  int64_t created_unix_ns = 0;
};

class EventLog {
 public:
  virtual ~EventLog() = default;

  // The log's identity; nullopt for a log that has none to report (the
  // in-memory log).
  virtual std::optional<LogIdentity> identity() const { return std::nullopt; }

  // Appends `payload` under `worker_id` and waits until it is durable.
  //
  // De-duplication: a non-empty `dedup_id` equal to that of an earlier
  // append within the log's de-duplication window appends nothing and
  // answers that record's position with duplicate = true.
  //
  // Fencing: with `expected_last` set, the append succeeds only when the
  // position of the last record filed under `worker_id` equals it (0: no
  // record under that worker). Otherwise FAILED_PRECONDITION, with a
  // message naming the position found: another writer appended for this
  // worker. A duplicate is recognised before the fence is checked.
  //
  // Errors: FAILED_PRECONDITION (fence), UNAVAILABLE (the log cannot be
  // reached or did not confirm in time: the append may or may not have
  // happened, so retry with the same dedup_id), INVALID_ARGUMENT (a payload
  // above max_payload_bytes(), an empty worker id).
  [[nodiscard]] virtual absl::StatusOr<AppendAck> Append(
      std::string_view worker_id, std::string_view payload,
      std::string_view dedup_id, std::optional<uint64_t> expected_last) = 0;

  // The position of the last record filed under `worker_id`, 0 when none
  // (never appended, or trimmed away).
  [[nodiscard]] virtual absl::StatusOr<uint64_t> LastPositionOf(
      std::string_view worker_id) = 0;

  // Up to `max_records` records from position `from` on, in order, waiting
  // up to `wait` for the first one when there is none yet (an empty vector
  // then). Records before the log's first position are gone: when
  // from < Bounds().first the answer starts at the first record held, and
  // the caller sees the skip in the positions (a replica treats that as
  // "load a snapshot first"). An answer, with records or without, means the
  // log was reached: a read that cannot tell an empty log from one that does
  // not answer is UNAVAILABLE (replicas count answers to measure their
  // silence, replica/log_silence.h). REQUIRES: from >= 1, max_records >= 1.
  [[nodiscard]] virtual absl::StatusOr<std::vector<LoggedRecord>> Read(
      uint64_t from, size_t max_records, std::chrono::milliseconds wait) = 0;

  [[nodiscard]] virtual absl::StatusOr<LogBounds> Bounds() = 0;

  // Removes every record at a position below `position`. Positions are
  // not reused and Bounds().first becomes max(first, position).
  [[nodiscard]] virtual absl::Status TrimBefore(uint64_t position) = 0;

  // The largest payload Append accepts.
  virtual size_t max_payload_bytes() const = 0;
};

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_EVENT_LOG_H_
