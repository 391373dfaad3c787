#include "bridge_rig.h"

#include <ctime>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;

constexpr size_t kMaxHashesPerCall = 16'384;
constexpr auto kStartTimeout = std::chrono::seconds(30);
constexpr auto kRpcTimeout = std::chrono::seconds(10);

// Everything a caller's environment could set that changes what is measured.
const std::vector<std::string>& ServerVariablesToUnset() {
  static const std::vector<std::string> names = {
      "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
      "KV_INDEXER_BACKEND",
      "KV_INDEXER_BACKEND_PATH",
      "KV_INDEXER_DATA_DIR",
      "KV_INDEXER_WAL_SYNC",
      "KV_INDEXER_CHECKPOINT_BYTES",
      "KV_INDEXER_CHECKPOINT_BUILDER",
      "KV_INDEXER_LIVENESS",
      "KV_INDEXER_LIVENESS_SWEEP_MS",
      "KV_INDEXER_LOG_LEVEL"};
  return names;
}

const std::vector<std::string>& BridgeVariablesToUnset() {
  static const std::vector<std::string> names = {
      "KV_INDEXER_CLEAR_TIERS",         "KV_INDEXER_CACHE_COMPONENTS",
      "KV_INDEXER_SWA_WINDOW_TOKENS",   "KV_INDEXER_FULL_TIERS",
      "KV_INDEXER_SWA_TIERS",           "KV_INDEXER_MAMBA_TIERS",
      "KV_INDEXER_CACHE_SPEC_VERSION",  "KV_INDEXER_WORKERS_JSON",
      "SGLANG_KV_EVENT_TOPIC",          "SGLANG_KV_REPLAY_ENDPOINT",
      "SGLANG_KV_SNAPSHOT_ENDPOINT",    "KV_INDEXER_SEQUENCE_GATE",
      "KV_INDEXER_LIVE_BUFFER_BATCHES", "KV_INDEXER_HEARTBEAT_TTL_MS",
      "KV_INDEXER_STATS_INTERVAL_SECS", "KV_INDEXER_LOG_LEVEL"};
  return names;
}

}  // namespace

IndexView::IndexView(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  stub_ = kv_indexer::v1::KVIndexer::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
}

absl::StatusOr<size_t> IndexView::CountHeld(
    const std::vector<int64_t>& hashes) const {
  size_t held = 0;
  for (size_t begin = 0; begin < hashes.size(); begin += kMaxHashesPerCall) {
    const size_t end = std::min(hashes.size(), begin + kMaxHashesPerCall);
    kv_indexer::v1::MatchExternalKvRequest request;
    request.mutable_hashes()->Add(hashes.begin() + begin, hashes.begin() + end);
    kv_indexer::v1::MatchExternalKvResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + kRpcTimeout);
    const grpc::Status status =
        stub_->MatchExternalKv(&context, request, &response);
    if (!status.ok()) {
      return absl::UnavailableError(
          absl::StrCat("MatchExternalKv: ", status.error_message()));
    }
    for (const auto& match : response.matches()) {
      if (match.worker_id() != kBenchWorkerId) continue;
      for (const auto& tier : match.hashes_by_tier()) {
        held += static_cast<size_t>(tier.hashes_size());
      }
    }
  }
  return held;
}

absl::StatusOr<ListeningServer> StartIndexServer(const std::string& binary,
                                                 const std::string& backend,
                                                 int port,
                                                 const std::string& log_path) {
  ProcessOptions options;
  options.binary = binary;
  options.unset_env = ServerVariablesToUnset();
  options.env["KV_INDEXER_LOG_LEVEL"] = "info";
  if (!backend.empty()) options.env["KV_INDEXER_BACKEND"] = backend;
  options.output_path = log_path;
  return StartListeningServer(std::move(options), port, kStartTimeout);
}

absl::StatusOr<std::unique_ptr<ServerProcess>> StartBridge(
    const BridgeVariant& variant, const std::string& server_address,
    bridge::testing::FakeSglangPublisher& publisher,
    const std::string& log_path,
    const std::map<std::string, std::string>& extra_env) {
  ProcessOptions options;
  options.binary = variant.binary;
  options.unset_env = BridgeVariablesToUnset();
  options.env = {
      {"KV_INDEXER_WORKER_ID", kBenchWorkerId},
      {"KV_INDEXER_WORKER_ADDRESS", kBenchWorkerAddress},
      {"KV_INDEXER_ENDPOINT", absl::StrCat("http://", server_address)},
      {"SGLANG_KV_EVENT_ENDPOINT", publisher.pub_endpoint()},
      {"KV_INDEXER_LOG_LEVEL", "info"},
      {"KV_INDEXER_STATS_INTERVAL_SECS", "0"}};
  if (!variant.gate.empty()) {
    options.env["KV_INDEXER_SEQUENCE_GATE"] = variant.gate;
  }
  if (variant.replay) {
    options.env["SGLANG_KV_REPLAY_ENDPOINT"] = publisher.replay_endpoint();
  }
  for (const auto& [name, value] : extra_env) options.env[name] = value;
  options.output_path = log_path;

  const size_t subscriptions_before = publisher.subscriptions();
  absl::StatusOr<std::unique_ptr<ServerProcess>> bridge =
      ServerProcess::Start(std::move(options));
  if (!bridge.ok()) return bridge.status();
  const bool subscribed = test_support::WaitUntil(
      [&] {
        return publisher.subscriptions() > subscriptions_before ||
               !(*bridge)->Running();
      },
      kStartTimeout, std::chrono::milliseconds(5));
  if (!subscribed || !(*bridge)->Running()) {
    return absl::UnavailableError(absl::StrCat(
        variant.binary, " did not subscribe within ", kStartTimeout.count(),
        " s; its output:\n", (*bridge)->Output()));
  }
  return bridge;
}

absl::Status WaitVisible(const IndexView& index, int64_t hash,
                         std::chrono::microseconds poll, ServerProcess& bridge,
                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::vector<int64_t> one = {hash};
  while (true) {
    absl::StatusOr<size_t> held = index.CountHeld(one);
    if (held.ok() && *held == 1) return absl::OkStatus();
    if (!bridge.Running()) {
      return absl::AbortedError(
          absl::StrCat("the bridge ended; its output:\n", bridge.Output()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "hash ", hash, " not visible within ", timeout.count(), " ms",
          held.ok() ? "" : absl::StrCat(" (", held.status().ToString(), ")")));
    }
    std::this_thread::sleep_for(poll);
  }
}

absl::Status PublishPaced(bridge::testing::FakeSglangPublisher& publisher,
                          const IndexView& index, const BatchPlan& plan,
                          const std::vector<std::string>& payloads,
                          size_t window, std::chrono::microseconds poll,
                          ServerProcess& bridge,
                          std::chrono::milliseconds timeout) {
  if (payloads.size() != plan.batches || plan.batches == 0 || window == 0) {
    return absl::InvalidArgumentError("PublishPaced: bad plan or window");
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto left = [&] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
  };
  for (size_t begin = 0; begin < plan.batches; begin += window) {
    const size_t end = std::min(plan.batches, begin + window);
    for (size_t b = begin; b < end; ++b) publisher.Publish(payloads[b]);
    if (begin >= window) {
      if (absl::Status s = WaitVisible(index, plan.LastHash(begin - 1), poll,
                                       bridge, left());
          !s.ok()) {
        return s;
      }
    }
  }
  return WaitVisible(index, plan.LastHash(plan.batches - 1), poll, bridge,
                     left());
}

std::optional<std::chrono::system_clock::time_point> LogLineTime(
    std::string_view line) {
  // 2026-11-30T21:54:19.123456Z
  if (line.size() < 27 || line[4] != '-' || line[10] != 'T' ||
      line[19] != '.' || line[26] != 'Z') {
    return std::nullopt;
  }
  std::tm tm{};
  int fields[6];
  const size_t offsets[6] = {0, 5, 8, 11, 14, 17};
  const size_t widths[6] = {4, 2, 2, 2, 2, 2};
  for (int i = 0; i < 6; ++i) {
    if (!absl::SimpleAtoi(std::string(line.substr(offsets[i], widths[i])),
                          &fields[i])) {
      return std::nullopt;
    }
  }
  int64_t micros = 0;
  if (!absl::SimpleAtoi(std::string(line.substr(20, 6)), &micros))
    return std::nullopt;
  tm.tm_year = fields[0] - 1900;
  tm.tm_mon = fields[1] - 1;
  tm.tm_mday = fields[2];
  tm.tm_hour = fields[3];
  tm.tm_min = fields[4];
  tm.tm_sec = fields[5];
  const time_t seconds = timegm(&tm);
  return std::chrono::system_clock::from_time_t(seconds) +
         std::chrono::microseconds(micros);
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t begin = 0;
  while (begin < text.size()) {
    const size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) break;
    lines.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string LastLineContaining(std::string_view output,
                               std::string_view needle) {
  std::string last;
  for (std::string_view line : SplitLines(output)) {
    if (line.find(needle) != std::string_view::npos) last = std::string(line);
  }
  return last;
}

}  // namespace kvindexer::bench
