// The command line: what parses, and that every usage error exits 2 with one
// line on stderr before any connection is attempted.
#include "ctl/ctl_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ctl/exit_codes.h"
#include "ctl/tests/ctl_runner.h"

namespace kvindexer::ctl {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CtlOptionsTest, DefaultsForStatus) {
  absl::StatusOr<CtlOptions> o = ParseCtlArgs({"status"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, Command::kStatus);
  EXPECT_EQ(o->timeout, std::chrono::milliseconds(5000));
  EXPECT_FALSE(o->json);
  EXPECT_FALSE(o->endpoint.has_value());
}

TEST(CtlOptionsTest, FlagsBeforeAndAfterTheCommandBothForms) {
  absl::StatusOr<CtlOptions> o = ParseCtlArgs(
      {"--endpoint", "http://127.0.0.1:9", "workers", "--json",
       "--timeout=0.25", "--token-file=/t", "--read-token-file", "/r"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, Command::kWorkers);
  EXPECT_EQ(*o->endpoint, "http://127.0.0.1:9");
  EXPECT_TRUE(o->json);
  EXPECT_EQ(o->timeout, std::chrono::milliseconds(250));
  EXPECT_EQ(*o->token_file, "/t");
  EXPECT_EQ(*o->read_token_file, "/r");
}

TEST(CtlOptionsTest, ExplainArgumentsAndFlags) {
  absl::StatusOr<CtlOptions> o =
      ParseCtlArgs({"explain", "1,2", "-3", "0xff", "--max-blocks", "8",
                    "--worker", "w-a,w-b", "--worker=w-c", "--file", "-"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->command, Command::kExplain);
  EXPECT_THAT(o->hash_args, ElementsAre("1,2", "-3", "0xff"));
  EXPECT_EQ(o->max_blocks, 8u);
  EXPECT_THAT(o->extra_workers, ElementsAre("w-a", "w-b", "w-c"));
  EXPECT_EQ(*o->hash_file, "-");
}

TEST(CtlOptionsTest, StreamsAndTheCoverageSelection) {
  absl::StatusOr<CtlOptions> o = ParseCtlArgs(
      {"explain", "1", "--stream", "ns/w/3", "--eligible-stream=/w/0",
       "--eligible-address", "a:1", "--eligible-address=b:2"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->extra_streams, ElementsAre(StreamArg{"ns", "w", 3}));
  EXPECT_THAT(o->eligible_streams, ElementsAre(StreamArg{"", "w", 0}));
  EXPECT_THAT(o->eligible_addresses, ElementsAre("a:1", "b:2"));

  o = ParseCtlArgs(
      {"remove-worker", "w", "--namespace", "ns", "--dp-rank", "4294967295"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->ns, "ns");
  EXPECT_EQ(o->dp_rank, 4294967295u);
  o = ParseCtlArgs({"remove-worker", "w"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_FALSE(o->ns.has_value());
  EXPECT_FALSE(o->dp_rank.has_value());
}

TEST(CtlOptionsTest, DoubleDashEndsFlags) {
  absl::StatusOr<CtlOptions> o =
      ParseCtlArgs({"remove-worker", "--reason", "drained", "--", "--odd-id"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->worker_id, "--odd-id");
  EXPECT_EQ(o->reason, "drained");
}

TEST(CtlOptionsTest, TopIntervalAndIterations) {
  absl::StatusOr<CtlOptions> o =
      ParseCtlArgs({"top", "--interval", "0.5", "--iterations", "3"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->interval, std::chrono::milliseconds(500));
  EXPECT_EQ(o->iterations, 3u);
  o = ParseCtlArgs({"top"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->interval, std::chrono::milliseconds(2000));
  EXPECT_EQ(o->iterations, 0u);
}

TEST(CtlOptionsTest, HelpWinsAnywhere) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"--help"},
                                             {"-h"},
                                             {"help"},
                                             {"status", "--help"},
                                             {"bogus", "-h"}}) {
    absl::StatusOr<CtlOptions> o = ParseCtlArgs(args);
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_EQ(o->command, Command::kHelp);
  }
  testing::CtlResult r = testing::RunCtlForTest({"--help"});
  EXPECT_EQ(r.code, kExitOk);
  EXPECT_THAT(r.out, HasSubstr("Exit codes:"));
  EXPECT_THAT(r.out, HasSubstr("remove-worker"));
  EXPECT_THAT(r.err, IsEmpty());
}

struct UsageCase {
  std::vector<std::string> args;
  std::string message;
};

class CtlUsageErrorTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(CtlUsageErrorTest, ExitsTwoWithOneLine) {
  const UsageCase& c = GetParam();
  // A closed endpoint: a usage error must be found before any RPC.
  testing::CtlResult r = testing::RunCtlForTest(
      c.args, {{"KV_INDEXER_ENDPOINT", "http://127.0.0.1:1"}});
  EXPECT_EQ(r.code, kExitUsage) << r.err;
  EXPECT_THAT(r.err, HasSubstr(c.message));
  EXPECT_THAT(r.err, ::testing::StartsWith("kv-indexer-ctl: "));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CtlUsageErrorTest,
    ::testing::Values(
        UsageCase{{}, "no command given"},
        UsageCase{{"frobnicate"}, "unknown command \"frobnicate\""},
        UsageCase{{"status", "--colour"}, "unknown flag --colour"},
        UsageCase{{"status", "-x"}, "unknown flag \"-x\""},
        UsageCase{{"status", "--endpoint"}, "--endpoint needs a value"},
        UsageCase{{"status", "--json=yes"}, "--json takes no value"},
        UsageCase{{"status", "--timeout", "0"}, "--timeout \"0\" is invalid"},
        UsageCase{{"status", "--timeout", "abc"}, "--timeout \"abc\""},
        UsageCase{{"status", "--timeout", "-1"}, "--timeout \"-1\""},
        UsageCase{{"status", "extra"}, "status takes no arguments"},
        UsageCase{{"workers", "--max-blocks", "3"},
                  "--max-blocks does not apply to workers"},
        UsageCase{{"status", "--interval", "1"},
                  "--interval does not apply to status"},
        UsageCase{{"explain"}, "explain needs hashes"},
        UsageCase{{"explain", "12x"}, "bad hash \"12x\""},
        UsageCase{{"explain", "1", "0x"}, "bad hash \"0x\""},
        UsageCase{{"explain", "0x12345678901234567"},
                  "bad hash \"0x12345678901234567\""},
        UsageCase{{"explain", "18446744073709551616"},
                  "bad hash \"18446744073709551616\""},
        UsageCase{{"explain", "-9223372036854775809"},
                  "bad hash \"-9223372036854775809\""},
        UsageCase{{"explain", "1", "--max-blocks", "-2"},
                  "--max-blocks \"-2\" is invalid"},
        UsageCase{{"explain", "1", "--worker", "a,,b"},
                  "--worker \"a,,b\" is invalid"},
        UsageCase{{"explain", "--file", "/nonexistent/hashes"},
                  "--file: cannot read \"/nonexistent/hashes\""},
        UsageCase{{"explain", ","}, "explain: no hashes given"},
        UsageCase{{"explain", "1", "--stream", "ns/w"},
                  "--stream \"ns/w\" is invalid: expected "
                  "NAMESPACE/WORKER/RANK"},
        UsageCase{{"explain", "1", "--stream", "ns//0"},
                  "--stream \"ns//0\" is invalid"},
        UsageCase{{"explain", "1", "--eligible-stream", "ns/w/x"},
                  "--eligible-stream \"ns/w/x\" is invalid"},
        UsageCase{{"explain", "1", "--eligible-address", ""},
                  "--eligible-address needs an address"},
        UsageCase{{"workers", "--stream", "ns/w/0"},
                  "--stream does not apply to workers"},
        UsageCase{{"explain", "1", "--namespace", "ns"},
                  "--namespace does not apply to explain"},
        UsageCase{{"remove-worker", "w", "--dp-rank", "-1"},
                  "--dp-rank \"-1\" is invalid"},
        UsageCase{{"remove-worker"}, "remove-worker takes exactly one"},
        UsageCase{{"remove-worker", "a", "b"},
                  "remove-worker takes exactly one"},
        UsageCase{{"remove-worker", ""}, "empty worker id"},
        UsageCase{{"remove-worker", "w", "--token-file", "/nonexistent/t"},
                  "KV_INDEXER_WRITE_TOKEN_FILE=\"/nonexistent/t\" is "
                  "invalid: cannot read the file"},
        UsageCase{{"status", "--token-file", "/nonexistent/t"},
                  "KV_INDEXER_WRITE_TOKEN_FILE=\"/nonexistent/t\""},
        UsageCase{{"top", "--iterations", "0"},
                  "--iterations \"0\" is invalid"},
        UsageCase{{"top", "--interval", "nan"}, "--interval \"nan\""},
        UsageCase{{"status", "--endpoint", "127.0.0.1:50051"},
                  "--endpoint: invalid indexer endpoint"},
        UsageCase{{"status", "--tls-cert", "/c"},
                  "KV_INDEXER_TLS_CLIENT_KEY_FILE is unset but "
                  "KV_INDEXER_TLS_CLIENT_CERT_FILE is set"},
        UsageCase{{"status", "--tls-server-name", "x"},
                  "KV_INDEXER_TLS_SERVER_NAME=\"x\" is invalid: it only "
                  "applies to TLS"},
        UsageCase{{"status", "--tls-ca", "/nonexistent/ca"},
                  "KV_INDEXER_TLS_CA_FILE=\"/nonexistent/ca\" is invalid: "
                  "cannot read the file"}),
    [](const ::testing::TestParamInfo<UsageCase>& param) {
      return std::to_string(param.index);
    });

TEST(CtlOptionsTest, BadEndpointVariableIsNamed) {
  testing::CtlResult r = testing::RunCtlForTest(
      {"status"}, {{"KV_INDEXER_ENDPOINT", "tcp://127.0.0.1:1"}});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("KV_INDEXER_ENDPOINT: invalid indexer "
                               "endpoint \"tcp://127.0.0.1:1\""));
}

TEST(CtlOptionsTest, TlsFlagOverridesVariable) {
  testing::CtlResult r =
      testing::RunCtlForTest({"status", "--tls-ca", "/nonexistent/flag"},
                             {{"KV_INDEXER_TLS_CA_FILE", "/nonexistent/env"}});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("\"/nonexistent/flag\""));
  r = testing::RunCtlForTest({"status"},
                             {{"KV_INDEXER_TLS_CA_FILE", "/nonexistent/env"}});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("\"/nonexistent/env\""));
}

TEST(CtlOptionsTest, EndpointFlagOverridesVariable) {
  testing::CtlResult r =
      testing::RunCtlForTest({"status", "--endpoint", "bad"},
                             {{"KV_INDEXER_ENDPOINT", "http://127.0.0.1:1"}});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--endpoint: invalid indexer endpoint \"bad\""));
}

}  // namespace
}  // namespace kvindexer::ctl
