// Worker liveness for StreamRecovery (docs/bridge-events.md, "Recovery >
// Worker liveness"): every max(TTL / 3, 100 ms) the worker probe checks that
// the worker accepts a TCP connection, and only then is a heartbeat sent: an
// empty apply carrying the TTL as request metadata (a PROBE in gated mode, a
// seed-era apply in legacy mode). The server clears a worker whose
// heartbeats stop; the bridge notices the loss (a refused heartbeat, probe
// or apply) and resynchronises like after any other state loss.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "bridge/recovery_requests.h"
#include "bridge/status_classifier.h"
#include "bridge/stream_recovery.h"
#include "common/fidelity_header.h"
#include "common/log_text.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge {

std::chrono::milliseconds StreamRecovery::HeartbeatPeriod() const {
  return std::max(options_.heartbeat_ttl / 3, options_.min_heartbeat_period);
}

void StreamRecovery::ServiceHeartbeat() {
  if (options_.heartbeat_ttl.count() <= 0 || !fatal_.ok() ||
      io_.clock->Stopping()) {
    return;
  }
  const auto now = io_.clock->Now();
  if (!worker_check_pending_) {
    if (now < next_beat_) return;
    // Keep the cadence; after a stall (a long RPC retry) start afresh
    // rather than catch up with a burst.
    next_beat_ += HeartbeatPeriod();
    if (next_beat_ <= now) next_beat_ = now + HeartbeatPeriod();
    if (io_.worker_probe == nullptr) {
      SendHeartbeat();
      return;
    }
    io_.worker_probe->StartCheck();
    worker_check_pending_ = true;
  }
  std::optional<absl::Status> reached = io_.worker_probe->TakeResult();
  if (!reached) return;
  worker_check_pending_ = false;
  if (!reached->ok()) {
    ++io_.stats->heartbeat_probe_failures;
    worker_unreachable_ = true;
    if (auto n = worker_probe_throttle_.Allow(now)) {
      spdlog::warn(
          "worker unreachable, no heartbeat sent: {} ({} similar suppressed)",
          LogText(std::string(reached->message()), kLogMessageBytes), *n);
    }
    return;
  }
  if (worker_unreachable_) {
    spdlog::info("worker reachable again; heartbeats resume");
    worker_unreachable_ = false;
  }
  SendHeartbeat();
}

void StreamRecovery::SendHeartbeat() {
  const auto ttl = static_cast<uint32_t>(std::min<int64_t>(
      options_.heartbeat_ttl.count(), std::numeric_limits<uint32_t>::max()));
  const kv_indexer::v1::ApplyExternalKvBatchRequest request =
      gated() ? ProbeRequest(header_, watermarks_.epoch())
              : RegistrationRequest(header_);
  kv_indexer::v1::ApplyExternalKvBatchResponse response;
  io_.applier->SetFidelity(FidelityHeader::Format(degraded_reason_));
  absl::Status status = io_.applier->Heartbeat(request, ttl, &response);
  if (status.ok()) {
    ++io_.stats->rpcs_sent;
    io_.stats->NoteIndexerReached();
    ++io_.stats->heartbeats;
    CheckEvicted();
    if (!gated()) return;
    if (response.duplicate()) last_gated_ok_ = io_.clock->Now();
    // A running synchronisation finds out the server's state by itself.
    if (need_sync_) return;
    CheckServerCheckpoint(response.duplicate()
                              ? std::optional<uint64_t>(response.applied_seq())
                              : std::nullopt);
    return;
  }
  io_.stats->CountRpcFailure(static_cast<int>(status.code()));
  if (status.code() == absl::StatusCode::kFailedPrecondition) {
    // The server lost the stream (a liveness clear, a restart, a deleted
    // record): re-register and resynchronise, unless that already runs.
    if (!need_sync_) {
      StateLoss(absl::StrCat("heartbeat refused: ", status.message()));
    }
    return;
  }
  if (IsPermanentStatus(status.code())) {
    Fatal(status, "heartbeat");
    return;
  }
  // Transient: the next heartbeat is the retry; the idle probe notices a
  // server that stays away.
  if (auto n = heartbeat_throttle_.Allow(io_.clock->Now())) {
    spdlog::warn(
        "heartbeat failed: {}; next one in {} ms ({} similar "
        "suppressed)",
        LogText(status.ToString(), kLogMessageBytes), HeartbeatPeriod().count(),
        *n);
  }
}

bool StreamRecovery::WaitServicingHeartbeats(
    std::chrono::milliseconds duration) {
  if (options_.heartbeat_ttl.count() <= 0) return io_.clock->WaitFor(duration);
  const auto end = io_.clock->Now() + duration;
  while (true) {
    ServiceHeartbeat();
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        end - io_.clock->Now());
    if (left.count() <= 0) return io_.clock->Stopping();
    if (io_.clock->WaitFor(std::min(left, options_.poll))) return true;
  }
}

}  // namespace kvindexer::bridge
