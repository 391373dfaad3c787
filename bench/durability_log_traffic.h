// Log traffic that leaves the index as it was: one extra worker
// ("log-traffic") REPORTs and REVOKEs the same 16,384 hashes in turn, so
// that every apply is a full-size log record while the index ends where it
// started. kv-indexer-durability-bench uses it to make the server's log
// rotate (which starts a checkpoint) and to fill a log before a restart.
//
// Thread safety: a LogTraffic is read-only once built; Run may be called
// from any thread.
#ifndef KVINDEXER_BENCH_DURABILITY_LOG_TRAFFIC_H_
#define KVINDEXER_BENCH_DURABILITY_LOG_TRAFFIC_H_

#include <atomic>
#include <functional>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "durability_rig.h"
#include "load_client.h"

namespace kvindexer::bench {

class LogTraffic {
 public:
  LogTraffic();

  // Sends REPORT, REVOKE, REPORT, ... one at a time until `done` returns
  // true (asked after every apply) or `stop` is set, and always ends on a
  // REVOKE. Returns the first failure, if any.
  absl::Status Run(ChannelPool* pool, const std::function<bool()>& done,
                   const std::atomic<bool>* stop,
                   absl::Duration rpc_deadline) const;

  // Runs until the log in `data_dir` rotates, which starts a checkpoint:
  // its newest log or checkpoint generation differs from `before`.
  // Answers the seconds that took; DEADLINE_EXCEEDED after `bound`.
  absl::StatusOr<double> RunUntilRotation(ChannelPool* pool,
                                          const std::string& data_dir,
                                          const DirUsage& before,
                                          absl::Duration bound,
                                          absl::Duration rpc_deadline) const;

 private:
  v1::ApplyExternalKvBatchRequest report_;
  v1::ApplyExternalKvBatchRequest revoke_;
};

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_DURABILITY_LOG_TRAFFIC_H_
