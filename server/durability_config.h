// The restart-safe state variables (docs/durability.md, "Configuration"):
//
// | Variable                   | Default  | Accepted values                  |
// | KV_INDEXER_DATA_DIR        | (unset)  | a directory path; unset or empty |
// |                            |          | keeps the index in memory only   |
// | KV_INDEXER_WAL_SYNC        | always   | always or none                   |
// | KV_INDEXER_CHECKPOINT_BYTES| 67108864 | integer >= 1048576               |
// | KV_INDEXER_CHECKPOINT_BUILDER | process | process or thread            |
// | KV_INDEXER_CHECKPOINT_TIMEOUT_MS | 600000 | 1000..86400000              |
// | KV_INDEXER_MAX_REPLAY_BYTES | 2 x CHECKPOINT_BYTES | 0 (no bound) or an  |
// |                            |          | integer >= 2 x CHECKPOINT_BYTES  |
//
// The tuning variables are checked whether or not a data directory is
// set: a bad value is a configuration error either way (exit 2). Whether the
// directory can be created, written and locked is only known when the
// server opens it (exit 1).
#ifndef KVINDEXER_SERVER_DURABILITY_CONFIG_H_
#define KVINDEXER_SERVER_DURABILITY_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/env.h"
#include "durable/wal_sync.h"

namespace kvindexer {

inline constexpr std::string_view kDataDirVar = "KV_INDEXER_DATA_DIR";
inline constexpr std::string_view kWalSyncVar = "KV_INDEXER_WAL_SYNC";
inline constexpr std::string_view kCheckpointBytesVar =
    "KV_INDEXER_CHECKPOINT_BYTES";

inline constexpr std::string_view kCheckpointBuilderVar =
    "KV_INDEXER_CHECKPOINT_BUILDER";
inline constexpr std::string_view kCheckpointTimeoutMsVar =
    "KV_INDEXER_CHECKPOINT_TIMEOUT_MS";
inline constexpr std::string_view kMaxReplayBytesVar =
    "KV_INDEXER_MAX_REPLAY_BYTES";

inline constexpr uint64_t kDefaultCheckpointBytes = 64ull << 20;
inline constexpr uint64_t kMinCheckpointBytes = 1ull << 20;
// KV_INDEXER_MAX_REPLAY_BYTES by default, in checkpoint sizes: the least
// the bound allows (the file being covered and the current one), which
// keeps a restart of ten million placements under ten seconds at the worst
// moment on the benchmark machine (docs/durability.md, "The replay bound").
inline constexpr uint64_t kDefaultReplayRotations = 2;
// How long a checkpoint build may run before it is abandoned: ten minutes
// by default, far beyond the seconds a build of ten million placements
// takes; one second to one day.
inline constexpr uint32_t kDefaultCheckpointTimeoutMs = 600'000;
inline constexpr uint32_t kMinCheckpointTimeoutMs = 1'000;
inline constexpr uint32_t kMaxCheckpointTimeoutMs = 86'400'000;

// Where checkpoints are built (docs/durability.md, "Checkpoints"): a
// process of their own (the server's executable run again,
// durable/checkpoint_builder.h) or a thread of the server.
enum class CheckpointBuilder { kProcess, kThread };

struct DurabilityConfig {
  std::string data_dir;  // empty: in memory only
  durable::WalSync wal_sync = durable::WalSync::kAlways;
  uint64_t checkpoint_bytes = kDefaultCheckpointBytes;
  CheckpointBuilder checkpoint_builder = CheckpointBuilder::kProcess;
  std::chrono::milliseconds checkpoint_timeout{kDefaultCheckpointTimeoutMs};
  // The most log a restart replays (durable/replay_bound.h); 0: no bound.
  uint64_t max_replay_bytes = kDefaultReplayRotations * kDefaultCheckpointBytes;

  bool enabled() const { return !data_dir.empty(); }
};

// Errors are InvalidArgument messages that name the variable, quote the
// value and say what is accepted.
[[nodiscard]] absl::StatusOr<durable::WalSync> ParseWalSync(
    std::string_view value);
[[nodiscard]] absl::StatusOr<uint64_t> ParseCheckpointBytes(
    std::string_view value);
[[nodiscard]] absl::StatusOr<CheckpointBuilder> ParseCheckpointBuilder(
    std::string_view value);
[[nodiscard]] absl::StatusOr<std::chrono::milliseconds>
ParseCheckpointTimeoutMs(std::string_view value);
// `checkpoint_bytes` is the configuration's, which the bound must be at
// least twice of (0 is accepted: no bound).
[[nodiscard]] absl::StatusOr<uint64_t> ParseMaxReplayBytes(
    std::string_view value, uint64_t checkpoint_bytes);
[[nodiscard]] absl::StatusOr<DurabilityConfig> LoadDurabilityConfig(
    const EnvLookup& env);

std::string_view WalSyncName(durable::WalSync sync);
std::string_view CheckpointBuilderName(CheckpointBuilder builder);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_DURABILITY_CONFIG_H_
