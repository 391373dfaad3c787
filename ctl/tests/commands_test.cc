// Every command against an in-process fake admin server on 127.0.0.1: what
// it prints, what it sends and the exit code scripts see.
#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "ctl/exit_codes.h"
#include "ctl/tests/ctl_runner.h"
#include "ctl/tests/fake_admin_server.h"
#include "ctl/tests/sample_responses.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::ctl {
namespace {

using ::testing::ContainsRegex;
using testing::CtlResult;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using testing::RunCtlForTest;
using ::testing::StartsWith;

std::unique_ptr<test_support::ScratchDir> Scratch() {
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> dir =
      test_support::ScratchDir::Create("ctl-test-");
  EXPECT_TRUE(dir.ok()) << dir.status();
  return dir.ok() ? *std::move(dir) : nullptr;
}

// A port the kernel handed out and we closed again: nothing listens there.
int ClosedLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

class CtlCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.service().SetStats(testing::SampleStats());
    server_.service().SetWorkers(testing::SampleWorkers());
    server_.service().SetExplain(testing::SampleExplain());
  }

  // Runs with KV_INDEXER_ENDPOINT pointing at the fake.
  CtlResult Run(std::vector<std::string> args, std::string stdin_text = "",
                std::map<std::string, std::string, std::less<>> env = {}) {
    env.emplace("KV_INDEXER_ENDPOINT", server_.endpoint());
    return RunCtlForTest(args, std::move(env), stdin_text);
  }

  testing::FakeAdminServer server_;
};

TEST_F(CtlCommandsTest, Status) {
  CtlResult r = Run({"status"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(r.out,
              HasSubstr(absl::StrCat("endpoint   ", server_.endpoint())));
  EXPECT_THAT(r.out, HasSubstr("health     SERVING\n"));
  EXPECT_THAT(r.out, HasSubstr("robin 1.2.0"));
}

TEST_F(CtlCommandsTest, StatusShowsWhatTheHealthProbeSays) {
  server_.SetServing(false);
  CtlResult r = Run({"status"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, HasSubstr("SERVING (health check: NOT_SERVING)"));
  r = Run({"status", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\"stats\":{"));
  EXPECT_THAT(r.out, HasSubstr("\"health_check\":\"NOT_SERVING\"}\n"));
  EXPECT_THAT(r.out, HasSubstr("\"server_version\":\"0.1.0\""));
}

TEST_F(CtlCommandsTest, WorkersTableAndJson) {
  CtlResult r = Run({"workers"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("WORKER  ADDRESS"));
  EXPECT_THAT(r.out, HasSubstr("w-a     10.0.0.1:30001  sequenced"));
  r = Run({"workers", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.out, StartsWith("{\"workers\":[{\"worker_id\":\"w-a\""));
}

TEST_F(CtlCommandsTest, WorkersFollowsEveryPage) {
  testing::admin_v1::ListWorkersResponse five;
  for (const char* id : {"p0", "p1", "p2", "p3", "p4"}) {
    five.add_workers()->set_worker_id(id);
  }
  server_.service().SetWorkers(five);
  server_.service().PageWorkers(2);
  CtlResult r = Run({"workers", "--json"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(server_.service().list_workers_calls(), 3);
  for (const char* id : {"p0", "p1", "p2", "p3", "p4"}) {
    EXPECT_THAT(r.out, HasSubstr(absl::StrCat("\"worker_id\":\"", id, "\"")));
  }
  // One listing: no page's token is shown.
  EXPECT_THAT(r.out, Not(HasSubstr("next_page_token\":\"2")));
  EXPECT_THAT(r.out, Not(HasSubstr("next_page_token\":\"4")));
}

TEST_F(CtlCommandsTest, WorkersStopsAtATokenGivenTwice) {
  testing::admin_v1::ListWorkersResponse five;
  for (const char* id : {"p0", "p1", "p2", "p3", "p4"}) {
    five.add_workers()->set_worker_id(id);
  }
  server_.service().SetWorkers(five);
  server_.service().PageWorkers(2, /*repeat_token=*/true);
  CtlResult r = Run({"workers"});
  EXPECT_NE(r.code, kExitOk);
  EXPECT_THAT(r.err, HasSubstr("same page token twice"));
  EXPECT_EQ(server_.service().list_workers_calls(), 2);
}

TEST_F(CtlCommandsTest, ExplainSendsHashesFromArgumentsStdinAndFile) {
  std::unique_ptr<test_support::ScratchDir> dir = Scratch();
  const std::string path = dir->Sub("hashes.txt");
  { std::ofstream(path) << "0x10\n-5\n"; }
  CtlResult r = Run({"explain", "1,2", "3", "-", "--file", path, "--max-blocks",
                     "7", "--worker", "w-z"},
                    "4 5\n");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto request = server_.service().last_explain();
  EXPECT_THAT(request.hashes(), ElementsAre(1, 2, 3, 4, 5, 16, -5));
  EXPECT_EQ(request.max_blocks(), 7u);
  EXPECT_THAT(request.worker_ids(), ElementsAre("w-z"));
  EXPECT_THAT(r.out, HasSubstr("answer: best 2 blocks"));
  EXPECT_THAT(r.out, HasSubstr("block_missing @2"));

  r = Run({"explain", "--json", "--file", "-"}, "9");
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(server_.service().last_explain().hashes(), ElementsAre(9));
  EXPECT_THAT(r.out,
              HasSubstr("\"stop_reason\":\"STOP_REASON_BLOCK_MISSING\""));
}

TEST_F(CtlCommandsTest, ExplainBadHashOnStdinIsUsage) {
  CtlResult r = Run({"explain", "-"}, "1 2 nope");
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("stdin: bad hash \"nope\""));
}

TEST_F(CtlCommandsTest, RemoveWorkerSendsTokenAndReason) {
  std::unique_ptr<test_support::ScratchDir> dir = Scratch();
  const std::string token_file = dir->Sub("token");
  { std::ofstream(token_file) << "s3cret-0123456789ab\n"; }
  server_.service().RequireToken("s3cret-0123456789ab");
  CtlResult r = Run({"remove-worker", "w-a", "--reason", "drained"}, "",
                    {{"KV_INDEXER_WRITE_TOKEN_FILE", token_file}});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out, "removed worker w-a: 120 placements (hbm 100, dram 20)\n");
  EXPECT_EQ(server_.service().last_remove().reason(), "drained");

  // Gone now: NOT_FOUND is 5.
  r = Run({"remove-worker", "w-a", "--token-file", token_file});
  EXPECT_EQ(r.code, kExitNotFound) << r.err;
  EXPECT_THAT(r.err, HasSubstr("RemoveWorker(w-a) failed at " +
                               server_.endpoint() + ": NOT_FOUND: no worker"));
}

TEST_F(CtlCommandsTest, RemoveWorkerByStreamSendsItsKey) {
  admin::v1::ListWorkersResponse workers = testing::SampleWorkers();
  admin::v1::WorkerInfo* ranked = workers.add_workers();
  ranked->set_worker_id("w-a");
  ranked->set_namespace_("pool");
  ranked->set_dp_rank(2);
  admin::v1::TierPlacementCount* count = ranked->add_placements();
  count->set_tier(::kv_indexer::v1::TIER_HBM);
  count->set_placements(40);
  server_.service().SetWorkers(workers);

  CtlResult r =
      Run({"remove-worker", "w-a", "--namespace", "pool", "--dp-rank", "2"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(r.out,
            "removed worker w-a (namespace pool, dp_rank 2): 40 placements "
            "(hbm 40)\n");
  admin::v1::RemoveWorkerRequest sent = server_.service().last_remove();
  ASSERT_TRUE(sent.has_stream_id());
  EXPECT_EQ(sent.stream_id().namespace_(), "pool");
  EXPECT_EQ(sent.stream_id().worker_id(), "w-a");
  EXPECT_EQ(sent.stream_id().dp_rank(), 2u);

  // Gone; the legacy stream of the same id is still there.
  r = Run({"remove-worker", "w-a", "--namespace=pool", "--dp-rank=2"});
  EXPECT_EQ(r.code, kExitNotFound) << r.err;
  EXPECT_THAT(
      r.err, HasSubstr("RemoveWorker(w-a (namespace pool, dp_rank 2)) failed"));
  r = Run({"remove-worker", "w-a"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_FALSE(server_.service().last_remove().has_stream_id());
  EXPECT_EQ(r.out, "removed worker w-a: 120 placements (hbm 100, dram 20)\n");

  // A rank alone names a stream of the empty namespace.
  r = Run({"remove-worker", "w-b", "--dp-rank", "1"});
  EXPECT_EQ(r.code, kExitNotFound) << r.err;
  sent = server_.service().last_remove();
  ASSERT_TRUE(sent.has_stream_id());
  EXPECT_EQ(sent.stream_id().namespace_(), "");
  EXPECT_EQ(sent.stream_id().dp_rank(), 1u);
}

TEST_F(CtlCommandsTest, ExplainSendsStreamsAndTheCoverageSelection) {
  CtlResult r = Run({"explain", "1", "--stream", "pool/w-a/1", "--stream",
                     "/w/x/0", "--eligible-address", "10.0.0.1:30001",
                     "--eligible-stream", "pool/w-b/0"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  const auto request = server_.service().last_explain();
  ASSERT_EQ(request.streams_size(), 2);
  EXPECT_EQ(request.streams(0).namespace_(), "pool");
  EXPECT_EQ(request.streams(0).worker_id(), "w-a");
  EXPECT_EQ(request.streams(0).dp_rank(), 1u);
  // The namespace ends at the first slash, the rank starts after the last.
  EXPECT_EQ(request.streams(1).namespace_(), "");
  EXPECT_EQ(request.streams(1).worker_id(), "w/x");
  EXPECT_EQ(request.streams(1).dp_rank(), 0u);
  EXPECT_THAT(request.eligible_worker_addresses(),
              ElementsAre("10.0.0.1:30001"));
  ASSERT_EQ(request.eligible_streams_size(), 1);
  EXPECT_EQ(request.eligible_streams(0).worker_id(), "w-b");
  EXPECT_EQ(request.worker_ids_size(), 0);
}

TEST_F(CtlCommandsTest, RefusalsExitFour) {
  std::unique_ptr<test_support::ScratchDir> dir = Scratch();
  const std::string wrong = dir->Sub("wrong");
  { std::ofstream(wrong) << "guess-0123456789abcd"; }
  server_.service().RequireToken("s3cret-0123456789ab");
  CtlResult r = Run({"remove-worker", "w-a"});
  EXPECT_EQ(r.code, kExitRefused);
  EXPECT_THAT(r.err, HasSubstr("UNAUTHENTICATED: a write token is required"));
  r = Run({"remove-worker", "w-a", "--token-file", wrong});
  EXPECT_EQ(r.code, kExitRefused);
  EXPECT_THAT(r.err, HasSubstr("PERMISSION_DENIED"));
  // Read-only commands never need the token.
  EXPECT_EQ(Run({"workers"}).code, kExitOk);
}

// The admin read token (docs/security.md, "The admin read token"): every
// read carries it, the flag overrides the variable, remove-worker carries
// the write token instead; without a read token reads carry the write
// token, and without either nothing.
TEST_F(CtlCommandsTest, ReadsCarryTheReadToken) {
  std::unique_ptr<test_support::ScratchDir> dir = Scratch();
  const std::string read = dir->Sub("read");
  const std::string other = dir->Sub("other");
  const std::string write = dir->Sub("write");
  { std::ofstream(read) << "read-0123456789abcdef\n"; }
  { std::ofstream(other) << "other-0123456789abcde"; }
  { std::ofstream(write) << "s3cret-0123456789ab\n"; }
  const std::map<std::string, std::string, std::less<>> env = {
      {"KV_INDEXER_ADMIN_READ_TOKEN_FILE", read},
      {"KV_INDEXER_WRITE_TOKEN_FILE", write}};
  for (const std::vector<std::string>& read_command :
       {std::vector<std::string>{"status"},
        {"workers"},
        {"explain", "1"},
        {"top", "--iterations", "1"}}) {
    CtlResult r = Run(read_command, "", env);
    ASSERT_EQ(r.code, kExitOk) << r.err;
    EXPECT_EQ(server_.service().last_read_authorization(),
              "Bearer read-0123456789abcdef")
        << read_command[0];
  }
  ASSERT_EQ(Run({"workers", "--read-token-file", other}, "", env).code,
            kExitOk);
  EXPECT_EQ(server_.service().last_read_authorization(),
            "Bearer other-0123456789abcde");
  ASSERT_EQ(Run({"remove-worker", "w-a"}, "", env).code, kExitOk);
  EXPECT_EQ(server_.service().last_remove_authorization(),
            "Bearer s3cret-0123456789ab");

  ASSERT_EQ(Run({"workers"}, "", {{"KV_INDEXER_WRITE_TOKEN_FILE", write}}).code,
            kExitOk);
  EXPECT_EQ(server_.service().last_read_authorization(),
            "Bearer s3cret-0123456789ab");
  ASSERT_EQ(Run({"workers"}).code, kExitOk);
  EXPECT_EQ(server_.service().last_read_authorization(), "");
}

TEST_F(CtlCommandsTest, ABadReadTokenFileIsUsage) {
  std::unique_ptr<test_support::ScratchDir> dir = Scratch();
  const std::string short_token = dir->Sub("short");
  { std::ofstream(short_token) << "short"; }
  CtlResult r = Run({"status", "--read-token-file", short_token});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("KV_INDEXER_ADMIN_READ_TOKEN_FILE="));
  EXPECT_THAT(r.err, HasSubstr("at least 16"));
  r = Run({"workers"}, "",
          {{"KV_INDEXER_ADMIN_READ_TOKEN_FILE", dir->Sub("missing")}});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("cannot read the file"));
}

TEST_F(CtlCommandsTest, OtherServerErrorsExitOne) {
  server_.service().FailWith(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "too many\nhashes"));
  CtlResult r = Run({"explain", "1"});
  EXPECT_EQ(r.code, kExitError);
  EXPECT_EQ(r.err, "kv-indexer-ctl: ExplainPrefix failed at " +
                       server_.endpoint() +
                       ": INVALID_ARGUMENT: too many hashes\n");
  server_.service().FailWith(
      grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no"));
  EXPECT_EQ(Run({"workers"}).code, kExitRefused);
  server_.service().FailWith(grpc::Status(grpc::StatusCode::UNAVAILABLE, "x"));
  EXPECT_EQ(Run({"status"}).code, kExitUnreachable);
}

TEST_F(CtlCommandsTest, TopStopsAfterItsIterationsWithDeltas) {
  server_.service().SetStats(testing::SampleStats(), /*stats_step=*/5);
  CtlResult r = Run({"top", "--iterations", "2", "--interval", "0.5"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_THAT(r.sleeps, ElementsAre(std::chrono::milliseconds(500)));
  EXPECT_EQ(server_.service().get_stats_calls(), 2);
  // Two frames, each after a clear-screen; the second shows the growth.
  const std::string clear = "\x1b[H\x1b[2J";
  ASSERT_THAT(r.out, StartsWith(clear));
  const size_t second = r.out.find(clear, clear.size());
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(r.out.find(clear, second + clear.size()), std::string::npos);
  EXPECT_THAT(r.out.substr(0, second), ContainsRegex("blocks +120 +0\n"));
  EXPECT_THAT(r.out.substr(second), ContainsRegex("blocks +125 +\\+5\n"));
}

TEST_F(CtlCommandsTest, TopJsonIsOneLinePerRefresh) {
  CtlResult r = Run({"top", "--json", "--iterations", "3"});
  ASSERT_EQ(r.code, kExitOk) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3);
  EXPECT_THAT(r.out, StartsWith("{\"stats\":{"));
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(r.sleeps.size(), 2u);
}

TEST(CtlUnreachableTest, ClosedPortExitsThreeQuickly) {
  // A port the kernel gave us and we closed again: nothing listens.
  const int port = ClosedLoopbackPort();
  ASSERT_GT(port, 0);
  const std::string endpoint = absl::StrCat("http://127.0.0.1:", port);
  for (const char* command : {"status", "workers", "top"}) {
    const auto start = std::chrono::steady_clock::now();
    CtlResult r = RunCtlForTest({command, "--endpoint", endpoint});
    const auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.code, kExitUnreachable) << command << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("failed at " + endpoint + ": UNAVAILABLE: "));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    // Well under the 5 s deadline: a refused connection fails at once.
    EXPECT_LT(elapsed, std::chrono::seconds(3)) << command;
  }
}

TEST(CtlUnreachableTest, DeadlineIsUnreachableToo) {
  // A server that accepts the connection but never answers in time.
  class Slow final : public admin::v1::KvIndexerAdmin::Service {
    grpc::Status ListWorkers(grpc::ServerContext* context,
                             const admin::v1::ListWorkersRequest*,
                             admin::v1::ListWorkersResponse*) override {
      // Bounded: returns once the client's deadline has passed.
      for (int i = 0; i < 500 && !context->IsCancelled(); ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return grpc::Status::OK;
    }
  } slow;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&slow);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  CtlResult r = RunCtlForTest({"workers", "--timeout", "0.2", "--endpoint",
                               absl::StrCat("http://127.0.0.1:", port)});
  EXPECT_EQ(r.code, kExitUnreachable) << r.err;
  EXPECT_THAT(r.err, HasSubstr("DEADLINE_EXCEEDED"));
  server->Shutdown();
}

}  // namespace
}  // namespace kvindexer::ctl
