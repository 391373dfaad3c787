// Discovery for one stream of a multi-stream bridge whose entry has
// "discover": true (docs/bridge-events.md, "Many streams in one process >
// Discovery"): what the stream follows, read from its worker's
// /server_info when the stream starts and again before each
// resynchronisation. An unanswered /server_info is transient; a refusal
// parks the stream.
//
// Thread safety: Resolve() and Recheck() from the stream's thread only;
// advertised_dp_size() from any thread.
#ifndef KVINDEXER_BRIDGE_STREAM_DISCOVERY_H_
#define KVINDEXER_BRIDGE_STREAM_DISCOVERY_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "bridge/backoff.h"
#include "bridge/kv_events_descriptor.h"
#include "bridge/stop_request.h"
#include "bridge/workers_json.h"

namespace kvindexer::bridge {

class StreamDiscovery {
 public:
  // One GET of /server_info: FetchKvEventsDescriptor in production.
  using Fetch =
      std::function<absl::StatusOr<KvEventsDescriptor>(const WorkerUrl&)>;

  // `entry` has discover set; `stop` must outlive this object. `backoff`
  // spaces the tries of Resolve().
  StreamDiscovery(WorkerEntry entry, StopRequest* stop, Fetch fetch,
                  Backoff backoff = Backoff());

  // The entry to follow (ApplyKvEventsDescriptor), fetching until the
  // worker answers, with the reconnect backoff between tries. Returns the
  // refusal (FailedPrecondition) that parks the stream, or Cancelled once
  // `stop` is triggered.
  [[nodiscard]] absl::StatusOr<WorkerEntry> Resolve();

  // One fetch before a resynchronisation of a stream following
  // `following`. OK when the worker advertises the same or does not answer
  // (the stream goes on with what it has); the refusal when it now refuses;
  // Aborted when it advertises another endpoint, topic or block size (the
  // stream must start again to follow it).
  [[nodiscard]] absl::Status Recheck(const WorkerEntry& following);

  // The dp_size the worker last advertised; 0 before any answer.
  uint32_t advertised_dp_size() const { return dp_size_.load(); }

 private:
  // One fetch and its application; Unavailable when unanswered.
  absl::StatusOr<WorkerEntry> FetchOnce();

  const WorkerEntry entry_;
  StopRequest* stop_;
  const Fetch fetch_;
  const Backoff initial_backoff_;
  std::atomic<uint32_t> dp_size_{0};
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_STREAM_DISCOVERY_H_
