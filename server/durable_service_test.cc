// The service with a data directory: a mutation is answered only once its
// log record is durable, and that wait does not hold up the apply thread,
// so one sync acknowledges every mutation it covers (docs/durability.md,
// "The write-ahead log"; server/kv_indexer_service.h).
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "core/indexer.h"
#include "durable/durable_store.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kv_indexer.grpc.pb.h"
#include "server/kv_indexer_service.h"
#include "server/transport_settings.h"
#include "tests/support/model_backend.h"
#include "tests/support/requests.h"
#include "tests/support/test_file_io.h"
#include "tests/support/test_temp_dir.h"

namespace kvindexer {
namespace {

using ::kv_indexer::v1::KVIndexer;
using namespace std::chrono_literals;

class DurableServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = durable::DurableStore::Open(
        durable::DurableOptions{.dir = dir_.path() + "/data",
                                .sync = durable::WalSync::kAlways,
                                .checkpoint_bytes = 1ull << 30,
                                .io = &io_},
        &indexer_.durable_state());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    grpc::ServerBuilder builder;
    ApplyTransportSettings(builder);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    io_.OpenSyncLatch();
    if (server_ != nullptr) server_->Shutdown();
  }

  grpc::Status Apply(const v1::ApplyExternalKvBatchRequest& req,
                     v1::ApplyExternalKvBatchResponse* resp) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 60s);
    return KVIndexer::NewStub(channel_)->ApplyExternalKvBatch(&context, req,
                                                              resp);
  }

  durable::TestTempDir dir_;
  durable::TestFileIo io_;
  test_support::ModelBackend backend_;
  Indexer indexer_{&backend_};
  std::unique_ptr<durable::DurableStore> store_;
  KvIndexerService service_{indexer_.operations(), 8, WallClock::Real()};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// While the first apply's sync is held, the apply thread goes on logging
// the others; releasing it answers them all with at most one more sync.
// Were the wait on the apply thread, the other applies would not be
// applied until the first sync returned, and the wait below would time out.
TEST_F(DurableServiceTest, ConcurrentAppliesShareOneSync) {
  constexpr int kClients = 6;
  const int at_open = io_.fdatasyncs();
  io_.CloseSyncLatch();
  std::vector<grpc::Status> results(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([this, i, &results] {
      v1::ApplyExternalKvBatchResponse resp;
      const test_support::Batch batch =
          test_support::Batch("w" + std::to_string(i))
              .Report(kTierHbm, {100 + i});
      results[static_cast<size_t>(i)] = Apply(batch, &resp);
    });
  }
  io_.AwaitSyncsStarted(at_open + 1);
  // Every apply takes effect while that sync is still held (a bounded wait
  // for a condition, not a sleep standing in for one).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (indexer_.durable_state().worker_count() < kClients &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  EXPECT_EQ(indexer_.durable_state().worker_count(),
            static_cast<size_t>(kClients));
  io_.OpenSyncLatch();
  for (std::thread& client : clients) client.join();
  for (const grpc::Status& status : results) {
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  EXPECT_LE(io_.fdatasyncs() - at_open, 2);
}

// An answer waits for durability: with the sync held, the call has not
// returned; it returns once the sync is let through.
TEST_F(DurableServiceTest, AnApplyIsAnsweredOnlyOnceItsRecordIsDurable) {
  const int at_open = io_.fdatasyncs();
  io_.CloseSyncLatch();
  std::atomic<bool> answered{false};
  grpc::Status status;
  std::thread client([&] {
    v1::ApplyExternalKvBatchResponse resp;
    status = Apply(test_support::Batch("w").Report(kTierHbm, {1}), &resp);
    answered = true;
  });
  io_.AwaitSyncsStarted(at_open + 1);
  EXPECT_FALSE(answered.load());
  io_.OpenSyncLatch();
  client.join();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

}  // namespace
}  // namespace kvindexer
