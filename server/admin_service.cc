#include "server/admin_service.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/log_text.h"
#include "common/wire_vocabulary.h"
#include "core/line_a.h"
#include "core/removal_reason.h"
#include "core/request_limits.h"
#include "core/request_validation.h"
#include "core/stream_key.h"
#include "core/stream_log_fields.h"
#include "core/worker_batches.h"
#include "fmt/format.h"
#include "replica/replica_refusal.h"
#include "server/prefix_request_size.h"
#include "server/queue_refusal.h"
#include "server/worker_page_token.h"
#include "spdlog/spdlog.h"

namespace kvindexer {
namespace {

namespace v1 = ::kv_indexer::v1;

constexpr std::string_view kRemoveWorkerMethod =
    "/kvindexer.admin.v1.KvIndexerAdmin/RemoveWorker";

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

uint64_t AgeMs(MonotonicClock::TimePoint now, MonotonicClock::TimePoint then) {
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now - then).count();
  return ms < 0 ? 0 : static_cast<uint64_t>(ms);
}

admin_v1::SequenceState ToProto(SequenceState state) {
  switch (state) {
    case SequenceState::kInvalid:
      return admin_v1::SEQUENCE_STATE_INVALID;
    case SequenceState::kUnsequenced:
      return admin_v1::SEQUENCE_STATE_UNSEQUENCED;
    case SequenceState::kSequenced:
      return admin_v1::SEQUENCE_STATE_SEQUENCED;
  }
  return admin_v1::SEQUENCE_STATE_UNSPECIFIED;
}

admin_v1::Fidelity ToProto(Fidelity fidelity) {
  switch (fidelity) {
    case Fidelity::kUnknown:
      return admin_v1::FIDELITY_UNKNOWN;
    case Fidelity::kExact:
      return admin_v1::FIDELITY_EXACT;
    case Fidelity::kDegraded:
      return admin_v1::FIDELITY_DEGRADED;
  }
  return admin_v1::FIDELITY_UNKNOWN;
}

std::string_view RuleName(PrefixScanner::Mode mode) {
  switch (mode) {
    case PrefixScanner::Mode::kLegacy:
      return "legacy";
    case PrefixScanner::Mode::kComponentAware:
      return "component_aware";
    case PrefixScanner::Mode::kInvalid:
      return "invalid_spec";
  }
  return "legacy";
}

// Tiers with placements, in tier order.
void AddCounts(
    const std::array<uint64_t, kMaxTier + 1>& counts,
    google::protobuf::RepeatedPtrField<admin_v1::TierPlacementCount>* out) {
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if (counts[tier] == 0) continue;
    admin_v1::TierPlacementCount* c = out->Add();
    c->set_tier(static_cast<v1::TierType>(tier));
    c->set_placements(counts[tier]);
  }
}

void FillInfo(const WorkerSnapshot& w, MonotonicClock::TimePoint now,
              admin_v1::WorkerInfo* out) {
  // Defaults are not encoded: a legacy stream's entry keeps its bytes.
  const StreamKey key = DecodeStreamKey(w.worker_id);
  out->set_worker_id(key.worker_id);
  out->set_namespace_(key.ns);
  out->set_dp_rank(key.dp_rank);
  out->set_worker_generation(w.meta.generation);
  out->set_model(w.meta.model);
  out->set_hash_schema_version(w.meta.hash_schema_version);
  out->set_page_size(w.meta.page_size);
  out->set_is_bigram(w.meta.is_bigram);
  out->set_worker_address(w.address);
  if (w.spec.has_value()) *out->mutable_cache_spec() = WireCacheSpecOf(*w.spec);
  out->set_placement_counts_known(w.placements_by_tier.has_value());
  if (w.placements_by_tier.has_value()) {
    AddCounts(*w.placements_by_tier, out->mutable_placements());
  }
  out->set_sequence_state(ToProto(w.sequence_state));
  out->set_ready(w.ready);
  out->set_configured(w.configured);
  if (w.checkpoint.has_value()) {
    out->set_worker_epoch(w.checkpoint->epoch);
    out->set_applied_seq(w.checkpoint->seq);
  }
  if (w.last_apply.has_value()) {
    out->set_last_apply_age_ms(AgeMs(now, *w.last_apply));
  }
  out->set_heartbeat_marked(w.heartbeat_deadline.has_value());
  if (w.heartbeat_ttl.has_value()) {
    out->set_heartbeat_ttl_ms(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(*w.heartbeat_ttl)
            .count()));
  }
  if (w.last_heartbeat.has_value()) {
    out->set_last_heartbeat_age_ms(AgeMs(now, *w.last_heartbeat));
  }
  if (w.heartbeat_deadline.has_value()) {
    out->set_heartbeat_deadline_in_ms(
        std::chrono::duration_cast<std::chrono::milliseconds>(
            *w.heartbeat_deadline - now)
            .count());
  }
  out->set_fidelity(ToProto(w.fidelity));
  out->set_fidelity_reason(w.fidelity_reason);
}

// A worker id (or, with allow_empty, a namespace, named as such) within
// the worker-id bound.
grpc::Status CheckWorkerId(const std::string& id, uint32_t max_bytes,
                           bool allow_empty = false) {
  const char* const field = allow_empty ? "namespace" : "worker_id";
  if (id.empty() && !allow_empty) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "worker_id must not be empty");
  }
  if (max_bytes != 0 && id.size() > max_bytes) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("{} is {} bytes; maximum is {} ({})", field, id.size(),
                    max_bytes, kMaxWorkerIdBytesVar));
  }
  return grpc::Status::OK;
}

// One admin call's entry in the RPC metrics: Finish records it (when
// metrics are on) and finishes it.
struct AdminCall {
  RpcMetrics* metrics;
  RpcMethod method;
  std::chrono::steady_clock::time_point start;

  void Finish(grpc::ServerUnaryReactor* reactor, grpc::Status status) const {
    if (metrics != nullptr) {
      metrics->Record(method, status.error_code(),
                      std::chrono::steady_clock::now() - start);
    }
    reactor->Finish(std::move(status));
  }
};

AdminCall StartCall(RpcMetrics* metrics, RpcMethod method) {
  return AdminCall{metrics, method, std::chrono::steady_clock::now()};
}

// The backend ids an ExplainPrefix names, in its order: for each of
// worker_ids, every stream with that worker id in key order (the id itself,
// a legacy key, when there is none), then each of `streams`. A listing
// walks the directory page by page and only when worker_ids is non-empty.
std::vector<std::string> NamedStreams(
    const admin_v1::ExplainPrefixRequest& request, OperatorView& indexer) {
  std::vector<std::string> named;
  if (request.worker_ids_size() > 0) {
    absl::flat_hash_map<std::string, std::vector<std::string>> by_worker;
    for (const std::string& id : request.worker_ids()) by_worker[id];
    constexpr size_t kPage = 1024;
    std::string after;
    for (;;) {
      const std::vector<WorkerSnapshot> page =
          indexer.ListWorkersPage(after, kPage, /*placement_counts=*/false);
      for (const WorkerSnapshot& w : page) {
        auto it = by_worker.find(std::string(WorkerIdOf(w.worker_id)));
        if (it != by_worker.end()) it->second.push_back(w.worker_id);
      }
      if (page.size() < kPage) break;
      after = page.back().worker_id;
    }
    absl::flat_hash_set<std::string> done;
    for (const std::string& id : request.worker_ids()) {
      if (!done.insert(id).second) continue;
      const std::vector<std::string>& ids = by_worker[id];
      if (ids.empty()) named.push_back(id);
      named.insert(named.end(), ids.begin(), ids.end());
    }
  }
  for (const v1::StreamId& stream : request.streams()) {
    named.push_back(EncodeStreamKey(StreamKeyOf(stream)));
  }
  return named;
}

std::string FullMethodName(RpcMethod method) {
  return fmt::format("/kvindexer.admin.v1.KvIndexerAdmin/{}",
                     RpcMethodName(method));
}

}  // namespace

grpc::Status AdminService::CheckReadToken(
    const grpc::CallbackServerContext& context, RpcMethod method) const {
  const ReadAuthorizer* reads = sources_.read_authorizer;
  if (reads == nullptr || !reads->enabled()) return grpc::Status::OK;
  return reads->Check(context, FullMethodName(method));
}

template <typename Call, typename Work>
grpc::ServerUnaryReactor* AdminService::Enqueue(
    TaskExecutor& executor, grpc::CallbackServerContext* context,
    const Call& call, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (!executor.TrySubmit([reactor, call, work = std::move(work)]() mutable {
        call.Finish(reactor, work());
      })) {
    call.Finish(reactor,
                QueueFullRefusal(WorkQueue::kAdmin, executor.capacity()));
  }
  return reactor;
}

template <typename Call, typename Work>
grpc::ServerUnaryReactor* AdminService::RunOn(
    TaskExecutor& executor, grpc::CallbackServerContext* context,
    const Call& call, Work work) {
  if (grpc::Status s = CheckReadToken(*context, call.method); !s.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    call.Finish(reactor, std::move(s));
    return reactor;
  }
  return Enqueue(executor, context, call, std::move(work));
}

AdminService::AdminService(AdminSources sources)
    : sources_(std::move(sources)),
      executor_(1, "kvidx-admin", sources_.queue_max) {
  executor_.CountRejectionsInto(sources_.queue_rejections);
}

grpc::ServerUnaryReactor* AdminService::ListWorkers(
    grpc::CallbackServerContext* context,
    const admin_v1::ListWorkersRequest* request,
    admin_v1::ListWorkersResponse* response) {
  return RunOn(
      executor_, context, StartCall(sources_.metrics, RpcMethod::kListWorkers),
      [this, request, response] { return DoListWorkers(*request, response); });
}

grpc::ServerUnaryReactor* AdminService::ExplainPrefix(
    grpc::CallbackServerContext* context,
    const admin_v1::ExplainPrefixRequest* request,
    admin_v1::ExplainPrefixResponse* response) {
  const AdminCall call = StartCall(sources_.metrics, RpcMethod::kExplainPrefix);
  // The token first: a caller without it learns nothing of the load.
  if (grpc::Status s = CheckReadToken(*context, call.method); !s.ok()) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    call.Finish(reactor, std::move(s));
    return reactor;
  }
  // Shared so that the task stays copyable; the permit goes back when the
  // task has run, or at once when the queue refuses it.
  auto permit =
      std::make_shared<PrefixAdmission::Permit>(explains_.TryAcquire());
  if (!*permit) {
    if (sources_.explain_rejections != nullptr) {
      sources_.explain_rejections->Increment();
    }
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    call.Finish(reactor, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                      std::string(kExplainOverloadMessage)));
    return reactor;
  }
  return Enqueue(executor_, context, call, [this, request, response, permit] {
    grpc::Status s = DoExplainPrefix(*request, response);
    permit->Release();
    return s;
  });
}

grpc::ServerUnaryReactor* AdminService::RemoveWorker(
    grpc::CallbackServerContext* context,
    const admin_v1::RemoveWorkerRequest* request,
    admin_v1::RemoveWorkerResponse* response) {
  const AdminCall call = StartCall(sources_.metrics, RpcMethod::kRemoveWorker);
  // A mutation: the write token before anything else.
  if (sources_.authorizer != nullptr) {
    if (grpc::Status s =
            sources_.authorizer->Check(*context, kRemoveWorkerMethod);
        !s.ok()) {
      grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
      call.Finish(reactor, std::move(s));
      return reactor;
    }
  }
  // A replica changes only through the event log.
  if (sources_.follows_log) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    call.Finish(reactor, replica::ReplicaRefusal(kRemoveWorkerMethod));
    return reactor;
  }
  return RunOn(executor_, context, call,
               [this, request, response, peer = context->peer()] {
                 return DoRemoveWorker(*request, peer, response);
               });
}

grpc::ServerUnaryReactor* AdminService::GetStats(
    grpc::CallbackServerContext* context, const admin_v1::GetStatsRequest*,
    admin_v1::GetStatsResponse* response) {
  return RunOn(executor_, context,
               StartCall(sources_.metrics, RpcMethod::kGetStats),
               [this, response] { return DoGetStats(response); });
}

grpc::Status AdminService::DoListWorkers(
    const admin_v1::ListWorkersRequest& request,
    admin_v1::ListWorkersResponse* response) {
  if (request.page_size() > kMaxWorkerPageSize) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        fmt::format("page_size is {}; maximum is {}",
                                    request.page_size(), kMaxWorkerPageSize));
  }
  const absl::StatusOr<std::string> after =
      DecodeWorkerPageToken(request.page_token());
  if (!after.ok()) return ToGrpc(after.status());
  const size_t page_size =
      request.page_size() == 0 ? kDefaultWorkerPageSize : request.page_size();
  // One more than asked for tells whether another page follows.
  std::vector<WorkerSnapshot> workers = sources_.indexer->ListWorkersPage(
      *after, page_size + 1, /*placement_counts=*/false);
  const bool more = workers.size() > page_size;
  if (more) workers.pop_back();
  const MonotonicClock::TimePoint now = sources_.indexer->clock().Now();
  for (WorkerSnapshot& w : workers) {
    // Counted one by one here, on the admin thread, off every lock.
    w.placements_by_tier = sources_.indexer->PlacementCounts(w.worker_id);
    admin_v1::WorkerInfo* info = response->add_workers();
    FillInfo(w, now, info);
    // Only while a staged snapshot is open for the stream.
    if (const std::optional<uint64_t> staged =
            sources_.indexer->StagedPlacements(w.worker_id);
        staged.has_value()) {
      info->set_staged_placements(*staged);
    }
  }
  if (more) {
    response->set_next_page_token(
        EncodeWorkerPageToken(workers.back().worker_id));
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::DoExplainPrefix(
    const admin_v1::ExplainPrefixRequest& request,
    admin_v1::ExplainPrefixResponse* response) {
  // MatchExternalKvPrefix's checks, in its order and with its codes
  // (docs/contract.md, "MatchExternalKvPrefix > Order of checks"): size,
  // then validation. No shedding and no admission: this is not the
  // router's path.
  v1::MatchExternalKvPrefixRequest query;
  query.mutable_hashes()->CopyFrom(request.hashes());
  query.set_max_blocks(request.max_blocks());
  query.mutable_eligible_worker_addresses()->CopyFrom(
      request.eligible_worker_addresses());
  query.mutable_eligible_streams()->CopyFrom(request.eligible_streams());
  const size_t max_bytes =
      IsLineA(query) ? kMaxCoverageRequestBytes : kMaxRequestBytes;
  if (const size_t size = query.ByteSizeLong(); size > max_bytes) {
    return grpc::Status(
        grpc::StatusCode::OUT_OF_RANGE,
        fmt::format("request message is {} bytes; maximum is {}", size,
                    max_bytes));
  }
  if (absl::Status s = ValidatePrefix(query); !s.ok()) return ToGrpc(s);
  if (request.worker_ids_size() > kMaxExplainedWorkerIds) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("{} worker_ids; maximum is {}", request.worker_ids_size(),
                    kMaxExplainedWorkerIds));
  }
  if (request.streams_size() > kMaxExplainedWorkerIds) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        fmt::format("{} streams; maximum is {}", request.streams_size(),
                    kMaxExplainedWorkerIds));
  }
  for (const std::string& id : request.worker_ids()) {
    if (grpc::Status s = CheckWorkerId(id, sources_.max_worker_id_bytes);
        !s.ok()) {
      return s;
    }
  }
  for (const v1::StreamId& stream : request.streams()) {
    if (grpc::Status s =
            CheckWorkerId(stream.worker_id(), sources_.max_worker_id_bytes);
        !s.ok()) {
      return s;
    }
    if (grpc::Status s =
            CheckWorkerId(stream.namespace_(), sources_.max_worker_id_bytes,
                          /*allow_empty=*/true);
        !s.ok()) {
      return s;
    }
  }

  OperatorView& indexer = *sources_.indexer;
  const std::vector<std::string> named = NamedStreams(request, indexer);
  PrefixExplanation explanation;
  if (absl::Status s = indexer.ExplainPrefix(query, named, &explanation);
      !s.ok()) {
    return ToGrpc(s);
  }
  *response->mutable_answer() = std::move(explanation.answer);
  const MonotonicClock::TimePoint now = indexer.clock().Now();
  for (const WorkerExplanation& w : explanation.workers) {
    admin_v1::WorkerExplanation* out = response->add_workers();
    const StreamKey key = DecodeStreamKey(w.worker_id);
    out->set_worker_id(key.worker_id);
    if (!key.legacy()) SetStreamId(key, out->mutable_stream_id());
    out->set_worker_address(w.address);
    out->set_matched_prefix_blocks(w.matched);
    out->set_excluded(w.excluded);
    out->set_excluded_reason(w.excluded_reason);
    if (w.stop_reason != StopReason::kUnknownWorker) {
      out->set_rule(std::string(RuleName(w.mode)));
    }
    out->set_stop_reason(static_cast<admin_v1::StopReason>(w.stop_reason));
    out->set_stop_block(w.stop_block);
    out->set_stop_component(w.stop_component);
    out->set_detail(w.detail);
    // Freshness from the host's record, read after the scan: it may be a
    // mutation newer than the snapshot the scan saw.
    if (std::optional<WorkerSnapshot> s = indexer.DescribeWorker(w.worker_id)) {
      if (s->last_apply.has_value()) {
        out->set_last_apply_age_ms(AgeMs(now, *s->last_apply));
      }
      out->set_fidelity(ToProto(s->fidelity));
      out->set_sequence_state(ToProto(s->sequence_state));
      out->set_worker_generation(s->meta.generation);
    }
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::DoRemoveWorker(
    const admin_v1::RemoveWorkerRequest& request, std::string_view peer,
    admin_v1::RemoveWorkerResponse* response) {
  // Absent stream_id: the legacy stream, exactly the call of a seed-era
  // operator.
  if (request.has_stream_id() && !request.worker_id().empty() &&
      request.worker_id() != request.stream_id().worker_id()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "worker_id and stream_id.worker_id differ");
  }
  const std::string& worker_id = request.has_stream_id()
                                     ? request.stream_id().worker_id()
                                     : request.worker_id();
  if (grpc::Status s = CheckWorkerId(worker_id, sources_.max_worker_id_bytes);
      !s.ok()) {
    return s;
  }
  if (request.has_stream_id()) {
    if (grpc::Status s = CheckWorkerId(request.stream_id().namespace_(),
                                       sources_.max_worker_id_bytes,
                                       /*allow_empty=*/true);
        !s.ok()) {
      return s;
    }
  }
  const std::string id = request.has_stream_id()
                             ? EncodeStreamKey(StreamKeyOf(request.stream_id()))
                             : request.worker_id();
  // Read just before the removal, outside the mutation mutex: an apply that
  // lands in between makes the figure approximate (docs/admin-api.md,
  // "RemoveWorker").
  const std::optional<std::array<uint64_t, kMaxTier + 1>> counts =
      sources_.indexer->PlacementCounts(id);
  if (absl::Status s =
          sources_.indexer->RemoveWorker(id, RemovalReason::kAdmin);
      !s.ok()) {
    return ToGrpc(s);
  }
  // Escaped and cut: the id and the reason come from the network, and must
  // not be able to forge a log line.
  spdlog::info("admin: removed {} peer={} operator_reason=\"{}\"",
               StreamLogFields(id, LogQuotes::kDouble), LogText(peer),
               LogText(request.reason()));
  if (counts.has_value()) {
    AddCounts(*counts, response->mutable_removed_placements());
  }
  return grpc::Status::OK;
}

grpc::Status AdminService::DoGetStats(admin_v1::GetStatsResponse* response) {
  OperatorView& indexer = *sources_.indexer;
  response->set_server_version(sources_.server_version);
  response->set_uptime_ms(AgeMs(indexer.clock().Now(), sources_.started));

  admin_v1::BackendInfo* backend = response->mutable_backend();
  backend->set_name(sources_.backend_name);
  backend->set_version(sources_.backend_version);
  backend->set_path(sources_.backend_path);
  backend->set_abi_major(sources_.backend_abi_major);
  backend->set_abi_minor(sources_.backend_abi_minor);
  const BackendStats stats = indexer.ReadBackendStats();
  backend->set_blocks(stats.blocks);
  backend->set_placements(stats.placements);
  backend->set_workers(stats.workers);
  backend->set_hit_counters(stats.hit_counters);
  backend->set_memory_bytes(stats.memory_bytes);
  std::optional<std::string> failure;
  if (sources_.backend_failure) failure = sources_.backend_failure();
  backend->set_healthy(!failure.has_value());
  if (failure.has_value()) backend->set_failure(*failure);

  // Worker counts, kept as the records change: O(1), whatever the fleet.
  const WorkerCounts counts = indexer.CountWorkers();
  response->set_workers_total(static_cast<uint32_t>(counts.total));
  response->set_workers_ready(static_cast<uint32_t>(counts.ready));
  response->set_workers_sequenced(static_cast<uint32_t>(counts.sequenced));
  response->set_workers_heartbeating(
      static_cast<uint32_t>(counts.heartbeating));

  response->set_indexer_epoch(indexer.IndexerEpoch());
  const StagingStats staging = indexer.staging_stats();
  response->set_staging_transactions(
      static_cast<uint32_t>(staging.open_transactions));
  response->set_staged_placements(staging.staged_placements);

  response->set_prefix_query_max_inflight(sources_.prefix_query_max_inflight);
  if (sources_.admission != nullptr) {
    response->set_prefix_queries_inflight(sources_.admission->in_flight());
  }

  admin_v1::DurabilityInfo* durability = response->mutable_durability();
  durability->set_enabled(sources_.store != nullptr);
  if (sources_.store != nullptr) {
    durability->set_data_dir(sources_.data_dir);
    durability->set_wal_sync(sources_.wal_sync);
    const durable::DurableFigures f = sources_.store->figures();
    durability->set_checkpoint_generation(f.checkpoint_generation);
    durability->set_log_bytes(f.log_end);
    durability->set_checkpoints_written(f.checkpoints_written);
    durability->set_checkpoint_failures(f.checkpoint_failures.total());
    durability->set_checkpoint_in_progress(f.checkpoint_in_progress);
    durability->set_recovery_cut_bytes(f.recovery_cut_bytes);
    durability->set_recovery_cut_records(f.recovery_cut_records);
    durability->set_recovery_damaged(f.recovery_log_damaged);
    durability->set_replay_max_bytes(f.replay.max_bytes);
    durability->set_replay_tail_bytes(f.replay.tail_bytes);
    durability->set_write_stalls(f.replay.stalls);
    durability->set_write_stalled(f.replay.stalled);
  }

  if (sources_.health) {
    response->set_health(sources_.health());
  } else {
    response->set_health(failure.has_value() ? "NOT_SERVING" : "SERVING");
  }
  response->set_indexer_epoch(sources_.indexer->IndexerEpoch());
  return grpc::Status::OK;
}

}  // namespace kvindexer
