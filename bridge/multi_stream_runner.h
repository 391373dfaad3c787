// The bridge in multi-stream mode (KV_INDEXER_WORKERS_JSON;
// docs/bridge-events.md, "Many streams in one process"): one thread per
// entry runs that stream's reader and recovery engine under a
// StreamSupervisor, all over one gRPC channel to KV_INDEXER_ENDPOINT, and
// one ConfigureExpectedWorkers covers every stream that is not parked; the
// calling thread sends it at start and once a second and each stream at
// its resynchronisations (so a stream whose key the server refuses, once
// parked by its own refused requests, does not keep the others
// unconfigured), and prints the stats lines. A change of the indexer epoch
// in an answer makes every stream resynchronise after its own random wait;
// at most KV_INDEXER_SNAPSHOT_CONCURRENCY snapshot fetches with their
// installs run at a time. A stream of an
// entry with "discover" first learns what it follows from the worker's
// /server_info (stream_discovery.h) and is configured only then; an
// all_dp_ranks entry gains a stream for each rank its worker advertises. A
// failure stops only its own stream; the process ends on shutdown only.
//
// Thread safety: Run() from one thread; the StopRequest may be triggered
// from any thread.
#ifndef KVINDEXER_BRIDGE_MULTI_STREAM_RUNNER_H_
#define KVINDEXER_BRIDGE_MULTI_STREAM_RUNNER_H_

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "bridge/bridge_config.h"
#include "bridge/configure_broadcaster.h"
#include "bridge/stop_request.h"
#include "bridge/stream_recovery.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

// The Configure request of a multi-stream bridge: one expected worker per
// entry of `entries` (the streams not parked), with its stream key and
// metadata, the configuration's cache spec and, when `generations[i]` is
// not empty, that worker generation for entries[i].
kv_indexer::v1::ConfigureExpectedWorkersRequest MultiStreamConfigure(
    const BridgeConfig& config, const std::vector<const WorkerEntry*>& entries,
    const std::vector<std::string>& generations = {});

// Whether `request` lists the stream of `entry` (its namespace, worker id
// and DP rank).
bool ListsStream(const kv_indexer::v1::ConfigureExpectedWorkersRequest& request,
                 const WorkerEntry& entry);

// A stream's own Configure (its RecoveryIo::configure, sent as it starts a
// resynchronisation): the process's current list through `broadcaster`,
// sent with `send` unless `stopping()` says the stream is stopping (then
// CANCELLED, nothing sent). True only when the server accepted a list that
// names `entry`'s stream: that Configure registered the stream, and the
// engine sends no registration apply of its own. False when the list was
// refused or did not get through, left the stream out (parked, or not yet
// followed), or was empty (nothing sent).
bool ConfigureStream(ConfigureBroadcaster& broadcaster,
                     const WorkerEntry& entry,
                     const std::function<bool()>& stopping,
                     const ConfigureBroadcaster::Sender& send);

// The recovery options of one entry: the configuration's, with the entry's
// worker id, address and stream key, and the entry as the expectation a
// snapshot-v2 header must meet (which also selects staged installs).
RecoveryOptions RecoveryOptionsForEntry(const BridgeConfig& config,
                                        const WorkerEntry& entry);

class MultiStreamRunner {
 public:
  // `shutdown` must outlive the runner. REQUIRES: !config.workers.empty().
  MultiStreamRunner(BridgeConfig config, StopRequest* shutdown,
                    std::chrono::milliseconds park_period);

  // Runs until shutdown; returns kExitOk (or kExitPermanentError when the
  // metrics endpoint cannot be served).
  int Run();

 private:
  const BridgeConfig config_;
  StopRequest* shutdown_;
  const std::chrono::milliseconds park_period_;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_MULTI_STREAM_RUNNER_H_
