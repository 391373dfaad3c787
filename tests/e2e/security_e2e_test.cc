// End-to-end security (docs/security.md): a real kv-indexer-server with TLS,
// mutual TLS and a write token, reached by clients built from
// common/client_channel.h and by the real kv-indexer-bridge.
//
// The certificates are made by the test with the openssl command-line tool
// (a CA, a server certificate for 127.0.0.1 and localhost, a client
// certificate), in a fresh scratch directory. Without openssl the tests are
// skipped with a message saying so.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/strings/str_split.h"
#include "bridge/bridge_config.h"
#include "common/client_channel.h"
#include "common/env.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "tests/support/msgpack_builders.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

#ifndef KVINDEXER_SERVER_BINARY
#error "KVINDEXER_SERVER_BINARY must name the kv-indexer-server executable"
#endif
#ifndef KVINDEXER_BRIDGE_BINARY
#error "KVINDEXER_BRIDGE_BINARY must name the kv-indexer-bridge executable"
#endif

namespace kvindexer::bridge::security_e2e_test {
namespace {

using namespace std::chrono_literals;
using ::kv_indexer::v1::KVIndexer;
using ::kvindexer::bridge::testing::PackBatch;
using ::kvindexer::bridge::testing::SeqFrame;
using ::kvindexer::bridge::testing::StoreEvent;
using ::kvindexer::test_support::ListeningServer;
using ::kvindexer::test_support::ProcessOptions;
using ::kvindexer::test_support::ScratchDir;
using ::kvindexer::test_support::ServerProcess;
using ::kvindexer::test_support::StartListeningServer;
using ::kvindexer::test_support::WaitUntil;
namespace v1 = ::kv_indexer::v1;

constexpr auto kBound = 30s;
const char kToken[] = "s3cret-Write-Token_0123456789";
const char kWrongToken[] = "not-the-token-9876543210";
const char kWorkerId[] = "worker-tls";
const char kWorkerAddress[] = "http://127.0.0.1:30001";

// The openssl executable on PATH, or "".
std::string FindOpenssl() {
  const char* path = getenv("PATH");
  if (path == nullptr) return "";
  for (const auto dir : absl::StrSplit(path, ':')) {
    std::string candidate = std::string(dir) + "/openssl";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// The config every openssl call uses, so that the system's openssl.cnf
// plays no part: extensions for the CA, the server and the client.
constexpr std::string_view kOpensslConfig = R"(
[req]
distinguished_name = dn
prompt = no
[dn]
CN = unused
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
[client_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = clientAuth
)";

// Certificates and the token in one scratch directory.
struct Pki {
  std::unique_ptr<ScratchDir> dir;
  std::string ca_pem, server_pem, server_key, client_pem, client_key;
  std::string token_file, wrong_token_file;
};

// Runs openssl with `args`; a failure quotes its output.
::testing::AssertionResult RunOpenssl(const std::string& openssl,
                                      std::vector<std::string> args,
                                      const std::string& cwd_config) {
  ProcessOptions options;
  options.binary = openssl;
  options.args = std::move(args);
  options.env = {{"OPENSSL_CONF", cwd_config}};
  auto process = ServerProcess::Start(std::move(options));
  if (!process.ok()) {
    return ::testing::AssertionFailure() << process.status();
  }
  auto exit = (*process)->WaitForExit(kBound);
  if (!exit || !exit->ok()) {
    return ::testing::AssertionFailure()
           << "openssl failed: " << (exit ? exit->ToString() : "timeout")
           << "\n"
           << (*process)->Output();
  }
  return ::testing::AssertionSuccess();
}

// A CA, a server certificate and a client certificate (P-256 keys: quick
// to make), all valid for a day.
::testing::AssertionResult MakePki(const std::string& openssl, Pki* pki) {
  auto dir = ScratchDir::Create("kvidx-tls-");
  if (!dir.ok()) return ::testing::AssertionFailure() << dir.status();
  pki->dir = *std::move(dir);
  const auto sub = [&](const char* name) { return pki->dir->Sub(name); };
  const std::string cnf = sub("openssl.cnf");
  WriteFile(cnf, std::string(kOpensslConfig));
  const std::vector<std::string> ec = {
      "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"};
  const auto cat = [](std::vector<std::string> a,
                      const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  pki->ca_pem = sub("ca.pem");
  pki->server_pem = sub("server.pem");
  pki->server_key = sub("server.key");
  pki->client_pem = sub("client.pem");
  pki->client_key = sub("client.key");
  const std::vector<std::vector<std::string>> steps = {
      cat(cat({"req", "-x509", "-config", cnf}, ec),
          {"-keyout", sub("ca.key"), "-out", pki->ca_pem, "-days", "1", "-subj",
           "/CN=kvindexer test CA", "-extensions", "ca_ext"}),
      cat(cat({"req", "-new", "-config", cnf}, ec),
          {"-keyout", pki->server_key, "-out", sub("server.csr"), "-subj",
           "/CN=localhost"}),
      {"x509", "-req", "-in", sub("server.csr"), "-CA", pki->ca_pem, "-CAkey",
       sub("ca.key"), "-set_serial", "2", "-days", "1", "-extfile", cnf,
       "-extensions", "server_ext", "-out", pki->server_pem},
      cat(cat({"req", "-new", "-config", cnf}, ec),
          {"-keyout", pki->client_key, "-out", sub("client.csr"), "-subj",
           "/CN=kvindexer test client"}),
      {"x509", "-req", "-in", sub("client.csr"), "-CA", pki->ca_pem, "-CAkey",
       sub("ca.key"), "-set_serial", "3", "-days", "1", "-extfile", cnf,
       "-extensions", "client_ext", "-out", pki->client_pem},
  };
  for (const auto& step : steps) {
    if (auto r = RunOpenssl(openssl, step, cnf); !r) return r;
  }
  pki->token_file = sub("token");
  WriteFile(pki->token_file, std::string(kToken) + "\n");
  pki->wrong_token_file = sub("wrong-token");
  WriteFile(pki->wrong_token_file, kWrongToken);
  return ::testing::AssertionSuccess();
}

std::unique_ptr<grpc::ClientContext> Context(
    std::chrono::milliseconds timeout = 5s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  return context;
}

class SecurityE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    openssl_ = new std::string(FindOpenssl());
    if (openssl_->empty()) return;
    pki_ = new Pki();
    const auto made = MakePki(*openssl_, pki_);
    ASSERT_TRUE(made);
    ProcessOptions options;
    options.binary = KVINDEXER_SERVER_BINARY;
    options.unset_env = {"KV_INDEXER_BACKEND", "KV_INDEXER_BACKEND_PATH",
                         "KV_INDEXER_DATA_DIR", "KV_INDEXER_LOG_LEVEL"};
    options.env = {{"KV_INDEXER_TLS_CERT_FILE", pki_->server_pem},
                   {"KV_INDEXER_TLS_KEY_FILE", pki_->server_key},
                   {"KV_INDEXER_TLS_CLIENT_CA_FILE", pki_->ca_pem},
                   {"KV_INDEXER_WRITE_TOKEN_FILE", pki_->token_file}};
    auto listening = StartListeningServer(std::move(options), 0, kBound);
    ASSERT_TRUE(listening.ok()) << listening.status();
    server_ = new ListeningServer(*std::move(listening));
  }

  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      EXPECT_TRUE(server_->process->Stop(20s).ok());
      delete server_;
      server_ = nullptr;
    }
    delete pki_;
    pki_ = nullptr;
    delete openssl_;
    openssl_ = nullptr;
  }

  void SetUp() override {
    if (openssl_->empty()) {
      GTEST_SKIP() << "the openssl command-line tool is not on PATH; it "
                      "makes this test's certificates (apt-get install "
                      "openssl)";
    }
    ASSERT_NE(server_, nullptr);
  }

  // The client side from the variables the bridge and the CLI read.
  static ClientSecurity Security(
      std::map<std::string, std::string, std::less<>> vars) {
    auto security = LoadClientSecurity(MapEnvironment(std::move(vars)));
    EXPECT_TRUE(security.ok()) << security.status();
    return security.ok() ? *security : ClientSecurity();
  }
  static std::map<std::string, std::string, std::less<>> MutualTls() {
    return {{"KV_INDEXER_TLS_CA_FILE", pki_->ca_pem},
            {"KV_INDEXER_TLS_CLIENT_CERT_FILE", pki_->client_pem},
            {"KV_INDEXER_TLS_CLIENT_KEY_FILE", pki_->client_key}};
  }

  static std::unique_ptr<KVIndexer::Stub> Stub(const ClientSecurity& security,
                                               bool endpoint_tls = false) {
    return KVIndexer::NewStub(CreateClientChannel(
        server_->address, security, endpoint_tls, grpc::ChannelArguments()));
  }

  static grpc::Status Read(KVIndexer::Stub& stub) {
    v1::GetExternalKvHitCountsRequest req;
    req.add_hashes(1);
    v1::GetExternalKvHitCountsResponse resp;
    return stub.GetExternalKvHitCounts(Context().get(), req, &resp);
  }

  static grpc::Status Apply(KVIndexer::Stub& stub,
                            const ClientSecurity& security, int64_t hash) {
    v1::ApplyExternalKvBatchRequest req;
    req.set_worker_id("worker-direct");
    req.set_worker_address("http://127.0.0.1:30002");
    auto* action = req.add_actions();
    action->set_type(v1::ACTION_REPORT);
    action->set_tier(v1::TIER_HBM);
    action->add_hashes(hash);
    v1::ApplyExternalKvBatchResponse resp;
    auto context = Context();
    AddWriteToken(security, context.get());
    return stub.ApplyExternalKvBatch(context.get(), req, &resp);
  }

  static bool Holds(KVIndexer::Stub& stub, int64_t hash,
                    const std::string& worker) {
    v1::MatchExternalKvRequest req;
    req.add_hashes(hash);
    v1::MatchExternalKvResponse resp;
    if (!stub.MatchExternalKv(Context().get(), req, &resp).ok()) return false;
    for (const auto& match : resp.matches()) {
      if (match.worker_id() == worker) return true;
    }
    return false;
  }

  static std::string* openssl_;
  static Pki* pki_;
  static ListeningServer* server_;
};

std::string* SecurityE2eTest::openssl_ = nullptr;
Pki* SecurityE2eTest::pki_ = nullptr;
ListeningServer* SecurityE2eTest::server_ = nullptr;

TEST_F(SecurityE2eTest, PlaintextAndCertificatelessClientsAreRefused) {
  // No TLS at all.
  EXPECT_EQ(Read(*Stub(ClientSecurity())).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // TLS that trusts the CA but shows no client certificate.
  EXPECT_EQ(Read(*Stub(Security({{"KV_INDEXER_TLS_CA_FILE", pki_->ca_pem}})))
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // TLS without the CA among the roots: the server is not trusted.
  auto no_ca = MutualTls();
  no_ca.erase("KV_INDEXER_TLS_CA_FILE");
  EXPECT_EQ(Read(*Stub(Security(no_ca))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // A name the server certificate does not carry.
  auto wrong_name = MutualTls();
  wrong_name["KV_INDEXER_TLS_SERVER_NAME"] = "not-the-server.example";
  EXPECT_EQ(Read(*Stub(Security(wrong_name))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(SecurityE2eTest, ReadsAreOpenAndWritesNeedTheToken) {
  const ClientSecurity no_token = Security(MutualTls());
  auto stub = Stub(no_token);
  EXPECT_TRUE(Read(*stub).ok());
  // The name the certificate carries, checked instead of the address.
  auto named = MutualTls();
  named["KV_INDEXER_TLS_SERVER_NAME"] = "localhost";
  EXPECT_TRUE(Read(*Stub(Security(named))).ok());

  EXPECT_EQ(Apply(*stub, no_token, 41).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  auto wrong = MutualTls();
  wrong["KV_INDEXER_WRITE_TOKEN_FILE"] = pki_->wrong_token_file;
  EXPECT_EQ(Apply(*stub, Security(wrong), 42).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  auto right = MutualTls();
  right["KV_INDEXER_WRITE_TOKEN_FILE"] = pki_->token_file;
  const grpc::Status ok = Apply(*stub, Security(right), 43);
  EXPECT_TRUE(ok.ok()) << ok.error_message();

  EXPECT_FALSE(Holds(*stub, 41, "worker-direct"));
  EXPECT_FALSE(Holds(*stub, 42, "worker-direct"));
  EXPECT_TRUE(Holds(*stub, 43, "worker-direct"));

  EXPECT_THAT(server_->process->Output(),
              ::testing::HasSubstr(
                  "security tls=on mutual_tls=on write_token=required"));
  // The refusals are logged, without either token.
  ASSERT_TRUE(server_->process->WaitForOutput("PERMISSION_DENIED", kBound));
  const std::string log = server_->process->Output();
  EXPECT_THAT(log, ::testing::HasSubstr("UNAUTHENTICATED"));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr(kToken)));
  EXPECT_THAT(log, ::testing::Not(::testing::HasSubstr(kWrongToken)));
}

// The real bridge delivers to the TLS + token server: endpoint http:// is
// upgraded by KV_INDEXER_TLS_CA_FILE, and the token rides on every apply.
TEST_F(SecurityE2eTest, BridgeDeliversOverMutualTlsWithToken) {
  zmq::context_t zmq_context(1);
  zmq::socket_t publisher(zmq_context, zmq::socket_type::pub);
  publisher.set(zmq::sockopt::linger, 0);
  publisher.bind("tcp://127.0.0.1:*");
  const std::string event_endpoint = publisher.get(zmq::sockopt::last_endpoint);

  ProcessOptions options;
  options.binary = KVINDEXER_BRIDGE_BINARY;
  options.unset_env = {"KV_INDEXER_CLEAR_TIERS", "KV_INDEXER_CACHE_COMPONENTS",
                       "SGLANG_KV_EVENT_TOPIC", "KV_INDEXER_TLS_SERVER_NAME",
                       "KV_INDEXER_STATS_INTERVAL_SECS"};
  options.env = {{"KV_INDEXER_WORKER_ID", kWorkerId},
                 {"KV_INDEXER_WORKER_ADDRESS", kWorkerAddress},
                 {"KV_INDEXER_ENDPOINT", "http://" + server_->address},
                 {"SGLANG_KV_EVENT_ENDPOINT", event_endpoint},
                 {"KV_INDEXER_SEQUENCE_GATE", "off"},
                 {"KV_INDEXER_HEARTBEAT_TTL_MS", "0"},
                 {"KV_INDEXER_WRITE_TOKEN_FILE", pki_->token_file}};
  for (const auto& [k, v] : MutualTls()) options.env[k] = v;
  auto bridge = ServerProcess::Start(std::move(options));
  ASSERT_TRUE(bridge.ok()) << bridge.status();
  ASSERT_TRUE((*bridge)->WaitForOutput("connected:", kBound))
      << (*bridge)->Output();

  auto stub = Stub(Security(MutualTls()));
  constexpr int64_t kHash = 777000111;
  uint64_t seq = 0;
  // Publish until the store is visible (ZMQ's slow joiner drops the first
  // messages); each try is bounded.
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  bool held = false;
  while (!held && std::chrono::steady_clock::now() < deadline) {
    const std::string frame = SeqFrame(seq++);
    const std::string payload = PackBatch({StoreEvent({kHash}, "GPU")});
    publisher.send(zmq::buffer(std::string()), zmq::send_flags::sndmore);
    publisher.send(zmq::buffer(frame), zmq::send_flags::sndmore);
    publisher.send(zmq::buffer(payload), zmq::send_flags::none);
    held = WaitUntil([&] { return Holds(*stub, kHash, kWorkerId); }, 300ms);
  }
  EXPECT_TRUE(held) << (*bridge)->Output() << "\n"
                    << server_->process->Output();
  EXPECT_TRUE((*bridge)->Stop(20s).ok()) << (*bridge)->Output();
  EXPECT_THAT((*bridge)->Output(),
              ::testing::Not(::testing::HasSubstr(kToken)));
}

// Bad security settings stop both programs at start with exit 2 and a
// message naming the variable (no certificates needed).
TEST(SecurityConfigExitTest, BadValuesExitTwoNamingTheVariable) {
  const auto dir = ScratchDir::Create("kvidx-tls-cfg-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string empty = (*dir)->Sub("empty");
  WriteFile(empty, "");
  struct Case {
    const char* binary;
    std::map<std::string, std::string> env;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {KVINDEXER_SERVER_BINARY,
       {{"KV_INDEXER_TLS_CERT_FILE", empty}},
       "KV_INDEXER_TLS_KEY_FILE is unset"},
      {KVINDEXER_SERVER_BINARY,
       {{"KV_INDEXER_WRITE_TOKEN_FILE", empty}},
       "KV_INDEXER_WRITE_TOKEN_FILE=\"" + empty + "\" is invalid"},
      {KVINDEXER_BRIDGE_BINARY,
       {{"KV_INDEXER_WORKER_ID", "w"}, {"KV_INDEXER_TLS_CA_FILE", empty}},
       "KV_INDEXER_TLS_CA_FILE=\"" + empty + "\" is invalid"},
      {KVINDEXER_BRIDGE_BINARY,
       {{"KV_INDEXER_WORKER_ID", "w"},
        {"KV_INDEXER_TLS_CLIENT_KEY_FILE", empty}},
       "KV_INDEXER_TLS_CLIENT_CERT_FILE is unset"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    ProcessOptions options;
    options.binary = c.binary;
    options.unset_env = {
        "KV_INDEXER_TLS_CERT_FILE",      "KV_INDEXER_TLS_KEY_FILE",
        "KV_INDEXER_TLS_CLIENT_CA_FILE", "KV_INDEXER_WRITE_TOKEN_FILE",
        "KV_INDEXER_TLS_CA_FILE",        "KV_INDEXER_TLS_CLIENT_CERT_FILE",
        "KV_INDEXER_TLS_CLIENT_KEY_FILE"};
    options.env = c.env;
    options.env["KV_INDEXER_LISTEN_ADDR"] = "127.0.0.1:0";
    auto process = ServerProcess::Start(std::move(options));
    ASSERT_TRUE(process.ok()) << process.status();
    const auto exit = (*process)->WaitForExit(kBound);
    ASSERT_TRUE(exit.has_value()) << (*process)->Output();
    EXPECT_TRUE(exit->exited && exit->code == 2) << exit->ToString() << "\n"
                                                 << (*process)->Output();
    EXPECT_THAT((*process)->Output(), ::testing::HasSubstr(c.expected));
  }
}

// The bridge's configuration carries the client security settings and lists
// them in --help.
TEST(SecurityConfigExitTest, BridgeConfigCarriesClientSecurity) {
  const auto dir = ScratchDir::Create("kvidx-tls-cfg-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string token = (*dir)->Sub("token");
  WriteFile(token, "zq9token-0123456789\n");
  auto config = LoadBridgeConfig(MapEnvironment(
      {{"KV_INDEXER_WORKER_ID", "w"}, {"KV_INDEXER_WRITE_TOKEN_FILE", token}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->security.write_token, "zq9token-0123456789");
  EXPECT_FALSE(config->security.tls);
  EXPECT_THAT(
      DescribeConfig(*config),
      ::testing::AllOf(::testing::HasSubstr("write_token=set"),
                       ::testing::Not(::testing::HasSubstr("zq9token"))));
  for (const char* name :
       {"KV_INDEXER_TLS_CA_FILE", "KV_INDEXER_TLS_CLIENT_CERT_FILE",
        "KV_INDEXER_TLS_CLIENT_KEY_FILE", "KV_INDEXER_TLS_SERVER_NAME",
        "KV_INDEXER_WRITE_TOKEN_FILE"}) {
    EXPECT_THAT(BridgeUsage(), ::testing::HasSubstr(name));
  }
}

}  // namespace
}  // namespace kvindexer::bridge::security_e2e_test
