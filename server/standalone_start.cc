#include "server/standalone_start.h"

#include <memory>
#include <optional>
#include <string>

#include "durable/durable_store.h"
#include "server/durability_config.h"
#include "server/server_mode.h"
#include "server/server_runner.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

// A standalone server runs nothing beside the gRPC server; with a data
// directory, the store reports a failed log to health and /readyz.
class StandaloneMode final : public ServerMode {
 public:
  // `store` null: no data directory. REQUIRES: `store` outlives the mode.
  explicit StandaloneMode(durable::DurableStore* store) : store_(store) {}

  void Attach(ServingHealth& health) override {
    if (store_ == nullptr) return;
    store_->SetOnLogFailure(
        [&health](const std::string& failure) { health.LogFailed(failure); });
  }
  std::optional<std::string> NotReadyReason() const override {
    if (store_ == nullptr) return std::nullopt;
    if (std::optional<std::string> failure = store_->LogFailure()) {
      return "state log failed: " + *failure;
    }
    return std::nullopt;
  }
  void Draining() override {
    if (store_ != nullptr) store_->ReleaseWaitingWrites();
  }
  void Stop() override {
    if (store_ != nullptr) store_->SetOnLogFailure(nullptr);
  }

 private:
  durable::DurableStore* const store_;
};

}  // namespace

int RunStandalone(ServerWiring& wiring) {
  const ServerConfig& config = wiring.config();
  const DurabilityConfig& durability = config.durability;
  // Recovery comes before the listen address is bound, so that no client
  // ever sees a partly recovered index (docs/durability.md, "Recovery").
  // The store outlives every call that can append to it (Serve returns once
  // the gRPC server is gone) and detaches before the Indexer goes; the
  // metrics endpoint, whose scrapes read it, stops before it goes.
  std::unique_ptr<durable::DurableStore> store;
  if (durability.enabled()) {
    spdlog::info(
        "restart-safe state on dir={} wal_sync={} checkpoint_bytes={} "
        "max_replay_bytes={} checkpoint_builder={} checkpoint_timeout_ms={}",
        durability.data_dir, WalSyncName(durability.wal_sync),
        durability.checkpoint_bytes, durability.max_replay_bytes,
        CheckpointBuilderName(durability.checkpoint_builder),
        durability.checkpoint_timeout.count());
    const LoadedBackend& backend = wiring.backend();
    // A builder process is this executable run again: main() hands such a
    // call to durable::RunCheckpointBuilder.
    auto opened = durable::DurableStore::Open(
        durable::DurableOptions{
            .dir = durability.data_dir,
            .sync = durability.wal_sync,
            .checkpoint_bytes = durability.checkpoint_bytes,
            .max_replay_bytes = durability.max_replay_bytes,
            .backend = backend.backend(),
            .backend_abi_minor = backend.abi_minor(),
            .checkpoint_builder =
                durability.checkpoint_builder == CheckpointBuilder::kProcess
                    ? "/proc/self/exe"
                    : "",
            .checkpoint_timeout = durability.checkpoint_timeout},
        &wiring.indexer().durable_state());
    if (!opened.ok()) {
      spdlog::error("cannot use {}={}: {}", kDataDirVar, durability.data_dir,
                    std::string(opened.status().message()));
      return kExitFailure;
    }
    store = *std::move(opened);
    if (ServerMetrics* metrics = wiring.metrics()) {
      metrics->SetDurableStore(store.get());
    }
  } else {
    spdlog::info(
        "restart-safe state off ({} unset): a restart empties the index",
        kDataDirVar);
  }
  AdminSources admin = wiring.MakeAdminSources();
  admin.store = store.get();
  StandaloneMode mode(store.get());
  return wiring.Serve(std::move(admin), mode);
}

}  // namespace kvindexer
