// Opens where the bridge sends its requests (KV_INDEXER_SINK; docs/fleet.md,
// "Configuration"): the gRPC IndexerClient, or a LogApplier over the fleet's
// JetStream event log.
#ifndef KVINDEXER_BRIDGE_APPLIER_FACTORY_H_
#define KVINDEXER_BRIDGE_APPLIER_FACTORY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "bridge/bridge_config.h"
#include "bridge/kv_applier.h"
#include "bridge/stop_request.h"

namespace kvindexer::bridge {

// Connects to the configured sink. UNAVAILABLE: nothing answered, retry
// with backoff; any other error is permanent (e.g. a JetStream stream whose
// settings cannot serve as the log). `shutdown` must outlive the applier.
[[nodiscard]] absl::StatusOr<std::unique_ptr<KvApplier>> ConnectApplier(
    const BridgeConfig& config, StopRequest* shutdown);

// Where the applier sends, for the start-up log: the endpoint or the
// stream.
std::string DescribeSink(const BridgeConfig& config);

// This process's producer identity in the event log:
// "<hostname>:<pid>:<64 random bits in hex>".
std::string MakeProducerId();

}  // namespace kvindexer::bridge

#endif  // KVINDEXER_BRIDGE_APPLIER_FACTORY_H_
