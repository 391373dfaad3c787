// SnapshotSource over SGLang's snapshot ROUTER socket (docs/bridge-events.md,
// "Replay and snapshot channels" and "Recovery > Mode S"). One request per
// protocol attempt, on a fresh DEALER socket (bridge/dealer_request.h):
//   request  [empty]["snapshot-v2"] or [empty]["snapshot-v1"]
//   replies  [empty][kind][payload], kind one of
//     "header"  the header (bridge/snapshot_parse.h has both layouts)
//     "chunk"   records
//     "end"     empty payload; the snapshot is complete
//     "error"   a UTF-8 message from the provider; the fetch fails
// The header comes first (or an error); the payloads are validated as
// bridge/snapshot_parse.h says, and the records received must match the
// header's record_count.
//
// Protocol choice (SGLANG_KV_SNAPSHOT_PROTOCOL): kAuto asks for snapshot-v2;
// when the publisher answers that request with an `error` frame (what a
// v1-only publisher answers any other command with) it asks for snapshot-v1
// within the same fetch (one WARN per process: v1 is tier-blind). Every
// fetch asks for v2 first, so a transient error of a v2 publisher or an
// upgraded publisher costs at most that one fetch. kV2 and kV1 ask for that
// protocol only.
//
// Thread safety: Fetch() may be called from one thread at a time.
#ifndef KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_
#define KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "bridge/dealer_request.h"
#include "bridge/snapshot_parse.h"
#include "bridge/snapshot_source.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

inline constexpr std::chrono::milliseconds kSnapshotFetchTimeout{30000};

class SnapshotClient final : public SnapshotSource {
 public:
  // `context` and `shutdown` must outlive the client; `shutdown` may be
  // null. `endpoint` is SGLANG_KV_SNAPSHOT_ENDPOINT for this DP rank, and
  // `replica_rank` that rank. `fetch_timeout` bounds the whole fetch, a
  // fallback from v2 to v1 included. `compare_v2_rank` false: a v2
  // header naming another rank is returned (its fields carry the rank) for
  // the caller to refuse; a v1 header's rank is always compared.
  SnapshotClient(
      zmq::context_t* context, std::string endpoint, uint32_t replica_rank,
      const StopRequest* shutdown,
      std::chrono::milliseconds fetch_timeout = kSnapshotFetchTimeout,
      SnapshotProtocol protocol = SnapshotProtocol::kAuto,
      bool compare_v2_rank = true);

  absl::StatusOr<PublisherSnapshot> Fetch() override;

 private:
  // How one protocol attempt ended.
  struct Attempt {
    absl::StatusOr<PublisherSnapshot> snapshot;
    // The provider answered the request with an `error` frame before any
    // header (a refusal, for v2 from a v1-only publisher).
    bool refused = false;
  };
  Attempt FetchVersion(uint32_t version,
                       DealerRequest::Clock::time_point deadline);
  absl::StatusOr<PublisherSnapshot> FetchV1(
      DealerRequest::Clock::time_point deadline);

  zmq::context_t* const context_;
  const std::string endpoint_;
  const uint32_t replica_rank_;
  const StopRequest* const shutdown_;
  const std::chrono::milliseconds fetch_timeout_;
  const SnapshotProtocol protocol_;
  const bool compare_v2_rank_;
  bool warned_tier_blind_ = false;
};

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_SNAPSHOT_CLIENT_H_
