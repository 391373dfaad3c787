// The EventLog contract (fleet/event_log.h), run against every
// implementation: MemoryEventLog, the reference, and the JetStream driver
// on a real nats-server (skipped when none is installed). Then what only
// the JetStream driver has to show: its stream outlives a server restart,
// a dead or hung server makes appends fail UNAVAILABLE in time and work
// again once it is back, an R=3 stream keeps acknowledged records when a node
// dies, and a stream it cannot use is refused with the variable named.
#include <nats/nats.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fleet/event_log.h"
#include "fleet/fleet_config.h"
#include "fleet/jetstream_event_log.h"
#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/server_process.h"

namespace kvindexer::fleet {
namespace event_log_contract_test {

using namespace std::chrono_literals;
using test_support::NatsCluster;
using test_support::NatsServer;
using test_support::WaitUntil;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::vector<uint64_t> Positions(const std::vector<LoggedRecord>& records) {
  std::vector<uint64_t> out;
  for (const LoggedRecord& r : records) out.push_back(r.position);
  return out;
}

std::vector<std::string> Payloads(const std::vector<LoggedRecord>& records) {
  std::vector<std::string> out;
  for (const LoggedRecord& r : records) out.push_back(r.payload);
  return out;
}

// A stream and subject prefix of its own for every log a test opens, so
// tests on one server do not see each other's records.
EventLogConfig FreshConfig(std::vector<std::string> urls) {
  return test_support::FreshEventLogConfig(std::move(urls), "CONTRACT");
}

class EventLogContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      log_ = std::make_unique<MemoryEventLog>();
      return;
    }
    KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
    absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
    ASSERT_TRUE(nats.ok()) << nats.status();
    absl::StatusOr<std::unique_ptr<EventLog>> log =
        OpenJetStreamEventLog(FreshConfig({(*nats)->url()}));
    ASSERT_TRUE(log.ok()) << log.status();
    log_ = *std::move(log);
  }

  // Appends without dedup id or fence; the position.
  uint64_t Add(std::string_view worker, std::string_view payload) {
    absl::StatusOr<AppendAck> ack =
        log_->Append(worker, payload, "", std::nullopt);
    EXPECT_TRUE(ack.ok()) << ack.status();
    return ack.ok() ? ack->position : 0;
  }

  // Up to `max` records from `from` on, without waiting for new ones. A
  // read may answer fewer records than there are (the contract's "up to"),
  // so this reads on after the last one until a read finds nothing more.
  std::vector<LoggedRecord> ReadNow(uint64_t from, size_t max = 100) {
    std::vector<LoggedRecord> out;
    while (out.size() < max) {
      absl::StatusOr<std::vector<LoggedRecord>> records = log_->Read(
          out.empty() ? from : out.back().position + 1, max - out.size(), 0ms);
      EXPECT_TRUE(records.ok()) << records.status();
      if (!records.ok() || records->empty()) break;
      out.insert(out.end(), records->begin(), records->end());
    }
    return out;
  }

  LogBounds BoundsNow() {
    absl::StatusOr<LogBounds> bounds = log_->Bounds();
    EXPECT_TRUE(bounds.ok()) << bounds.status();
    return bounds.value_or(LogBounds{.first = 999, .last = 999});
  }

  std::unique_ptr<EventLog> log_;
};

TEST_P(EventLogContractTest, AnEmptyLogHoldsNothing) {
  const LogBounds bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 1u);
  EXPECT_EQ(bounds.last, 0u);
  EXPECT_THAT(ReadNow(1), IsEmpty());
  EXPECT_EQ(log_->LastPositionOf("w").value_or(99), 0u);
}

TEST_P(EventLogContractTest, PositionsStartAtOneAndGrowByOne) {
  EXPECT_EQ(Add("w1", "a"), 1u);
  EXPECT_EQ(Add("w2", "b"), 2u);
  EXPECT_EQ(Add("w1", "c"), 3u);
  const LogBounds bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 1u);
  EXPECT_EQ(bounds.last, 3u);
}

TEST_P(EventLogContractTest, ASecondAppendWithTheSameDedupIdIsADuplicate) {
  absl::StatusOr<AppendAck> first = log_->Append("w", "x", "id-1", {});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->position, 1u);
  EXPECT_FALSE(first->duplicate);
  EXPECT_EQ(Add("w", "y"), 2u);
  absl::StatusOr<AppendAck> again = log_->Append("w", "x", "id-1", {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->position, 1u);
  EXPECT_TRUE(again->duplicate);
  EXPECT_THAT(Payloads(ReadNow(1)), ElementsAre("x", "y"));
  EXPECT_EQ(BoundsNow().last, 2u);
}

TEST_P(EventLogContractTest, ADuplicateIsRecognisedBeforeTheFence) {
  absl::StatusOr<AppendAck> first = log_->Append("w", "x", "id-1", 0);
  ASSERT_TRUE(first.ok()) << first.status();
  // The retry of an append that did land: its fence no longer holds, but
  // it is answered as the duplicate it is.
  absl::StatusOr<AppendAck> retry = log_->Append("w", "x", "id-1", 0);
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->duplicate);
  EXPECT_EQ(retry->position, first->position);
}

TEST_P(EventLogContractTest, TheFenceHoldsPerWorker) {
  // 0: nothing under a fresh worker yet.
  absl::StatusOr<AppendAck> a = log_->Append("w1", "a", "", 0);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->position, 1u);
  absl::StatusOr<AppendAck> stale = log_->Append("w1", "b", "", 0);
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition)
      << stale.status();
  EXPECT_THAT(stale.status().message(), HasSubstr("is at 1,"));
  // Another worker's records do not move w1's fence.
  absl::StatusOr<AppendAck> other = log_->Append("w2", "c", "", 0);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->position, 2u);
  absl::StatusOr<AppendAck> b = log_->Append("w1", "b", "", 1);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->position, 3u);
  absl::StatusOr<AppendAck> ahead = log_->Append("w1", "d", "", 7);
  EXPECT_EQ(ahead.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(ahead.status().message(), HasSubstr("is at 3,"));
  EXPECT_EQ(BoundsNow().last, 3u);
}

TEST_P(EventLogContractTest, LastPositionOfFollowsEachWorker) {
  EXPECT_EQ(log_->LastPositionOf("w1").value_or(99), 0u);
  Add("w1", "a");
  Add("w2", "b");
  Add("w1", "c");
  EXPECT_EQ(log_->LastPositionOf("w1").value_or(99), 3u);
  EXPECT_EQ(log_->LastPositionOf("w2").value_or(99), 2u);
  EXPECT_EQ(log_->LastPositionOf("w3").value_or(99), 0u);
}

TEST_P(EventLogContractTest, ReadsFromAnyPositionInOrder) {
  for (int i = 1; i <= 5; ++i) {
    Add(i % 2 == 0 ? "even" : "odd", "p" + std::to_string(i));
  }
  const std::vector<LoggedRecord> all = ReadNow(1);
  ASSERT_THAT(Positions(all), ElementsAre(1, 2, 3, 4, 5));
  EXPECT_EQ(all[0].worker_id, "odd");
  EXPECT_EQ(all[1].worker_id, "even");
  EXPECT_EQ(all[4].payload, "p5");
  EXPECT_THAT(Positions(ReadNow(3)), ElementsAre(3, 4, 5));
  EXPECT_THAT(Positions(ReadNow(2, 2)), ElementsAre(2, 3));
  // Continuing where the last read ended, then going back.
  EXPECT_THAT(Positions(ReadNow(4, 1)), ElementsAre(4));
  EXPECT_THAT(Positions(ReadNow(5)), ElementsAre(5));
  EXPECT_THAT(ReadNow(6), IsEmpty());
  EXPECT_THAT(Positions(ReadNow(1, 1)), ElementsAre(1));
  EXPECT_THAT(ReadNow(9), IsEmpty());
}

TEST_P(EventLogContractTest, AReadWithNothingToReadEndsAfterItsWait) {
  Add("w", "a");
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<LoggedRecord>> records = log_->Read(2, 10, 150ms);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(*records, IsEmpty());
  EXPECT_GE(elapsed, 100ms);
  EXPECT_LT(elapsed, 3s);
}

TEST_P(EventLogContractTest, AWaitingReadEndsWhenARecordArrives) {
  Add("w", "a");
  EXPECT_THAT(Positions(ReadNow(1)), ElementsAre(1));
  std::atomic<bool> reading{false};
  absl::StatusOr<std::vector<LoggedRecord>> records;
  std::chrono::steady_clock::duration elapsed{};
  std::thread reader([&] {
    reading = true;
    const auto start = std::chrono::steady_clock::now();
    records = log_->Read(2, 10, 20s);
    elapsed = std::chrono::steady_clock::now() - start;
  });
  ASSERT_TRUE(WaitUntil([&] { return reading.load(); }, 10s));
  Add("w", "b");
  reader.join();
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(Payloads(*records), ElementsAre("b"));
  // Far below the 20 s wait: the arrival, not the timeout, ended the read.
  EXPECT_LT(elapsed, 10s);
}

TEST_P(EventLogContractTest, WorkerIdsAreArbitraryBytes) {
  const std::vector<std::string> ids = {std::string("\x00a/b.c>*", 8),
                                        "\xff\xfe",
                                        " spaced id ",
                                        "UPPER.x",
                                        "*",
                                        ">"};
  for (const std::string& id : ids) Add(id, "payload of " + id);
  const std::vector<LoggedRecord> records = ReadNow(1);
  ASSERT_EQ(records.size(), ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(records[i].worker_id, ids[i]) << i;
    EXPECT_EQ(records[i].payload, "payload of " + ids[i]);
    EXPECT_EQ(log_->LastPositionOf(ids[i]).value_or(99), i + 1) << i;
  }
}

TEST_P(EventLogContractTest, PayloadsAreArbitraryBytesUpToTheLimit) {
  const std::string binary("\x00\x01\r\n\xff", 5);
  EXPECT_EQ(Add("w", binary), 1u);
  EXPECT_EQ(Add("w", ""), 2u);
  const std::string largest(log_->max_payload_bytes(), 'x');
  EXPECT_EQ(Add("w", largest), 3u);
  const std::vector<LoggedRecord> records = ReadNow(1);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].payload, binary);
  EXPECT_EQ(records[1].payload, "");
  EXPECT_EQ(records[2].payload.size(), largest.size());
}

TEST_P(EventLogContractTest, BadAppendsAreInvalidArguments) {
  ASSERT_GT(log_->max_payload_bytes(), 0u);
  const std::string too_big(log_->max_payload_bytes() + 1, 'x');
  EXPECT_EQ(log_->Append("w", too_big, "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(log_->Append("", "p", "", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BoundsNow().last, 0u);
}

TEST_P(EventLogContractTest, TrimmingRemovesRecordsButNotPositions) {
  Add("early", "a");
  Add("early", "b");
  Add("late", "c");
  Add("late", "d");
  Add("late", "e");
  ASSERT_TRUE(log_->TrimBefore(3).ok());
  LogBounds bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 3u);
  EXPECT_EQ(bounds.last, 5u);
  // A read from before the first position starts at the first held.
  EXPECT_THAT(Positions(ReadNow(1)), ElementsAre(3, 4, 5));
  EXPECT_EQ(log_->LastPositionOf("early").value_or(99), 0u);
  EXPECT_EQ(log_->LastPositionOf("late").value_or(99), 5u);
  // Trimming below the first position changes nothing.
  for (uint64_t position : {0, 1, 2}) {
    ASSERT_TRUE(log_->TrimBefore(position).ok()) << position;
  }
  bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 3u);
  EXPECT_EQ(bounds.last, 5u);
  // Trimming everything leaves an empty log whose positions go on.
  ASSERT_TRUE(log_->TrimBefore(6).ok());
  bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 6u);
  EXPECT_EQ(bounds.last, 5u);
  EXPECT_THAT(ReadNow(1), IsEmpty());
  EXPECT_EQ(log_->LastPositionOf("late").value_or(99), 0u);
  EXPECT_EQ(Add("late", "f"), 6u);
  // Trimming past the end moves the next position there.
  ASSERT_TRUE(log_->TrimBefore(10).ok());
  bounds = BoundsNow();
  EXPECT_EQ(bounds.first, 10u);
  EXPECT_EQ(bounds.last, 9u);
  EXPECT_EQ(Add("late", "g"), 10u);
  EXPECT_THAT(Positions(ReadNow(1)), ElementsAre(10));
}

INSTANTIATE_TEST_SUITE_P(Implementations, EventLogContractTest,
                         ::testing::Values("memory", "jetstream"),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

// --- The JetStream driver only ---------------------------------------

class JetStreamEventLogTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }
};

// Reads from `from` until `count` records came, retrying failed reads (a
// client that reconnects) until `timeout`.
std::vector<LoggedRecord> ReadEventually(EventLog& log, uint64_t from,
                                         size_t count,
                                         std::chrono::milliseconds timeout) {
  std::vector<LoggedRecord> out;
  WaitUntil(
      [&] {
        absl::StatusOr<std::vector<LoggedRecord>> records =
            log.Read(out.empty() ? from : out.back().position + 1,
                     count - out.size(), 200ms);
        if (records.ok())
          out.insert(out.end(), records->begin(), records->end());
        return out.size() >= count;
      },
      timeout);
  return out;
}

TEST_F(JetStreamEventLogTest, TheStreamSurvivesAServerRestart) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const EventLogConfig config = FreshConfig({(*nats)->url()});
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  for (const char* payload : {"a", "b", "c"}) {
    ASSERT_TRUE((*log)->Append("w", payload, payload, {}).ok());
  }
  // A reader in the middle of the log when the server goes.
  EXPECT_THAT(Payloads(ReadEventually(**log, 1, 2, 15s)),
              ElementsAre("a", "b"));
  ASSERT_TRUE((*nats)->Stop().ok());
  ASSERT_TRUE((*nats)->Restart().ok());
  // The open log reconnects and reads on; a new one finds the stream as it
  // was.
  EXPECT_THAT(Payloads(ReadEventually(**log, 3, 1, 15s)), ElementsAre("c"));
  absl::StatusOr<std::unique_ptr<EventLog>> reopened =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_THAT(Payloads(ReadEventually(**reopened, 1, 3, 15s)),
              ElementsAre("a", "b", "c"));
  absl::StatusOr<AppendAck> next = (*reopened)->Append("w", "d", "", 3);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->position, 4u);
}

TEST_F(JetStreamEventLogTest, AppendsFailUnavailableWhileTheServerIsDown) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig({(*nats)->url()});
  config.nats.timeout_ms = 1000;
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("w", "before", "id-before", {}).ok());

  (*nats)->Kill();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<AppendAck> down =
      (*log)->Append("w", "during", "id-during", {});
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable)
      << down.status();
  EXPECT_LT(elapsed, 5s);

  ASSERT_TRUE((*nats)->Restart().ok());
  // Retried with the same dedup id until the server answers: the record is
  // logged exactly once, whether or not the failed attempt got through.
  absl::StatusOr<AppendAck> retried;
  ASSERT_TRUE(WaitUntil(
      [&] {
        retried = (*log)->Append("w", "during", "id-during", {});
        return retried.ok();
      },
      15s, 50ms))
      << retried.status();
  EXPECT_EQ(retried->position, 2u);
  EXPECT_THAT(Payloads(ReadEventually(**log, 1, 2, 15s)),
              ElementsAre("before", "during"));
  EXPECT_THAT(ReadEventually(**log, 3, 1, 300ms), IsEmpty());
}

TEST_F(JetStreamEventLogTest,
       AppendsAndReadsFailUnavailableWhileTheServerHangs) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig({(*nats)->url()});
  config.nats.timeout_ms = 500;
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  // An empty answer from a server that answers; the reader's consumer now
  // exists, so the read below reaches a fetch.
  absl::StatusOr<std::vector<LoggedRecord>> idle = (*log)->Read(1, 10, 50ms);
  ASSERT_TRUE(idle.ok()) << idle.status();
  EXPECT_THAT(*idle, IsEmpty());
  ASSERT_TRUE((*nats)->Pause());
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<AppendAck> hung = (*log)->Append("w", "a", "id-a", {});
  EXPECT_EQ(hung.status().code(), absl::StatusCode::kUnavailable)
      << hung.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // A fetch that no server answers is no empty answer: replicas measure
  // their silence by answers (replica/log_silence.h).
  absl::StatusOr<std::vector<LoggedRecord>> read = (*log)->Read(1, 10, 100ms);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnavailable)
      << (read.ok() ? "an empty answer" : read.status().ToString());
  ASSERT_TRUE((*nats)->Resume());
  // The first attempt reaches the server late, or not at all: the retry
  // with its dedup id settles it either way.
  absl::StatusOr<AppendAck> retried;
  ASSERT_TRUE(WaitUntil(
      [&] {
        retried = (*log)->Append("w", "a", "id-a", {});
        return retried.ok();
      },
      15s, 50ms))
      << retried.status();
  EXPECT_EQ(retried->position, 1u);
  EXPECT_THAT(Payloads(ReadEventually(**log, 1, 1, 15s)), ElementsAre("a"));
}

// The server name of the stream's current leader, asked over a connection
// of its own.
absl::StatusOr<std::string> StreamLeader(const std::string& urls,
                                         const std::string& stream) {
  natsConnection* nc = nullptr;
  if (natsConnection_ConnectTo(&nc, urls.c_str()) != NATS_OK) {
    natsConnection_Destroy(nc);
    return absl::UnavailableError("cannot connect to ask for the leader");
  }
  jsCtx* js = nullptr;
  jsStreamInfo* info = nullptr;
  std::string leader;
  if (natsConnection_JetStream(&js, nc, nullptr) == NATS_OK &&
      js_GetStreamInfo(&info, js, stream.c_str(), nullptr, nullptr) ==
          NATS_OK &&
      info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
    leader = info->Cluster->Leader;
  }
  jsStreamInfo_Destroy(info);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  if (leader.empty()) return absl::UnavailableError("no stream leader known");
  return leader;
}

TEST_F(JetStreamEventLogTest, AReplicatedStreamKeepsAckedRecordsWhenANodeDies) {
  absl::StatusOr<std::unique_ptr<NatsCluster>> cluster = NatsCluster::Start();
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EventLogConfig config = FreshConfig((*cluster)->url_list());
  config.replicas = 3;
  // Creating a replicated stream elects a group on three nodes: on a loaded
  // machine that takes longer than the 2 s one node needs.
  config.nats.timeout_ms = 15000;
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  // The contract's order holds on a replicated stream too: a retried
  // append is a duplicate before its stale fence is looked at.
  absl::StatusOr<AppendAck> fenced = (*log)->Append("f", "x", "id-f", 0);
  ASSERT_TRUE(fenced.ok()) << fenced.status();
  absl::StatusOr<AppendAck> retried = (*log)->Append("f", "x", "id-f", 0);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_TRUE(retried->duplicate);
  EXPECT_EQ(retried->position, fenced->position);
  std::vector<std::string> payloads = {"x"};
  for (int i = 0; i < 10; ++i) {
    payloads.push_back("r" + std::to_string(i));
    absl::StatusOr<AppendAck> ack =
        (*log)->Append("w", payloads.back(), payloads.back(), {});
    ASSERT_TRUE(ack.ok()) << ack.status();
  }
  // The stream's leader goes: the records must be on the quorum left.
  absl::StatusOr<std::string> leader =
      StreamLeader((*cluster)->urls(), config.stream);
  ASSERT_TRUE(leader.ok()) << leader.status();
  ASSERT_THAT(*leader, ::testing::MatchesRegex("n[123]"));
  (*cluster)->node((*leader)[1] - '1').Kill();
  std::vector<LoggedRecord> read = ReadEventually(**log, 1, 11, 20s);
  EXPECT_EQ(Payloads(read), payloads);
  // The two nodes left are a quorum: appends go on.
  absl::StatusOr<AppendAck> after;
  ASSERT_TRUE(WaitUntil(
      [&] {
        after = (*log)->Append("w", "after", "id-after", {});
        return after.ok();
      },
      20s, 50ms))
      << after.status();
  EXPECT_EQ(after->position, 12u);
}

TEST_F(JetStreamEventLogTest, AStreamWithOtherSubjectsIsRefused) {
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig({(*nats)->url()});
  absl::StatusOr<std::unique_ptr<EventLog>> first =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(first.ok()) << first.status();
  config.subject_prefix += "other";
  absl::StatusOr<std::unique_ptr<EventLog>> second =
      OpenJetStreamEventLog(config);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr(kNatsSubjectPrefixVar));
  EXPECT_THAT(second.status().message(), HasSubstr(config.stream));
}

TEST_F(JetStreamEventLogTest, NoServerMeansUnavailableWithinTheTimeout) {
  absl::StatusOr<int> port = test_support::PickFreeLoopbackPort();
  ASSERT_TRUE(port.ok()) << port.status();
  EventLogConfig config =
      FreshConfig({"nats://127.0.0.1:" + std::to_string(*port)});
  config.nats.timeout_ms = 500;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  EXPECT_EQ(log.status().code(), absl::StatusCode::kUnavailable)
      << log.status();
  EXPECT_THAT(log.status().message(), HasSubstr(kNatsUrlVar));
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST_F(JetStreamEventLogTest, TheTokenFileAuthenticates) {
  absl::StatusOr<std::unique_ptr<test_support::ScratchDir>> dir =
      test_support::ScratchDir::Create("kvindexer-token-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  absl::StatusOr<std::unique_ptr<NatsServer>> nats =
      NatsServer::Start({"--auth", "s3cret-token"});
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig({(*nats)->url()});
  config.nats.token_file = (*dir)->Sub("token");
  // The trailing newline an editor leaves is not part of the token.
  std::ofstream((*dir)->Sub("token")) << "  s3cret-token\n";
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_TRUE((*log)->Append("w", "a", "", 0).ok());

  std::ofstream((*dir)->Sub("token")) << "wrong-token\n";
  absl::StatusOr<std::unique_ptr<EventLog>> refused =
      OpenJetStreamEventLog(config);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable)
      << refused.status();
  std::ofstream((*dir)->Sub("token")) << "\n";
  EXPECT_THAT(OpenJetStreamEventLog(config).status().message(),
              HasSubstr(kNatsTokenFileVar));
}

TEST_F(JetStreamEventLogTest, AnUnreadableTokenFileIsNamed) {
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig({(*nats)->url()});
  config.nats.token_file = "/nonexistent/kvindexer-token";
  absl::StatusOr<std::unique_ptr<EventLog>> log = OpenJetStreamEventLog(config);
  EXPECT_EQ(log.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(log.status().message(), HasSubstr(kNatsTokenFileVar));
}

}  // namespace event_log_contract_test
}  // namespace kvindexer::fleet
