#include "fleet_traffic.h"

#include <unistd.h>

#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bridge/log_applier.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;

std::string Producer(uint32_t worker) {
  return absl::StrCat("kv-indexer-fleet-bench:", getpid(), ":", worker);
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string FleetWorkerId(uint32_t worker) {
  return absl::StrCat("bench-w", worker);
}

std::vector<int64_t> FleetBatchHashes(uint64_t seed, uint32_t worker,
                                      uint64_t index, uint32_t n) {
  std::mt19937_64 rng(Mix(seed ^ Mix((uint64_t{worker} << 40) ^ index)));
  std::vector<int64_t> out(n);
  for (int64_t& h : out) {
    do {
      h = static_cast<int64_t>(rng());
    } while (h == 0);
  }
  return out;
}

v1::ApplyExternalKvBatchRequest FleetBatch(uint32_t worker,
                                           const std::vector<int64_t>& hashes) {
  v1::ApplyExternalKvBatchRequest request;
  request.set_worker_id(FleetWorkerId(worker));
  request.set_worker_address(absl::StrCat("10.0.0.", worker + 1, ":30000"));
  v1::ExternalKvAction* action = request.add_actions();
  action->set_type(v1::ACTION_REPORT);
  action->set_tier(v1::TIER_HBM);
  action->mutable_hashes()->Assign(hashes.begin(), hashes.end());
  return request;
}

absl::StatusOr<BulkAppendResult> BulkAppend(fleet::EventLog& log,
                                            const BulkAppendOptions& options) {
  std::mutex mu;
  absl::Status first_error;
  std::atomic<bool> failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < options.workers; ++w) {
    threads.emplace_back([&, w] {
      bridge::LogApplier applier(FleetWorkerId(w), Producer(w), &log);
      for (uint64_t i = 0; i < options.batches_per_worker && !failed.load();
           ++i) {
        const v1::ApplyExternalKvBatchRequest request = FleetBatch(
            w, FleetBatchHashes(options.seed, w, options.first_index + i,
                                options.batch_hashes));
        v1::ApplyExternalKvBatchResponse response;
        if (absl::Status s = applier.Apply(request, &response); !s.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          if (first_error.ok()) first_error = s;
          failed = true;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  if (!first_error.ok()) return first_error;
  BulkAppendResult result;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  result.batches = uint64_t{options.workers} * options.batches_per_worker;
  result.hashes = result.batches * options.batch_hashes;
  return result;
}

PacedAppendResult PacedAppend(
    fleet::EventLog& log, const PacedAppendOptions& options,
    const std::function<void(const PacedBatch&)>& on_batch) {
  const uint32_t workers = std::max<uint32_t>(options.workers, 1);
  const std::chrono::duration<double> interval(
      workers / std::max(options.batches_per_s, 1e-3));
  const uint64_t per_worker_cap =
      options.max_batches == 0 ? UINT64_MAX
                               : (options.max_batches + workers - 1) / workers;
  LatencyRecorder acks(options.max_batches == 0 ? 1'000'000
                                                : options.max_batches + 64);
  std::atomic<uint64_t> batches{0}, hashes{0}, failed{0}, late{0};
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + options.max_duration;
  std::vector<std::thread> threads;
  for (uint32_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      bridge::LogApplier applier(FleetWorkerId(w), Producer(w), &log);
      std::mt19937_64 rng(options.seed * 7919 + w);
      std::uniform_int_distribution<uint32_t> size(
          options.min_hashes, std::max(options.min_hashes, options.max_hashes));
      // Workers are spread over one interval.
      auto next =
          t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                   interval * (static_cast<double>(w) / workers));
      for (uint64_t i = 0; i < per_worker_cap; ++i) {
        if (options.stop != nullptr && options.stop->load()) break;
        if (std::chrono::steady_clock::now() >= deadline) break;
        PacedBatch batch;
        batch.worker = w;
        batch.index = options.first_index + i;
        batch.hashes =
            FleetBatchHashes(options.seed, w, batch.index, size(rng));
        const v1::ApplyExternalKvBatchRequest request =
            FleetBatch(w, batch.hashes);
        std::this_thread::sleep_until(next);
        batch.apply_called = std::chrono::steady_clock::now();
        if (batch.apply_called - next > std::chrono::milliseconds(5)) ++late;
        on_batch(batch);
        v1::ApplyExternalKvBatchResponse response;
        if (applier.Apply(request, &response).ok()) {
          acks.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - batch.apply_called)
                          .count());
          ++batches;
          hashes += batch.hashes.size();
        } else {
          ++failed;
        }
        next += std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            interval);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  PacedAppendResult result;
  result.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  result.batches = batches;
  result.hashes = hashes;
  result.failed = failed;
  result.late = late;
  result.append_ack = acks.Summarize();
  return result;
}

}  // namespace kvindexer::bench
