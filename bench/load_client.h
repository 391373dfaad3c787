// The gRPC side of kv-indexer-bench: a pool of channels to one server and two
// drivers built on the callback (async) client API.
//
//   RunQueries: MatchExternalKvPrefix at a fixed offered load (open loop: a
//     pacer issues calls on schedule, never waiting for answers) or at
//     saturation (closed loop: a fixed number of calls always outstanding).
//   RunIngest: ApplyExternalKvBatch from per-worker queues. Like a bridge, each
//     worker has at most one batch in flight, so its batches apply in order;
//     different workers run concurrently up to a cap, optionally paced to a
//     hash rate.
//
// Both stop by themselves: at the end of their duration, when a stop flag is
// set, or when the work runs out. Each RPC carries a deadline.
//
// Thread safety: a ChannelPool may be shared; each Run* call owns its state.
#ifndef KVINDEXER_BENCH_LOAD_CLIENT_H_
#define KVINDEXER_BENCH_LOAD_CLIENT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kv_indexer.grpc.pb.h"
#include "latency_recorder.h"

namespace kvindexer::bench {

namespace v1 = ::kv_indexer::v1;

class ChannelPool {
 public:
  // Opens `channels` separate HTTP/2 connections to `target` and waits up to
  // `connect_timeout` for each to become ready.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ChannelPool>> Connect(
      const std::string& target, int channels, absl::Duration connect_timeout);

  // Round-robin over the channels.
  v1::KVIndexer::Stub* Next();
  size_t size() const { return stubs_.size(); }

 private:
  ChannelPool() = default;
  std::vector<std::unique_ptr<v1::KVIndexer::Stub>> stubs_;
  std::atomic<size_t> next_{0};
};

// Per status-code counts of finished RPCs (index = grpc::StatusCode).
struct StatusCounts {
  std::array<uint64_t, 17> by_code{};
  uint64_t ok() const { return by_code[0]; }
  uint64_t failed() const;
};

struct QueryLoad {
  std::string label;
  double offered_qps = 0;     // > 0: open loop at this rate; 0: closed loop
  uint32_t concurrency = 32;  // closed loop: calls kept outstanding;
                              // open loop: cap on outstanding calls
  absl::Duration duration = absl::Seconds(5);
  absl::Duration rpc_deadline = absl::Seconds(2);
  absl::Duration progress_every = absl::Seconds(2);
  const std::atomic<bool>* stop = nullptr;  // optional early stop
};

struct QueryResult {
  std::string label;
  double seconds = 0;
  double offered_qps = 0;
  double achieved_qps = 0;  // OK answers per second
  uint64_t issued = 0;
  uint64_t skipped = 0;     // open loop: not sent, outstanding cap reached
  uint64_t late_sends = 0;  // open loop: sent more than 1 ms behind schedule
  StatusCounts status;
  double mean_matches = 0;  // per OK answer
  double mean_best_prefix = 0;
  double mean_query_blocks = 0;  // of the requests sent
  LatencySummary latency;        // of OK answers
};

[[nodiscard]] QueryResult RunQueries(
    ChannelPool* pool,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const QueryLoad& load);

struct IngestPlan {
  // per_worker[w] is applied in order.
  std::vector<std::vector<v1::ApplyExternalKvBatchRequest>> per_worker;
  uint64_t batches = 0;
  uint64_t hashes = 0;
};

struct IngestLoad {
  std::string label;
  double hashes_per_s = 0;  // 0: as fast as the server answers
  uint32_t max_outstanding = 32;
  bool cycle = false;  // start over when a worker's queue is used up
  absl::Duration max_duration = absl::Seconds(30);
  absl::Duration rpc_deadline = absl::Seconds(10);
  absl::Duration progress_every = absl::Seconds(2);
  const std::atomic<bool>* stop = nullptr;
};

struct IngestResult {
  std::string label;
  double seconds = 0;
  uint64_t batches_ok = 0;
  uint64_t hashes_ok = 0;
  uint64_t batches_total = 0;  // in the plan
  bool truncated = false;      // stopped before the plan was used up
  double hashes_per_s = 0;
  double mean_batch_hashes = 0;
  StatusCounts status;
  LatencySummary latency;  // of OK answers
};

[[nodiscard]] IngestResult RunIngest(ChannelPool* pool, const IngestPlan& plan,
                                     const IngestLoad& load);

// Total hashes over all actions of a batch.
uint64_t BatchHashes(const v1::ApplyExternalKvBatchRequest& batch);

}  // namespace kvindexer::bench

#endif  // KVINDEXER_BENCH_LOAD_CLIENT_H_
