// The work queues' bounds (server/queue_config.h) and the gRPC runtime's
// (server/grpc_server_config.h): defaults, every variable read, and every
// bad value refused with a message naming the variable.
#include "server/queue_config.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/grpc_server_config.h"
#include "server/server_config.h"

namespace kvindexer::queue_config_test {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Vars = std::map<std::string, std::string, std::less<>>;

TEST(QueueConfigTest, Defaults) {
  auto limits = LoadQueueLimits(MapEnvironment({}));
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->apply, 1024u);
  EXPECT_EQ(limits->lookup, 1024u);
  EXPECT_EQ(limits->admin, 64u);
  // The server's configuration carries them.
  auto config = LoadServerConfig(MapEnvironment({}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->queues.apply, 1024u);
  EXPECT_EQ(config->grpc.max_connections, 4096u);
  EXPECT_EQ(config->grpc.memory_quota_mib, 1024u);
  EXPECT_TRUE(config->grpc.reflection);
}

TEST(QueueConfigTest, ReadsEveryVariable) {
  auto limits = LoadQueueLimits(
      MapEnvironment(Vars{{"KV_INDEXER_APPLY_QUEUE_MAX", "1"},
                          {"KV_INDEXER_LOOKUP_QUEUE_MAX", " 1048576 "},
                          {"KV_INDEXER_ADMIN_QUEUE_MAX", "7"}}));
  ASSERT_TRUE(limits.ok()) << limits.status();
  EXPECT_EQ(limits->apply, 1u);
  EXPECT_EQ(limits->lookup, 1048576u);
  EXPECT_EQ(limits->admin, 7u);
  // Blank keeps the default.
  auto blank =
      LoadQueueLimits(MapEnvironment(Vars{{"KV_INDEXER_APPLY_QUEUE_MAX", ""}}));
  ASSERT_TRUE(blank.ok());
  EXPECT_EQ(blank->apply, 1024u);
}

TEST(QueueConfigTest, BadValuesNameTheVariable) {
  for (const char* var :
       {"KV_INDEXER_APPLY_QUEUE_MAX", "KV_INDEXER_LOOKUP_QUEUE_MAX",
        "KV_INDEXER_ADMIN_QUEUE_MAX"}) {
    for (const char* bad : {"0", "1048577", "-1", "many", "1.5", "0x10"}) {
      auto limits = LoadServerConfig(MapEnvironment(Vars{{var, bad}}));
      ASSERT_FALSE(limits.ok()) << var << "=" << bad;
      EXPECT_EQ(limits.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(limits.status().message(),
                  AllOf(HasSubstr(std::string(var) + "=\"" + bad + "\""),
                        HasSubstr("1..1048576")));
    }
  }
}

TEST(GrpcServerConfigTest, ReadsEveryVariable) {
  auto config = LoadGrpcServerConfig(
      MapEnvironment(Vars{{"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "16"},
                          {"KV_INDEXER_GRPC_MAX_CONNECTIONS", "8"},
                          {"KV_INDEXER_GRPC_REFLECTION", "OFF"}}));
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->memory_quota_mib, 16u);
  EXPECT_EQ(config->max_connections, 8u);
  EXPECT_FALSE(config->reflection);
  for (const char* on : {"on", "1", "true", "Yes"}) {
    auto c = LoadGrpcServerConfig(
        MapEnvironment(Vars{{"KV_INDEXER_GRPC_REFLECTION", on}}));
    ASSERT_TRUE(c.ok()) << on;
    EXPECT_TRUE(c->reflection) << on;
  }
  auto no_quota = LoadGrpcServerConfig(
      MapEnvironment(Vars{{"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "0"}}));
  ASSERT_TRUE(no_quota.ok());
  EXPECT_EQ(no_quota->memory_quota_mib, 0u);
}

TEST(GrpcServerConfigTest, BadValuesNameTheVariable) {
  const struct {
    const char* var;
    const char* value;
    const char* accepted;
  } cases[] = {
      {"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "15", "16 to 1048576"},
      {"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "1048577", "16 to 1048576"},
      {"KV_INDEXER_GRPC_MEMORY_QUOTA_MIB", "1G", "16 to 1048576"},
      {"KV_INDEXER_GRPC_MAX_CONNECTIONS", "0", "1..1048576"},
      {"KV_INDEXER_GRPC_MAX_CONNECTIONS", "1048577", "1..1048576"},
      {"KV_INDEXER_GRPC_REFLECTION", "maybe", "on, 1, true or yes"},
  };
  for (const auto& c : cases) {
    auto config = LoadServerConfig(MapEnvironment(Vars{{c.var, c.value}}));
    ASSERT_FALSE(config.ok()) << c.var << "=" << c.value;
    EXPECT_THAT(config.status().message(),
                AllOf(HasSubstr(std::string(c.var) + "=\"" + c.value + "\""),
                      HasSubstr(c.accepted)));
  }
}

}  // namespace
}  // namespace kvindexer::queue_config_test
