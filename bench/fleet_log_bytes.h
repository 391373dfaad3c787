// Phase "log-bytes" of kv-indexer-fleet-bench: what the event log stores
// per block hash (docs/fleet.md, "The event log"). A fresh stream gets
// batches of one size through the bridges' sink; JetStream's own count of
// the stream's bytes (nats-server's /jsz) divided by the hashes appended is
// the figure, record framing, subjects, headers and the LogRecord envelope
// included.
#ifndef KVINDEXER_BENCH_FLEET_LOG_BYTES_H_
#define KVINDEXER_BENCH_FLEET_LOG_BYTES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet_replica.h"

namespace kvindexer::bench {

struct LogBytesFigures {
  uint32_t batch_hashes = 0;
  uint64_t hashes = 0;
  uint64_t records = 0;
  StreamUsage stream;
  double append_seconds = 0;
  double bytes_per_hash() const {
    return hashes == 0 ? 0 : static_cast<double>(stream.bytes) / hashes;
  }
};

// Appends about `total_hashes` hashes (whole batches, spread over
// `workers`) to `log`, which must be empty and the only user of `stream`,
// and reads the stream's usage from the server's monitoring port.
[[nodiscard]] absl::StatusOr<LogBytesFigures> MeasureLogBytes(
    fleet::EventLog& log, int monitor_port, const std::string& stream,
    uint64_t seed, uint32_t workers, uint32_t batch_hashes,
    uint64_t total_hashes);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_FLEET_LOG_BYTES_H_
