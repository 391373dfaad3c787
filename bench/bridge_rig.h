// The pieces kv-indexer-bridge-bench runs its scenarios on: the real
// kv-indexer-server and kv-indexer-bridge binaries started as child processes
// on 127.0.0.1 (tests/support/server_process.h), a MatchExternalKv view of
// the server, and a publisher pacer that never lets the bridge fall more than
// two windows behind, so that no bounded queue on the way drops a batch.
//
// Thread safety: none; everything runs on the benchmark's main thread.
#ifndef KVINDEXER_BENCH_BRIDGE_RIG_H_
#define KVINDEXER_BENCH_BRIDGE_RIG_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bridge_payloads.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/fake_sglang_publisher.h"
#include "tests/support/server_process.h"

namespace kvindexer::bench {

inline constexpr char kBenchWorkerId[] = "bench-worker";
inline constexpr char kBenchWorkerAddress[] = "http://127.0.0.1:30000";

// One bridge configuration under test.
struct BridgeVariant {
  std::string name;    // label in the report ("baseline", "off", "on")
  std::string binary;  // kv-indexer-bridge to start
  // KV_INDEXER_SEQUENCE_GATE; empty sets none of the recovery variables (a
  // bridge without recovery, such as the baseline build).
  std::string gate;
  bool replay = false;  // set SGLANG_KV_REPLAY_ENDPOINT to the publisher's
};

// MatchExternalKv over its own channel to one server.
class IndexView {
 public:
  explicit IndexView(const std::string& address);

  // How many of `hashes` kBenchWorkerId holds at any tier, in calls of at
  // most 16,384 hashes.
  [[nodiscard]] absl::StatusOr<size_t> CountHeld(
      const std::vector<int64_t>& hashes) const;

 private:
  std::unique_ptr<kv_indexer::v1::KVIndexer::Stub> stub_;
};

// kv-indexer-server on 127.0.0.1:`port` (0: any free port), output appended
// to `log_path` (empty: a temporary file). `backend`: KV_INDEXER_BACKEND
// (empty: the server's default).
[[nodiscard]] absl::StatusOr<test_support::ListeningServer> StartIndexServer(
    const std::string& binary, const std::string& backend, int port,
    const std::string& log_path);

// The bridge of `variant` for kBenchWorkerId, following `publisher` and
// applying to `server_address`; returns once the publisher has seen its
// subscription. `extra_env` is set last.
[[nodiscard]] absl::StatusOr<std::unique_ptr<test_support::ServerProcess>>
StartBridge(const BridgeVariant& variant, const std::string& server_address,
            bridge::testing::FakeSglangPublisher& publisher,
            const std::string& log_path,
            const std::map<std::string, std::string>& extra_env = {});

// Publishes `payloads` (batch i of `plan` is payloads[i]) in windows of
// `window` batches: window k+1 is published once the last hash of window k-1
// is visible in the server, so at most two windows are queued between the
// publisher and the server. Returns once the plan's last hash is visible.
// Fails when `bridge` ends or `timeout` passes.
[[nodiscard]] absl::Status PublishPaced(
    bridge::testing::FakeSglangPublisher& publisher, const IndexView& index,
    const BatchPlan& plan, const std::vector<std::string>& payloads,
    size_t window, std::chrono::microseconds poll,
    test_support::ServerProcess& bridge, std::chrono::milliseconds timeout);

// Polls until `hash` is held or `timeout` passes (or `bridge` ends).
[[nodiscard]] absl::Status WaitVisible(const IndexView& index, int64_t hash,
                                       std::chrono::microseconds poll,
                                       test_support::ServerProcess& bridge,
                                       std::chrono::milliseconds timeout);

// The UTC timestamp that starts a log line (common/log_setup.h's pattern,
// "2026-11-30T21:54:19.123456Z ..."); nullopt if the line has none.
std::optional<std::chrono::system_clock::time_point> LogLineTime(
    std::string_view line);

// The complete lines of `text`.
std::vector<std::string_view> SplitLines(std::string_view text);

// The last line of `output` containing `needle`, or "".
std::string LastLineContaining(std::string_view output,
                               std::string_view needle);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_BRIDGE_RIG_H_
