#include "load_client.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "grpcpp/grpcpp.h"
#include "seconds_since.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Enough samples for a long phase at high QPS; beyond it samples are counted
// as dropped.
constexpr size_t kMaxSamples = 8'000'000;

std::chrono::nanoseconds ToChrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

std::chrono::system_clock::time_point RpcDeadline(absl::Duration d) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             ToChrono(d));
}

// Shared by a run and every callback it starts, so callbacks never outlive
// what they touch even if the run gives up waiting for them.
struct RunState {
  explicit RunState(size_t samples) : latency(samples) {}

  std::mutex mu;
  std::condition_variable cv;
  int64_t outstanding = 0;  // guarded by mu
  std::array<std::atomic<uint64_t>, 17> codes{};
  LatencyRecorder latency;

  // Latency is recorded for OK answers only; a fast refusal (for example
  // RESOURCE_EXHAUSTED from admission) must not flatter the percentiles.
  void Finish(grpc::StatusCode code, Clock::time_point start) {
    if (code == grpc::StatusCode::OK) {
      latency.Record(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         Clock::now() - start)
                         .count());
    }
    const size_t c = static_cast<size_t>(code);
    codes[c < codes.size() ? c : 2].fetch_add(1, std::memory_order_relaxed);
  }
  void Done() {
    std::lock_guard<std::mutex> lock(mu);
    --outstanding;
    cv.notify_all();
  }
  // Waits until no call is outstanding; false after `timeout`.
  bool Drain(absl::Duration timeout) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, ToChrono(timeout),
                       [this] { return outstanding == 0; });
  }
  StatusCounts Counts() const {
    StatusCounts s;
    for (size_t i = 0; i < codes.size(); ++i) s.by_code[i] = codes[i].load();
    return s;
  }
};

struct QueryState : RunState {
  using RunState::RunState;
  const std::vector<v1::MatchExternalKvPrefixRequest>* queries = nullptr;
  ChannelPool* pool = nullptr;
  absl::Duration rpc_deadline;
  std::atomic<size_t> next_query{0};
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> issued{0};
  std::atomic<uint64_t> matches{0};
  std::atomic<uint64_t> best_prefix{0};
  std::atomic<uint64_t> query_blocks{0};
  bool closed_loop = false;
};

struct QueryCall {
  grpc::ClientContext ctx;
  v1::MatchExternalKvPrefixResponse resp;
  Clock::time_point start;
};

// REQUIRES: the caller counted this call in state->outstanding.
void IssueQuery(const std::shared_ptr<QueryState>& state) {
  const auto& queries = *state->queries;
  const v1::MatchExternalKvPrefixRequest& req =
      queries[state->next_query.fetch_add(1, std::memory_order_relaxed) %
              queries.size()];
  auto* call = new QueryCall;
  call->ctx.set_deadline(RpcDeadline(state->rpc_deadline));
  state->issued.fetch_add(1, std::memory_order_relaxed);
  state->query_blocks.fetch_add(static_cast<uint64_t>(req.hashes_size()),
                                std::memory_order_relaxed);
  call->start = Clock::now();
  state->pool->Next()->async()->MatchExternalKvPrefix(
      &call->ctx, &req, &call->resp, [state, call](grpc::Status status) {
        state->Finish(status.error_code(), call->start);
        if (status.ok()) {
          state->matches.fetch_add(
              static_cast<uint64_t>(call->resp.matches_size()),
              std::memory_order_relaxed);
          state->best_prefix.fetch_add(call->resp.best_prefix_blocks(),
                                       std::memory_order_relaxed);
        }
        delete call;
        if (state->closed_loop &&
            !state->stopping.load(std::memory_order_relaxed)) {
          IssueQuery(state);  // the outstanding count carries over
          return;
        }
        state->Done();
      });
}

void PrintProgress(const std::string& label, double elapsed,
                   const std::string& what) {
  std::fprintf(stderr, "[%s] %6.1fs %s\n", label.c_str(), elapsed,
               what.c_str());
  std::fflush(stderr);
}

}  // namespace

uint64_t StatusCounts::failed() const {
  uint64_t n = 0;
  for (size_t i = 1; i < by_code.size(); ++i) n += by_code[i];
  return n;
}

uint64_t BatchHashes(const v1::ApplyExternalKvBatchRequest& batch) {
  uint64_t n = 0;
  for (const auto& a : batch.actions())
    n += static_cast<uint64_t>(a.hashes_size());
  return n;
}

absl::StatusOr<std::unique_ptr<ChannelPool>> ChannelPool::Connect(
    const std::string& target, int channels, absl::Duration connect_timeout) {
  std::unique_ptr<ChannelPool> pool(new ChannelPool);
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    // A private subchannel pool and a distinct argument give each channel its
    // own TCP connection.
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetInt("kvindexer.bench.channel", i);
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    auto channel = grpc::CreateCustomChannel(
        target, grpc::InsecureChannelCredentials(), args);
    if (!channel->WaitForConnected(RpcDeadline(connect_timeout))) {
      return absl::UnavailableError(
          absl::StrCat("could not connect to ", target, " within ",
                       absl::FormatDuration(connect_timeout)));
    }
    pool->stubs_.push_back(v1::KVIndexer::NewStub(channel));
  }
  return pool;
}

v1::KVIndexer::Stub* ChannelPool::Next() {
  return stubs_[next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()]
      .get();
}

QueryResult RunQueries(
    ChannelPool* pool,
    const std::vector<v1::MatchExternalKvPrefixRequest>& queries,
    const QueryLoad& load) {
  QueryResult result;
  result.label = load.label;
  result.offered_qps = load.offered_qps;
  if (queries.empty()) return result;

  auto state = std::make_shared<QueryState>(kMaxSamples);
  state->queries = &queries;
  state->pool = pool;
  state->rpc_deadline = load.rpc_deadline;
  state->closed_loop = load.offered_qps <= 0;
  const auto stop_requested = [&] {
    return load.stop != nullptr && load.stop->load(std::memory_order_relaxed);
  };

  const Clock::time_point t0 = Clock::now();
  const Clock::time_point end = t0 + ToChrono(load.duration);
  Clock::time_point next_progress = t0 + ToChrono(load.progress_every);
  const auto progress = [&] {
    if (Clock::now() < next_progress) return;
    next_progress += ToChrono(load.progress_every);
    const double el = SecondsSince(t0);
    PrintProgress(
        load.label, el,
        absl::StrFormat("issued=%d ok=%d (%.0f ok/s)", state->issued.load(),
                        state->codes[0].load(),
                        static_cast<double>(state->codes[0].load()) / el));
  };

  if (state->closed_loop) {
    {
      std::lock_guard<std::mutex> lock(state->mu);
      state->outstanding = load.concurrency;
    }
    for (uint32_t i = 0; i < load.concurrency; ++i) IssueQuery(state);
    while (Clock::now() < end && !stop_requested()) {
      std::unique_lock<std::mutex> lock(state->mu);
      state->cv.wait_until(lock, std::min(end, next_progress));
      lock.unlock();
      progress();
    }
    state->stopping.store(true);
  } else {
    const auto interval = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(1.0 / load.offered_qps));
    Clock::time_point next = t0;
    while (next < end && !stop_requested()) {
      if (Clock::now() < next) std::this_thread::sleep_until(next);
      if (Clock::now() - next > std::chrono::milliseconds(1)) {
        ++result.late_sends;
      }
      bool send = false;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        if (state->outstanding < static_cast<int64_t>(load.concurrency)) {
          ++state->outstanding;
          send = true;
        }
      }
      if (send) {
        IssueQuery(state);
      } else {
        ++result.skipped;
      }
      next += interval;
      progress();
    }
  }
  if (!state->Drain(load.rpc_deadline + absl::Seconds(5))) {
    std::fprintf(stderr, "[%s] warning: calls still outstanding\n",
                 load.label.c_str());
  }
  // Measured to the last answer, so answers arriving after the last send
  // count toward the rate over the time they took.
  const double elapsed = SecondsSince(t0);
  result.seconds = elapsed;
  result.issued = state->issued.load();
  result.status = state->Counts();
  result.latency = state->latency.Summarize();
  const double ok = static_cast<double>(result.status.ok());
  result.achieved_qps = ok / std::max(elapsed, 1e-9);
  if (ok > 0) {
    result.mean_matches = static_cast<double>(state->matches.load()) / ok;
    result.mean_best_prefix =
        static_cast<double>(state->best_prefix.load()) / ok;
  }
  if (result.issued > 0) {
    result.mean_query_blocks = static_cast<double>(state->query_blocks.load()) /
                               static_cast<double>(result.issued);
  }
  return result;
}

namespace {

struct IngestState : RunState {
  using RunState::RunState;
  std::vector<size_t> position;  // guarded by mu
  std::vector<bool> busy;        // guarded by mu
  std::atomic<uint64_t> hashes_ok{0};
  std::atomic<uint64_t> sent{0};
};

struct ApplyCall {
  grpc::ClientContext ctx;
  v1::ApplyExternalKvBatchResponse resp;
  Clock::time_point start;
  uint32_t worker = 0;
  uint64_t hashes = 0;
};

}  // namespace

IngestResult RunIngest(ChannelPool* pool, const IngestPlan& plan,
                       const IngestLoad& load) {
  IngestResult result;
  result.label = load.label;
  result.batches_total = plan.batches;
  const size_t workers = plan.per_worker.size();
  auto state = std::make_shared<IngestState>(kMaxSamples);
  state->position.assign(workers, 0);
  state->busy.assign(workers, false);
  const auto stop_requested = [&] {
    return load.stop != nullptr && load.stop->load(std::memory_order_relaxed);
  };

  const Clock::time_point t0 = Clock::now();
  const Clock::time_point end = t0 + ToChrono(load.max_duration);
  Clock::time_point next_progress = t0 + ToChrono(load.progress_every);
  Clock::time_point next_send = t0;
  size_t rr = 0;
  uint64_t batches_sent = 0;
  uint64_t hashes_sent = 0;
  for (;;) {
    const Clock::time_point now = Clock::now();
    if (now >= next_progress) {
      next_progress += ToChrono(load.progress_every);
      const double el = SecondsSince(t0);
      PrintProgress(
          load.label, el,
          absl::StrFormat("batches=%d hashes_ok=%d (%.0f hashes/s)",
                          batches_sent, state->hashes_ok.load(),
                          static_cast<double>(state->hashes_ok.load()) / el));
    }
    if (now >= end || stop_requested()) {
      break;
    }
    if (load.hashes_per_s > 0 && now < next_send) {
      std::this_thread::sleep_until(std::min({next_send, end, next_progress}));
      continue;
    }
    // Pick an idle worker with work, round robin.
    const v1::ApplyExternalKvBatchRequest* batch = nullptr;
    uint32_t worker = 0;
    bool any_left = false;
    {
      std::unique_lock<std::mutex> lock(state->mu);
      if (state->outstanding >= static_cast<int64_t>(load.max_outstanding)) {
        state->cv.wait_until(lock, std::min(end, next_progress));
        continue;
      }
      for (size_t k = 0; k < workers; ++k) {
        const size_t w = (rr + k) % workers;
        const auto& queue = plan.per_worker[w];
        if (queue.empty()) continue;
        if (state->position[w] >= queue.size()) {
          if (!load.cycle) continue;
          state->position[w] = 0;
        }
        any_left = true;
        if (state->busy[w]) continue;
        batch = &queue[state->position[w]++];
        state->busy[w] = true;
        ++state->outstanding;
        worker = static_cast<uint32_t>(w);
        rr = w + 1;
        break;
      }
      if (batch == nullptr) {
        if (!any_left && state->outstanding == 0) break;  // plan used up
        state->cv.wait_until(lock, std::min(end, next_progress));
        continue;
      }
    }
    auto* call = new ApplyCall;
    call->worker = worker;
    call->hashes = BatchHashes(*batch);
    call->ctx.set_deadline(RpcDeadline(load.rpc_deadline));
    call->start = Clock::now();
    ++batches_sent;
    hashes_sent += call->hashes;
    if (load.hashes_per_s > 0) {
      next_send += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(static_cast<double>(call->hashes) /
                                        load.hashes_per_s));
    }
    pool->Next()->async()->ApplyExternalKvBatch(
        &call->ctx, batch, &call->resp, [state, call](grpc::Status status) {
          state->Finish(status.error_code(), call->start);
          if (status.ok()) state->hashes_ok.fetch_add(call->hashes);
          {
            std::lock_guard<std::mutex> lock(state->mu);
            state->busy[call->worker] = false;
            --state->outstanding;
            state->cv.notify_all();
          }
          delete call;
        });
  }
  {
    std::lock_guard<std::mutex> lock(state->mu);
    for (size_t w = 0; w < workers; ++w) {
      if (state->position[w] < plan.per_worker[w].size()) {
        result.truncated = true;
      }
    }
  }
  if (!state->Drain(load.rpc_deadline + absl::Seconds(5))) {
    std::fprintf(stderr, "[%s] warning: applies still outstanding\n",
                 load.label.c_str());
  }
  result.seconds = SecondsSince(t0);
  result.status = state->Counts();
  result.batches_ok = result.status.ok();
  result.hashes_ok = state->hashes_ok.load();
  result.hashes_per_s =
      static_cast<double>(result.hashes_ok) / std::max(result.seconds, 1e-9);
  if (batches_sent > 0) {
    result.mean_batch_hashes =
        static_cast<double>(hashes_sent) / static_cast<double>(batches_sent);
  }
  result.latency = state->latency.Summarize();
  return result;
}

}  // namespace kvindexer::bench
