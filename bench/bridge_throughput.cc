#include "bridge_throughput.h"

#include <csignal>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::bridge::testing::FakeSglangPublisher;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ServerProcess;

// Outside every plan's hashes (BenchHash never yields it).
constexpr int64_t kWarmUpHash = 0x5EED;
constexpr auto kStopTimeout = std::chrono::seconds(20);

}  // namespace

absl::StatusOr<ThroughputResult> RunThroughput(
    const ThroughputSetup& setup, const BridgeVariant& variant,
    const BatchPlan& plan, const std::vector<std::string>& payloads) {
  absl::StatusOr<ListeningServer> server = StartIndexServer(
      setup.server_binary, setup.backend, /*port=*/0, setup.server_log);
  if (!server.ok()) return server.status();
  auto index_view = std::make_unique<IndexView>(server->address);
  const IndexView& index = *index_view;

  FakeSglangPublisher::Options publisher_options;
  publisher_options.buffer_steps = setup.buffer_steps;
  FakeSglangPublisher publisher(publisher_options);

  absl::StatusOr<std::unique_ptr<ServerProcess>> bridge =
      StartBridge(variant, server->address, publisher, setup.bridge_log);
  if (!bridge.ok()) return bridge.status();

  // Warm-up: the bridge is subscribed, so this batch arrives; its effect
  // means start-up (and any initial synchronisation) is over.
  publisher.Publish(PackStoreBatch({kWarmUpHash}));
  if (absl::Status s = WaitVisible(index, kWarmUpHash, setup.poll, **bridge,
                                   std::chrono::milliseconds(60'000));
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("warm-up: ", s.message()));
  }

  ThroughputResult result;
  const double bridge_cpu0 = (*bridge)->CpuSeconds();
  const double server_cpu0 = server->process->CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s =
          PublishPaced(publisher, index, plan, payloads, setup.window,
                       setup.poll, **bridge, setup.timeout);
      !s.ok()) {
    return s;
  }
  const auto end = std::chrono::steady_clock::now();
  result.bridge_cpu_s = (*bridge)->CpuSeconds() - bridge_cpu0;
  result.server_cpu_s = server->process->CpuSeconds() - server_cpu0;
  result.batches = plan.batches;
  result.hashes = plan.TotalHashes();
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.batches_per_s = static_cast<double>(result.batches) / result.seconds;
  result.hashes_per_s = static_cast<double>(result.hashes) / result.seconds;

  absl::StatusOr<size_t> held = index.CountHeld(plan.AllHashes());
  if (!held.ok()) return held.status();
  result.verified_held = *held;

  (*bridge)->Signal(SIGTERM);
  (*bridge)->WaitForExit(kStopTimeout);
  result.stats_line = LastLineContaining((*bridge)->Output(), "bridge stopped");
  if (result.stats_line.empty()) {
    result.stats_line = LastLineContaining((*bridge)->Output(), "stats: ");
  }
  // Without open client channels the server stops at once.
  index_view.reset();
  server->process->Stop(kStopTimeout).IgnoreError();

  if (result.verified_held != result.hashes) {
    return absl::DataLossError(absl::StrCat(
        variant.name, ": ", result.verified_held, " of ", result.hashes,
        " hashes held after the run (a batch was dropped); bridge stats: ",
        result.stats_line));
  }
  return result;
}

}  // namespace kvindexer::bench
