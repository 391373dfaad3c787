#include "bridge/applier_factory.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bridge/indexer_client.h"
#include "bridge/log_applier.h"
#include "fleet/jetstream_event_log.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

// A LogApplier that owns its log.
class OwningLogApplier final : public KvApplier {
 public:
  OwningLogApplier(std::unique_ptr<fleet::EventLog> log, std::string worker_id,
                   std::string producer)
      : log_(std::move(log)),
        applier_(std::move(worker_id), std::move(producer), log_.get()) {}

  void SetFidelity(std::string value) override {
    applier_.SetFidelity(std::move(value));
  }
  absl::Status Apply(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override {
    return applier_.Apply(request, response);
  }
  absl::Status Heartbeat(
      const kv_indexer::v1::ApplyExternalKvBatchRequest& request,
      uint32_t ttl_ms,
      kv_indexer::v1::ApplyExternalKvBatchResponse* response) override {
    return applier_.Heartbeat(request, ttl_ms, response);
  }
  absl::Status Replace(
      const kv_indexer::v1::ReplaceExternalKvSnapshotRequest& request,
      kv_indexer::v1::ReplaceExternalKvSnapshotResponse* response) override {
    return applier_.Replace(request, response);
  }

 private:
  std::unique_ptr<fleet::EventLog> log_;  // outlives applier_
  LogApplier applier_;
};

}  // namespace

std::string MakeProducerId() {
  std::array<char, 256> host{};
  if (gethostname(host.data(), host.size() - 1) != 0) host[0] = '\0';
  std::random_device device;
  const uint64_t random =
      (static_cast<uint64_t>(device()) << 32) ^ static_cast<uint64_t>(device());
  return absl::StrCat(host[0] == '\0' ? "unknown-host" : host.data(), ":",
                      getpid(), ":", absl::Hex(random, absl::kZeroPad16));
}

std::string DescribeSink(const BridgeConfig& config) {
  if (config.sink == Sink::kJetStream && config.event_log.has_value()) {
    return absl::StrCat("event log stream ", config.event_log->stream, " at ",
                        fleet::RedactedNatsUrls(config.event_log->nats.urls));
  }
  return absl::StrCat("indexer ", config.indexer_endpoint);
}

absl::StatusOr<std::unique_ptr<KvApplier>> ConnectApplier(
    const BridgeConfig& config, StopRequest* shutdown) {
  if (config.sink == Sink::kJetStream) {
    if (!config.event_log.has_value()) {
      return absl::InvalidArgumentError(
          "KV_INDEXER_SINK=jetstream without the KV_INDEXER_NATS_* settings");
    }
    absl::StatusOr<std::unique_ptr<fleet::EventLog>> log =
        fleet::OpenJetStreamEventLog(*config.event_log);
    if (!log.ok()) return log.status();
    std::string producer = MakeProducerId();
    spdlog::info("writing worker \"{}\" to the event log as producer {}",
                 config.worker_id, producer);
    return std::make_unique<OwningLogApplier>(*std::move(log), config.worker_id,
                                              std::move(producer));
  }
  absl::StatusOr<std::unique_ptr<IndexerClient>> client =
      IndexerClient::Connect(config.indexer_endpoint, shutdown,
                             std::chrono::seconds(5), std::chrono::seconds(10),
                             config.security);
  if (!client.ok()) return client.status();
  return std::unique_ptr<KvApplier>(*std::move(client));
}

}  // namespace kvindexer::bridge
