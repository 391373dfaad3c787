#include "worker_registration.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "operator_poll_server.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;

// Registration hashes: one per worker, apart from the apply stream's.
constexpr int64_t kFirstRegistrationHash = int64_t{1} << 32;

}  // namespace

std::string RegisteredWorkerId(uint32_t index) {
  return absl::StrFormat("worker-%05u", index);
}

std::string RegisteredWorkerAddress(uint32_t index) {
  return absl::StrFormat("10.%u.%u.%u:30000", (index >> 16) & 0xff,
                         (index >> 8) & 0xff, index & 0xff);
}

absl::StatusOr<RegistrationFigures> RegisterWorkers(
    const std::string& address, uint32_t workers, uint32_t threads,
    std::chrono::milliseconds rpc_deadline) {
  threads = std::clamp<uint32_t>(threads, 1, std::max<uint32_t>(workers, 1));
  std::vector<std::unique_ptr<v1::KVIndexer::Stub>> stubs;
  for (uint32_t t = 0; t < threads; ++t) {
    absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
        ConnectChannel(address, absl::StrCat("register-", t), rpc_deadline);
    if (!channel.ok()) return channel.status();
    stubs.push_back(v1::KVIndexer::NewStub(*channel));
  }
  const auto start = std::chrono::steady_clock::now();
  std::atomic<uint32_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  absl::Status first_error;  // guarded by mu
  std::vector<std::thread> pool;
  for (uint32_t t = 0; t < threads; ++t) {
    pool.emplace_back([&, stub = stubs[t].get()] {
      for (uint32_t i = next.fetch_add(1); i < workers && !failed.load();
           i = next.fetch_add(1)) {
        v1::ApplyExternalKvBatchRequest request;
        request.set_worker_id(RegisteredWorkerId(i));
        request.set_worker_address(RegisteredWorkerAddress(i));
        v1::ExternalKvAction* action = request.add_actions();
        action->set_type(v1::ACTION_REPORT);
        action->set_tier(v1::TIER_HBM);
        action->add_hashes(kFirstRegistrationHash + i);
        v1::ApplyExternalKvBatchResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + rpc_deadline);
        const grpc::Status s =
            stub->ApplyExternalKvBatch(&context, request, &response);
        if (s.ok()) continue;
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) {
          first_error = absl::UnavailableError(absl::StrCat(
              "registering ", request.worker_id(), ": code ",
              static_cast<int>(s.error_code()), ": ", s.error_message()));
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  if (failed.load()) return first_error;
  return RegistrationFigures{.workers = workers,
                             .seconds = SecondsSince(start)};
}

}  // namespace kvindexer::bench
