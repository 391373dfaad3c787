#include "fleet_catchup.h"

#include <cstdio>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Polls the replica until it is SERVING and has applied `end`.
absl::StatusOr<ReplicaStartFigures> WaitCaughtUp(FleetReplica& replica,
                                                 uint64_t end,
                                                 std::chrono::seconds timeout) {
  ReplicaStartFigures figures;
  figures.seconds_to_listen = replica.seconds_to_listen();
  std::optional<double> serving, caught_up;
  const auto deadline = Clock::now() + timeout;
  while (!serving.has_value() || !caught_up.has_value()) {
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("the replica did not catch up with position ", end,
                       " in ", timeout.count(), " s"));
    }
    if (!serving.has_value() && replica.Serving()) {
      serving = SecondsSince(replica.spawned_at());
    }
    if (!caught_up.has_value()) {
      const std::optional<double> applied =
          replica.Metric("kvindexer_fleet_applied_position");
      if (applied.has_value() && *applied >= static_cast<double>(end)) {
        caught_up = SecondsSince(replica.spawned_at());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  figures.seconds_to_serving = *serving;
  figures.seconds_to_caught_up = *caught_up;
  return figures;
}

}  // namespace

absl::StatusOr<CatchUpFigures> MeasureCatchUp(
    fleet::EventLog& log, const ReplicaOptions& options,
    std::chrono::seconds timeout, std::unique_ptr<FleetReplica>* serving) {
  CatchUpFigures figures;
  absl::StatusOr<fleet::LogBounds> bounds = log.Bounds();
  if (!bounds.ok()) return bounds.status();
  figures.log_end = bounds->last;

  std::fprintf(stderr, "== catch-up: a replica reads the whole log (%llu)\n",
               static_cast<unsigned long long>(figures.log_end));
  ReplicaOptions writer_options = options;
  writer_options.snapshot_interval_ms = 1000;
  absl::StatusOr<std::unique_ptr<FleetReplica>> writer =
      FleetReplica::Start(writer_options);
  if (!writer.ok()) return writer.status();
  if ((*writer)->loaded_snapshot().has_value()) {
    return absl::FailedPreconditionError(
        "a snapshot existed before the whole-log start");
  }
  absl::StatusOr<ReplicaStartFigures> whole =
      WaitCaughtUp(**writer, figures.log_end, timeout);
  if (!whole.ok()) return whole.status();
  figures.whole_log = *whole;

  std::fprintf(stderr, "== catch-up: waiting for its snapshot\n");
  const auto deadline = Clock::now() + timeout;
  while (true) {
    const std::optional<double> position =
        (*writer)->Metric("kvindexer_fleet_snapshot_last_position");
    if (position.has_value() &&
        *position >= static_cast<double>(figures.log_end)) {
      break;
    }
    if (Clock::now() > deadline) {
      return absl::DeadlineExceededError("no snapshot was written in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  figures.snapshot_written_s = SecondsSince((*writer)->spawned_at());
  figures.snapshot_round_s =
      (*writer)
          ->Metric("kvindexer_fleet_snapshot_last_duration_seconds")
          .value_or(0);
  if (absl::Status s = (*writer)->Stop(); !s.ok()) return s;
  writer->reset();

  std::fprintf(stderr, "== catch-up: a fresh replica starts from it\n");
  ReplicaOptions fresh_options = options;
  fresh_options.snapshot_interval_ms = 0;
  absl::StatusOr<std::unique_ptr<FleetReplica>> fresh =
      FleetReplica::Start(fresh_options);
  if (!fresh.ok()) return fresh.status();
  absl::StatusOr<ReplicaStartFigures> from =
      WaitCaughtUp(**fresh, figures.log_end, timeout);
  if (!from.ok()) return from.status();
  figures.from_snapshot = *from;
  figures.snapshot = (*fresh)->loaded_snapshot();
  if (!figures.snapshot.has_value()) {
    return absl::InternalError(
        absl::StrCat("the fresh replica loaded no snapshot:\n",
                     (*fresh)->process().Output()));
  }
  *serving = *std::move(fresh);
  return figures;
}

}  // namespace kvindexer::bench
