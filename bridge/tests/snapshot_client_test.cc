// SnapshotClient against an in-test ROUTER that plays SGLang's snapshot-v1
// provider: a valid snapshot, every validation failure, an error reply, a
// timeout and shutdown.
#include "bridge/snapshot_client.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/status/status.h"
#include "bridge/shutdown_signal.h"
#include "bridge/tests/msgpack_builders.h"
#include "bridge/tests/zmq_test_sockets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::FakeRouter;
using ::kvindexer::bridge::testing::Mp;
using ::kvindexer::bridge::testing::MpArray;
using ::kvindexer::bridge::testing::Pack;
using ::kvindexer::bridge::testing::ReceiveFrames;
using ::kvindexer::bridge::testing::SendFrames;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr uint32_t kRank = 2;

// One scripted reply, without the identity frame.
using Reply = std::vector<std::string>;

Reply Header(MpArray fields) { return {"", "header", Pack(Mp(fields))}; }
Reply Header(uint64_t version, std::string epoch, uint64_t rank,
             uint64_t resume, uint64_t barrier, std::string barrier_id,
             uint64_t count) {
  return Header(MpArray{Mp(version), Mp(epoch), Mp(rank), Mp(resume),
                        Mp(barrier), Mp(barrier_id), Mp(count)});
}
Reply GoodHeader(uint64_t count) {
  return Header(1, "e1", kRank, 8, 7, "b1", count);
}
Reply Chunk(MpArray records) { return {"", "chunk", Pack(Mp(records))}; }
Mp Record(Mp parent, MpArray hashes) { return Mp(MpArray{parent, hashes}); }
Reply End() { return {"", "end", ""}; }

class SnapshotClientTest : public ::testing::Test {
 protected:
  void ServeOnce(std::vector<Reply> replies) {
    router_.Serve([this, replies = std::move(replies)](zmq::socket_t& router) {
      std::optional<std::vector<std::string>> request =
          ReceiveFrames(router, 2s);
      ASSERT_TRUE(request.has_value());
      request_ = *request;
      for (const Reply& reply : replies) {
        std::vector<std::string> frames = {(*request)[0]};
        frames.insert(frames.end(), reply.begin(), reply.end());
        SendFrames(router, frames);
      }
    });
  }

  absl::StatusOr<PublisherSnapshot> Fetch(
      std::chrono::milliseconds timeout = 2000ms) {
    SnapshotClient client(&context_, router_.endpoint(), kRank, &shutdown_,
                          timeout);
    absl::StatusOr<PublisherSnapshot> result = client.Fetch();
    router_.Join();
    return result;
  }

  zmq::context_t context_;
  ShutdownSignal shutdown_;
  FakeRouter router_;
  std::vector<std::string> request_;
};

TEST_F(SnapshotClientTest, ValidSnapshot) {
  ServeOnce({GoodHeader(4), Chunk({Record(nullptr, {Mp(11)})}),
             Chunk({Record(Mp(11), {Mp(12)}), Record(Mp(12), {Mp(-5)}),
                    Record(Mp(-5), {Mp(~uint64_t{0})})}),
             End()});
  absl::StatusOr<PublisherSnapshot> snapshot = Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  ASSERT_EQ(request_.size(), 3u);
  EXPECT_EQ(request_[1], "");
  EXPECT_EQ(request_[2], "snapshot-v1");
  EXPECT_EQ(snapshot->epoch, "e1");
  EXPECT_EQ(snapshot->barrier_seq, 7u);
  EXPECT_EQ(snapshot->resume_seq, 8u);
  EXPECT_EQ(snapshot->barrier_id, "b1");
  EXPECT_EQ(snapshot->hashes, (std::vector<int64_t>{11, 12, -5, -1}));
}

TEST_F(SnapshotClientTest, EmptySnapshot) {
  ServeOnce({Header(1, "e1", kRank, 1, 0, "b1", 0), End()});
  absl::StatusOr<PublisherSnapshot> snapshot = Fetch();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_TRUE(snapshot->hashes.empty());
  EXPECT_EQ(snapshot->barrier_seq, 0u);
}

struct BadCase {
  const char* name;
  std::vector<Reply> replies;
  const char* expected;  // part of the status message
};

TEST_F(SnapshotClientTest, EachValidationFailureIsUnavailable) {
  const Reply one_record = Chunk({Record(nullptr, {Mp(1)})});
  MpArray too_many_hashes;
  for (size_t i = 0; i <= kMaxSnapshotHashesPerRecord; ++i) {
    too_many_hashes.push_back(Mp(static_cast<int64_t>(i)));
  }
  const std::vector<BadCase> cases = {
      {"version", {Header(2, "e1", kRank, 8, 7, "b1", 0), End()}, "version 2"},
      {"rank",
       {Header(1, "e1", kRank + 1, 8, 7, "b1", 0), End()},
       "replica_rank 3"},
      {"empty epoch",
       {Header(1, "", kRank, 8, 7, "b1", 0), End()},
       "epoch is empty"},
      {"empty barrier",
       {Header(1, "e1", kRank, 8, 7, "", 0), End()},
       "barrier_id is empty"},
      {"resume",
       {Header(1, "e1", kRank, 9, 7, "b1", 0), End()},
       "resume_seq 9"},
      {"record cap",
       {Header(1, "e1", kRank, 8, 7, "b1", kMaxSnapshotRecords + 1), End()},
       "exceeds the cap"},
      {"header shape",
       {Header(MpArray{Mp(1), Mp("e1"), Mp(int64_t{kRank})}), End()},
       "array of 7"},
      {"epoch type",
       {Header(MpArray{Mp(1), Mp(5), Mp(int64_t{kRank}), Mp(8), Mp(7), Mp("b"),
                       Mp(0)}),
        End()},
       "epoch is not a string"},
      {"header not msgpack", {{"", "header", "\xc1"}, End()}, "msgpack"},
      {"too few records", {GoodHeader(2), one_record, End()}, "received 1"},
      {"too many records",
       {GoodHeader(1), one_record, one_record, End()},
       "more records"},
      {"hash cap",
       {GoodHeader(1), Chunk({Record(nullptr, too_many_hashes)}), End()},
       "65536"},
      {"no hash",
       {GoodHeader(1), Chunk({Record(nullptr, {})}), End()},
       "no block hash"},
      {"hash type",
       {GoodHeader(1), Chunk({Record(nullptr, {Mp("x")})}), End()},
       "not an integer"},
      {"record shape", {GoodHeader(1), Chunk({Mp(1)}), End()}, "record"},
      {"end payload", {GoodHeader(0), {"", "end", "x"}}, "payload bytes"},
      {"error first",
       {{"", "error", "snapshot provider busy"}},
       "snapshot provider busy"},
      {"error later",
       {GoodHeader(1), {"", "error", "capture timeout"}},
       "capture timeout"},
      {"chunk first", {one_record, End()}, "not a header"},
      {"unknown kind", {GoodHeader(0), {"", "what", ""}}, "unexpected"},
      {"frame count", {{"", "header"}}, "malformed reply of 2 frames"},
      {"delimiter", {{"x", "end", ""}}, "malformed"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    ServeOnce(c.replies);
    absl::StatusOr<PublisherSnapshot> snapshot = Fetch();
    ASSERT_FALSE(snapshot.ok());
    EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(snapshot.status().message(), HasSubstr(c.expected));
  }
}

TEST_F(SnapshotClientTest, NoEndTimesOut) {
  ServeOnce({GoodHeader(1), Chunk({Record(nullptr, {Mp(1)})})});
  const auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<PublisherSnapshot> snapshot = Fetch(150ms);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(snapshot.status().message(), HasSubstr("within 150 ms"));
}

TEST_F(SnapshotClientTest, ShutdownInterruptsTheFetch) {
  router_.Serve([this](zmq::socket_t& router) {
    ASSERT_TRUE(ReceiveFrames(router, 2s).has_value());
    shutdown_.Trigger();
  });
  const auto begin = std::chrono::steady_clock::now();
  absl::StatusOr<PublisherSnapshot> snapshot = Fetch(30s);
  EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_THAT(snapshot.status().message(), HasSubstr("shutdown"));
}

}  // namespace
}  // namespace kvindexer::bridge
