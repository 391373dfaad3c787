// ParseWorkerUrl, ParseKvEventsDescriptor and ApplyKvEventsDescriptor:
// what a "discover" entry follows, from the worker URL and the kv_events
// object of /server_info.
#include "bridge/kv_events_descriptor.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace kv_events_descriptor_test {

using ::testing::HasSubstr;

// A /server_info body with other fields around `kv_events`.
std::string Body(const std::string& kv_events) {
  return R"({"model_path":"m","dp_size":2,"page_size":16,"version":"0.5",)"
         R"("kv_events_config":"{\"publisher\":\"zmq\"}","kv_events":)" +
         kv_events + R"(,"scheduler_info":{"x":[1,2]}})";
}

constexpr char kDescriptor[] =
    R"({"publisher":"zmq","endpoint_host":"*","endpoint_port_base":5557,)"
    R"("topic":"kv","block_size":16,"dp_size":2})";

KvEventsDescriptor Parsed(const std::string& kv_events) {
  absl::StatusOr<KvEventsDescriptor> d =
      ParseKvEventsDescriptor(Body(kv_events));
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : KvEventsDescriptor{};
}

// The refusal of a body; FailedPrecondition parks the stream.
std::string Refusal(const std::string& body) {
  absl::StatusOr<KvEventsDescriptor> d = ParseKvEventsDescriptor(body);
  EXPECT_FALSE(d.ok()) << body;
  if (d.ok()) return "";
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  return std::string(d.status().message());
}

WorkerEntry DiscoverEntry(uint32_t dp_rank = 0) {
  WorkerEntry entry;
  entry.worker_id = "w";
  entry.worker_address = "http://10.0.0.5:30000";
  entry.discover = true;
  entry.dp_rank = dp_rank;
  return entry;
}

KvEventsDescriptor Descriptor() {
  KvEventsDescriptor d;
  d.publisher = "zmq";
  d.endpoint_host = "*";
  d.endpoint_port_base = 5557;
  d.topic = "kv";
  d.block_size = 16;
  d.dp_size = 2;
  return d;
}

TEST(WorkerUrl, SchemesPortsAndPaths) {
  absl::StatusOr<WorkerUrl> url = ParseWorkerUrl("http://10.0.0.5:30000");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_FALSE(url->https);
  EXPECT_EQ(url->host, "10.0.0.5");
  EXPECT_EQ(url->port, 30000);
  EXPECT_EQ(ServerInfoPath(*url), "/server_info");

  url = ParseWorkerUrl("HTTPS://worker.example/base/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_TRUE(url->https);
  EXPECT_EQ(url->host, "worker.example");
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(ServerInfoPath(*url), "/base/server_info");

  url = ParseWorkerUrl("worker:8080?x=1#f");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_FALSE(url->https);
  EXPECT_EQ(url->port, 8080);
  EXPECT_EQ(url->path_prefix, "");

  url = ParseWorkerUrl("http://user@worker");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "worker");
  EXPECT_EQ(url->port, 80);
}

TEST(WorkerUrl, Ipv6LiteralsNeedBrackets) {
  absl::StatusOr<WorkerUrl> url = ParseWorkerUrl("http://[fd00::5]:30000/p");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "fd00::5");
  EXPECT_EQ(url->port, 30000);
  EXPECT_EQ(url->path_prefix, "/p");
  url = ParseWorkerUrl("https://[::1]");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->host, "::1");
  EXPECT_EQ(url->port, 443);

  EXPECT_THAT(std::string(ParseWorkerUrl("fd00::5").status().message()),
              HasSubstr("IPv6 literal without brackets"));
  EXPECT_THAT(std::string(ParseWorkerUrl("http://[fd00::5").status().message()),
              HasSubstr("unterminated"));
  EXPECT_THAT(
      std::string(ParseWorkerUrl("http://[fd00::5]x").status().message()),
      HasSubstr("text after"));
}

TEST(WorkerUrl, Refusals) {
  for (const char* bad :
       {"", "http://", "http://:80", "grpc://h:1", "http://h:0",
        "http://h:65536", "http://h:", "http://h:8x"}) {
    absl::StatusOr<WorkerUrl> url = ParseWorkerUrl(bad);
    EXPECT_FALSE(url.ok()) << bad;
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(KvEventsDescriptorParse, ReadsTheAdvertisedFields) {
  const KvEventsDescriptor d = Parsed(kDescriptor);
  EXPECT_EQ(d.publisher, "zmq");
  EXPECT_EQ(d.endpoint_host, "*");
  EXPECT_EQ(d.endpoint_port_base, 5557u);
  EXPECT_EQ(d.topic, "kv");
  EXPECT_EQ(d.block_size, 16u);
  EXPECT_EQ(d.dp_size, 2u);
}

TEST(KvEventsDescriptorParse, TopicMayBeMissingOrNullAndExtrasAreIgnored) {
  EXPECT_EQ(Parsed(R"({"publisher":"zmq","endpoint_host":"*",)"
                   R"("endpoint_port_base":5557,"block_size":1,"dp_size":1,)"
                   R"("load_endpoint_port_base":5600,"load_topic":"load"})")
                .topic,
            "");
  EXPECT_EQ(Parsed(R"({"publisher":"zmq","endpoint_host":"*","topic":null,)"
                   R"("endpoint_port_base":5557,"block_size":1,"dp_size":1})")
                .topic,
            "");
}

// Bodies refused before any field is read, with the reason they get.
TEST(KvEventsDescriptorParse, BodiesWithoutAnObjectAreRefused) {
  const struct {
    std::string body;
    const char* reason;
  } cases[] = {
      {Body("null"), "kv_events is null or missing"},
      {R"({"model_path":"m"})", "kv_events is null or missing"},
      {Body("[]"), "kv_events is not an object"},
      {Body(R"("zmq")"), "kv_events is not an object"},
      {"<html>bad gateway</html>", "not JSON"},
      {"", "not JSON"},
      {"[1]", "not a JSON object"},
      {R"({"kv_events":)", "not JSON"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(Refusal(c.body), HasSubstr(c.reason)) << c.body;
  }
}

TEST(KvEventsDescriptorParse, MissingFieldsAreRefused) {
  for (const char* field : {"publisher", "endpoint_host", "endpoint_port_base",
                            "block_size", "dp_size"}) {
    std::string object = "{";
    const std::string all[][2] = {{"publisher", R"("zmq")"},
                                  {"endpoint_host", R"("*")"},
                                  {"endpoint_port_base", "5557"},
                                  {"block_size", "16"},
                                  {"dp_size", "1"}};
    for (const auto& [key, value] : all) {
      if (key == field) continue;
      if (object.size() > 1) object += ",";
      object += "\"" + key + "\":" + value;
    }
    object += "}";
    EXPECT_THAT(Refusal(Body(object)),
                HasSubstr(std::string("kv_events lacks \"") + field + "\""))
        << object;
    // null counts as missing.
    std::string with_null = object;
    with_null.insert(1, std::string("\"") + field + "\":null,");
    EXPECT_THAT(Refusal(Body(with_null)),
                HasSubstr(std::string("lacks \"") + field + "\""))
        << with_null;
  }
}

// A descriptor with every required field, each replaced in turn by a value
// of the wrong type or out of range.
TEST(KvEventsDescriptorParse, WrongTypesAndRangesAreRefused) {
  const struct {
    const char* field;
    const char* value;
    const char* reason;
  } cases[] = {
      {"publisher", "1", "\"publisher\" must be a string"},
      {"topic", "7", "\"topic\" must be a string"},
      {"endpoint_port_base", R"("5557")",
       "\"endpoint_port_base\" must be an integer in 1..65535"},
      {"endpoint_port_base", "70000", "endpoint_port_base"},
      {"block_size", "16.5", "\"block_size\" must be an integer"},
      {"block_size", "0", "block_size"},
      {"dp_size", "-1", "\"dp_size\" must be an integer"},
      {"dp_size", "true", "dp_size"},
  };
  for (const auto& c : cases) {
    const std::string fields[][2] = {
        {"publisher", R"("zmq")"}, {"endpoint_host", R"("*")"},
        {"topic", R"("kv")"},      {"endpoint_port_base", "5557"},
        {"block_size", "16"},      {"dp_size", "1"}};
    std::string object = "{";
    for (const auto& [key, value] : fields) {
      if (object.size() > 1) object += ",";
      object += "\"" + key + "\":" + (key == c.field ? c.value : value);
    }
    object += "}";
    EXPECT_THAT(Refusal(Body(object)), HasSubstr(c.reason)) << object;
  }
}

TEST(KvEventsDescriptorApply, WildcardHostsBecomeTheWorkersHost) {
  for (const char* wildcard : {"*", "0.0.0.0", "::", "[::]", ""}) {
    KvEventsDescriptor d = Descriptor();
    d.endpoint_host = wildcard;
    absl::StatusOr<WorkerEntry> e =
        ApplyKvEventsDescriptor(DiscoverEntry(1), d, "10.0.0.5");
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->event_endpoint, "tcp://10.0.0.5:5558") << wildcard;
    EXPECT_EQ(e->event_topic, "kv");
  }
}

TEST(KvEventsDescriptorApply, Ipv6HostsAreBracketed) {
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(DiscoverEntry(), Descriptor(), "fd00::5");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->event_endpoint, "tcp://[fd00::5]:5557");
  KvEventsDescriptor d = Descriptor();
  for (const char* advertised : {"fd00::9", "[fd00::9]"}) {
    d.endpoint_host = advertised;
    e = ApplyKvEventsDescriptor(DiscoverEntry(), d, "10.0.0.5");
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->event_endpoint, "tcp://[fd00::9]:5557") << advertised;
  }
}

TEST(KvEventsDescriptorApply, ASpecificHostIsKept) {
  KvEventsDescriptor d = Descriptor();
  d.endpoint_host = "10.0.0.9";
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(DiscoverEntry(), d, "10.0.0.5");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->event_endpoint, "tcp://10.0.0.9:5557");
}

TEST(KvEventsDescriptorApply, AnEntrysOwnEndpointIsKept) {
  WorkerEntry entry = DiscoverEntry();
  entry.event_endpoint = "tcp://127.0.0.1:6000";
  entry.event_topic = "mine";
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(entry, Descriptor(), "10.0.0.5");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->event_endpoint, "tcp://127.0.0.1:6000");
  EXPECT_EQ(e->event_topic, "kv");
}

TEST(KvEventsDescriptorApply, PublisherOtherThanZmqIsRefused) {
  KvEventsDescriptor d = Descriptor();
  d.publisher = "null";
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(DiscoverEntry(), d, "h");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("publisher is \"null\""));
}

TEST(KvEventsDescriptorApply, RankOutOfRangeIsRefusedNamingBoth) {
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(DiscoverEntry(2), Descriptor(), "h");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("dp_rank 2 is not below the advertised dp_size 2"));
  EXPECT_TRUE(
      ApplyKvEventsDescriptor(DiscoverEntry(1), Descriptor(), "h").ok());
}

TEST(KvEventsDescriptorApply, PortAbove65535IsRefused) {
  KvEventsDescriptor d = Descriptor();
  d.endpoint_port_base = 65535;
  EXPECT_TRUE(ApplyKvEventsDescriptor(DiscoverEntry(0), d, "h").ok());
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(DiscoverEntry(1), d, "h");
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(std::string(e.status().message()), HasSubstr("above 65535"));
}

TEST(KvEventsDescriptorApply, BlockSizeMustMatchANamedPageSize) {
  WorkerEntry entry = DiscoverEntry();
  entry.page_size = 32;
  entry.page_size_set = true;
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(entry, Descriptor(), "h");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(e.status().message()),
              HasSubstr("advertised block_size 16 differs from the entry's "
                        "page_size 32"));
  entry.page_size = 16;
  e = ApplyKvEventsDescriptor(entry, Descriptor(), "h");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->page_size, 16u);
}

TEST(KvEventsDescriptorApply, AnUnnamedPageSizeAdoptsTheBlockSize) {
  WorkerEntry entry = DiscoverEntry();
  ASSERT_FALSE(entry.page_size_set);
  ASSERT_EQ(entry.page_size, 1u);
  absl::StatusOr<WorkerEntry> e =
      ApplyKvEventsDescriptor(entry, Descriptor(), "h");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->page_size, 16u);
  // The key and the rest of the entry are untouched.
  EXPECT_EQ(e->worker_id, "w");
  EXPECT_EQ(e->dp_rank, 0u);
  EXPECT_EQ(e->worker_address, "http://10.0.0.5:30000");
}

}  // namespace kv_events_descriptor_test
}  // namespace kvindexer::bridge
