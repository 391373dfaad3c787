// The one ConfigureExpectedWorkers of a multi-stream bridge
// (docs/bridge-events.md, "Many streams in one process > One channel, one
// Configure"), sent by the runner once a second and by each stream at its
// resynchronisations. Sends are serialised and each request is built just
// before it goes, so a Configure never overtakes a newer one (a stream's
// new worker generation is never undone by an older list still in flight).
// The indexer_epoch of each answer goes to the IndexerEpochWatch.
//
// Thread safety: Send() may be called from any thread.
#ifndef KVINDEXER_BRIDGE_CONFIGURE_BROADCASTER_H_
#define KVINDEXER_BRIDGE_CONFIGURE_BROADCASTER_H_

#include <functional>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "bridge/indexer_epoch_watch.h"
#include "kv_indexer.pb.h"

namespace kvindexer::bridge {

class ConfigureBroadcaster {
 public:
  // The current list of streams (called under the broadcaster's lock).
  using List = std::function<kv_indexer::v1::ConfigureExpectedWorkersRequest()>;
  // Sends one request (an IndexerClient's Configure, in production).
  using Sender = std::function<absl::Status(
      const kv_indexer::v1::ConfigureExpectedWorkersRequest&,
      kv_indexer::v1::ConfigureExpectedWorkersResponse*)>;

  // `epochs` must outlive the broadcaster.
  ConfigureBroadcaster(List list, IndexerEpochWatch* epochs)
      : list_(std::move(list)), epochs_(epochs) {}

  // Builds the list and sends it with `send`; OK without sending when the
  // list is empty. Waits while another Send() runs.
  absl::Status Send(const Sender& send);
  // Send(), or nullopt at once when another Send() is running (that one
  // carries a list at least as new): the periodic sender never waits
  // behind a stream's call, so it keeps noticing shutdown.
  std::optional<absl::Status> TrySend(const Sender& send);

 private:
  // REQUIRES: mu_ held.
  absl::Status SendLocked(const Sender& send);

  const List list_;
  IndexerEpochWatch* const epochs_;
  std::mutex mu_;  // one Configure at a time
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_CONFIGURE_BROADCASTER_H_
