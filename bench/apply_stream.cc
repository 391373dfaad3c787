#include "apply_stream.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;

// Samples kept per run; later applies are counted as dropped.
constexpr uint64_t kMaxApplySamples = 1'000'000;

v1::ApplyExternalKvBatchRequest Batch(const ApplyStreamOptions& options,
                                      v1::ExternalKvActionType type) {
  v1::ApplyExternalKvBatchRequest request;
  request.set_worker_id(options.worker_id);
  request.set_worker_address(options.worker_address);
  v1::ExternalKvAction* action = request.add_actions();
  action->set_type(type);
  action->set_tier(v1::TIER_HBM);
  action->mutable_hashes()->Reserve(static_cast<int>(options.hashes));
  for (uint32_t i = 0; i < options.hashes; ++i) {
    action->add_hashes(options.first_hash + i);
  }
  return request;
}

}  // namespace

ApplyStream::ApplyStream(std::shared_ptr<grpc::Channel> channel,
                         const ApplyStreamOptions& options)
    : stub_(v1::KVIndexer::NewStub(std::move(channel))),
      report_(Batch(options, v1::ACTION_REPORT)),
      revoke_(Batch(options, v1::ACTION_REVOKE)),
      rpc_deadline_(options.rpc_deadline) {}

ApplyRunFigures ApplyStream::Run(std::chrono::duration<double> duration,
                                 uint64_t max_applies) {
  using Clock = std::chrono::steady_clock;
  ApplyRunFigures figures;
  LatencyRecorder latency(
      static_cast<size_t>(std::min(max_applies, kMaxApplySamples)));
  const Clock::time_point start = Clock::now();
  const Clock::time_point end =
      start + std::chrono::duration_cast<Clock::duration>(duration);
  for (uint64_t sent = 0; sent < max_applies && Clock::now() < end; ++sent) {
    v1::ApplyExternalKvBatchRequest& request =
        next_is_report_ ? report_ : revoke_;
    request.set_seq(++seq_);
    v1::ApplyExternalKvBatchResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + rpc_deadline_);
    const Clock::time_point t0 = Clock::now();
    const grpc::Status s =
        stub_->ApplyExternalKvBatch(&context, request, &response);
    const int64_t nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0)
            .count();
    next_is_report_ = !next_is_report_;
    if (s.ok()) {
      latency.Record(nanos);
      ++figures.applies_ok;
      continue;
    }
    ++figures.applies_failed;
    if (figures.first_error.empty()) {
      figures.first_error = absl::StrCat(
          "code ", static_cast<int>(s.error_code()), ": ", s.error_message());
    }
  }
  figures.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  figures.latency = latency.Summarize();
  return figures;
}

}  // namespace kvindexer::bench
