// Multi-stream mode's requests: every apply and replace of an entry's
// engine carries its stream key, the Configure lists each given entry with
// its metadata, and single-worker requests carry no stream key.
#include <string>
#include <vector>

#include "bridge/bridge_config.h"
#include "bridge/multi_stream_runner.h"
#include "bridge/recovery_requests.h"
#include "bridge/stream_recovery.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace multi_stream_requests_test {

WorkerEntry Entry() {
  WorkerEntry entry;
  entry.worker_id = "w";
  entry.worker_address = "http://h:1";
  entry.event_endpoint = "tcp://h:2";
  entry.stream_namespace = "ns";
  entry.dp_rank = 3;
  entry.model = "llama";
  entry.hash_schema_version = 2;
  entry.page_size = 16;
  entry.is_bigram = true;
  return entry;
}

TEST(MultiStreamRequests, EveryRequestCarriesTheStreamKey) {
  BridgeConfig config;
  config.workers = {Entry()};
  const RecoveryOptions options = RecoveryOptionsForEntry(config, Entry());
  EXPECT_EQ(options.header.worker_id, "w");
  EXPECT_EQ(options.header.worker_address, "http://h:1");
  ActionList actions;
  KvAction store;
  actions.hashes = {1, 2};
  actions.masks = {0, 0};
  actions.sizes = {0, 0};
  store.hash_count = 2;
  actions.actions.push_back(store);
  std::vector<kv_indexer::v1::ApplyExternalKvBatchRequest> applies =
      SendRequests(actions, options.header, 5, std::string("epoch"));
  applies.push_back(ProbeRequest(options.header, "epoch"));
  applies.push_back(RegistrationRequest(options.header));
  for (const auto& request : applies) {
    ASSERT_TRUE(request.has_stream_id());
    EXPECT_EQ(request.stream_id().namespace_(), "ns");
    EXPECT_EQ(request.stream_id().worker_id(), "w");
    EXPECT_EQ(request.stream_id().dp_rank(), 3u);
    EXPECT_EQ(request.worker_id(), "w");
  }
  const InstallRequest install =
      BuildInstallRequest(options.header, "epoch", 5, {});
  ASSERT_TRUE(install.request.has_stream_id());
  EXPECT_EQ(install.request.stream_id().dp_rank(), 3u);
}

TEST(MultiStreamRequests, SingleWorkerRequestsHaveNoStreamKey) {
  BridgeConfig config;
  config.worker_id = "w";
  const RecoveryOptions options = RecoveryOptionsFromConfig(config);
  EXPECT_FALSE(RegistrationRequest(options.header).has_stream_id());
  EXPECT_FALSE(ProbeRequest(options.header, "e").has_stream_id());
  EXPECT_FALSE(
      BuildInstallRequest(options.header, "e", 0, {}).request.has_stream_id());
}

TEST(MultiStreamRequests, ConfigureListsTheGivenEntriesWithMetadata) {
  BridgeConfig config;
  WorkerEntry other = Entry();
  other.worker_id = "x";
  config.workers = {Entry(), other};
  kv_indexer::v1::WorkerCacheSpec spec;
  spec.set_version(1);
  config.cache_spec = spec;
  const auto request = MultiStreamConfigure(config, {&config.workers[1]});
  ASSERT_EQ(request.workers_size(), 1);
  const auto& worker = request.workers(0);
  EXPECT_EQ(worker.worker_id(), "x");
  EXPECT_EQ(worker.worker_address(), "http://h:1");
  EXPECT_EQ(worker.stream_id().namespace_(), "ns");
  EXPECT_EQ(worker.stream_id().worker_id(), "x");
  EXPECT_EQ(worker.stream_id().dp_rank(), 3u);
  EXPECT_EQ(worker.model(), "llama");
  EXPECT_EQ(worker.hash_schema_version(), 2u);
  EXPECT_EQ(worker.page_size(), 16u);
  EXPECT_TRUE(worker.is_bigram());
  EXPECT_TRUE(worker.has_cache_spec());
}

}  // namespace multi_stream_requests_test
}  // namespace kvindexer::bridge
