#include "bridge/bridge_runner.h"

#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "bridge/batch_processor.h"
#include "bridge/event_subscriber.h"
#include "bridge/indexer_client.h"
#include "bridge/status_classifier.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {
namespace {

constexpr auto kPollTimeout = std::chrono::milliseconds(100);

}  // namespace

BridgeRunner::BridgeRunner(BridgeConfig config, ShutdownSignal* shutdown)
    : config_(std::move(config)),
      shutdown_(shutdown),
      last_stats_(std::chrono::steady_clock::now()) {}

int BridgeRunner::Run() {
  Backoff backoff;
  // Outlives connections: sequence tracking spans reconnects, so a gap left
  // by a disconnection is reported.
  BatchProcessor processor(config_, &stats_);
  bool first = true;
  int exit_code = kExitOk;
  while (!shutdown_->triggered()) {
    if (!first) ++stats_.reconnects;
    first = false;
    absl::Status status = RunConnection(&backoff, &processor);
    if (shutdown_->triggered()) break;
    if (IsPermanentStatus(status.code())) {
      spdlog::error(
          "the indexer rejected an apply with a permanent error: {}; exiting "
          "(check KV_INDEXER_WORKER_ID and the bridge/server versions)",
          status.ToString());
      exit_code = kExitPermanentError;
      break;
    }
    const auto delay = backoff.NextDelay();
    spdlog::warn("disconnected: {}; reconnecting in {} ms", status.ToString(),
                 delay.count());
    if (shutdown_->WaitFor(delay)) break;
  }
  spdlog::info("bridge stopped: {}", stats_.FormatLine());
  return exit_code;
}

absl::Status BridgeRunner::RunConnection(Backoff* backoff,
                                         BatchProcessor* processor) {
  absl::StatusOr<std::unique_ptr<IndexerClient>> client =
      IndexerClient::Connect(config_.indexer_endpoint, shutdown_);
  if (!client.ok()) return client.status();

  zmq::context_t context(1);
  absl::Status result;
  {
    EventSubscriber subscriber(&context);
    absl::Status connected =
        subscriber.Connect(config_.event_endpoint, config_.event_topic);
    if (!connected.ok()) return connected;
    backoff->Reset();
    spdlog::info(
        "connected: indexer {} and SGLang events {} (topic \"{}\") as "
        "worker_id \"{}\"",
        config_.indexer_endpoint, config_.event_endpoint, config_.event_topic,
        config_.worker_id);

    std::vector<zmq::message_t> frames;
    std::vector<std::string_view> views;
    while (!shutdown_->triggered()) {
      MaybeLogStats(std::chrono::steady_clock::now());
      absl::StatusOr<bool> received = subscriber.Receive(kPollTimeout, &frames);
      if (!received.ok()) {
        result = received.status();
        break;
      }
      if (!*received) continue;
      views.clear();
      for (const zmq::message_t& frame : frames) {
        views.emplace_back(static_cast<const char*>(frame.data()),
                           frame.size());
      }
      absl::Status handled = processor->HandleMessage(views, client->get());
      if (!handled.ok()) {
        result = handled;
        break;
      }
    }
  }
  context.shutdown();
  return result;
}

void BridgeRunner::MaybeLogStats(std::chrono::steady_clock::time_point now) {
  if (config_.stats_interval.count() == 0) return;
  if (now - last_stats_ < config_.stats_interval) return;
  last_stats_ = now;
  spdlog::info("stats: {}", stats_.FormatLine());
}

}  // namespace kvindexer::bridge
