// The JetStream event log's reader when its consumer goes: deleted on the
// server, or on a node of an R=3 cluster that dies. Reads must go on from
// where they were, over real nats-server processes. And when a fetch it
// gave up on takes a record, the next read must still end with it.

#include <nats/nats.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_event_log.h"
#include "fleet/nats_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"
#include "tests/support/server_process.h"

namespace kvindexer::fleet {
namespace jetstream_reader_test {

using namespace std::chrono_literals;
using test_support::NatsCluster;
using test_support::NatsServer;
using test_support::WaitUntil;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

EventLogConfig ConfigFor(std::vector<std::string> urls, uint32_t replicas) {
  EventLogConfig config =
      test_support::FreshEventLogConfig(std::move(urls), "KVREADER");
  config.replicas = replicas;
  // Creating a replicated stream elects a group on several nodes: on a
  // loaded machine that takes longer than the 2 s one node needs.
  if (replicas > 1) config.nats.timeout_ms = 15000;
  return config;
}

// A connection of the test's own, to look at and remove consumers the way
// an operator (or the server) would.
class Inspector {
 public:
  explicit Inspector(const std::string& urls) {
    ok_ = natsConnection_ConnectTo(&nc_, urls.c_str()) == NATS_OK &&
          natsConnection_JetStream(&js_, nc_, nullptr) == NATS_OK;
  }
  ~Inspector() {
    jsCtx_Destroy(js_);
    natsConnection_Destroy(nc_);
  }
  bool ok() const { return ok_; }

  std::vector<std::string> Consumers(const std::string& stream) {
    std::vector<std::string> names;
    jsConsumerNamesList* list = nullptr;
    if (js_ConsumerNames(&list, js_, stream.c_str(), nullptr, nullptr) ==
        NATS_OK) {
      for (int i = 0; i < list->Count; ++i) names.emplace_back(list->List[i]);
    }
    jsConsumerNamesList_Destroy(list);
    return names;
  }

  bool Delete(const std::string& stream, const std::string& consumer) {
    return js_DeleteConsumer(js_, stream.c_str(), consumer.c_str(), nullptr,
                             nullptr) == NATS_OK;
  }

  // The server name of the consumer's leader, empty when none is known.
  std::string LeaderOf(const std::string& stream, const std::string& consumer) {
    jsConsumerInfo* info = nullptr;
    std::string leader;
    if (js_GetConsumerInfo(&info, js_, stream.c_str(), consumer.c_str(),
                           nullptr, nullptr) == NATS_OK &&
        info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
      leader = info->Cluster->Leader;
    }
    jsConsumerInfo_Destroy(info);
    return leader;
  }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  bool ok_ = false;
};

// Appends `payloads` under one worker; each is its own dedup id.
void AppendAll(EventLog& log, const std::vector<std::string>& payloads) {
  for (const std::string& payload : payloads) {
    absl::StatusOr<AppendAck> ack;
    ASSERT_TRUE(WaitUntil(
        [&] {
          ack = log.Append("w", payload, payload, {});
          return ack.ok();
        },
        20s, 50ms))
        << ack.status();
  }
}

// Reads from `from` until `count` records came or `timeout` passed, with
// failed reads retried as the log's own follower does.
std::vector<std::string> ReadPayloads(EventLog& log, uint64_t from,
                                      size_t count,
                                      std::chrono::milliseconds timeout) {
  std::vector<std::string> out;
  uint64_t next = from;
  WaitUntil(
      [&] {
        absl::StatusOr<std::vector<LoggedRecord>> records =
            log.Read(next, count - out.size(), 200ms);
        if (records.ok()) {
          for (const LoggedRecord& record : *records) {
            out.push_back(record.payload);
            next = record.position + 1;
          }
        }
        return out.size() >= count;
      },
      timeout);
  return out;
}

std::vector<std::string> Numbered(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// How many messages `nc` has published, requests included.
uint64_t MessagesSent(natsConnection* nc) {
  natsStatistics* stats = nullptr;
  uint64_t sent = 0;
  if (natsStatistics_Create(&stats) == NATS_OK &&
      natsConnection_GetStats(nc, stats) == NATS_OK) {
    natsStatistics_GetCounts(stats, nullptr, nullptr, &sent, nullptr, nullptr);
  }
  natsStatistics_Destroy(stats);
  return sent;
}

class JetStreamReaderTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }
};

TEST_F(JetStreamReaderTest, AReaderWhoseConsumerWasDeletedReadsOn) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const EventLogConfig config = ConfigFor({(*nats)->url()}, 1);
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  const std::vector<std::string> before = Numbered("a", 5);
  ASSERT_NO_FATAL_FAILURE(AppendAll(**log, before));
  ASSERT_THAT(ReadPayloads(**log, 1, 5, 15s), ElementsAreArray(before));

  Inspector inspector((*nats)->url());
  ASSERT_TRUE(inspector.ok());
  const std::vector<std::string> consumers = inspector.Consumers(config.stream);
  ASSERT_EQ(consumers.size(), 1u);
  ASSERT_TRUE(inspector.Delete(config.stream, consumers.front()));

  const std::vector<std::string> after = Numbered("b", 5);
  ASSERT_NO_FATAL_FAILURE(AppendAll(**log, after));
  EXPECT_THAT(ReadPayloads(**log, 6, 5, 15s), ElementsAreArray(after));
}

// A consumer of an R=3 stream has three copies: the node of its leader
// dies in the middle of reading, and the reader goes on with what the
// bridges append to the two nodes left.
TEST_F(JetStreamReaderTest, AReaderReadsOnWhenTheNodeOfItsConsumerDies) {
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster = NatsCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const EventLogConfig config = ConfigFor((*cluster)->url_list(), 3);
  absl::StatusOr<std::unique_ptr<EventLog>> reader =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<std::unique_ptr<EventLog>> writer =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(writer.ok()) << writer.status();
  const std::vector<std::string> before = Numbered("a", 20);
  ASSERT_NO_FATAL_FAILURE(AppendAll(**writer, before));
  ASSERT_THAT(ReadPayloads(**reader, 1, 20, 15s), ElementsAreArray(before));

  std::string leader;
  {
    Inspector inspector((*cluster)->urls());
    ASSERT_TRUE(inspector.ok());
    const std::vector<std::string> consumers =
        inspector.Consumers(config.stream);
    ASSERT_EQ(consumers.size(), 1u);
    leader = inspector.LeaderOf(config.stream, consumers.front());
  }
  ASSERT_THAT(leader, ::testing::MatchesRegex("n[123]"));
  (*cluster)->node(leader[1] - '1').Kill();

  const std::vector<std::string> after = Numbered("b", 50);
  ASSERT_NO_FATAL_FAILURE(AppendAll(**writer, after));
  EXPECT_THAT(ReadPayloads(**reader, 21, 50, 30s), ElementsAreArray(after));
}

// A fetch the client gave up on while the server did not answer is still
// registered on the server once it answers again, until its expiry. A
// record arriving then goes to that request; the next waiting read must
// still end with it, not when its own fetch expires.
TEST_F(JetStreamReaderTest, ARecordThatGoesToAnAbandonedFetchEndsTheNextRead) {
  absl::StatusOr<std::unique_ptr<NatsServer>> server = NatsServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  const EventLogConfig config = ConfigFor({(*server)->url()}, 1);
  absl::StatusOr<std::shared_ptr<NatsClient>> client =
      NatsClient::Connect(config.nats);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::unique_ptr<EventLog>> reader =
      OpenJetStreamEventLogOn(*client, config);
  ASSERT_TRUE(reader.ok()) << reader.status();
  absl::StatusOr<std::unique_ptr<EventLog>> writer =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(writer.ok()) << writer.status();
  ASSERT_NO_FATAL_FAILURE(AppendAll(**writer, {"a"}));
  ASSERT_THAT(ReadPayloads(**reader, 1, 1, 15s), ElementsAre("a"));

  // With the server stopped, a read sends its fetch, gives up on it, and
  // asks for the stream's bounds: two messages sent. The server takes
  // both once it runs again, the fetch first.
  natsConnection* nc = (*client)->connection();
  const uint64_t sent = MessagesSent(nc);
  ASSERT_TRUE((*server)->Pause());
  absl::StatusOr<std::vector<LoggedRecord>> abandoned;
  std::thread first([&] { abandoned = (*reader)->Read(2, 99, 0ms); });
  const bool gave_up =
      WaitUntil([&] { return MessagesSent(nc) >= sent + 2; }, 10s);
  const bool resumed = (*server)->Resume();
  first.join();
  ASSERT_TRUE(resumed);
  ASSERT_TRUE(gave_up);
  ASSERT_TRUE(abandoned.ok()) << abandoned.status();
  EXPECT_THAT(*abandoned, IsEmpty());

  ASSERT_NO_FATAL_FAILURE(AppendAll(**writer, {"b"}));
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<LoggedRecord>> records =
      (*reader)->Read(2, 10, 20s);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ(records->front().payload, "b");
  // Far below the 20 s wait: the record, not the wait, ended the read.
  EXPECT_LT(elapsed, 10s);
}

}  // namespace jetstream_reader_test
}  // namespace kvindexer::fleet
