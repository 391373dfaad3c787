#include "fleet_replica.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"

namespace kvindexer::bench {
namespace {

using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::LogField;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::StartListeningServer;

// The port of "host:port".
std::optional<int> PortOf(absl::string_view address) {
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == absl::string_view::npos ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port)) {
    return std::nullopt;
  }
  return port;
}

// The unsigned number after `"key":` at or after `from` in `json`.
std::optional<uint64_t> JsonNumberAfter(const std::string& json,
                                        const std::string& key, size_t from) {
  const std::string needle = absl::StrCat("\"", key, "\":");
  const size_t at = json.find(needle, from);
  if (at == std::string::npos) return std::nullopt;
  const size_t end = at + needle.size();
  size_t digits = end;
  while (digits < json.size() && json[digits] >= '0' && json[digits] <= '9') {
    ++digits;
  }
  uint64_t value = 0;
  if (!absl::SimpleAtoi(absl::string_view(json).substr(end, digits - end),
                        &value)) {
    return std::nullopt;
  }
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FleetReplica>> FleetReplica::Start(
    const ReplicaOptions& options) {
  auto replica = std::unique_ptr<FleetReplica>(new FleetReplica());
  ProcessOptions process;
  process.binary = options.server_binary;
  process.output_path = options.server_log;
  process.unset_env = {"KV_INDEXER_DATA_DIR", "KV_INDEXER_NATS_STREAM",
                       "KV_INDEXER_NATS_SUBJECT_PREFIX"};
  process.env["KV_INDEXER_LOG_LEVEL"] = "info";  // the snapshot line
  process.env["KV_INDEXER_EVENT_SOURCE"] = "jetstream";
  process.env["KV_INDEXER_NATS_URL"] = options.nats_url;
  process.env["KV_INDEXER_NATS_STREAM"] = options.stream;
  process.env["KV_INDEXER_NATS_SUBJECT_PREFIX"] = options.subject_prefix;
  process.env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  process.env["KV_INDEXER_FLEET_SNAPSHOT_INTERVAL_MS"] =
      std::to_string(options.snapshot_interval_ms);
  if (!options.backend.empty()) {
    process.env["KV_INDEXER_BACKEND"] = options.backend;
  }
  replica->spawned_at_ = std::chrono::steady_clock::now();
  absl::StatusOr<ListeningServer> server = StartListeningServer(
      std::move(process), /*port=*/0, options.start_timeout);
  if (!server.ok()) return server.status();
  replica->seconds_to_listen_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    replica->spawned_at_)
          .count();
  replica->process_ = std::move(server->process);
  replica->address_ = server->address;
  // The metrics line comes before the listening line.
  const std::optional<std::string> metrics_line =
      replica->process_->WaitForLineContaining("metrics http addr=",
                                               std::chrono::seconds(0));
  std::optional<std::string> metrics_addr;
  if (metrics_line.has_value()) metrics_addr = LogField(*metrics_line, "addr");
  std::optional<int> metrics_port;
  if (metrics_addr.has_value()) metrics_port = PortOf(*metrics_addr);
  if (!metrics_port.has_value()) {
    return absl::InternalError(
        absl::StrCat("the replica logged no metrics address:\n",
                     replica->process_->Output()));
  }
  replica->metrics_port_ = *metrics_port;
  absl::StatusOr<std::unique_ptr<ChannelPool>> pool = ChannelPool::Connect(
      server->address, static_cast<int>(options.channels), absl::Seconds(60));
  if (!pool.ok()) return pool.status();
  replica->pool_ = *std::move(pool);
  replica->health_channel_ =
      grpc::CreateChannel(server->address, grpc::InsecureChannelCredentials());
  return replica;
}

std::optional<LoadedSnapshotLine> FleetReplica::loaded_snapshot() const {
  const std::optional<std::string> line = process_->WaitForLineContaining(
      "loaded fleet snapshot ", std::chrono::seconds(0));
  if (!line.has_value()) return std::nullopt;
  LoadedSnapshotLine out;
  const std::optional<std::string> position = LogField(*line, "position");
  const std::optional<std::string> parts = LogField(*line, "parts");
  const std::optional<std::string> bytes = LogField(*line, "bytes");
  const std::optional<std::string> seconds = LogField(*line, "seconds");
  if (!position || !parts || !bytes || !seconds ||
      !absl::SimpleAtoi(*position, &out.position) ||
      !absl::SimpleAtoi(*parts, &out.parts) ||
      !absl::SimpleAtoi(*bytes, &out.bytes) ||
      !absl::SimpleAtod(*seconds, &out.seconds)) {
    return std::nullopt;
  }
  return out;
}

bool FleetReplica::Serving() {
  const test_support::HealthAnswer answer = test_support::CheckHealth(
      health_channel_, "", std::chrono::milliseconds(1000));
  return answer.code == grpc::StatusCode::OK &&
         answer.status == test_support::kHealthServing;
}

std::optional<double> FleetReplica::Metric(const std::string& series) {
  absl::StatusOr<test_support::HttpResponse> response = test_support::HttpGet(
      metrics_port_, "/metrics", std::chrono::milliseconds(2000));
  if (!response.ok() || response->status != 200) return std::nullopt;
  return test_support::ScrapedValue(response->body, series);
}

absl::Status FleetReplica::Stop() {
  // Idle clients do not answer the server's graceful GOAWAY ping; closing
  // them spares the shutdown the ping's timeout.
  pool_.reset();
  health_channel_.reset();
  return process_->Stop(std::chrono::seconds(60));
}

absl::StatusOr<StreamUsage> ReadStreamUsage(int monitor_port,
                                            const std::string& stream) {
  absl::StatusOr<test_support::HttpResponse> response = test_support::HttpGet(
      monitor_port, "/jsz?streams=true", std::chrono::milliseconds(5000));
  if (!response.ok()) return response.status();
  if (response->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("/jsz answered HTTP ", response->status));
  }
  // nats-server indents its JSON; no name or number we look for holds
  // white space.
  std::string json = response->body;
  json.erase(std::remove_if(json.begin(), json.end(),
                            [](char c) {
                              return c == ' ' || c == '\n' || c == '\r' ||
                                     c == '\t';
                            }),
             json.end());
  const size_t at = json.find(absl::StrCat("\"name\":\"", stream, "\""));
  if (at == std::string::npos) {
    return absl::NotFoundError(absl::StrCat("/jsz lists no stream ", stream));
  }
  // The stream's "state" follows its name: messages, then bytes.
  const std::optional<uint64_t> messages =
      JsonNumberAfter(json, "messages", at);
  const std::optional<uint64_t> bytes = JsonNumberAfter(json, "bytes", at);
  if (!messages.has_value() || !bytes.has_value()) {
    return absl::InternalError(
        absl::StrCat("no state of stream ", stream, " in /jsz"));
  }
  return StreamUsage{.bytes = *bytes, .messages = *messages};
}

}  // namespace kvindexer::bench
