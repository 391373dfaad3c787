// kv-indexer-ctl over TLS to an in-process fake admin server, with a
// self-signed certificate the test makes with the openssl command-line tool
// in a scratch directory (skipped when openssl is not on PATH).
#include <gmock/gmock.h>
#include <grpcpp/security/server_credentials.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "ctl/exit_codes.h"
#include "ctl/tests/ctl_runner.h"
#include "ctl/tests/fake_admin_server.h"
#include "ctl/tests/sample_responses.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::ctl {
namespace {

using namespace std::chrono_literals;
using testing::CtlResult;
using ::testing::HasSubstr;
using testing::RunCtlForTest;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string FindOpenssl() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    const std::string candidate = absl::StrCat(dir, "/openssl");
    if (std::ifstream(candidate).good()) return candidate;
  }
  return "";
}

TEST(CtlTlsTest, VerifiesTheServerWithTheGivenCa) {
  const std::string openssl = FindOpenssl();
  if (openssl.empty()) GTEST_SKIP() << "openssl is not installed";
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> dir =
      test_support::ScratchDir::Create("ctl-tls-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string cert = (*dir)->Sub("cert.pem");
  const std::string key = (*dir)->Sub("key.pem");
  test_support::ProcessOptions options;
  options.binary = openssl;
  options.args = {"req",
                  "-x509",
                  "-newkey",
                  "ec",
                  "-pkeyopt",
                  "ec_paramgen_curve:prime256v1",
                  "-nodes",
                  "-keyout",
                  key,
                  "-out",
                  cert,
                  "-days",
                  "1",
                  "-subj",
                  "/CN=kvindexer-test",
                  "-addext",
                  "subjectAltName=DNS:kvindexer-test,IP:127.0.0.1"};
  options.env = {{"OPENSSL_CONF", "/dev/null"}};
  auto process = test_support::ServerProcess::Start(std::move(options));
  ASSERT_TRUE(process.ok()) << process.status();
  std::optional<test_support::ExitStatus> exit = (*process)->WaitForExit(30s);
  ASSERT_TRUE(exit.has_value() && exit->ok()) << (*process)->Output();

  grpc::SslServerCredentialsOptions ssl;
  ssl.pem_key_cert_pairs.push_back({ReadText(key), ReadText(cert)});
  testing::FakeAdminServer server(grpc::SslServerCredentials(ssl));
  server.service().SetStats(testing::SampleStats());
  server.service().SetWorkers(testing::SampleWorkers());
  const std::string https = absl::StrCat("https://127.0.0.1:", server.port());
  const std::string http = absl::StrCat("http://127.0.0.1:", server.port());

  // The CA by flag, by variable, and with the name checked instead of the
  // address; an http:// endpoint with a CA file uses TLS too.
  CtlResult r =
      RunCtlForTest({"workers", "--endpoint", https, "--tls-ca", cert});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("w-a"));
  r = RunCtlForTest({"status"}, {{"KV_INDEXER_ENDPOINT", http},
                                 {"KV_INDEXER_TLS_CA_FILE", cert}});
  EXPECT_EQ(r.code, kExitOk) << r.err;
  r = RunCtlForTest({"workers", "--endpoint", https, "--tls-ca", cert,
                     "--tls-server-name", "kvindexer-test"});
  EXPECT_EQ(r.code, kExitOk) << r.err;

  // Untrusted certificate, wrong name, plaintext: the handshake fails, which
  // gRPC reports as UNAVAILABLE (3).
  r = RunCtlForTest({"workers", "--endpoint", https});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  r = RunCtlForTest({"workers", "--endpoint", https, "--tls-ca", cert,
                     "--tls-server-name", "other-name"});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  r = RunCtlForTest({"workers", "--endpoint", http});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
}

}  // namespace
}  // namespace kvindexer::ctl
