#include "server/status_reporter.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/metrics_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/status_report_failure_log.h"
#include "server/status_report_parser.h"
#include "server/status_report_schedule.h"
#include "server/status_report_validation.h"
#include "tests/support/fake_clock.h"
#include "tests/support/fake_status_router.h"
#include "tests/support/server_process.h"
#include "tests/support/test_log_capture.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer {
namespace status_reporter_test {

using ::std::chrono::milliseconds;
using test_support::FakeStatusRouter;
using ::testing::HasSubstr;
using Requests = std::vector<FakeStatusRouter::Request>;

constexpr milliseconds kWait{10000};

// A listening socket on 127.0.0.1 that never accepts: connections complete
// in the kernel's backlog, and a request sent on one is never answered.
class SilentListener {
 public:
  SilentListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 ||
        ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::listen(fd_, 64) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "cannot listen on 127.0.0.1";
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~SilentListener() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(port_);
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// What the reporter reads, changed by the test.
class FakeSource {
 public:
  FakeSource() {
    inputs_.serving = true;
    inputs_.permits_capacity = 4;
    for (const char* id : {"w1", "w0"}) {
      ReportedStream s;
      s.worker_id = id;
      s.worker_address = std::string("http://") + id + ":8000";
      s.covered = true;
      s.worker_epoch = "e";
      s.watermark = 3;
      inputs_.streams.push_back(s);
    }
  }
  StatusInputsSource source() {
    return [this] {
      std::lock_guard<std::mutex> lock(mu_);
      return inputs_;
    };
  }

 private:
  std::mutex mu_;
  StatusInputs inputs_;
};

StatusReporterOptions Options(const std::vector<std::string>& urls,
                              uint32_t interval_ms, FakeSource& source) {
  StatusReporterOptions options;
  for (const std::string& url : urls) {
    absl::StatusOr<RouterUrl> parsed = ParseRouterUrl(url);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    if (parsed.ok()) options.config.routers.push_back(*parsed);
  }
  options.config.indexer_id = "idx-test";
  options.config.advertise_endpoint = "http://127.0.0.1:50051";
  options.config.interval_ms = interval_ms;
  options.source = source.source();
  return options;
}

std::unique_ptr<FakeStatusRouter> StartRouter(std::string prefix = "") {
  absl::StatusOr<std::unique_ptr<FakeStatusRouter>> router =
      FakeStatusRouter::Start(std::move(prefix));
  EXPECT_TRUE(router.ok()) << router.status();
  return router.ok() ? *std::move(router) : nullptr;
}

// Whether `requests[first..]` came at least once per interval (plus a
// fixed allowance for a loaded machine): the n-th after the first within
// n intervals and the slack.
void ExpectOncePerInterval(const Requests& requests, milliseconds interval,
                           milliseconds slack) {
  ASSERT_GE(requests.size(), 2u);
  const auto span = requests.back().received - requests.front().received;
  EXPECT_LE(span, interval * static_cast<int>(requests.size() - 1) + slack)
      << requests.size() << " posts in "
      << std::chrono::duration_cast<milliseconds>(span).count() << " ms";
}

TEST(StatusReporter, PostsEveryIntervalAndEveryReportPassesValidation) {
  FakeSource source;
  std::unique_ptr<FakeStatusRouter> router = StartRouter();
  ASSERT_NE(router, nullptr);
  StatusReporter reporter(Options({router->url()}, 50, source));
  ASSERT_TRUE(router->WaitForRequests(20, kWait));
  const Requests requests = router->requests();
  ExpectOncePerInterval(Requests(requests.begin(), requests.begin() + 20),
                        milliseconds(50), milliseconds(600));
  for (const FakeStatusRouter::Request& r : requests) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/v1/kv-indexer/status");
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(r.authorization, "");
    EXPECT_TRUE(ValidateStatusReportBody(r.body).ok())
        << ValidateStatusReportBody(r.body) << "\n"
        << r.body;
  }
  const absl::StatusOr<StatusReport> report =
      ParseStatusReport(requests.front().body);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->indexer_id, "idx-test");
  EXPECT_EQ(report->endpoint, "http://127.0.0.1:50051");
  EXPECT_TRUE(report->ready);
  ASSERT_EQ(report->streams.size(), 2u);
  EXPECT_EQ(report->streams[0].worker_id, "w0");
  reporter.Stop();
  // Every post the router received was counted; on a loaded machine one
  // may have missed its answer's timeout and count as failed.
  const StatusReporter::Counts counts = reporter.counts(0);
  EXPECT_GE(counts.accepted + counts.failed, 20u);
  EXPECT_EQ(counts.rejected, 0u);
  EXPECT_GE(counts.accepted, 1u);
}

TEST(StatusReporter, StopSendsOneFinalNotReadyReport) {
  FakeSource source;
  std::unique_ptr<FakeStatusRouter> router = StartRouter();
  ASSERT_NE(router, nullptr);
  StatusReporter reporter(Options({router->url()}, 50, source));
  ASSERT_TRUE(router->WaitForRequests(2, kWait));
  reporter.Stop();
  const Requests requests = router->requests();
  const absl::StatusOr<StatusReport> last =
      ParseStatusReport(requests.back().body);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_TRUE(ValidateStatusReport(*last).ok());
  EXPECT_FALSE(last->ready);
  EXPECT_EQ(last->ready_workers, 0u);
  EXPECT_EQ(last->total_workers, 2u);
  ASSERT_EQ(last->streams.size(), 2u);
  for (const StatusReportStream& s : last->streams) EXPECT_FALSE(s.ready);
  // Only the last one is the final report.
  const absl::StatusOr<StatusReport> before =
      ParseStatusReport(requests[requests.size() - 2].body);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->ready);
  reporter.Stop();  // idempotent: nothing more is sent
  EXPECT_EQ(router->request_count(), requests.size());
}

TEST(StatusReporter, ARouterThatNeverAnswersDelaysNoOther) {
  FakeSource source;
  SilentListener silent;
  std::unique_ptr<FakeStatusRouter> hung = StartRouter();
  std::unique_ptr<FakeStatusRouter> good = StartRouter();
  ASSERT_NE(hung, nullptr);
  ASSERT_NE(good, nullptr);
  hung->Hang(true);
  StatusReporter reporter(
      Options({silent.url(), hung->url(), good->url()}, 50, source));
  ASSERT_TRUE(good->WaitForRequests(20, kWait));
  const Requests requests = good->requests();
  ExpectOncePerInterval(Requests(requests.begin(), requests.begin() + 20),
                        milliseconds(50), milliseconds(600));
  // Both others time out, one post at a time.
  ASSERT_TRUE(hung->WaitForRequests(3, kWait));
  for (const size_t router : {0u, 1u}) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (reporter.counts(router).failed < 3 &&
           std::chrono::steady_clock::now() < deadline) {
      good->WaitForRequests(good->request_count() + 1, milliseconds(200));
    }
    EXPECT_GE(reporter.counts(router).failed, 3u) << router;
    EXPECT_EQ(reporter.counts(router).accepted, 0u) << router;
  }
  // Stop is bounded although two routers never answer, and the good one
  // still gets its final report.
  const auto stop_started = std::chrono::steady_clock::now();
  reporter.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_started,
            std::chrono::seconds(3));
  const absl::StatusOr<StatusReport> last =
      ParseStatusReport(good->requests().back().body);
  ASSERT_TRUE(last.ok());
  EXPECT_FALSE(last->ready);
  EXPECT_EQ(last->ready_workers, 0u);
}

TEST(StatusReporter, RejectionsAreCountedLoggedAndRecoveryToo) {
  durable::TestLogCapture logs;
  FakeSource source;
  std::unique_ptr<FakeStatusRouter> router = StartRouter("/base");
  ASSERT_NE(router, nullptr);
  router->Answer(400,
                 "streams[0] has an empty worker_id\n" + std::string(400, 'x'));
  StatusReporter reporter(Options({router->url() + "/"}, 200, source));
  const auto counted = [&](auto field, uint64_t n) {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (field(reporter.counts(0)) < n &&
           std::chrono::steady_clock::now() < deadline) {
      router->WaitForRequests(router->request_count() + 1, milliseconds(200));
    }
    return field(reporter.counts(0)) >= n;
  };
  ASSERT_TRUE(
      counted([](const StatusReporter::Counts& c) { return c.rejected; }, 5));
  EXPECT_EQ(router->requests().front().path, "/base/v1/kv-indexer/status");
  router->Answer(200);
  ASSERT_TRUE(
      counted([](const StatusReporter::Counts& c) { return c.accepted; }, 1));
  reporter.Stop();
  std::vector<std::string> warns;
  for (const std::string& line : logs.Lines(spdlog::level::warn)) {
    if (line.find("HTTP 400") != std::string::npos) warns.push_back(line);
  }
  // Three or more rejections within 10 s: one line.
  ASSERT_EQ(warns.size(), 1u) << testing::PrintToString(warns);
  EXPECT_THAT(warns[0], HasSubstr("http://127.0.0.1:" +
                                  std::to_string(router->port()) + "/base"));
  EXPECT_THAT(warns[0], HasSubstr("HTTP 400: streams[0] has an empty "
                                  "worker_id\\x0axxx"));
  EXPECT_THAT(warns[0], HasSubstr("...(+"));  // cut at 256 bytes
  const std::vector<std::string> infos = logs.Lines(spdlog::level::info);
  EXPECT_THAT(testing::PrintToString(infos), HasSubstr("accepted again after"));
}

TEST(StatusReporter, CountersAreRegisteredPerRouterAndResult) {
  FakeSource source;
  std::unique_ptr<FakeStatusRouter> router = StartRouter();
  ASSERT_NE(router, nullptr);
  MetricsRegistry registry;
  StatusReporterOptions options = Options({router->url()}, 50, source);
  options.registry = &registry;
  StatusReporter reporter(std::move(options));
  ASSERT_TRUE(router->WaitForRequests(2, kWait));
  reporter.Stop();
  std::vector<std::string> results;
  uint64_t accepted = 0;
  for (const MetricFamily& family : registry.Collect()) {
    if (family.name != "kvindexer_status_reports_total") continue;
    for (const MetricSample& sample : family.samples) {
      std::string router_label;
      std::string result;
      for (const auto& [k, v] : sample.labels) {
        if (k == "router") router_label = v;
        if (k == "result") result = v;
      }
      EXPECT_EQ(router_label, router->url());
      results.push_back(result);
      if (result == "accepted") accepted = static_cast<uint64_t>(sample.value);
    }
  }
  EXPECT_THAT(results, testing::UnorderedElementsAre("accepted", "rejected",
                                                     "failed", "skipped"));
  EXPECT_EQ(accepted, reporter.counts(0).accepted);
  EXPECT_GE(accepted, 2u);
}

// The openssl executable on PATH, or "".
std::string FindOpenssl() {
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "" : path;
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string candidate = dirs.substr(start, end - start) + "/openssl";
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

TEST(StatusReporter, HttpsRoutersAreVerifiedAgainstTheCaFile) {
  const std::string openssl = FindOpenssl();
  if (openssl.empty())
    GTEST_SKIP() << "no openssl on PATH to make a certificate";
  durable::TestTempDir dir;
  const std::string cert = dir.Sub("router.pem");
  const std::string key = dir.Sub("router.key");
  test_support::ProcessOptions make;
  make.binary = openssl;
  make.args = {"req",
               "-x509",
               "-newkey",
               "rsa:2048",
               "-nodes",
               "-keyout",
               key,
               "-out",
               cert,
               "-days",
               "2",
               "-subj",
               "/CN=127.0.0.1",
               "-addext",
               "subjectAltName=IP:127.0.0.1"};
  absl::StatusOr<std::unique_ptr<test_support::ServerProcess>> made =
      test_support::ServerProcess::Start(make);
  ASSERT_TRUE(made.ok()) << made.status();
  const std::optional<test_support::ExitStatus> exit =
      (*made)->WaitForExit(kWait);
  ASSERT_TRUE(exit.has_value() && exit->ok()) << (*made)->Output();

  const FakeStatusRouter::TlsFiles tls{.cert_file = cert, .key_file = key};
  absl::StatusOr<std::unique_ptr<FakeStatusRouter>> trusted =
      FakeStatusRouter::Start("", &tls);
  absl::StatusOr<std::unique_ptr<FakeStatusRouter>> untrusted =
      FakeStatusRouter::Start("", &tls);
  ASSERT_TRUE(trusted.ok()) << trusted.status();
  ASSERT_TRUE(untrusted.ok()) << untrusted.status();
  EXPECT_EQ((*trusted)->url().substr(0, 8), "https://");

  FakeSource source;
  // With the router's certificate as the CA file: accepted.
  StatusReporterOptions options = Options({(*trusted)->url()}, 100, source);
  options.config.router_tls_ca_file = cert;
  StatusReporter reporter(std::move(options));
  ASSERT_TRUE((*trusted)->WaitForRequests(2, kWait));
  EXPECT_TRUE(ValidateStatusReportBody((*trusted)->requests()[0].body).ok());
  // With the system's roots, which do not hold it: nothing gets through.
  StatusReporter unverified(Options({(*untrusted)->url()}, 100, source));
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (unverified.counts(0).failed < 2 &&
         std::chrono::steady_clock::now() < deadline) {
    (*trusted)->WaitForRequests((*trusted)->request_count() + 1,
                                milliseconds(200));
  }
  EXPECT_GE(unverified.counts(0).failed, 2u);
  EXPECT_EQ(unverified.counts(0).accepted, 0u);
  EXPECT_EQ((*untrusted)->request_count(), 0u);
  reporter.Stop();
  unverified.Stop();
  EXPECT_GE(reporter.counts(0).accepted, 2u);
}

TEST(StatusSchedule, SkipsTheTicksAPendingPostSpans) {
  using TimePoint = StatusSchedule::TimePoint;
  const TimePoint t0(std::chrono::seconds(100));
  StatusSchedule schedule(t0, milliseconds(100));
  EXPECT_EQ(schedule.due(), t0);
  EXPECT_EQ(schedule.Finish(t0 + milliseconds(5)), 0u);
  EXPECT_EQ(schedule.due(), t0 + milliseconds(100));
  // The post of the 100 ms tick ends at 250 ms: the 200 ms tick is skipped.
  EXPECT_EQ(schedule.Finish(t0 + milliseconds(250)), 1u);
  EXPECT_EQ(schedule.due(), t0 + milliseconds(300));
  // Ends exactly on the next tick: that one found it pending.
  EXPECT_EQ(schedule.Finish(t0 + milliseconds(400)), 1u);
  EXPECT_EQ(schedule.due(), t0 + milliseconds(500));
  EXPECT_EQ(schedule.Finish(t0 + milliseconds(1050)), 5u);
  EXPECT_EQ(schedule.due(), t0 + milliseconds(1100));
  // Late thread wake-ups keep the phase.
  EXPECT_EQ(schedule.Finish(t0 + milliseconds(1130)), 0u);
  EXPECT_EQ(schedule.due(), t0 + milliseconds(1200));
}

TEST(StatusReportFailureLog, FirstFailureThenOneLinePerTenSeconds) {
  FakeMonotonicClock clock;
  StatusReportFailureLog log(&clock, "http://r:1");
  EXPECT_EQ(log.Accepted(), std::nullopt);
  std::optional<std::string> line = log.Failed("no answer (Read)");
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line,
            "status report to router http://r:1 failed: no answer (Read)");
  for (int i = 0; i < 7; ++i) {
    clock.Advance(std::chrono::seconds(1));
    EXPECT_EQ(log.Failed("no answer (Read)"), std::nullopt);
  }
  clock.Advance(std::chrono::seconds(3));  // 10 s after the first line
  line = log.Failed("HTTP 503");
  ASSERT_TRUE(line.has_value());
  EXPECT_THAT(*line, HasSubstr("failed: HTTP 503 (7 failures since the last "
                               "line not logged; 9 in a row)"));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(log.Failed("HTTP 503"), std::nullopt);
  line = log.Accepted();
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line,
            "status reports to router http://r:1 accepted again after 10 "
            "failed");
  EXPECT_EQ(log.Accepted(), std::nullopt);
  // A new run starts with a line at once.
  EXPECT_TRUE(log.Failed("HTTP 500").has_value());
}

}  // namespace status_reporter_test
}  // namespace kvindexer
