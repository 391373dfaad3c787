// The host:port of KV_INDEXER_WORKER_ADDRESS that the worker probe dials
// (docs/bridge-events.md, "Recovery > Worker liveness").
#include "bridge/worker_address.h"

#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::testing::HasSubstr;

std::string HostPort(const char* address) {
  absl::StatusOr<WorkerHostPort> parsed = ParseWorkerHostPort(address);
  if (!parsed.ok()) return "error: " + std::string(parsed.status().message());
  return parsed->host + " " + std::to_string(parsed->port);
}

TEST(WorkerAddress, AcceptedForms) {
  EXPECT_EQ(HostPort("http://127.0.0.1:30000"), "127.0.0.1 30000");
  EXPECT_EQ(HostPort("https://worker-0.svc:8443/"), "worker-0.svc 8443");
  EXPECT_EQ(HostPort("http://worker:30000/v1/generate?x=1#f"), "worker 30000");
  EXPECT_EQ(HostPort("grpc://w:1"), "w 1");
  EXPECT_EQ(HostPort("10.0.0.5:30000"), "10.0.0.5 30000");
  EXPECT_EQ(HostPort("[::1]:30000"), "::1 30000");
  EXPECT_EQ(HostPort("http://[fd00::5]:65535/x"), "fd00::5 65535");
  EXPECT_EQ(HostPort("http://user:pw@host:81"), "host 81");
  EXPECT_EQ(HostPort("localhost:1"), "localhost 1");
}

TEST(WorkerAddress, UnusableFormsSayWhy) {
  EXPECT_THAT(HostPort(""), HasSubstr("is empty"));
  EXPECT_THAT(HostPort("http://worker"), HasSubstr("has no port"));
  EXPECT_THAT(HostPort("http://worker/"), HasSubstr("has no port"));
  EXPECT_THAT(HostPort("worker"), HasSubstr("has no port"));
  EXPECT_THAT(HostPort("[::1]"), HasSubstr("has no port"));
  EXPECT_THAT(HostPort("fd00::5"), HasSubstr("needs brackets"));
  EXPECT_THAT(HostPort("http://worker:"), HasSubstr("has no port"));
  EXPECT_THAT(HostPort("http://:30000"), HasSubstr("has no host"));
  EXPECT_THAT(HostPort("http://[]:30000"), HasSubstr("has no host"));
  EXPECT_THAT(HostPort("http://worker:0"), HasSubstr("outside 1..65535"));
  EXPECT_THAT(HostPort("http://worker:65536"), HasSubstr("outside 1..65535"));
  EXPECT_THAT(HostPort("http://worker:123456"), HasSubstr("outside 1..65535"));
  EXPECT_THAT(HostPort("http://worker:http"), HasSubstr("not a decimal"));
  EXPECT_THAT(HostPort("http://worker:-1"), HasSubstr("not a decimal"));
  EXPECT_THAT(HostPort("[::1"), HasSubstr("unterminated"));
  EXPECT_THAT(HostPort("[::1]x:1"), HasSubstr("after its IPv6 literal"));
  // The message quotes the address.
  EXPECT_THAT(HostPort("http://worker"), HasSubstr("\"http://worker\""));
}

TEST(WorkerAddress, StartupWarningForEmptyOrSchemeless) {
  EXPECT_EQ(WorkerAddressWarning("http://10.0.0.5:30000"), std::nullopt);
  EXPECT_EQ(WorkerAddressWarning("https://[fd00::5]:30000/v1"), std::nullopt);
  const std::optional<std::string> empty = WorkerAddressWarning("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_THAT(*empty, HasSubstr("KV_INDEXER_WORKER_ADDRESS is empty"));
  const std::optional<std::string> bare =
      WorkerAddressWarning("10.0.0.5:30000");
  ASSERT_TRUE(bare.has_value());
  EXPECT_THAT(*bare, HasSubstr("\"10.0.0.5:30000\" has no scheme"));
}

}  // namespace
}  // namespace kvindexer::bridge
