// The SnapshotStore contract (fleet/snapshot_store.h), run against
// MemorySnapshotStore, the reference, and the JetStream driver
// (fleet/jetstream_snapshot_store.h) on a real nats-server (skipped when
// none is installed), payloads included. Then what only one of them has to
// show: the memory store's unavailability switch, and the JetStream store's
// DATA_LOSS on a damaged snapshot and its snapshots outliving a server restart.
#include <nats/nats.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "fleet/fleet_config.h"
#include "fleet/memory_snapshot_store.h"
#include "fleet/nats_connection.h"
#include "fleet/snapshot_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"

namespace kvindexer::fleet {
namespace snapshot_store_contract_test {

using ::kvindexer::fleet::v1::SnapshotManifest;
using test_support::NatsServer;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

// A stream and subject prefix of its own for every store a test opens.
EventLogConfig FreshConfig(const std::string& url) {
  return test_support::FreshEventLogConfig({url}, "SNAPCONTRACT");
}

absl::StatusOr<std::unique_ptr<SnapshotStore>> OpenJetStream(
    const EventLogConfig& config) {
  return test_support::OpenSnapshotStoreOnOwnConnection(config);
}

SnapshotManifest Manifest(const std::string& id, uint64_t position,
                          uint64_t parts) {
  SnapshotManifest manifest;
  manifest.set_id(id);
  manifest.set_position(position);
  manifest.set_parts(parts);
  manifest.set_writer("test");
  return manifest;
}

// Writes and commits a snapshot; its manifest.
SnapshotManifest Put(SnapshotStore& store, const std::string& id,
                     uint64_t position, const std::vector<std::string>& parts) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> writer =
      store.Begin(id);
  EXPECT_TRUE(writer.ok()) << writer.status();
  const SnapshotManifest manifest = Manifest(id, position, parts.size());
  if (!writer.ok()) return manifest;
  for (const std::string& part : parts) {
    EXPECT_TRUE((*writer)->AddPart(part).ok());
  }
  const absl::Status committed = (*writer)->Commit(manifest);
  EXPECT_TRUE(committed.ok()) << committed;
  return manifest;
}

absl::StatusOr<std::vector<std::string>> ReadAll(
    SnapshotStore& store, const SnapshotManifest& manifest) {
  std::vector<std::string> parts;
  absl::Status s = store.ReadParts(manifest, [&](std::string_view part) {
    parts.emplace_back(part);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return parts;
}

// Publishes `data` on `subject` straight into the stream of `config`,
// bypassing the store: what a writer that died, or a stray one, leaves.
void PublishRaw(const EventLogConfig& config, const std::string& subject,
                const std::string& data) {
  absl::StatusOr<std::shared_ptr<NatsClient>> client =
      NatsClient::Connect(config.nats);
  ASSERT_TRUE(client.ok()) << client.status();
  jsPubAck* ack = nullptr;
  ASSERT_EQ(
      js_Publish(&ack, (*client)->jetstream(), subject.c_str(), data.data(),
                 static_cast<int>(data.size()), nullptr, nullptr),
      NATS_OK);
  jsPubAck_Destroy(ack);
}

std::vector<std::string> Ids(SnapshotStore& store) {
  absl::StatusOr<std::vector<SnapshotManifest>> all = store.List();
  EXPECT_TRUE(all.ok()) << all.status();
  std::vector<std::string> ids;
  if (all.ok()) {
    for (const SnapshotManifest& m : *all) ids.push_back(m.id());
  }
  return ids;
}

class SnapshotStoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      store_ = std::make_unique<MemorySnapshotStore>(64 * 1024);
      return;
    }
    KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
    absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
    ASSERT_TRUE(nats.ok()) << nats.status();
    config_ = FreshConfig((*nats)->url());
    absl::StatusOr<std::unique_ptr<SnapshotStore>> store =
        OpenJetStream(config_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Leaves `parts` under `id` with no manifest, as a writer that died half
  // way would: through the memory store's hook, or published straight
  // into the stream.
  void Abandon(const std::string& id, const std::vector<std::string>& parts) {
    if (GetParam() == "memory") {
      static_cast<MemorySnapshotStore&>(*store_).AddAbandonedParts(id, parts);
      return;
    }
    const std::string subject = config_.subject_prefix + ".snap." + id + ".p";
    for (const std::string& part : parts) {
      ASSERT_NO_FATAL_FAILURE(PublishRaw(config_, subject, part));
    }
  }

  EventLogConfig config_;
  std::unique_ptr<SnapshotStore> store_;
};

TEST_P(SnapshotStoreContractTest, AnEmptyStoreListsNothing) {
  EXPECT_THAT(Ids(*store_), IsEmpty());
  EXPECT_GT(store_->max_part_bytes(), 1000u);
}

TEST_P(SnapshotStoreContractTest, OnlyCommittedSnapshotsAreListed) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> open =
      store_->Begin("open");
  ASSERT_TRUE(open.ok()) << open.status();
  ASSERT_TRUE((*open)->AddPart("x").ok());
  Put(*store_, "done", 5, {"a"});
  EXPECT_THAT(Ids(*store_), ElementsAre("done"));
  ASSERT_TRUE((*open)->Commit(Manifest("open", 7, 1)).ok());
  EXPECT_THAT(Ids(*store_), ElementsAre("done", "open"));
}

TEST_P(SnapshotStoreContractTest, ListIsByPositionThenCommitOrder) {
  Put(*store_, "c", 5, {"1"});
  Put(*store_, "a", 3, {"2"});
  Put(*store_, "b", 5, {"3"});
  Put(*store_, "z", 1, {"4"});
  EXPECT_THAT(Ids(*store_), ElementsAre("z", "a", "c", "b"));
  absl::StatusOr<std::vector<SnapshotManifest>> all = store_->List();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ((*all)[1].position(), 3u);
  EXPECT_EQ((*all)[1].writer(), "test");
  EXPECT_EQ((*all)[1].parts(), 1u);
}

TEST_P(SnapshotStoreContractTest, PartsComeBackInOrderByteForByte) {
  const std::string binary("\0\xff\x01\r\nPUB x 1\r\n\0", 14);
  const std::string largest(store_->max_part_bytes(), '\x7e');
  std::string patterned(3000, '\0');
  for (size_t i = 0; i < patterned.size(); ++i) {
    patterned[i] = static_cast<char>(i * 131 % 256);
  }
  const std::vector<std::string> parts = {"first", binary,    "",
                                          largest, patterned, "last"};
  const SnapshotManifest manifest = Put(*store_, "parts", 9, parts);
  absl::StatusOr<std::vector<std::string>> read = ReadAll(*store_, manifest);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ((*read)[i], parts[i]) << "part " << i;
  }
}

TEST_P(SnapshotStoreContractTest, ASnapshotWithoutPartsReadsAsNothing) {
  const SnapshotManifest manifest = Put(*store_, "empty", 2, {});
  absl::StatusOr<std::vector<std::string>> read = ReadAll(*store_, manifest);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, IsEmpty());
}

TEST_P(SnapshotStoreContractTest, APartAboveTheLimitIsRefused) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> writer =
      store_->Begin("big");
  ASSERT_TRUE(writer.ok());
  EXPECT_EQ(
      (*writer)->AddPart(std::string(store_->max_part_bytes() + 1, 'x')).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_P(SnapshotStoreContractTest, AnIdInUseIsAlreadyExists) {
  Put(*store_, "taken", 1, {"a"});
  EXPECT_EQ(store_->Begin("taken").status().code(),
            absl::StatusCode::kAlreadyExists);
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> open =
      store_->Begin("open");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(store_->Begin("open").status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*open)->AddPart("a").ok());
  EXPECT_EQ(store_->Begin("open").status().code(),
            absl::StatusCode::kAlreadyExists);
}

TEST_P(SnapshotStoreContractTest, ABadIdIsInvalidArgument) {
  for (const char* id : {"", "a.b", "a b", "a*", ">", "a/b", "é"}) {
    EXPECT_EQ(store_->Begin(id).status().code(),
              absl::StatusCode::kInvalidArgument)
        << "id \"" << id << "\"";
  }
  EXPECT_TRUE(store_->Begin("Az09_-").ok());
}

TEST_P(SnapshotStoreContractTest, AManifestThatDoesNotMatchIsRefused) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> writer =
      store_->Begin("s");
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddPart("a").ok());
  ASSERT_TRUE((*writer)->AddPart("b").ok());
  EXPECT_EQ((*writer)->Commit(Manifest("s", 4, 3)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*writer)->Commit(Manifest("other", 4, 2)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Ids(*store_), IsEmpty());
  ASSERT_TRUE((*writer)->Commit(Manifest("s", 4, 2)).ok());
  EXPECT_EQ((*writer)->AddPart("c").code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Ids(*store_), ElementsAre("s"));
}

TEST_P(SnapshotStoreContractTest, AnAbandonedWriterLeavesNothing) {
  {
    absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> writer =
        store_->Begin("gone");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->AddPart("a").ok());
    ASSERT_TRUE((*writer)->AddPart("b").ok());
  }
  EXPECT_THAT(Ids(*store_), IsEmpty());
  // Its parts went with it: the id is free again and a new snapshot under
  // it holds only its own parts.
  const SnapshotManifest manifest = Put(*store_, "gone", 3, {"c"});
  absl::StatusOr<std::vector<std::string>> read = ReadAll(*store_, manifest);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("c"));
}

// Parts without a manifest written before the oldest kept snapshot was
// committed go; later ones, and an id a writer of this store holds, stay.
TEST_P(SnapshotStoreContractTest, AbandonedPartsOlderThanAKeptSnapshotGo) {
  ASSERT_NO_FATAL_FAILURE(Abandon("dead", {"a", "b"}));
  const SnapshotManifest kept = Put(*store_, "kept", 5, {"k"});
  ASSERT_NO_FATAL_FAILURE(Abandon("late", {"x"}));
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> live =
      store_->Begin("live");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE((*live)->AddPart("l").ok());
  // The id "dead" is taken until its parts go.
  EXPECT_EQ(store_->Begin("dead").status().code(),
            absl::StatusCode::kAlreadyExists);

  absl::StatusOr<size_t> removed = store_->RemoveAbandoned(kept);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 1u);
  const SnapshotManifest reused = Put(*store_, "dead", 6, {"c"});
  absl::StatusOr<std::vector<std::string>> read = ReadAll(*store_, reused);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("c"));
  EXPECT_EQ(store_->Begin("late").status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE((*live)->Commit(Manifest("live", 7, 1)).ok());
  read = ReadAll(*store_, Manifest("live", 7, 1));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("l"));
  EXPECT_THAT(Ids(*store_), ElementsAre("kept", "dead", "live"));
  // Nothing more to remove; a kept snapshot that is gone is NOT_FOUND.
  removed = store_->RemoveAbandoned(kept);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 0u);
  EXPECT_EQ(store_->RemoveAbandoned(Manifest("never", 1, 1)).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_P(SnapshotStoreContractTest, ADeletedSnapshotIsGone) {
  const SnapshotManifest kept = Put(*store_, "kept", 1, {"k"});
  const SnapshotManifest manifest = Put(*store_, "del", 2, {"a", "b"});
  ASSERT_TRUE(store_->Delete(manifest).ok());
  EXPECT_THAT(Ids(*store_), ElementsAre("kept"));
  EXPECT_EQ(ReadAll(*store_, manifest).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete(manifest).ok());
  EXPECT_TRUE(ReadAll(*store_, kept).ok());
  // The id can be used again.
  const SnapshotManifest again = Put(*store_, "del", 3, {"c"});
  absl::StatusOr<std::vector<std::string>> read = ReadAll(*store_, again);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("c"));
}

TEST_P(SnapshotStoreContractTest, ASnapshotNeverWrittenIsNotFound) {
  EXPECT_EQ(ReadAll(*store_, Manifest("never", 1, 1)).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->Delete(Manifest("never", 1, 1)).ok());
}

TEST_P(SnapshotStoreContractTest, TheReadersErrorEndsTheRead) {
  const SnapshotManifest manifest = Put(*store_, "r", 1, {"a", "b", "c"});
  int calls = 0;
  const absl::Status s = store_->ReadParts(manifest, [&](std::string_view) {
    ++calls;
    return calls == 2 ? absl::CancelledError("enough") : absl::OkStatus();
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(calls, 2);
}

// Stores `parts` as payload `id`.
void PutPayload(SnapshotStore& store, const std::string& id,
                const std::vector<std::string>& parts) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::PayloadWriter>> writer =
      store.BeginPayload(id);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const std::string& part : parts) {
    ASSERT_TRUE((*writer)->AddPart(part).ok());
  }
}

absl::StatusOr<std::vector<std::string>> ReadPayload(SnapshotStore& store,
                                                     const std::string& id,
                                                     uint64_t parts) {
  std::vector<std::string> out;
  absl::Status s = store.ReadPayload(id, parts, [&](std::string_view part) {
    out.emplace_back(part);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

TEST_P(SnapshotStoreContractTest, APayloadComesBackAndIsNeverListed) {
  const std::string big(store_->max_part_bytes(), 'x');
  ASSERT_NO_FATAL_FAILURE(PutPayload(*store_, "c-1", {"a", big, "c"}));
  absl::StatusOr<std::vector<std::string>> read =
      ReadPayload(*store_, "c-1", 3);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("a", big, "c"));
  EXPECT_THAT(Ids(*store_), IsEmpty());
  // The count the record names must be the count stored.
  EXPECT_EQ(ReadPayload(*store_, "c-1", 2).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReadPayload(*store_, "c-never", 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->BeginPayload("c-1").status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(store_->BeginPayload("c 1").status().code(),
            absl::StatusCode::kInvalidArgument);
  // A payload and a snapshot of the same id do not see each other.
  const SnapshotManifest snapshot = Put(*store_, "c-1", 4, {"s"});
  read = ReadAll(*store_, snapshot);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("s"));
  ASSERT_TRUE(store_->Delete(snapshot).ok());
  read = ReadPayload(*store_, "c-1", 3);
  ASSERT_TRUE(read.ok()) << read.status();

  ASSERT_TRUE(store_->DeletePayload("c-1").ok());
  EXPECT_EQ(ReadPayload(*store_, "c-1", 3).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->DeletePayload("c-1").ok());
  // Its id can be used again.
  ASSERT_NO_FATAL_FAILURE(PutPayload(*store_, "c-1", {"d"}));
  read = ReadPayload(*store_, "c-1", 1);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("d"));
}

TEST_P(SnapshotStoreContractTest, APayloadPartAboveTheLimitIsRefused) {
  absl::StatusOr<std::unique_ptr<SnapshotStore::PayloadWriter>> writer =
      store_->BeginPayload("c-big");
  ASSERT_TRUE(writer.ok()) << writer.status();
  EXPECT_EQ(
      (*writer)->AddPart(std::string(store_->max_part_bytes() + 1, 'x')).code(),
      absl::StatusCode::kInvalidArgument);
}

// Payloads stored before a snapshot was committed are listed for removal;
// later ones, and one a writer of this store holds, are not.
TEST_P(SnapshotStoreContractTest, PayloadsStoredBeforeASnapshotAreListed) {
  ASSERT_NO_FATAL_FAILURE(PutPayload(*store_, "c-old", {"a", "b"}));
  absl::StatusOr<std::unique_ptr<SnapshotStore::PayloadWriter>> live =
      store_->BeginPayload("c-live");
  ASSERT_TRUE(live.ok()) << live.status();
  ASSERT_TRUE((*live)->AddPart("l").ok());
  const SnapshotManifest snapshot = Put(*store_, "snap", 5, {"s"});
  ASSERT_NO_FATAL_FAILURE(PutPayload(*store_, "c-new", {"n"}));

  absl::StatusOr<std::vector<std::string>> before =
      store_->PayloadsStoredBefore(snapshot);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_THAT(*before, ElementsAre("c-old"));
  live->reset();
  before = store_->PayloadsStoredBefore(snapshot);
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_THAT(*before, ::testing::UnorderedElementsAre("c-old", "c-live"));
  EXPECT_EQ(
      store_->PayloadsStoredBefore(Manifest("never", 1, 1)).status().code(),
      absl::StatusCode::kNotFound);
  // Snapshots' own parts are never payloads.
  absl::StatusOr<size_t> removed = store_->RemoveAbandoned(snapshot);
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(*removed, 0u);
  EXPECT_TRUE(ReadPayload(*store_, "c-old", 2).ok());
}

INSTANTIATE_TEST_SUITE_P(Implementations, SnapshotStoreContractTest,
                         ::testing::Values("memory", "jetstream"),
                         [](const auto& param_info) {
                           return param_info.param;
                         });

// --- One implementation only -----------------------------------------

TEST(MemorySnapshotStoreUnavailableTest, EveryCallFails) {
  MemorySnapshotStore store;
  const SnapshotManifest manifest = Put(store, "a", 1, {"x"});
  absl::StatusOr<std::unique_ptr<SnapshotStore::Writer>> writer =
      store.Begin("b");
  ASSERT_TRUE(writer.ok());
  store.SetUnavailable(true);
  EXPECT_EQ(store.List().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Begin("c").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*writer)->AddPart("y").code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ReadAll(store, manifest).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(store.Delete(manifest).code(), absl::StatusCode::kUnavailable);
  store.SetUnavailable(false);
  EXPECT_THAT(Ids(store), ElementsAre("a"));
}

class JetStreamSnapshotStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { KVINDEXER_SKIP_WITHOUT_NATS_SERVER(); }

  // Publishes `data` on `subject` straight into the stream, as a stray
  // writer would.
  static void Stray(const EventLogConfig& config, const std::string& subject,
                    const std::string& data) {
    ASSERT_NO_FATAL_FAILURE(PublishRaw(config, subject, data));
  }
};

TEST_F(JetStreamSnapshotStoreTest, ADamagedSnapshotIsDataLoss) {
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const EventLogConfig config = FreshConfig((*nats)->url());
  absl::StatusOr<std::unique_ptr<SnapshotStore>> store = OpenJetStream(config);
  ASSERT_TRUE(store.ok()) << store.status();
  const std::string parts = config.subject_prefix + ".snap.";
  // One part more than the manifest says.
  const SnapshotManifest extra = Put(**store, "extra", 1, {"a", "b"});
  Stray(config, parts + "extra.p", "c");
  EXPECT_EQ(ReadAll(**store, extra).status().code(),
            absl::StatusCode::kDataLoss);
  // The right count, but not the parts the writer numbered.
  const SnapshotManifest unnumbered = Put(**store, "unnumbered", 2, {"a"});
  ASSERT_TRUE((*store)->Delete(Manifest("unnumbered", 0, 0)).ok());
  Stray(config, parts + "unnumbered.m", unnumbered.SerializeAsString());
  Stray(config, parts + "unnumbered.p", "x");
  EXPECT_EQ(ReadAll(**store, unnumbered).status().code(),
            absl::StatusCode::kDataLoss);
  // A manifest whose parts are gone.
  const SnapshotManifest lost = Put(**store, "lost", 3, {"a"});
  ASSERT_TRUE((*store)->Delete(lost).ok());
  Stray(config, parts + "lost.m", lost.SerializeAsString());
  EXPECT_EQ(ReadAll(**store, lost).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(JetStreamSnapshotStoreTest, AStreamOfOtherSubjectsIsRefused) {
  absl::StatusOr<NatsServer*> nats = test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  EventLogConfig config = FreshConfig((*nats)->url());
  ASSERT_TRUE(OpenJetStream(config).ok());
  config.subject_prefix += "x";
  absl::StatusOr<std::unique_ptr<SnapshotStore>> store = OpenJetStream(config);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(store.status().message()),
              ::testing::HasSubstr(kNatsSubjectPrefixVar));
}

TEST_F(JetStreamSnapshotStoreTest, SnapshotsSurviveAServerRestart) {
  absl::StatusOr<std::unique_ptr<NatsServer>> nats = NatsServer::Start();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const EventLogConfig config = FreshConfig((*nats)->url());
  SnapshotManifest manifest;
  {
    absl::StatusOr<std::unique_ptr<SnapshotStore>> store =
        OpenJetStream(config);
    ASSERT_TRUE(store.ok()) << store.status();
    manifest = Put(**store, "durable", 42, {"one", "two"});
  }
  ASSERT_TRUE((*nats)->Restart().ok());
  absl::StatusOr<std::unique_ptr<SnapshotStore>> store = OpenJetStream(config);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(Ids(**store), ElementsAre("durable"));
  absl::StatusOr<std::vector<std::string>> read = ReadAll(**store, manifest);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_THAT(*read, ElementsAre("one", "two"));
}

}  // namespace snapshot_store_contract_test
}  // namespace kvindexer::fleet
