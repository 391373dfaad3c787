#include "bridge/workers_json.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace workers_json_test {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kMinimal[] =
    R"({"worker_id":"w0","worker_address":"http://10.0.0.1:30000",)"
    R"("event_endpoint":"tcp://10.0.0.1:5557"})";

std::string Array(const std::string& a) { return "[" + a + "]"; }

// The error message of an input that must be refused.
std::string Refusal(const std::string& text) {
  absl::StatusOr<WorkersList> list = ParseWorkersJson(text);
  EXPECT_FALSE(list.ok()) << text;
  if (list.ok()) return "";
  EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(list.status().message()),
              StartsWith("invalid KV_INDEXER_WORKERS_JSON: "));
  return std::string(list.status().message());
}

// `kMinimal` with `extra` members appended.
std::string With(const std::string& extra) {
  std::string entry = kMinimal;
  entry.insert(entry.size() - 1, "," + extra);
  return entry;
}

TEST(WorkersJson, DefaultsOfAMinimalEntry) {
  absl::StatusOr<WorkersList> list = ParseWorkersJson(Array(kMinimal));
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->entries.size(), 1u);
  EXPECT_TRUE(list->warnings.empty());
  const WorkerEntry& e = list->entries[0];
  EXPECT_EQ(e.worker_id, "w0");
  EXPECT_EQ(e.worker_address, "http://10.0.0.1:30000");
  EXPECT_EQ(e.event_endpoint, "tcp://10.0.0.1:5557");
  EXPECT_EQ(e.snapshot_endpoint, "");
  EXPECT_EQ(e.snapshot_protocol_version, 2u);
  EXPECT_EQ(e.replay_endpoint, "");
  EXPECT_EQ(e.replay_protocol, 2u);
  EXPECT_EQ(e.stream_namespace, "");
  EXPECT_EQ(e.event_topic, "");
  EXPECT_EQ(e.model, "unknown");
  EXPECT_EQ(e.dp_rank, 0u);
  EXPECT_EQ(e.hash_schema_version, 0u);
  EXPECT_EQ(e.page_size, 1u);
  EXPECT_FALSE(e.page_size_set);
  EXPECT_FALSE(e.is_bigram);
  EXPECT_FALSE(e.discover);
  EXPECT_FALSE(e.all_dp_ranks);
}

TEST(WorkersJson, EveryKeyRead) {
  absl::StatusOr<WorkersList> list = ParseWorkersJson(Array(With(
      R"("snapshot_endpoint":"tcp://h:6000","snapshot_protocol_version":1,)"
      R"("replay_endpoint":"tcp://h:5558","replay_protocol":1,)"
      R"("namespace":"prod","event_topic":"kv","model":"llama",)"
      R"("dp_rank":3,"hash_schema_version":7,"page_size":16,)"
      R"("is_bigram":true)")));
  ASSERT_TRUE(list.ok()) << list.status();
  const WorkerEntry& e = list->entries[0];
  EXPECT_EQ(e.snapshot_endpoint, "tcp://h:6000");
  EXPECT_EQ(e.snapshot_protocol_version, 1u);
  EXPECT_EQ(e.replay_endpoint, "tcp://h:5558");
  EXPECT_EQ(e.replay_protocol, 1u);
  EXPECT_EQ(e.stream_namespace, "prod");
  EXPECT_EQ(e.event_topic, "kv");
  EXPECT_EQ(e.model, "llama");
  EXPECT_EQ(e.dp_rank, 3u);
  EXPECT_EQ(e.hash_schema_version, 7u);
  EXPECT_EQ(e.page_size, 16u);
  EXPECT_TRUE(e.page_size_set);
  EXPECT_TRUE(e.is_bigram);
}

TEST(WorkersJson, ReplayEndpointMayBeNull) {
  absl::StatusOr<WorkersList> list =
      ParseWorkersJson(Array(With(R"("replay_endpoint":null)")));
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->entries[0].replay_endpoint, "");
  EXPECT_THAT(Refusal(Array(With(R"("replay_endpoint":5)"))),
              HasSubstr("replay_endpoint"));
}

TEST(WorkersJson, NotAnArrayOrEmptyOrNotJson) {
  EXPECT_THAT(Refusal(kMinimal), HasSubstr("JSON array"));
  EXPECT_THAT(Refusal("[]"), HasSubstr("empty"));
  EXPECT_THAT(Refusal("[{"), HasSubstr("not JSON"));
  EXPECT_THAT(Refusal("[1]"), HasSubstr("entry 0 is not an object"));
  EXPECT_THAT(Refusal("[" + std::string(kMinimal) + ",\"x\"]"),
              HasSubstr("entry 1 is not an object"));
}

TEST(WorkersJson, SizeAndDepthBounded) {
  const std::string huge(kMaxWorkersJsonBytes + 1, ' ');
  EXPECT_THAT(Refusal(huge), HasSubstr("bytes"));
  // Deep nesting inside an entry is refused (by the parser or as a type
  // error), never a crash.
  std::string deep =
      With(R"("x":)" + std::string(5000, '[') + std::string(5000, ']'));
  Refusal(Array(deep));
}

TEST(WorkersJson, RequiredStrings) {
  EXPECT_THAT(Refusal(R"([{"worker_address":"a","event_endpoint":"e"}])"),
              HasSubstr("entry 0 lacks \"worker_id\""));
  EXPECT_THAT(Refusal(R"([{"worker_id":"w","event_endpoint":"e"}])"),
              HasSubstr("lacks \"worker_address\""));
  EXPECT_THAT(Refusal(R"([{"worker_id":"w","worker_address":"a"}])"),
              HasSubstr("lacks \"event_endpoint\""));
  EXPECT_THAT(
      Refusal(
          R"([{"worker_id":"","worker_address":"a","event_endpoint":"e"}])"),
      HasSubstr("\"worker_id\" must not be empty"));
  EXPECT_THAT(
      Refusal(R"([{"worker_id":1,"worker_address":"a","event_endpoint":"e"}])"),
      HasSubstr("\"worker_id\" must be a string"));
}

TEST(WorkersJson, EventEndpointOptionalWithDiscover) {
  absl::StatusOr<WorkersList> list = ParseWorkersJson(
      R"([{"worker_id":"w","worker_address":"http://h:1","discover":true,)"
      R"("all_dp_ranks":true}])");
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->entries[0].discover);
  EXPECT_TRUE(list->entries[0].all_dp_ranks);
  EXPECT_EQ(list->entries[0].event_endpoint, "");
  EXPECT_THAT(Refusal(Array(With(R"("all_dp_ranks":true)"))),
              HasSubstr("needs \"discover\""));
  // One endpoint cannot serve every rank.
  EXPECT_THAT(Refusal(Array(With(R"("discover":true,"all_dp_ranks":true)"))),
              HasSubstr("cannot be used with \"all_dp_ranks\""));
  for (const char* key : {"replay_endpoint", "snapshot_endpoint"}) {
    const std::string entry =
        std::string(R"([{"worker_id":"w","worker_address":"http://h:1",)") +
        R"("discover":true,"all_dp_ranks":true,")" + key +
        R"(":"tcp://h:5600"}])";
    EXPECT_THAT(Refusal(entry),
                HasSubstr(std::string("\"") + key +
                          "\" cannot be used with \"all_dp_ranks\""))
        << entry;
  }
  // A null replay endpoint is no endpoint.
  EXPECT_TRUE(
      ParseWorkersJson(R"([{"worker_id":"w","worker_address":"http://h:1",)"
                       R"("discover":true,"all_dp_ranks":true,)"
                       R"("replay_endpoint":null}])")
          .ok());
}

TEST(WorkersJson, DiscoverNeedsAWorkerUrlToRead) {
  EXPECT_THAT(Refusal(R"([{"worker_id":"w","worker_address":"ftp://h:1",)"
                      R"("discover":true}])"),
              HasSubstr("scheme other than http or https"));
  EXPECT_THAT(Refusal(R"([{"worker_id":"w","worker_address":"fd00::5",)"
                      R"("discover":true}])"),
              HasSubstr("\"discover\" reads <worker_address>/server_info"));
  // Without discover the address is only passed on.
  absl::StatusOr<WorkersList> list =
      ParseWorkersJson(R"([{"worker_id":"w","worker_address":"ftp://h:1",)"
                       R"("event_endpoint":"tcp://h:2"}])");
  EXPECT_TRUE(list.ok()) << list.status();
}

TEST(WorkersJson, VersionsAndNumbersInRange) {
  EXPECT_THAT(
      Refusal(Array(With(R"("snapshot_protocol_version":3)"))),
      HasSubstr("snapshot_protocol_version\" must be an integer in 1..2"));
  EXPECT_THAT(Refusal(Array(With(R"("snapshot_protocol_version":0)"))),
              HasSubstr("snapshot_protocol_version"));
  EXPECT_THAT(Refusal(Array(With(R"("replay_protocol":3)"))),
              HasSubstr("replay_protocol"));
  EXPECT_THAT(Refusal(Array(With(R"("dp_rank":-1)"))), HasSubstr("dp_rank"));
  EXPECT_THAT(Refusal(Array(With(R"("dp_rank":1.5)"))), HasSubstr("dp_rank"));
  EXPECT_THAT(Refusal(Array(With(R"("dp_rank":4294967296)"))),
              HasSubstr("dp_rank"));
  EXPECT_THAT(Refusal(Array(With(R"("dp_rank":"1")"))), HasSubstr("dp_rank"));
  EXPECT_THAT(Refusal(Array(With(R"("page_size":0)"))), HasSubstr("page_size"));
  EXPECT_THAT(Refusal(Array(With(R"("is_bigram":1)"))),
              HasSubstr("\"is_bigram\" must be true or false"));
  absl::StatusOr<WorkersList> max =
      ParseWorkersJson(Array(With(R"("dp_rank":4294967295)")));
  ASSERT_TRUE(max.ok()) << max.status();
  EXPECT_EQ(max->entries[0].dp_rank, 4294967295u);
}

TEST(WorkersJson, DuplicateStreamKeyRefused) {
  EXPECT_THAT(Refusal(Array(std::string(kMinimal) + "," + kMinimal)),
              HasSubstr("entry 1 repeats the stream key \"\"/\"w0\"/0"));
  // Any component differing makes the keys distinct.
  for (const char* differing : {R"("dp_rank":1)", R"("namespace":"other")"}) {
    absl::StatusOr<WorkersList> list =
        ParseWorkersJson(Array(std::string(kMinimal) + "," + With(differing)));
    ASSERT_TRUE(list.ok()) << list.status();
    EXPECT_EQ(list->entries.size(), 2u);
  }
}

TEST(WorkersJson, UnknownKeyWarnsOnce) {
  absl::StatusOr<WorkersList> list =
      ParseWorkersJson(Array(With(R"("colour":"blue")")));
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->warnings.size(), 1u);
  EXPECT_THAT(list->warnings[0], HasSubstr("unknown key \"colour\""));
}

}  // namespace workers_json_test
}  // namespace kvindexer::bridge
