// Restart of a loaded server on its data directory: what the directory
// holds, how long recovery takes (the server's own figure and the time from
// spawning the process to its "listening" line) and whether the index
// answers the fleet's headline query as before.
#ifndef KVINDEXER_BENCH_DURABILITY_RECOVERY_H_
#define KVINDEXER_BENCH_DURABILITY_RECOVERY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "durability_rig.h"
#include "load_client.h"

namespace kvindexer::bench {

enum class RestartKind {
  kSigterm,
  kSigkill,
  // SIGKILL once log traffic (durability_log_traffic.h) has filled the
  // current log file to 90% of the checkpoint size (less for small sizes,
  // so that it does not rotate): most of a generation to replay.
  kSigkillFullLog,
  // SIGKILL after ChurnOptions::duration of log traffic at the highest rate
  // ChurnOptions::streams concurrent senders reach: what a restart replays
  // after sustained writes, checkpoints being built all along.
  kSigkillAfterChurn,
  // The same churn, which then goes on until the log a restart would
  // replay is within three records of KV_INDEXER_MAX_REPLAY_BYTES (writes
  // then wait for the build in progress), or until ChurnOptions::cap_wait
  // has passed; SIGKILL at once: the bound's worst moment, which a server
  // whose builds keep up with the writes never reaches unless
  // ChurnOptions::stall_builds holds them back.
  kSigkillAtCap,
};

struct ChurnOptions {
  absl::Duration duration = absl::Minutes(10);
  uint32_t streams = 2;
  absl::Duration rpc_deadline = absl::Seconds(10);
  // kSigkillAtCap: how long the churn goes on after `duration` waiting for
  // the log to reach the cap.
  absl::Duration cap_wait = absl::Minutes(2);
  // kSigkillAtCap: after `duration`, stop (SIGSTOP) every checkpoint
  // builder process the server starts, so that the log reaches the cap
  // however fast builds are: a build that cannot finish in time (a starved
  // CPU, a slow disk) at its worst.
  bool stall_builds = false;
};
// "sigterm", "sigkill", "sigkill-full-log", "sigkill-after-churn",
// "sigkill-at-cap"; nullopt for anything else.
std::optional<RestartKind> ParseRestartKind(const std::string& name);
const char* RestartKindName(RestartKind kind);

struct RestartFigures {
  RestartKind kind = RestartKind::kSigterm;
  DirUsage dir;  // after the old server ended
  RecoveredLine recovered;
  double seconds_to_listen = 0;
  bool headline_ok = false;  // every worker matches the whole anchor prefix
  // kSigkillAfterChurn and kSigkillAtCap: hashes applied per second during
  // the churn.
  double churn_hashes_per_s = 0;
  // kSigkillAtCap: whether the log the restart replays was at the cap.
  bool reached_cap = false;
};

struct HeadlineCheck {
  v1::MatchExternalKvPrefixRequest query;
  uint32_t workers = 0;        // workers that must match
  uint32_t prefix_blocks = 0;  // each one over this many blocks
};

// The server's log sizes: KV_INDEXER_CHECKPOINT_BYTES and
// KV_INDEXER_MAX_REPLAY_BYTES (0: no bound).
struct LogSizes {
  uint64_t checkpoint_bytes = 0;
  uint64_t max_replay_bytes = 0;
};

// Ends `*rig` as `kind` says, starts a new server on `data_dir` in its
// place, in the mode `*rig` ran in, and checks it.
[[nodiscard]] absl::StatusOr<RestartFigures> MeasureRestart(
    std::unique_ptr<DurabilityRig>* rig, const RigOptions& rig_options,
    const std::string& data_dir, RestartKind kind, const LogSizes& sizes,
    const HeadlineCheck& headline, const ChurnOptions& churn);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_RECOVERY_H_
