// The server side of kv-indexer-durability-bench: a kv-indexer-server
// spawned on a free 127.0.0.1 port in one of the three durability modes
// (docs/durability.md), gRPC connections to it, what it said it recovered,
// and what its data directory holds.
//
// Thread safety: a DurabilityRig is driven by one thread; its pools may be
// used from any thread (load_client.h).
#ifndef KVINDEXER_BENCH_DURABILITY_RIG_H_
#define KVINDEXER_BENCH_DURABILITY_RIG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "load_client.h"
#include "tests/support/recovered_line.h"
#include "tests/support/server_process.h"

namespace kvindexer::bench {

enum class DurabilityMode {
  kOff,     // KV_INDEXER_DATA_DIR unset: the in-memory server
  kNone,    // a data directory, KV_INDEXER_WAL_SYNC=none
  kAlways,  // a data directory, KV_INDEXER_WAL_SYNC=always
};
// "no-data-dir", "wal-none", "wal-always".
const char* ModeName(DurabilityMode mode);

struct RigOptions {
  std::string server_binary;
  std::string backend;     // KV_INDEXER_BACKEND; empty: the server's default
  std::string server_log;  // appended to; empty: a temporary file per server
  uint64_t checkpoint_bytes = 0;  // KV_INDEXER_CHECKPOINT_BYTES; 0: default
  // KV_INDEXER_CHECKPOINT_BUILDER; empty: the server's default.
  std::string checkpoint_builder;
  // KV_INDEXER_MAX_REPLAY_BYTES; empty: the server's default.
  std::string max_replay_bytes;
  uint32_t channels = 4;
  absl::Duration connect_timeout = absl::Seconds(60);
};

using test_support::FindRecoveredLine;
using test_support::RecoveredLine;

class DurabilityRig {
 public:
  // Spawns the server (`data_dir` is ignored for kOff) and connects.
  static absl::StatusOr<std::unique_ptr<DurabilityRig>> Start(
      const RigOptions& options, DurabilityMode mode,
      const std::string& data_dir);

  DurabilityMode mode() const { return mode_; }
  ChannelPool* pool() { return pool_.get(); }
  // Connections of their own, for writes next to the pool's queries.
  ChannelPool* side_pool() { return side_pool_.get(); }
  test_support::ServerProcess& process() { return *process_; }
  // From spawning the process to its "listening" line.
  double seconds_to_listen() const { return seconds_to_listen_; }
  // The server's recovery line; nullopt for kOff or when it printed none.
  const std::optional<RecoveredLine>& recovered() const { return recovered_; }

  // SIGTERM, and the exit status must be 0.
  absl::Status Stop();

 private:
  DurabilityRig() = default;
  DurabilityMode mode_ = DurabilityMode::kOff;
  std::unique_ptr<test_support::ServerProcess> process_;
  std::unique_ptr<ChannelPool> pool_;
  std::unique_ptr<ChannelPool> side_pool_;
  double seconds_to_listen_ = 0;
  std::optional<RecoveredLine> recovered_;
};

// What a data directory holds.
struct DirUsage {
  uint64_t bytes = 0;  // every regular file
  uint64_t checkpoint_bytes = 0;
  uint64_t wal_bytes = 0;
  uint32_t checkpoints = 0;
  uint32_t wals = 0;
  uint64_t newest_checkpoint = 0;  // generation; 0 when none
  uint64_t newest_wal = 0;         // generation; 0 when none
  uint64_t newest_wal_bytes = 0;   // its size
  // The log files from the newest checkpoint's generation on: what a
  // restart would replay (all of them when there is no checkpoint).
  uint64_t tail_bytes = 0;
  bool writing_checkpoint = false;  // a checkpoint-*.tmp exists
};
DirUsage MeasureDir(const std::string& dir);

// No checkpoint in progress: the newest checkpoint is the one of the
// current log generation (checkpoint-<g> holds the state at the start of
// wal-<g>) and no file is being written.
inline bool NoCheckpointInProgress(const DirUsage& d) {
  return d.newest_checkpoint == d.newest_wal && !d.writing_checkpoint;
}

// Polls the data directory every 25 ms (a coarse poll keeps the tool's own
// wake-ups out of the latencies it measures) until `condition` holds for
// it; false when `bound` passes first.
bool WaitForDir(const std::string& dir,
                const std::function<bool(const DirUsage&)>& condition,
                absl::Duration bound);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_RIG_H_
