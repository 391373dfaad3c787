// Multi-stream mode's requests: every apply and replace of an entry's
// engine carries its stream key, the Configure lists each given entry with
// its metadata, and single-worker requests carry no stream key.
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bridge/bridge_config.h"
#include "bridge/configure_broadcaster.h"
#include "bridge/indexer_epoch_watch.h"
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
  EXPECT_EQ(worker.worker_generation(), "");
}

// A stream's generation, once its engine learnt one, is listed with it;
// streams without one send none.
TEST(MultiStreamRequests, ConfigureCarriesKnownGenerations) {
  BridgeConfig config;
  WorkerEntry other = Entry();
  other.worker_id = "x";
  config.workers = {Entry(), other};
  const auto request = MultiStreamConfigure(
      config, {&config.workers[0], &config.workers[1]}, {"g-3", ""});
  ASSERT_EQ(request.workers_size(), 2);
  EXPECT_EQ(request.workers(0).worker_generation(), "g-3");
  EXPECT_EQ(request.workers(1).worker_generation(), "");
}

// A stream counts as listed only under its whole key: namespace, worker id
// and DP rank.
TEST(MultiStreamRequests, AStreamIsListedOnlyUnderItsWholeKey) {
  BridgeConfig config;
  WorkerEntry other = Entry();
  other.worker_id = "x";
  config.workers = {Entry(), other};
  const auto request = MultiStreamConfigure(config, {&config.workers[1]});
  EXPECT_TRUE(ListsStream(request, other));
  EXPECT_FALSE(ListsStream(request, Entry()));
  WorkerEntry rank = other;
  rank.dp_rank = other.dp_rank + 1;
  EXPECT_FALSE(ListsStream(request, rank));
  WorkerEntry space = other;
  space.stream_namespace = "other";
  EXPECT_FALSE(ListsStream(request, space));
}

// A stream's own Configure counts as its registration only when the server
// accepted a list naming it; a refused or empty list, one that leaves it
// out, or a stream that is stopping (nothing sent) does not.
TEST(MultiStreamRequests, AStreamIsRegisteredOnlyByAnAcceptedListNamingIt) {
  BridgeConfig config;
  WorkerEntry other = Entry();
  other.worker_id = "x";
  config.workers = {Entry(), other};
  std::vector<const WorkerEntry*> listed = {&config.workers[0],
                                            &config.workers[1]};
  IndexerEpochWatch epochs;
  ConfigureBroadcaster broadcaster(
      [&] { return MultiStreamConfigure(config, listed); }, &epochs);
  int sends = 0;
  absl::Status answer = absl::OkStatus();
  const auto send = [&](const kv_indexer::v1::ConfigureExpectedWorkersRequest&,
                        kv_indexer::v1::ConfigureExpectedWorkersResponse*) {
    ++sends;
    return answer;
  };
  bool stopping = false;
  const auto configure = [&](const WorkerEntry& entry) {
    return ConfigureStream(
        broadcaster, entry, [&] { return stopping; }, send);
  };

  EXPECT_TRUE(configure(Entry()));
  EXPECT_TRUE(configure(other));
  EXPECT_EQ(sends, 2);

  answer = absl::InvalidArgumentError("refused");  // the whole list
  EXPECT_FALSE(configure(Entry()));
  answer = absl::UnavailableError("no server");
  EXPECT_FALSE(configure(Entry()));
  EXPECT_EQ(sends, 4);

  answer = absl::OkStatus();
  listed = {&config.workers[1]};  // the first stream parked
  EXPECT_FALSE(configure(Entry()));
  EXPECT_TRUE(configure(other));
  EXPECT_EQ(sends, 6);

  stopping = true;
  EXPECT_FALSE(configure(other));
  EXPECT_EQ(sends, 6);

  stopping = false;
  listed.clear();  // every stream parked: nothing to send
  EXPECT_FALSE(configure(other));
  EXPECT_EQ(sends, 6);
}

// Applies, probes, registrations and replaces carry the generation once
// the engine knows one; single-worker requests never do.
TEST(MultiStreamRequests, RequestsCarryTheGenerationOnceKnown) {
  BridgeConfig config;
  config.workers = {Entry()};
  RecoveryOptions options = RecoveryOptionsForEntry(config, Entry());
  ASSERT_TRUE(options.expected.has_value());
  EXPECT_EQ(options.expected->page_size, 16u);
  EXPECT_EQ(options.expected->dp_rank, 3u);
  EXPECT_EQ(ProbeRequest(options.header, "e").worker_generation(), "");
  options.header.worker_generation = "g";
  EXPECT_EQ(ProbeRequest(options.header, "e").worker_generation(), "g");
  EXPECT_EQ(RegistrationRequest(options.header).worker_generation(), "g");
  EXPECT_EQ(BuildInstallRequest(options.header, "e", 0, {})
                .request.worker_generation(),
            "g");
  ActionList actions;
  KvAction store;
  actions.hashes = {1};
  actions.masks = {0};
  actions.sizes = {0};
  store.hash_count = 1;
  actions.actions.push_back(store);
  for (const auto& request :
       SendRequests(actions, options.header, 5, std::string("e"))) {
    EXPECT_EQ(request.worker_generation(), "g");
  }
  BridgeConfig single;
  single.worker_id = "w";
  EXPECT_FALSE(RecoveryOptionsFromConfig(single).expected.has_value());
}

// The staged install's requests: Begin declares every placement, Appends
// hold at most the limit each, in order, side arrays kept or zero.
TEST(MultiStreamRequests, StagedInstallSplitsThePlacement) {
  BridgeConfig config;
  config.workers = {Entry()};
  const RecoveryOptions options = RecoveryOptionsForEntry(config, Entry());
  std::vector<kv_indexer::v1::TierHashes> placement(2);
  placement[0].set_tier(kv_indexer::v1::TIER_HBM);
  for (int64_t h : {1, 2, 3}) placement[0].add_hashes(h);
  placement[1].set_tier(kv_indexer::v1::TIER_DRAM);
  placement[1].add_hashes(9);
  placement[1].add_component_masks(3);
  placement[1].add_block_sizes(64);
  kv_indexer::v1::ExternalKvSnapshotMetadata metadata;
  metadata.set_worker_generation("g");
  const StagedInstallRequests staged = BuildStagedInstall(
      options.header, "ep", 41, "b7", metadata, placement, /*per_append=*/3);
  EXPECT_EQ(staged.begin.expected_placements(), 4u);
  EXPECT_EQ(staged.begin.applied_seq(), 41u);
  EXPECT_EQ(staged.begin.worker_epoch(), "ep");
  EXPECT_EQ(staged.begin.snapshot_id(), "b7");
  EXPECT_EQ(staged.begin.stream_id().dp_rank(), 3u);
  EXPECT_EQ(staged.begin.metadata().worker_generation(), "g");
  ASSERT_EQ(staged.appends.size(), 2u);
  ASSERT_EQ(staged.appends[0].placements_size(), 3);
  ASSERT_EQ(staged.appends[1].placements_size(), 1);
  EXPECT_EQ(staged.appends[0].placements(2).block_hash(), 3);
  EXPECT_EQ(staged.appends[0].placements(2).component_mask(), 0u);
  const auto& last = staged.appends[1].placements(0);
  EXPECT_EQ(last.block_hash(), 9);
  EXPECT_EQ(last.tier(), kv_indexer::v1::TIER_DRAM);
  EXPECT_EQ(last.component_mask(), 3u);
  EXPECT_EQ(last.block_size(), 64u);
  EXPECT_FALSE(last.has_parent_block_hash());
  EXPECT_TRUE(BuildStagedInstall(options.header, "ep", 0, "b", metadata, {})
                  .appends.empty());
}

}  // namespace multi_stream_requests_test
}  // namespace kvindexer::bridge
