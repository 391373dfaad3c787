// SnapshotClient against an in-test ROUTER that plays SGLang's snapshot
// provider: for snapshot-v1 and snapshot-v2 a valid snapshot and every
// validation failure; an error reply, a timeout and shutdown; the fallback
// from v2 to v1 of SGLANG_KV_SNAPSHOT_PROTOCOL=auto and the pinned
// protocols.
#include "bridge/snapshot_client.h"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "absl/status/status.h"
#include "bridge/stop_request.h"
#include "bridge/tests/zmq_test_sockets.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/msgpack_builders.h"

namespace kvindexer::bridge {
namespace {

using ::kvindexer::bridge::testing::FakeRouter;
using ::kvindexer::bridge::testing::Mp;
using ::kvindexer::bridge::testing::MpArray;
using ::kvindexer::bridge::testing::MpMap;
using ::kvindexer::bridge::testing::Pack;
using ::kvindexer::bridge::testing::ReceiveFrames;
using ::kvindexer::bridge::testing::SendFrames;
using ::testing::ElementsAre;
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

// snapshot-v2: a header map of the fields given (the rest left out).
Reply V2Header(MpMap fields) { return {"", "header", Pack(Mp(fields))}; }
// A complete, valid v2 header with `count` records, in the spelling of
// SGLang's snapshot-v2 (worker_epoch, dp_rank) or of the other upstream
// variant (epoch, replica_rank, worker_generation).
MpMap V2Fields(uint64_t count, bool alternate = false) {
  MpMap fields = {
      {Mp("version"), Mp(2)},
      {Mp("namespace"), Mp("ns")},
      {Mp("model"), Mp("m")},
      {Mp("worker_id"), Mp("w0")},
      {Mp(alternate ? "replica_rank" : "dp_rank"), Mp(uint64_t{kRank})},
      {Mp(alternate ? "epoch" : "worker_epoch"), Mp("e1")},
      {Mp("hash_schema_version"), Mp(1)},
      {Mp("page_size"), Mp(16)},
      {Mp("is_bigram"), Mp(false)},
      {Mp("barrier_seq"), Mp(7)},
      {Mp("resume_seq"), Mp(8)},
      {Mp("barrier_id"), Mp("b1")},
      {Mp("record_count"), Mp(count)},
      {Mp("cache_spec"),
       Mp(MpMap{{Mp("version"), Mp(1)}, {Mp("components"), Mp(3)}})},
  };
  if (alternate) fields.push_back({Mp("worker_generation"), Mp(4)});
  return fields;
}
// `fields` with `key` set to `value` (added when absent) or, with no
// value, removed.
MpMap With(MpMap fields, const std::string& key, std::optional<Mp> value) {
  MpMap out;
  bool found = false;
  for (auto& [k, v] : fields) {
    if (std::get<std::string>(k.v) != key) {
      out.emplace_back(k, v);
    } else if (value) {
      out.emplace_back(k, *value);
      found = true;
    }
  }
  if (value && !found) out.emplace_back(Mp(key), *value);
  return out;
}
// A v2 record map.
Mp V2Record(Mp hash, Mp parent, Mp block_size, Mp tier, Mp mask) {
  return Mp(MpMap{{Mp("block_hash"), hash},
                  {Mp("parent_block_hash"), parent},
                  {Mp("block_size"), block_size},
                  {Mp("tier"), tier},
                  {Mp("component_mask"), mask}});
}
Mp GoodV2Record(int64_t hash, int64_t tier = 1) {
  return V2Record(Mp(hash), Mp(nullptr), Mp(16), Mp(tier), Mp(1));
}
// What a v1-only SGLang answers a snapshot-v2 request with.
Reply Refusal() { return {"", "error", "invalid snapshot-v1 request"}; }

class SnapshotClientTest : public ::testing::Test {
 protected:
  // Serves one request per entry of `per_request`, in order, each answered
  // with its replies; the commands received go to requests_.
  void Serve(std::vector<std::vector<Reply>> per_request) {
    requests_.clear();
    router_.Serve(
        [this, per_request = std::move(per_request)](zmq::socket_t& router) {
          for (const std::vector<Reply>& replies : per_request) {
            std::optional<std::vector<std::string>> request =
                ReceiveFrames(router, 2s);
            ASSERT_TRUE(request.has_value());
            request_ = *request;
            requests_.push_back(request->size() == 3 ? (*request)[2] : "?");
            for (const Reply& reply : replies) {
              std::vector<std::string> frames = {(*request)[0]};
              frames.insert(frames.end(), reply.begin(), reply.end());
              SendFrames(router, frames);
            }
          }
        });
  }
  void ServeOnce(std::vector<Reply> replies) { Serve({std::move(replies)}); }

  // One fetch on a new client (snapshot-v1 unless told).
  absl::StatusOr<PublisherSnapshot> Fetch(
      std::chrono::milliseconds timeout = 2000ms,
      SnapshotProtocol protocol = SnapshotProtocol::kV1) {
    SnapshotClient client(&context_, router_.endpoint(), kRank, &shutdown_,
                          timeout, protocol);
    return FetchWith(client);
  }
  absl::StatusOr<PublisherSnapshot> FetchV2() {
    return Fetch(2000ms, SnapshotProtocol::kV2);
  }
  absl::StatusOr<PublisherSnapshot> FetchWith(SnapshotClient& client) {
    absl::StatusOr<PublisherSnapshot> result = client.Fetch();
    router_.Join();
    return result;
  }

  zmq::context_t context_;
  StopRequest shutdown_;
  FakeRouter router_;
  std::vector<std::string> request_;   // the last request's frames
  std::vector<std::string> requests_;  // the commands of the last Serve()
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
  EXPECT_EQ(snapshot->version, 1u);
  EXPECT_TRUE(snapshot->blocks.empty());
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

// snapshot-v2: a map header (unknown keys ignored) and record maps, every
// record kept with its tier, mask and size in record order.
TEST_F(SnapshotClientTest, ValidSnapshotV2) {
  ServeOnce({V2Header(V2Fields(4)),
             Chunk({V2Record(Mp(11), Mp(nullptr), Mp(16), Mp(1), Mp(1))}),
             Chunk({V2Record(Mp(11), Mp(nullptr), Mp(16), Mp(2), Mp(3)),
                    V2Record(Mp(-5), Mp(11), Mp(32), Mp(3), Mp(4)),
                    Mp(MpMap{{Mp("namespace"), Mp("ns")},
                             {Mp("block_hash"), Mp(~uint64_t{0})},
                             {Mp("block_size"), Mp(16)},
                             {Mp("tier"), Mp(1)},
                             {Mp("component_mask"), Mp(7)}})}),
             End()});
  absl::StatusOr<PublisherSnapshot> snapshot = FetchV2();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
  EXPECT_EQ(snapshot->version, 2u);
  EXPECT_EQ(snapshot->epoch, "e1");
  EXPECT_EQ(snapshot->barrier_seq, 7u);
  EXPECT_EQ(snapshot->resume_seq, 8u);
  EXPECT_EQ(snapshot->barrier_id, "b1");
  EXPECT_TRUE(snapshot->hashes.empty());
  EXPECT_THAT(snapshot->blocks,
              ElementsAre(SnapshotBlock{11, Tier::kHbm, 1, 16},
                          SnapshotBlock{11, Tier::kDram, 3, 16},
                          SnapshotBlock{-5, Tier::kSsd, 4, 32},
                          SnapshotBlock{-1, Tier::kHbm, 7, 16}));
}

// The other upstream spelling: epoch, replica_rank, worker_generation.
TEST_F(SnapshotClientTest, V2AcceptsTheAlternateKeyNames) {
  ServeOnce({V2Header(V2Fields(1, /*alternate=*/true)),
             Chunk({GoodV2Record(5, 2)}), End()});
  absl::StatusOr<PublisherSnapshot> snapshot = FetchV2();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_EQ(snapshot->epoch, "e1");
  EXPECT_THAT(snapshot->blocks,
              ElementsAre(SnapshotBlock{5, Tier::kDram, 1, 16}));

  // Both spellings present and agreeing is fine too.
  ServeOnce({V2Header(With(V2Fields(0), "epoch", Mp("e1"))), End()});
  snapshot = FetchV2();
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_TRUE(snapshot->blocks.empty());
}

// The identity and schema keys of a v2 header are read into its fields
// when present, a wrong-typed one listed as unreadable; the rank is
// compared only when one is expected.
TEST(SnapshotV2HeaderFields, ReadWhenPresent) {
  absl::StatusOr<SnapshotHeader> header = ParseSnapshotV2Header(
      Pack(Mp(With(V2Fields(0), "worker_generation", Mp("g-1")))), kRank);
  ASSERT_TRUE(header.ok()) << header.status();
  const SnapshotHeaderFields& fields = header->snapshot.fields;
  EXPECT_EQ(fields.stream_namespace, "ns");
  EXPECT_EQ(fields.worker_id, "w0");
  EXPECT_EQ(fields.dp_rank, kRank);
  EXPECT_EQ(fields.model, "m");
  EXPECT_EQ(fields.hash_schema_version, 1u);
  EXPECT_EQ(fields.page_size, 16u);
  EXPECT_EQ(fields.is_bigram, false);
  EXPECT_EQ(fields.worker_generation, "g-1");
  EXPECT_TRUE(fields.unreadable.empty());

  header =
      ParseSnapshotV2Header(Pack(Mp(V2Fields(0, /*alternate=*/true))), kRank);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->snapshot.fields.worker_generation, "4");

  MpMap sparse = V2Fields(0);
  for (const char* key : {"namespace", "model", "worker_id",
                          "hash_schema_version", "page_size", "is_bigram"}) {
    sparse = With(sparse, key, std::nullopt);
  }
  header = ParseSnapshotV2Header(Pack(Mp(sparse)), kRank);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_FALSE(header->snapshot.fields.stream_namespace.has_value());
  EXPECT_FALSE(header->snapshot.fields.model.has_value());
  EXPECT_FALSE(header->snapshot.fields.page_size.has_value());
  EXPECT_FALSE(header->snapshot.fields.is_bigram.has_value());
  EXPECT_FALSE(header->snapshot.fields.worker_generation.has_value());

  header = ParseSnapshotV2Header(
      Pack(Mp(
          With(With(V2Fields(0), "page_size", Mp("16")), "worker_id", Mp(7)))),
      kRank);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_THAT(header->snapshot.fields.unreadable,
              ElementsAre("worker_id", "page_size"));
}

TEST(SnapshotV2HeaderFields, RankComparedOnlyWhenExpected) {
  EXPECT_FALSE(ParseSnapshotV2Header(Pack(Mp(V2Fields(0))), kRank + 1).ok());
  absl::StatusOr<SnapshotHeader> header =
      ParseSnapshotV2Header(Pack(Mp(V2Fields(0))), std::nullopt);
  ASSERT_TRUE(header.ok()) << header.status();
  EXPECT_EQ(header->snapshot.fields.dp_rank, kRank);
}

TEST_F(SnapshotClientTest, EachV2ValidationFailureIsUnavailable) {
  const Reply one_record = Chunk({GoodV2Record(1)});
  auto header = [](const std::string& key, std::optional<Mp> value) {
    return V2Header(With(V2Fields(0), key, std::move(value)));
  };
  auto record = [](Mp block_size, Mp tier, Mp mask) {
    return Chunk({V2Record(Mp(1), Mp(nullptr), std::move(block_size),
                           std::move(tier), std::move(mask))});
  };
  const std::vector<BadCase> cases = {
      {"not a map",
       {{"", "header", Pack(Mp(MpArray{Mp(2)}))}, End()},
       "snapshot-v2: header is not a map"},
      {"version 1", {header("version", Mp(1)), End()}, "version 1; expected 2"},
      {"no version", {header("version", std::nullopt), End()}, "no version"},
      {"rank",
       {header("dp_rank", Mp(uint64_t{kRank + 1})), End()},
       "dp_rank 3"},
      {"alternate rank",
       {V2Header(With(V2Fields(0, true), "replica_rank", Mp(0))), End()},
       "replica_rank 0 does not match the configured DP rank 2"},
      {"no rank",
       {header("dp_rank", std::nullopt), End()},
       "no dp_rank (or replica_rank)"},
      {"rank type", {header("dp_rank", Mp("2")), End()}, "not an unsigned"},
      {"empty epoch",
       {header("worker_epoch", Mp("")), End()},
       "epoch is empty"},
      {"no epoch",
       {header("worker_epoch", std::nullopt), End()},
       "no worker_epoch (or epoch)"},
      {"epoch type",
       {header("worker_epoch", Mp(5)), End()},
       "worker_epoch is not a string"},
      {"spellings disagree",
       {header("epoch", Mp("e2")), End()},
       "worker_epoch and epoch disagree"},
      {"empty barrier",
       {header("barrier_id", Mp("")), End()},
       "barrier_id is empty"},
      {"resume", {header("resume_seq", Mp(9)), End()}, "resume_seq 9"},
      {"no barrier seq",
       {header("barrier_seq", std::nullopt), End()},
       "no barrier_seq"},
      {"record cap",
       {header("record_count", Mp(uint64_t{kMaxSnapshotRecords + 1})), End()},
       "exceeds the cap"},
      {"no record count",
       {header("record_count", std::nullopt), End()},
       "no record_count"},
      {"header not msgpack", {{"", "header", "\xc1"}, End()}, "msgpack"},
      {"tier 0",
       {V2Header(V2Fields(1)), record(Mp(16), Mp(0), Mp(1)), End()},
       "record 0: a record's tier is not 1 (GPU), 2 (CPU_PINNED) or 3"},
      {"tier 4",
       {V2Header(V2Fields(1)), record(Mp(16), Mp(4), Mp(1)), End()},
       "tier is not 1"},
      {"tier -1",
       {V2Header(V2Fields(1)), record(Mp(16), Mp(-1), Mp(1)), End()},
       "tier is not 1"},
      {"mask 0",
       {V2Header(V2Fields(1)), record(Mp(16), Mp(1), Mp(0)), End()},
       "component_mask is not a non-zero uint32"},
      {"block size 0",
       {V2Header(V2Fields(1)), record(Mp(0), Mp(1), Mp(1)), End()},
       "block_size is not a non-zero uint32"},
      {"block size too big",
       {V2Header(V2Fields(1)), record(Mp(uint64_t{1} << 32), Mp(1), Mp(1)),
        End()},
       "block_size is not a non-zero uint32"},
      {"hash type",
       {V2Header(V2Fields(1)),
        Chunk({V2Record(Mp("x"), Mp(nullptr), Mp(16), Mp(1), Mp(1))}), End()},
       "block_hash is not an integer"},
      {"parent type",
       {V2Header(V2Fields(1)),
        Chunk({V2Record(Mp(1), Mp("p"), Mp(16), Mp(1), Mp(1))}), End()},
       "parent_block_hash is neither nil nor an integer"},
      {"no tier",
       {V2Header(V2Fields(1)),
        Chunk({Mp(MpMap{{Mp("block_hash"), Mp(1)},
                        {Mp("block_size"), Mp(16)},
                        {Mp("component_mask"), Mp(1)}})}),
        End()},
       "no tier"},
      {"v1 record shape",
       {V2Header(V2Fields(1)), Chunk({Record(nullptr, {Mp(1)})}), End()},
       "record 0: a record is not a map"},
      {"too few records",
       {V2Header(V2Fields(2)), one_record, End()},
       "received 1"},
      {"too many records",
       {V2Header(V2Fields(1)), one_record, one_record, End()},
       "more records"},
      {"end payload", {V2Header(V2Fields(0)), {"", "end", "x"}}, "payload"},
      {"error later",
       {V2Header(V2Fields(1)), {"", "error", "capture timeout"}},
       "capture timeout"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    ServeOnce(c.replies);
    absl::StatusOr<PublisherSnapshot> snapshot = FetchV2();
    ASSERT_FALSE(snapshot.ok());
    EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(snapshot.status().message(), HasSubstr("snapshot-v2: "));
    EXPECT_THAT(snapshot.status().message(), HasSubstr(c.expected));
  }
}

// auto: a publisher that refuses snapshot-v2 with an error frame is asked
// for snapshot-v1, and from then on for v1 only, until a v1 snapshot names
// another epoch (a restart, perhaps onto an upgraded SGLang).
TEST_F(SnapshotClientTest, AutoFallsBackToV1InTheSameFetch) {
  SnapshotClient client(&context_, router_.endpoint(), kRank, &shutdown_,
                        2000ms, SnapshotProtocol::kAuto);
  Serve({{Refusal()},
         {GoodHeader(1), Chunk({Record(nullptr, {Mp(11)})}), End()}});
  absl::StatusOr<PublisherSnapshot> snapshot = FetchWith(client);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2", "snapshot-v1"));
  EXPECT_EQ(snapshot->version, 1u);
  EXPECT_THAT(snapshot->hashes, ElementsAre(11));

  // Nothing remembered: the next fetch asks for v2 first again, and an
  // upgraded publisher is read with v2 at once.
  Serve({{Refusal()}, {GoodHeader(0), End()}});
  snapshot = FetchWith(client);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2", "snapshot-v1"));
  Serve({{V2Header(V2Fields(1)), Chunk({GoodV2Record(7, 3)}), End()}});
  snapshot = FetchWith(client);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
  EXPECT_EQ(snapshot->version, 2u);
  EXPECT_THAT(snapshot->blocks,
              ElementsAre(SnapshotBlock{7, Tier::kSsd, 1, 16}));
}

// auto against a v2 publisher: v2 only, nothing remembered from a refusal
// that v1 could not serve either.
TEST_F(SnapshotClientTest, AutoUsesV2AndKeepsTryingItAfterAFailedFallback) {
  SnapshotClient client(&context_, router_.endpoint(), kRank, &shutdown_,
                        2000ms, SnapshotProtocol::kAuto);
  Serve({{V2Header(V2Fields(0)), End()}});
  absl::StatusOr<PublisherSnapshot> snapshot = FetchWith(client);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
  EXPECT_EQ(snapshot->version, 2u);

  Serve({{{"", "error", "snapshot provider busy"}},
         {{"", "error", "snapshot provider busy"}}});
  snapshot = FetchWith(client);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2", "snapshot-v1"));
  EXPECT_THAT(snapshot.status().message(),
              HasSubstr("snapshot-v1: the provider answered an error: "
                        "snapshot provider busy"));

  Serve({{V2Header(V2Fields(0)), End()}});
  ASSERT_TRUE(FetchWith(client).ok());
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
}

// An error after the v2 header is a failed v2 snapshot, not a refusal.
TEST_F(SnapshotClientTest, AutoDoesNotFallBackOnAnErrorAfterTheHeader) {
  Serve({{V2Header(V2Fields(1)), {"", "error", "capture timeout"}}});
  absl::StatusOr<PublisherSnapshot> snapshot =
      Fetch(2000ms, SnapshotProtocol::kAuto);
  ASSERT_FALSE(snapshot.ok());
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
  EXPECT_THAT(snapshot.status().message(), HasSubstr("capture timeout"));
}

// Pinned protocols: 2 never falls back; 1 never asks for v2.
TEST_F(SnapshotClientTest, PinnedProtocols) {
  Serve({{Refusal()}});
  absl::StatusOr<PublisherSnapshot> snapshot = FetchV2();
  ASSERT_FALSE(snapshot.ok());
  EXPECT_EQ(snapshot.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(requests_, ElementsAre("snapshot-v2"));
  EXPECT_THAT(snapshot.status().message(),
              HasSubstr("snapshot-v2: the provider answered an error: "
                        "invalid snapshot-v1 request"));

  Serve({{GoodHeader(0), End()}});
  snapshot = Fetch(2000ms, SnapshotProtocol::kV1);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  EXPECT_THAT(requests_, ElementsAre("snapshot-v1"));
  EXPECT_EQ(snapshot->version, 1u);
}

}  // namespace
}  // namespace kvindexer::bridge
