// NatsClient: one connection to NATS with its JetStream context, shared by
// everything fleet mode keeps in JetStream (docs/fleet.md, "The event log on
// JetStream"): the event log, the snapshot store and the snapshot lease.
// Also the small helpers the JetStream drivers share: how a failed call of
// the client library becomes an absl::Status, and owning pointers for its
// objects.
//
// Thread safety: a NatsClient is thread-safe (the client library's
// connection and context are); it lives as long as its last holder.
#ifndef KVINDEXER_FLEET_NATS_CONNECTION_H_
#define KVINDEXER_FLEET_NATS_CONNECTION_H_

#include <nats/nats.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/absl_view.h"
#include "fleet/fleet_config.h"

namespace kvindexer::fleet {

class NatsClient {
 public:
  // Connects with the options of docs/fleet.md, "Configuration" (reconnects
  // forever once connected). INVALID_ARGUMENT naming the variable for a bad
  // option; UNAVAILABLE when no server answers within the timeout.
  //
  // While disconnected, the connection buffers what is published and sends
  // it once reconnected: a write answered UNAVAILABLE may still be applied
  // later, as one that timed out may. The stores' fences (expected last
  // sequence) keep such late writes from doing harm.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<NatsClient>> Connect(
      const NatsConnection& config);

  ~NatsClient();
  NatsClient(const NatsClient&) = delete;
  NatsClient& operator=(const NatsClient&) = delete;

  // OWNERSHIP: both stay owned by this object.
  natsConnection* connection() const { return nc_; }
  jsCtx* jetstream() const { return js_; }
  // The per-request timeout (KV_INDEXER_NATS_TIMEOUT_MS).
  uint32_t timeout_ms() const { return timeout_ms_; }
  // The largest message the server takes, headers included.
  size_t max_payload() const;
  bool connected() const;

 private:
  NatsClient(natsConnection* nc, jsCtx* js, uint32_t timeout_ms)
      : nc_(nc), js_(js), timeout_ms_(timeout_ms) {}

  natsConnection* const nc_;
  jsCtx* const js_;
  const uint32_t timeout_ms_;
};

// The client library's description of the last failure on this thread.
std::string NatsErrorText(natsStatus s);
// The same, with the JetStream error code when there is one.
std::string DescribeNatsFailure(natsStatus s, jsErrCode jerr);
// UNAVAILABLE "<what>: <failure>": the connection or the servers failed,
// the caller retries.
absl::Status NatsUnavailable(std::string_view what, natsStatus s,
                             jsErrCode jerr);

struct NatsMsgDeleter {
  void operator()(natsMsg* m) const { natsMsg_Destroy(m); }
};
struct JsPubAckDeleter {
  void operator()(jsPubAck* a) const { jsPubAck_Destroy(a); }
};
struct JsStreamInfoDeleter {
  void operator()(jsStreamInfo* s) const { jsStreamInfo_Destroy(s); }
};
struct JsMetaDataDeleter {
  void operator()(jsMsgMetaData* m) const { jsMsgMetaData_Destroy(m); }
};
using NatsMsgPtr = std::unique_ptr<natsMsg, NatsMsgDeleter>;
using JsPubAckPtr = std::unique_ptr<jsPubAck, JsPubAckDeleter>;
using JsStreamInfoPtr = std::unique_ptr<jsStreamInfo, JsStreamInfoDeleter>;
using JsMetaDataPtr = std::unique_ptr<jsMsgMetaData, JsMetaDataDeleter>;

}  // namespace kvindexer::fleet

#endif  // KVINDEXER_FLEET_NATS_CONNECTION_H_
