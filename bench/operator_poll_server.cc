#include "operator_poll_server.h"

#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::bench {

using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::LogField;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::StartListeningServer;

absl::StatusOr<OperatorPollServer> StartOperatorPollServer(
    const OperatorPollServerOptions& options) {
  ProcessOptions process;
  process.binary = options.binary;
  process.output_path = options.server_log;
  // What would change the server under test: a data directory, a write
  // token (the applies carry none), TLS, fleet mode, other bounds.
  process.unset_env = {"KV_INDEXER_BACKEND",
                       "KV_INDEXER_DATA_DIR",
                       "KV_INDEXER_WAL_SYNC",
                       "KV_INDEXER_WRITE_TOKEN_FILE",
                       "KV_INDEXER_TLS_CERT_FILE",
                       "KV_INDEXER_TLS_KEY_FILE",
                       "KV_INDEXER_TLS_CLIENT_CA_FILE",
                       "KV_INDEXER_EVENT_SOURCE",
                       "KV_INDEXER_MAX_WORKERS",
                       "KV_INDEXER_METRICS_WORKER_SERIES",
                       "KV_INDEXER_SEQUENCE_GATE"};
  // The metrics address is logged at INFO.
  process.env["KV_INDEXER_LOG_LEVEL"] = "info";
  process.env["KV_INDEXER_METRICS_ADDR"] = "127.0.0.1:0";
  if (!options.backend.empty()) {
    process.env["KV_INDEXER_BACKEND"] = options.backend;
  }
  if (options.worker_series >= 0) {
    process.env["KV_INDEXER_METRICS_WORKER_SERIES"] =
        std::to_string(options.worker_series);
  }
  absl::StatusOr<ListeningServer> listening = StartListeningServer(
      std::move(process), /*port=*/0, options.start_timeout);
  if (!listening.ok()) return listening.status();
  OperatorPollServer server;
  server.process = std::move(listening->process);
  server.address = listening->address;
  const std::optional<std::string> line = server.process->WaitForLineContaining(
      "metrics http addr=", options.start_timeout);
  const std::string addr =
      line.has_value() ? LogField(*line, "addr").value_or("") : "";
  const size_t colon = addr.rfind(':');
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(addr.substr(colon + 1), &server.metrics_port) ||
      server.metrics_port <= 0) {
    return absl::UnavailableError(
        absl::StrCat(options.binary,
                     " logged no usable \"metrics http addr=\" line; its "
                     "output:\n",
                     server.process->Output()));
  }
  return server;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> ConnectChannel(
    const std::string& address, const std::string& name,
    std::chrono::milliseconds timeout) {
  grpc::ChannelArguments args;
  // A private subchannel pool and a distinct argument give the channel its
  // own TCP connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetString("kvindexer.bench.channel", name);
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(std::chrono::system_clock::now() + timeout)) {
    return absl::UnavailableError(
        absl::StrCat("channel ", name, ": could not connect to ", address,
                     " within ", timeout.count(), " ms"));
  }
  return channel;
}

}  // namespace kvindexer::bench
