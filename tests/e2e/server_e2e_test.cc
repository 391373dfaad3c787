// End-to-end tests of the real kv-indexer-server binary: it is started on
// 127.0.0.1 with port 0, its bound port is read from its log, readiness is
// established by polling a real RPC, and it is stopped with signals.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "core/backend_loader.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/e2e/ready_server.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/requests.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif

namespace kvindexer::e2e {
namespace {

using namespace std::chrono_literals;
using ::kv_indexer::v1::ApplyExternalKvBatchRequest;
using ::kv_indexer::v1::ApplyExternalKvBatchResponse;
using ::kv_indexer::v1::GetExternalKvHitCountsRequest;
using ::kv_indexer::v1::GetExternalKvHitCountsResponse;
using ::kv_indexer::v1::KVIndexer;
using ::kv_indexer::v1::MatchExternalKvPrefixRequest;
using ::kv_indexer::v1::MatchExternalKvPrefixResponse;
using ::kv_indexer::v1::MatchExternalKvRequest;
using ::kv_indexer::v1::MatchExternalKvResponse;
using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::EndedCleanly;
using ::kvindexer::test_support::ExitStatus;
using ::kvindexer::test_support::LogField;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ServerProcess;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kDefaultBackend(::kvindexer::kDefaultBackendName);

// Generous bounds: the machine may be busy. They are upper limits on waits
// that normally end in milliseconds.
constexpr auto kStartBound = 20s;
constexpr auto kExitBound = 20s;

std::unique_ptr<grpc::ClientContext> Context(
    std::chrono::milliseconds timeout = 10s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

// A running kv-indexer-server and a client stub connected to it.
class RunningServer {
 public:
  // Starts the server with `env` on top of KV_INDEXER_LISTEN_ADDR=
  // 127.0.0.1:0 and waits until a real RPC succeeds.
  static std::unique_ptr<RunningServer> Start(
      std::map<std::string, std::string> env = {}) {
    ProcessOptions options;
    options.binary = KVINDEXER_SERVER_BINARY;
    options.unset_env = {"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                         "KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                         "KV_INDEXER_LOG_LEVEL",
                         "KV_INDEXER_ROBIN_MERGE_MIN_DELTA"};
    options.env = std::move(env);
    absl::StatusOr<ReadyServer> ready =
        StartReadyServer(std::move(options), /*port=*/0, kStartBound);
    EXPECT_TRUE(ready.ok()) << ready.status();
    if (!ready.ok()) return nullptr;
    auto server = std::unique_ptr<RunningServer>(new RunningServer());
    server->process_ = std::move(ready->process);
    server->address_ = ready->address;
    server->stub_ = std::move(ready->stub);
    return server;
  }

  ServerProcess& process() { return *process_; }
  KVIndexer::Stub& stub() { return *stub_; }
  const std::string& address() const { return address_; }
  // Closes the client connection. An idle gRPC C++ client does not read its
  // socket, so it would not acknowledge the server's graceful GOAWAY ping and
  // the server would wait for the ping's timeout (about 5 s) before closing.
  void CloseClient() { stub_.reset(); }

 private:
  RunningServer() = default;

  std::unique_ptr<ServerProcess> process_;
  std::string address_;
  std::unique_ptr<KVIndexer::Stub> stub_;
};

// The time stamp that starts a kv-indexer-server log line
// ("2026-11-30T06:13:26.123456Z info  ...").
std::optional<absl::Time> LogTime(const std::string& line) {
  absl::Time time;
  std::string error;
  if (!absl::ParseTime("%Y-%m-%dT%H:%M:%E*SZ", line.substr(0, line.find(' ')),
                       &time, &error)) {
    return std::nullopt;
  }
  return time;
}

// N of the "(grace period N s)" the server logs when a signal arrives.
std::optional<absl::Duration> GracePeriod(const std::string& line) {
  constexpr std::string_view kKey = "grace period ";
  const size_t pos = line.find(kKey);
  int seconds = 0;
  if (pos == std::string::npos ||
      !absl::SimpleAtoi(
          line.substr(pos + kKey.size(),
                      line.find(' ', pos + kKey.size()) - (pos + kKey.size())),
          &seconds)) {
    return std::nullopt;
  }
  return absl::Seconds(seconds);
}

// Runs the binary with `env` (on top of a cleaned environment) and `args`,
// and waits for it to exit.
struct Finished {
  std::optional<ExitStatus> status;
  std::string output;
};
Finished RunToExit(std::map<std::string, std::string> env,
                   std::vector<std::string> args = {}) {
  ProcessOptions options;
  options.binary = KVINDEXER_SERVER_BINARY;
  options.args = std::move(args);
  options.unset_env = {
      "KV_INDEXER_LISTEN_ADDR", "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
      "KV_INDEXER_BACKEND",     "KV_INDEXER_BACKEND_PATH",
      "KV_INDEXER_LOG_LEVEL",   "KV_INDEXER_ROBIN_MERGE_MIN_DELTA"};
  options.env = std::move(env);
  auto process = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(process.ok()) << process.status();
  if (!process.ok()) return {};
  Finished finished;
  finished.status = (*process)->WaitForExit(kExitBound);
  finished.output = (*process)->Output();
  return finished;
}

// ---------------------------------------------------------------------------

// The RPC-level tests run once per in-tree backend, selected by name.
class ServerBackendE2eTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<RunningServer> Start() {
    return RunningServer::Start({{"KV_INDEXER_BACKEND", GetParam()}});
  }
};

TEST_P(ServerBackendE2eTest, ServesEveryRpc) {
  auto server = Start();
  ASSERT_NE(server, nullptr);

  ApplyExternalKvBatchResponse applied;
  ASSERT_TRUE(
      server->stub()
          .ApplyExternalKvBatch(
              Context().get(),
              Batch("long", "10.0.0.1:9000").Report(kTierHbm, {1, 2, 3}),
              &applied)
          .ok());
  ASSERT_TRUE(server->stub()
                  .ApplyExternalKvBatch(
                      Context().get(),
                      Batch("short", "10.0.0.2:9000").Report(kTierHbm, {1}),
                      &applied)
                  .ok());

  MatchExternalKvPrefixRequest prefix;
  for (int64_t h : {1, 2, 3}) prefix.add_hashes(h);
  MatchExternalKvPrefixResponse prefix_resp;
  ASSERT_TRUE(server->stub()
                  .MatchExternalKvPrefix(Context().get(), prefix, &prefix_resp)
                  .ok());
  EXPECT_EQ(prefix_resp.best_prefix_blocks(), 3u);
  EXPECT_EQ(prefix_resp.blocks_read(), 3u);
  ASSERT_EQ(prefix_resp.matches_size(), 2);
  EXPECT_EQ(prefix_resp.matches(0).worker_address(), "10.0.0.1:9000");
  EXPECT_EQ(prefix_resp.matches(0).matched_prefix_blocks(), 3u);
  EXPECT_EQ(prefix_resp.matches(1).worker_address(), "10.0.0.2:9000");
  EXPECT_EQ(prefix_resp.matches(1).matched_prefix_blocks(), 1u);

  MatchExternalKvRequest match;
  match.add_hashes(1);
  match.add_hashes(4);
  match.set_count_as_hit(true);
  MatchExternalKvResponse match_resp;
  ASSERT_TRUE(
      server->stub().MatchExternalKv(Context().get(), match, &match_resp).ok());
  EXPECT_EQ(match_resp.matches_size(), 2);

  GetExternalKvHitCountsRequest hits;
  hits.add_hashes(1);
  hits.add_hashes(4);
  GetExternalKvHitCountsResponse hits_resp;
  ASSERT_TRUE(server->stub()
                  .GetExternalKvHitCounts(Context().get(), hits, &hits_resp)
                  .ok());
  ASSERT_EQ(hits_resp.entries_size(), 1);
  EXPECT_EQ(hits_resp.entries(0).hash(), 1);
  EXPECT_EQ(hits_resp.entries(0).hit_count_total(), 1u);

  // Validation over the wire.
  ApplyExternalKvBatchRequest bad = Batch("", "a").Report(kTierHbm, {1});
  const grpc::Status invalid =
      server->stub().ApplyExternalKvBatch(Context().get(), bad, &applied);
  EXPECT_EQ(invalid.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(invalid.error_message(), "worker_id must not be empty");
}

// Behaviours 6 and 7 (docs/contract.md, "Reference behaviours") against the
// real binary and its transport settings.
TEST_P(ServerBackendE2eTest, MessageSizeLimits) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  ApplyExternalKvBatchResponse applied;
  ASSERT_TRUE(server->stub()
                  .ApplyExternalKvBatch(
                      Context().get(),
                      Batch("w", "10.0.0.1:1").Report(kTierHbm, {-1}), &applied)
                  .ok());

  MatchExternalKvPrefixRequest big;
  big.add_hashes(-1);
  for (int64_t h = 1; h < 600000; ++h) big.add_hashes(h);
  MatchExternalKvPrefixResponse resp;
  const grpc::Status accepted =
      server->stub().MatchExternalKvPrefix(Context().get(), big, &resp);
  ASSERT_TRUE(accepted.ok()) << accepted.error_message();
  EXPECT_EQ(resp.best_prefix_blocks(), 1u);

  MatchExternalKvPrefixRequest too_big;
  for (int64_t h = 0; h < 8 * 1024 * 1024 / 8 + 1024; ++h)
    too_big.add_hashes(h);
  const grpc::Status refused =
      server->stub().MatchExternalKvPrefix(Context().get(), too_big, &resp);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::OUT_OF_RANGE)
      << refused.error_message();
}

TEST_P(ServerBackendE2eTest, StartupLineNamesTheBackend) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const std::string loaded = std::string(GetParam()) == "memory"
                                 ? kDefaultBackend
                                 : std::string(GetParam());
  EXPECT_THAT(server->process().Output(),
              AllOf(HasSubstr("backend=" + loaded + " "),
                    HasSubstr("kvindexer-backend-" + loaded + ".so")));
}

// The nice value of `pid`'s thread named `name` (/proc/<pid>/task/<tid>/stat,
// field 19); nullopt when there is none.
std::optional<int> ThreadNice(pid_t pid, std::string_view name) {
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(tasks, error)) {
    std::ifstream comm(entry.path() / "comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream stat_file(entry.path() / "stat");
    std::string stat;
    std::getline(stat_file, stat);
    // Fields after the command, which ends at the last ')': state is 3rd.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    const std::vector<std::string> fields =
        absl::StrSplit(stat.substr(close + 2), ' ');
    int nice = 0;
    if (fields.size() < 17 || !absl::SimpleAtoi(fields[16], &nice)) {
      return std::nullopt;
    }
    return nice;
  }
  return std::nullopt;
}

// The apply thread runs below the server only over a backend whose queries
// never wait for a mutation (server/kv_indexer_service.h); over one whose
// queries can wait for it, a lowered apply thread would keep them waiting.
TEST_P(ServerBackendE2eTest, TheApplyThreadsPriorityFollowsTheBackend) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const bool never_wait = std::string(GetParam()) != "absl_rwlock";
  EXPECT_THAT(
      server->process().Output(),
      HasSubstr(never_wait ? "apply thread nice_increment=10 (backend "
                             "read_concurrency=readers_never_wait)"
                           : "apply thread nice_increment=0 (backend "
                             "read_concurrency=readers_wait_for_writers)"));
  const std::optional<int> apply =
      ThreadNice(server->process().pid(), "kvidx-apply");
  const std::optional<int> lookup =
      ThreadNice(server->process().pid(), "kvidx-lookup");
  ASSERT_TRUE(apply.has_value());
  ASSERT_TRUE(lookup.has_value());
  // Nice values top out at 19.
  EXPECT_EQ(*apply, never_wait ? std::min(*lookup + 10, 19) : *lookup);
}

INSTANTIATE_TEST_SUITE_P(Backends, ServerBackendE2eTest,
                         // "memory": the later reference builds' name,
                         // which selects the default backend.
                         ::testing::Values("absl_rwlock",
                                           "robin_sharded_snapshot", "memory"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param);
                         });

TEST(ServerE2eTest, StartupLogLine) {
  auto server =
      RunningServer::Start({{"KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT", "64"}});
  ASSERT_NE(server, nullptr);
  const std::string output = server->process().Output();
  std::string startup;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("starting single-server in-memory SGLang KV Indexer") !=
        std::string::npos) {
      startup = line;
      break;
    }
  }
  ASSERT_FALSE(startup.empty()) << output;
  EXPECT_THAT(startup,
              AllOf(HasSubstr(" info "), HasSubstr("addr=127.0.0.1:0"),
                    HasSubstr("prefix_query_max_inflight=64"),
                    HasSubstr("max_concurrent_streams=64"),
                    HasSubstr("backend=" + kDefaultBackend),
                    HasSubstr("backend_version="),
                    HasSubstr("kvindexer-backend-" + kDefaultBackend + ".so"),
                    HasSubstr("backend_build="), HasSubstr("server_version="),
                    HasSubstr("server_build=")));
}

// docs/health.md: the binary registers grpc.health.v1 (SERVING once it
// listens) and reflection.
TEST(ServerE2eTest, HealthAndReflectionAreServed) {
  auto server = RunningServer::Start();
  ASSERT_NE(server, nullptr);
  auto channel = grpc::CreateChannel(server->address(),
                                     grpc::InsecureChannelCredentials());
  for (const std::string service : {"", "kv_indexer.v1.KVIndexer"}) {
    const test_support::HealthAnswer answer =
        test_support::CheckHealth(channel, service, 10s);
    EXPECT_EQ(answer.code, grpc::StatusCode::OK) << "\"" << service << "\"";
    EXPECT_EQ(answer.status, test_support::kHealthServing)
        << "\"" << service << "\"";
  }
  const std::optional<std::vector<std::string>> services =
      test_support::ReflectedServices(channel, 10s);
  ASSERT_TRUE(services.has_value());
  EXPECT_THAT(*services, ::testing::Contains("kv_indexer.v1.KVIndexer"));
}

TEST(ServerE2eTest, LoadsBackendByPath) {
  // The path the default backend was loaded from, given explicitly.
  auto first = RunningServer::Start();
  ASSERT_NE(first, nullptr);
  const std::optional<std::string> startup =
      first->process().WaitForLineContaining("backend_path=", 1s);
  ASSERT_TRUE(startup.has_value()) << first->process().Output();
  const std::string path = LogField(*startup, "backend_path").value_or("");
  ASSERT_THAT(path, ::testing::EndsWith(".so"));
  auto second = RunningServer::Start({{"KV_INDEXER_BACKEND", path}});
  ASSERT_NE(second, nullptr);
  EXPECT_THAT(second->process().Output(),
              HasSubstr("backend=" + kDefaultBackend));
}

struct BadConfig {
  const char* name;  // test name suffix
  const char* variable;
  const char* value;
  const char* expected_text;  // a piece of "what is accepted"
};

class ServerBadConfigTest : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ServerBadConfigTest, ExitsNonZeroNamingTheVariable) {
  const BadConfig& bad = GetParam();
  const Finished finished = RunToExit({{bad.variable, bad.value}});
  ASSERT_TRUE(finished.status.has_value()) << "did not exit in time";
  EXPECT_FALSE(finished.status->ok()) << finished.status->ToString();
  EXPECT_TRUE(finished.status->exited) << finished.status->ToString();
  EXPECT_THAT(finished.output,
              AllOf(HasSubstr(bad.variable),
                    HasSubstr(std::string("\"") + bad.value + "\""),
                    HasSubstr(bad.expected_text)));
  EXPECT_THAT(finished.output, ::testing::Not(HasSubstr("listening")));
}

INSTANTIATE_TEST_SUITE_P(
    Values, ServerBadConfigTest,
    ::testing::Values(
        BadConfig{"MaxInflightZero", "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                  "0", "positive integer"},
        BadConfig{"MaxInflightMany", "KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT",
                  "many", "positive integer"},
        BadConfig{"ListenAddrHostname", "KV_INDEXER_LISTEN_ADDR",
                  "localhost:50051", "literal IP address"},
        BadConfig{"ListenAddrUnbracketedIpv6", "KV_INDEXER_LISTEN_ADDR",
                  "::1:50051", "literal IP address"},
        BadConfig{"BackendNope", "KV_INDEXER_BACKEND", "nope",
                  "kvindexer-backend-nope.so"},
        BadConfig{"BackendValkey", "KV_INDEXER_BACKEND", "valkey",
                  "not available in this server"},
        BadConfig{"LogLevelLoud", "KV_INDEXER_LOG_LEVEL", "loud",
                  "trace, debug"},
        BadConfig{"RobinMergeMinDeltaWords", "KV_INDEXER_ROBIN_MERGE_MIN_DELTA",
                  "lots", "number of blocks"},
        // docs/contract.md, "Limits > Bounds".
        BadConfig{"MaxWorkerIdBytesZero", "KV_INDEXER_MAX_WORKER_ID_BYTES", "0",
                  "positive integer"},
        BadConfig{"MaxWorkerAddressBytesWords",
                  "KV_INDEXER_MAX_WORKER_ADDRESS_BYTES", "long",
                  "positive integer"},
        BadConfig{"MaxWorkerEpochBytesHex", "KV_INDEXER_MAX_WORKER_EPOCH_BYTES",
                  "0x100", "positive integer"},
        BadConfig{"MaxWorkersNegative", "KV_INDEXER_MAX_WORKERS", "-1",
                  "positive integer"},
        BadConfig{"MaxPrefixAnswerBytesAboveIntMax",
                  "KV_INDEXER_MAX_PREFIX_ANSWER_BYTES", "2147483648",
                  "1..2147483647"},
        // Fleet mode (replica/event_source_config.h).
        BadConfig{"EventSourceKafka", "KV_INDEXER_EVENT_SOURCE", "kafka",
                  "grpc"},
        BadConfig{"FleetMaxLagZero", "KV_INDEXER_FLEET_MAX_LAG_RECORDS", "0",
                  "positive integer"},
        BadConfig{"FleetMaxSilenceTooShort", "KV_INDEXER_FLEET_MAX_SILENCE_MS",
                  "100", "500..86400000"},
        // Snapshot staging (server/staging_config.h).
        BadConfig{"StagingMaxPlacementsAboveCap",
                  "KV_INDEXER_STAGING_MAX_PLACEMENTS", "50000001",
                  "1..50000000"},
        BadConfig{"StagingMaxTransactionsZero",
                  "KV_INDEXER_STAGING_MAX_TRANSACTIONS", "0",
                  "positive integer"},
        BadConfig{"StagingIdleTimeoutTooShort",
                  "KV_INDEXER_STAGING_IDLE_TIMEOUT_MS", "999",
                  "1000..3600000"}),
    [](const ::testing::TestParamInfo<BadConfig>& param) {
      return std::string(param.param.name);
    });

TEST(ServerE2eTest, HelpExitsZero) {
  const Finished finished = RunToExit({}, {"--help"});
  ASSERT_TRUE(finished.status.has_value());
  EXPECT_TRUE(finished.status->ok()) << finished.status->ToString();
  EXPECT_THAT(finished.output,
              AllOf(HasSubstr("Usage:"), HasSubstr("KV_INDEXER_LISTEN_ADDR"),
                    HasSubstr("KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT"),
                    HasSubstr("KV_INDEXER_BACKEND"),
                    HasSubstr("KV_INDEXER_BACKEND_PATH"),
                    HasSubstr("KV_INDEXER_LOG_LEVEL"),
                    HasSubstr("KV_INDEXER_ROBIN_MERGE_MIN_DELTA")));
}

TEST(ServerE2eTest, UnknownArgumentFails) {
  const Finished finished = RunToExit({}, {"--listen=1.2.3.4:5"});
  ASSERT_TRUE(finished.status.has_value());
  EXPECT_TRUE(finished.status->exited);
  EXPECT_NE(finished.status->code, 0);
  EXPECT_THAT(finished.output, HasSubstr("\"--listen=1.2.3.4:5\""));
}

TEST(ServerE2eTest, PortInUseFails) {
  // Hold a listening socket, then ask the server for the same port.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string listen_addr =
      "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  const Finished finished =
      RunToExit({{"KV_INDEXER_LISTEN_ADDR", listen_addr}});
  close(fd);
  ASSERT_TRUE(finished.status.has_value()) << "did not exit in time";
  EXPECT_TRUE(finished.status->exited) << finished.status->ToString();
  EXPECT_NE(finished.status->code, 0);
  EXPECT_THAT(finished.output,
              AllOf(HasSubstr("cannot listen on KV_INDEXER_LISTEN_ADDR="),
                    HasSubstr(listen_addr)));
}

// A replica's state comes from the event log alone: a data directory as
// well is a configuration error naming both variables (exit 2).
TEST(ServerE2eTest, JetStreamWithADataDirectoryFails) {
  const Finished finished =
      RunToExit({{"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                 {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:1"},
                 {"KV_INDEXER_DATA_DIR", "/nonexistent/kvindexer"}});
  ASSERT_TRUE(finished.status.has_value()) << "did not exit in time";
  EXPECT_TRUE(finished.status->exited) << finished.status->ToString();
  EXPECT_EQ(finished.status->code, 2);
  EXPECT_THAT(finished.output, AllOf(HasSubstr("KV_INDEXER_EVENT_SOURCE"),
                                     HasSubstr("KV_INDEXER_DATA_DIR")));
  EXPECT_THAT(finished.output, ::testing::Not(HasSubstr("listening")));
}

// A replica whose event log cannot be opened (nothing listens on port 1)
// does not start (exit 1).
TEST(ServerE2eTest, JetStreamWithoutALogFails) {
  const Finished finished =
      RunToExit({{"KV_INDEXER_LISTEN_ADDR", "127.0.0.1:0"},
                 {"KV_INDEXER_EVENT_SOURCE", "jetstream"},
                 {"KV_INDEXER_NATS_URL", "nats://127.0.0.1:1"},
                 {"KV_INDEXER_NATS_TIMEOUT_MS", "1000"},
                 {"KV_INDEXER_FLEET_OPEN_ATTEMPTS", "2"}});
  ASSERT_TRUE(finished.status.has_value()) << "did not exit in time";
  EXPECT_TRUE(finished.status->exited) << finished.status->ToString();
  EXPECT_EQ(finished.status->code, 1);
  EXPECT_THAT(finished.output,
              HasSubstr("cannot open the fleet event log "
                        "(KV_INDEXER_EVENT_SOURCE=jetstream)"));
  EXPECT_THAT(finished.output, HasSubstr("(attempt 1 of 2)"));
  EXPECT_THAT(finished.output, ::testing::Not(HasSubstr("listening")));
}

class ServerSignalTest : public ::testing::TestWithParam<int> {};

TEST_P(ServerSignalTest, ExitsCleanly) {
  auto server = RunningServer::Start();
  ASSERT_NE(server, nullptr);
  server->CloseClient();
  ASSERT_TRUE(server->process().Signal(GetParam()));
  const std::optional<ExitStatus> status =
      server->process().WaitForExit(kExitBound);
  ASSERT_TRUE(status.has_value()) << "did not exit in time";
  EXPECT_TRUE(EndedCleanly(*status, server->process().Output()))
      << status->ToString() << "\n"
      << server->process().Output();
  const std::optional<std::string> received =
      server->process().WaitForLineContaining(
          GetParam() == SIGTERM ? "received SIGTERM" : "received SIGINT", 0s);
  const std::optional<std::string> stopped =
      server->process().WaitForLineContaining(" stopped", 0s);
  ASSERT_TRUE(received.has_value() && stopped.has_value())
      << server->process().Output();
  // Nothing is in flight, so nothing holds the shutdown up: the server stops
  // before its grace period is over, when it would cancel whatever still
  // ran. Measured between the server's own log lines, so that neither
  // process start and exit nor the scheduling of this test count.
  const std::optional<absl::Time> received_at = LogTime(*received);
  const std::optional<absl::Time> stopped_at = LogTime(*stopped);
  const std::optional<absl::Duration> grace = GracePeriod(*received);
  ASSERT_TRUE(received_at && stopped_at && grace) << *received << "\n"
                                                  << *stopped;
  EXPECT_LT(*stopped_at - *received_at, *grace) << *received << "\n"
                                                << *stopped;
}

// With an idle client still connected the server waits for the client to
// acknowledge its graceful GOAWAY (see CloseClient); the exit is still clean
// and bounded.
TEST(ServerE2eTest, SigtermWithIdleClientConnectedExitsCleanly) {
  auto server = RunningServer::Start();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->process().Signal(SIGTERM));
  const std::optional<ExitStatus> status =
      server->process().WaitForExit(kExitBound);
  ASSERT_TRUE(status.has_value()) << "did not exit in time";
  EXPECT_TRUE(EndedCleanly(*status, server->process().Output()))
      << status->ToString();
  EXPECT_THAT(server->process().Output(), HasSubstr("stopped"));
}

// A second shutdown signal during the grace period ends the process at once
// (exit code 1). The server is stopped while both arrive, so that they are
// pending together when it runs again: one starts the shutdown, the other
// ends it, whatever the scheduling.
TEST(ServerE2eTest, ASecondSignalExitsAtOnce) {
  auto server = RunningServer::Start();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(server->process().Signal(SIGSTOP));
  ASSERT_TRUE(server->process().Signal(SIGTERM));
  ASSERT_TRUE(server->process().Signal(SIGINT));
  ASSERT_TRUE(server->process().Signal(SIGCONT));
  const std::optional<ExitStatus> status =
      server->process().WaitForExit(kExitBound);
  ASSERT_TRUE(status.has_value()) << "did not exit in time";
  EXPECT_TRUE(status->exited && status->code == 1)
      << status->ToString() << "\n"
      << server->process().Output();
  EXPECT_THAT(server->process().Output(),
              HasSubstr("during shutdown; exiting at once"));
  EXPECT_THAT(server->process().Output(),
              ::testing::Not(HasSubstr(" stopped")));
}

INSTANTIATE_TEST_SUITE_P(Signals, ServerSignalTest,
                         ::testing::Values(SIGTERM, SIGINT),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return param.param == SIGTERM ? "SIGTERM" : "SIGINT";
                         });

}  // namespace
}  // namespace kvindexer::e2e
