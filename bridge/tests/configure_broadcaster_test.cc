// The multi-stream Configure: sent only with streams to list, built when it
// goes (so the newest generation is sent), its answer's indexer_epoch
// recorded; the epoch watch counts changes but not the first epoch or an
// empty one.
#include "bridge/configure_broadcaster.h"

#include <optional>
#include <string>
#include <vector>

#include "bridge/indexer_epoch_watch.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace configure_broadcaster_test {

using kv_indexer::v1::ConfigureExpectedWorkersRequest;
using kv_indexer::v1::ConfigureExpectedWorkersResponse;

TEST(IndexerEpochWatch, CountsChangesNotTheFirstEpoch) {
  IndexerEpochWatch watch;
  EXPECT_FALSE(watch.Observe(""));
  EXPECT_FALSE(watch.Observe("a"));
  EXPECT_EQ(watch.changes(), 0u);
  EXPECT_FALSE(watch.Observe("a"));
  EXPECT_FALSE(watch.Observe(""));
  EXPECT_TRUE(watch.Observe("b"));
  EXPECT_EQ(watch.changes(), 1u);
  EXPECT_EQ(watch.epoch(), "b");
  EXPECT_TRUE(watch.Observe("a"));
  EXPECT_EQ(watch.changes(), 2u);
}

TEST(ConfigureBroadcaster, BuildsEachRequestWhenItGoesAndWatchesTheEpoch) {
  IndexerEpochWatch epochs;
  std::string generation;
  int listed = 0;
  ConfigureBroadcaster broadcaster(
      [&] {
        ++listed;
        ConfigureExpectedWorkersRequest request;
        if (!generation.empty()) {
          request.add_workers()->set_worker_generation(generation);
        }
        return request;
      },
      &epochs);
  std::vector<ConfigureExpectedWorkersRequest> sent;
  std::string answer_epoch = "e1";
  const auto send = [&](const ConfigureExpectedWorkersRequest& request,
                        ConfigureExpectedWorkersResponse* response) {
    sent.push_back(request);
    response->set_indexer_epoch(answer_epoch);
    return absl::OkStatus();
  };
  // Nothing to list: nothing sent.
  EXPECT_TRUE(broadcaster.Send(send).ok());
  EXPECT_TRUE(sent.empty());
  EXPECT_EQ(listed, 1);

  generation = "g1";
  EXPECT_TRUE(broadcaster.Send(send).ok());
  generation = "g2";
  EXPECT_TRUE(broadcaster.Send(send).ok());
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].workers(0).worker_generation(), "g1");
  EXPECT_EQ(sent[1].workers(0).worker_generation(), "g2");
  EXPECT_EQ(epochs.epoch(), "e1");
  EXPECT_EQ(epochs.changes(), 0u);

  answer_epoch = "e2";
  EXPECT_TRUE(broadcaster.Send(send).ok());
  EXPECT_EQ(epochs.changes(), 1u);

  // A failed Configure's answer is not read.
  answer_epoch = "e3";
  const auto failing = [&](const ConfigureExpectedWorkersRequest&,
                           ConfigureExpectedWorkersResponse* response) {
    response->set_indexer_epoch(answer_epoch);
    return absl::UnavailableError("down");
  };
  EXPECT_EQ(broadcaster.Send(failing).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(epochs.epoch(), "e2");
}

// TrySend() gives up at once while a Send() runs; Send() waits for it.
TEST(ConfigureBroadcaster, TrySendDoesNotWaitBehindASend) {
  IndexerEpochWatch epochs;
  ConfigureBroadcaster broadcaster(
      [] {
        ConfigureExpectedWorkersRequest request;
        request.add_workers()->set_worker_id("w");
        return request;
      },
      &epochs);
  int sent = 0;
  std::optional<absl::Status> inner;
  const auto plain = [&](const ConfigureExpectedWorkersRequest&,
                         ConfigureExpectedWorkersResponse*) {
    ++sent;
    return absl::OkStatus();
  };
  // The nested TrySend runs while the outer Send holds the lock.
  EXPECT_TRUE(broadcaster
                  .Send([&](const ConfigureExpectedWorkersRequest& r,
                            ConfigureExpectedWorkersResponse* answer) {
                    inner = broadcaster.TrySend(plain);
                    return plain(r, answer);
                  })
                  .ok());
  EXPECT_FALSE(inner.has_value());
  EXPECT_EQ(sent, 1);
  const std::optional<absl::Status> later = broadcaster.TrySend(plain);
  ASSERT_TRUE(later.has_value());
  EXPECT_TRUE(later->ok());
  EXPECT_EQ(sent, 2);
}

}  // namespace configure_broadcaster_test
}  // namespace kvindexer::bridge
