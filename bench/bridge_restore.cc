#include "bridge_restore.h"

#include <csignal>
#include <memory>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::bridge::testing::FakeSglangPublisher;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ServerProcess;

constexpr auto kStopTimeout = std::chrono::seconds(20);
constexpr size_t kMaxLoggedLines = 64;
// Timestamps take "2026-11-30T21:54:19.123456Z " at the start of a line.
constexpr size_t kTimestampWidth = 28;

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

size_t ReplaceRequestBytes(const std::vector<int64_t>& hashes,
                           uint64_t applied_seq) {
  kv_indexer::v1::ReplaceExternalKvSnapshotRequest request;
  request.set_worker_id(kBenchWorkerId);
  request.set_worker_address(kBenchWorkerAddress);
  request.set_applied_seq(applied_seq);
  kv_indexer::v1::TierHashes* tier = request.add_hashes_by_tier();
  tier->set_tier(kv_indexer::v1::TIER_HBM);
  tier->mutable_hashes()->Add(hashes.begin(), hashes.end());
  return request.ByteSizeLong();
}

std::vector<int64_t> Sample(const std::vector<int64_t>& all, size_t n) {
  std::vector<int64_t> sample;
  if (all.empty()) return sample;
  n = std::min(n, all.size());
  for (size_t i = 0; i + 1 < n; ++i) sample.push_back(all[i * all.size() / n]);
  sample.push_back(all.back());
  return sample;
}

}  // namespace

absl::StatusOr<RestoreResult> RunRestore(
    const RestoreSetup& setup, const BridgeVariant& variant,
    const BatchPlan& plan, const std::vector<std::string>& payloads) {
  absl::StatusOr<ListeningServer> server = StartIndexServer(
      setup.server_binary, setup.backend, /*port=*/0, setup.server_log);
  if (!server.ok()) return server.status();
  const int port = server->port;

  FakeSglangPublisher::Options publisher_options;
  publisher_options.buffer_steps = plan.batches + 16;
  FakeSglangPublisher publisher(publisher_options);
  absl::StatusOr<std::unique_ptr<ServerProcess>> bridge =
      StartBridge(variant, server->address, publisher, setup.bridge_log);
  if (!bridge.ok()) return bridge.status();

  RestoreResult result;
  result.blocks = plan.TotalHashes();
  result.batches = plan.batches;
  const std::vector<int64_t> all = plan.AllHashes();
  {
    const IndexView index(server->address);
    const auto start = std::chrono::steady_clock::now();
    if (absl::Status s =
            PublishPaced(publisher, index, plan, payloads, setup.window,
                         setup.poll, **bridge, setup.timeout);
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("populate: ", s.message()));
    }
    result.populate_s = Seconds(std::chrono::steady_clock::now() - start);
    absl::StatusOr<size_t> held = index.CountHeld(all);
    if (!held.ok()) return held.status();
    if (*held != all.size()) {
      return absl::DataLossError(absl::StrCat("populate: ", *held, " of ",
                                              all.size(), " blocks held"));
    }
  }
  result.replace_request_bytes = ReplaceRequestBytes(all, plan.batches - 1);
  // An idle worker: the bridge finishes whatever the populating left in
  // flight and settles into its idle probes.
  std::this_thread::sleep_for(setup.settle);

  // The kill: the server loses everything; the publisher keeps its buffer.
  const size_t bridge_output_before = (*bridge)->Output().size();
  const size_t replays_before = publisher.replay_timings().size();
  const auto killed = std::chrono::steady_clock::now();
  server->process->Kill();
  absl::StatusOr<ListeningServer> restarted = StartIndexServer(
      setup.server_binary, setup.backend, port, setup.server_log);
  if (!restarted.ok()) return restarted.status();
  const auto listening_seen = std::chrono::steady_clock::now();
  const auto listening_seen_wall = std::chrono::system_clock::now();
  // The line's own timestamp; the moment it was seen if it has none.
  std::chrono::system_clock::time_point listening = listening_seen_wall;
  if (auto t = LogLineTime(LastLineContaining(restarted->process->Output(),
                                              "listening addr="))) {
    listening = *t;
  }
  result.kill_to_listening_s =
      Seconds(listening_seen - killed) -
      std::chrono::duration<double>(listening_seen_wall - listening).count();

  auto index_view = std::make_unique<IndexView>(restarted->address);
  const IndexView& index = *index_view;
  const std::vector<int64_t> sample = Sample(all, setup.sample);
  const auto deadline = std::chrono::steady_clock::now() + setup.timeout;
  while (true) {
    absl::StatusOr<size_t> held = index.CountHeld(sample);
    if (held.ok() && *held == sample.size()) break;
    if (!(*bridge)->Running()) {
      return absl::AbortedError(
          absl::StrCat("the bridge ended while restoring; its output:\n",
                       (*bridge)->Output()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "not restored within ", setup.timeout.count(), " ms; held ",
          held.ok() ? absl::StrCat(*held) : held.status().ToString(), " of ",
          sample.size(), " sampled blocks"));
    }
    std::this_thread::sleep_for(setup.restore_poll);
  }
  result.restore_s = std::chrono::duration<double>(
                         std::chrono::system_clock::now() - listening)
                         .count();

  const auto verify_start = std::chrono::steady_clock::now();
  absl::StatusOr<size_t> held = index.CountHeld(all);
  if (!held.ok()) return held.status();
  result.verified_held = *held;
  result.verify_s = Seconds(std::chrono::steady_clock::now() - verify_start);

  // Let the bridge finish (its Replace call returns after the effect is
  // visible) and log that it is synchronised.
  std::this_thread::sleep_for(setup.settle);
  auto offset = [&](std::chrono::steady_clock::time_point t) {
    return Seconds(t - listening_seen) -
           std::chrono::duration<double>(listening_seen_wall - listening)
               .count();
  };
  const auto replays = publisher.replay_timings();
  if (replays.size() > replays_before) {
    result.replay_received_s = offset(replays[replays_before].received);
    result.replay_replied_s = offset(replays[replays_before].replied);
    result.replay_batches = replays[replays_before].batches;
  }
  const std::string output = (*bridge)->Output();
  for (std::string_view line :
       SplitLines(std::string_view(output).substr(bridge_output_before))) {
    if (result.bridge_lines.size() >= kMaxLoggedLines) break;
    const auto t = LogLineTime(line);
    if (!t) continue;
    const double at = std::chrono::duration<double>(*t - listening).count();
    if (result.state_lost_s < 0 &&
        line.find("server state lost") != std::string_view::npos) {
      result.state_lost_s = at;
    }
    if (result.synchronised_s < 0 && at > 0 &&
        line.find("stream synchronised") != std::string_view::npos) {
      result.synchronised_s = at;
    }
    result.bridge_lines.push_back(
        {at, std::string(line.substr(std::min(line.size(), kTimestampWidth)))});
  }

  (*bridge)->Signal(SIGTERM);
  (*bridge)->WaitForExit(kStopTimeout);
  result.stats_line = LastLineContaining((*bridge)->Output(), "bridge stopped");
  // Without open client channels the server stops at once.
  index_view.reset();
  restarted->process->Stop(kStopTimeout).IgnoreError();
  if (result.verified_held != result.blocks) {
    return absl::DataLossError(
        absl::StrCat("restored ", result.verified_held, " of ", result.blocks,
                     " blocks; bridge stats: ", result.stats_line));
  }
  return result;
}

}  // namespace kvindexer::bench
