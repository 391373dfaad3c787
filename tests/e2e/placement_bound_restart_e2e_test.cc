// The placement bound (docs/contract.md, "Limits > The placement bound")
// across restarts of the real binary: server A with a data directory
// (KV_INDEXER_WAL_SYNC=always) and server B without one, both with the same
// small bound, are fed the same seeded applies for several streams at every
// tier, enough to evict for both reasons. A is SIGKILLed halfway and
// restarted: it must then hold what B holds, tier by tier and mark by mark,
// and still after the rest of the feed (a restart changes no later
// decision). Restarted again with no bound and with a much smaller one, it
// must still hold the same (a replay applies the logged evictions and
// decides none). Every apply is a raw gRPC call whose trailing metadata is
// read: `kv-indexer-evicted: 1` exactly while the stream is marked, and
// never from a server without a bound.
//
// No sleeps as synchronisation: only bounded waits inside the helpers.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/eviction_header.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kvindexer_admin.grpc.pb.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_fixture.h"
#include "tests/e2e/durability_server.h"
#include "tests/e2e/placement_bound_feed.h"
#include "tests/support/evicted_trailer.h"
#include "tests/support/http_get.h"
#include "tests/support/metrics_scrape.h"

namespace kvindexer::e2e {
// Named, not anonymous: the unity build joins test files.
namespace placement_bound_restart_e2e_test {

namespace admin_v1 = ::kvindexer::admin::v1;

constexpr uint64_t kMaxPlacements = 1500;
constexpr uint64_t kMaxPerWorker = 600;

std::map<std::string, std::string> BoundEnv(uint64_t max_placements,
                                            uint64_t max_per_worker) {
  return {
      {"KV_INDEXER_MAX_PLACEMENTS", std::to_string(max_placements)},
      {"KV_INDEXER_MAX_PLACEMENTS_PER_WORKER", std::to_string(max_per_worker)},
      {"KV_INDEXER_METRICS_ADDR", "127.0.0.1:0"}};
}

// Sends `request` as a raw call; whether the OK answer's trailing metadata
// carried `kv-indexer-evicted: 1`. An error when the call fails.
absl::StatusOr<bool> ApplyWithTrailer(
    v1::KVIndexer::Stub& stub, const v1::ApplyExternalKvBatchRequest& request) {
  std::unique_ptr<grpc::ClientContext> context = Deadline();
  v1::ApplyExternalKvBatchResponse response;
  const grpc::Status s =
      stub.ApplyExternalKvBatch(context.get(), request, &response);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("apply failed: ", s.error_message()));
  }
  const std::optional<std::string> trailer =
      test_support::EvictedTrailer(*context);
  if (trailer.has_value() && *trailer != kEvictedValue) {
    return absl::InternalError(std::string(kEvictedHeader) + ": " + *trailer);
  }
  return trailer.has_value();
}

absl::StatusOr<BoundState> ReadBoundState(DurableServer& server) {
  std::unique_ptr<admin_v1::KvIndexerAdmin::Stub> admin =
      admin_v1::KvIndexerAdmin::NewStub(grpc::CreateChannel(
          server.address(), grpc::InsecureChannelCredentials()));
  admin_v1::ListWorkersRequest request;
  request.set_page_size(10000);
  admin_v1::ListWorkersResponse listed;
  const grpc::Status s = admin->ListWorkers(Deadline().get(), request, &listed);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("ListWorkers failed: ", s.error_message()));
  }
  return BoundStateOf(listed);
}

// One sample of the server's /metrics; nullopt when unavailable.
std::optional<double> Metric(DurableServer& server, const std::string& series) {
  const int port =
      test_support::WaitForMetricsPort(server.process(), kDurableStartBound);
  if (port == 0) return std::nullopt;
  absl::StatusOr<test_support::HttpResponse> scrape =
      test_support::HttpGet(port, "/metrics");
  if (!scrape.ok() || scrape->status != 200) return std::nullopt;
  return test_support::ScrapedValue(scrape->body, series);
}

std::string EvictionSeries(const std::string& reason) {
  return "kvindexer_placement_bound_tier_clears_total{reason=\"" + reason +
         "\"}";
}

class PlacementBoundRestartTest : public DurabilityTest {
 protected:
  PlacementBoundRestartTest() : DurabilityTest("placement-bound-restart") {}

  void SetUp() override {
    DurabilityTest::SetUp();
    if (HasFatalFailure()) return;
    options_.wal_sync = "always";
    options_.extra_env = BoundEnv(kMaxPlacements, kMaxPerWorker);
  }

  // Sends feed_ requests [from, to) to `a` and `b`; their trailers must
  // agree request by request. Records the trailer of each stream's last
  // request in last_trailer_.
  void FeedBoth(DurableServer& a, DurableServer& b, size_t from, size_t to) {
    for (size_t n = from; n < to; ++n) {
      const v1::ApplyExternalKvBatchRequest& request = feed_.request(n);
      absl::StatusOr<bool> on_a = ApplyWithTrailer(a.stub(), request);
      absl::StatusOr<bool> on_b = ApplyWithTrailer(b.stub(), request);
      ASSERT_TRUE(on_a.ok()) << "request " << n << ": " << on_a.status();
      ASSERT_TRUE(on_b.ok()) << "request " << n << ": " << on_b.status();
      ASSERT_EQ(*on_a, *on_b) << "request " << n;
      last_trailer_[absl::StrCat("/", request.worker_id(), "/0")] = *on_b;
    }
  }

  // `server` holds what `want` says, and the same placements as `b`.
  void ExpectSame(DurableServer& server, DurableServer& b,
                  const BoundState& want, std::string_view when) {
    SCOPED_TRACE(when);
    absl::StatusOr<BoundState> got = ReadBoundState(server);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, want);
    absl::StatusOr<Placements> placements =
        ServerPlacements(server.stub(), feed_.universe());
    absl::StatusOr<Placements> reference =
        ServerPlacements(b.stub(), feed_.universe());
    ASSERT_TRUE(placements.ok()) << placements.status();
    ASSERT_TRUE(reference.ok()) << reference.status();
    EXPECT_TRUE(*placements == *reference)
        << FirstDifference(*placements, *reference);
  }

  // The state of `b`, which must respect the bound.
  BoundState Reference(DurableServer& b) {
    absl::StatusOr<BoundState> state = ReadBoundState(b);
    EXPECT_TRUE(state.ok()) << state.status();
    if (!state.ok()) return {};
    EXPECT_LE(state->total(), kMaxPlacements) << state->Text();
    for (const auto& [key, stream] : state->streams) {
      EXPECT_LE(stream.total(), kMaxPerWorker) << key;
    }
    return *state;
  }

  const PlacementBoundFeed feed_{PlacementBoundFeedOptions{.seed = 20261206}};
  std::map<std::string, bool> last_trailer_;
};

TEST_F(PlacementBoundRestartTest, ARestartedServerEvictsAsOneThatNeverStopped) {
  DurableServerOptions memory_only = options_;
  memory_only.data_dir.clear();
  std::unique_ptr<DurableServer> b = DurableServer::Start(memory_only);
  std::unique_ptr<DurableServer> a = DurableServer::Start(options_);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);

  const size_t half = feed_.size() / 2;
  FeedBoth(*a, *b, 0, half);
  if (HasFatalFailure()) return;
  const BoundState at_half = Reference(*b);
  ExpectSame(*a, *b, at_half, "before the kill");
  // A's log holds evictions for the restart to replay.
  EXPECT_GT(at_half.evicted(), 0u) << at_half.Text();
  // Every apply was acknowledged after its fdatasync.
  a->process().Kill();
  a = DurableServer::Start(options_);
  ASSERT_NE(a, nullptr);
  const std::optional<RecoveredLine> recovered = a->Recovered();
  ASSERT_TRUE(recovered.has_value());
  EXPECT_GT(recovered->log_records, half);
  ExpectSame(*a, *b, at_half, "after the kill");

  FeedBoth(*a, *b, half, feed_.size());
  if (HasFatalFailure()) return;
  const BoundState at_end = Reference(*b);
  ExpectSame(*a, *b, at_end, "after the rest of the feed");

  // The bound did evict, for both reasons, and left less than was reported.
  EXPECT_GT(Metric(*b, EvictionSeries("worker_bound")).value_or(0), 0);
  EXPECT_GT(Metric(*b, EvictionSeries("index_bound")).value_or(0), 0);
  EXPECT_LT(at_end.total(), feed_.reported());
  EXPECT_GT(at_end.evicted(), 0u) << at_end.Text();
  EXPECT_LT(at_end.evicted(), at_end.streams.size()) << at_end.Text();
  // Each stream's last answer carried the trailer exactly when the stream
  // is marked evicted.
  for (const auto& [key, stream] : at_end.streams) {
    EXPECT_EQ(last_trailer_[key], stream.evicted) << key;
  }

  // Replayed without a bound, the logged evictions still apply; replayed
  // with a much smaller one, the replay decides none of its own.
  for (const auto& [total, per_worker] :
       std::vector<std::pair<uint64_t, uint64_t>>{{0, 0}, {200, 50}}) {
    a->Stop();
    DurableServerOptions rebound = options_;
    rebound.extra_env = BoundEnv(total, per_worker);
    a = DurableServer::Start(rebound);
    ASSERT_NE(a, nullptr);
    ExpectSame(*a, *b, at_end,
               absl::StrCat("restarted with bounds ", total, "/", per_worker));
    EXPECT_EQ(Metric(*a, EvictionSeries("worker_bound")), 0);
    EXPECT_EQ(Metric(*a, EvictionSeries("index_bound")), 0);
  }
}

TEST_F(PlacementBoundRestartTest, AServerWithoutABoundNeverSendsTheTrailer) {
  DurableServerOptions unbounded = options_;
  unbounded.data_dir.clear();
  unbounded.extra_env = BoundEnv(0, 0);
  std::unique_ptr<DurableServer> server = DurableServer::Start(unbounded);
  ASSERT_NE(server, nullptr);
  for (size_t n = 0; n < feed_.size(); ++n) {
    absl::StatusOr<bool> evicted =
        ApplyWithTrailer(server->stub(), feed_.request(n));
    ASSERT_TRUE(evicted.ok()) << "request " << n << ": " << evicted.status();
    ASSERT_FALSE(*evicted) << "request " << n;
  }
  absl::StatusOr<BoundState> state = ReadBoundState(*server);
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->total(), feed_.reported()) << state->Text();
  EXPECT_EQ(state->evicted(), 0u) << state->Text();
  EXPECT_EQ(Metric(*server, EvictionSeries("worker_bound")), 0);
  EXPECT_EQ(Metric(*server, EvictionSeries("index_bound")), 0);
}

}  // namespace placement_bound_restart_e2e_test
}  // namespace kvindexer::e2e
