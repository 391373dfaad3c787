#include "server/kv_indexer_service.h"

#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common/eviction_header.h"
#include "common/fidelity_header.h"
#include "common/heartbeat_header.h"
#include "core/prefix_answer.h"
#include "core/prefix_query.h"
#include "core/prefix_response_wire.h"
#include "core/request_validation.h"
#include "fmt/format.h"
#include "google/protobuf/arena.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "replica/replica_refusal.h"
#include "server/prefix_request_size.h"
#include "server/queue_refusal.h"
#include "server/transport_settings.h"

namespace kvindexer {
namespace {

namespace pb = ::google::protobuf;

// First arena block (on an executor thread's stack, or inside a
// PrefixCall): a router query of up to about a thousand hashes and its
// response need no further arena block.
constexpr size_t kInitialArenaBlockBytes = 8 * 1024;

pb::ArenaOptions InitialBlock(char* block, size_t size) {
  pb::ArenaOptions options;
  options.initial_block = block;
  options.initial_block_size = size;
  return options;
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status CheckRequestSize(const grpc::ByteBuffer& request) {
  const size_t size = request.Length();
  if (size <= kMaxRequestBytes) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                      fmt::format("request message is {} bytes; maximum is {}",
                                  size, kMaxRequestBytes));
}

// The heartbeat header of a call, parsed (the first value when the key
// repeats).
HeartbeatHeader HeartbeatOf(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(
      grpc::string_ref(kHeartbeatTtlHeader.data(), kHeartbeatTtlHeader.size()));
  if (it == metadata.end()) return HeartbeatHeader{};
  return HeartbeatHeader::Parse(
      std::string_view(it->second.data(), it->second.size()));
}

// One call's entry in the RPC metrics (server/rpc_metrics.h): Finish
// records the call, when metrics are attached, and finishes it.
struct CallRecord {
  RpcMetrics* metrics;  // null: nothing is recorded and `start` is unset
  const WallClock* clock;
  RpcMethod method;
  WallClock::TimePoint start;

  void Finish(grpc::ServerUnaryReactor* reactor, grpc::Status status) const {
    if (metrics != nullptr) {
      metrics->Record(method, status.error_code(), clock->Now() - start);
    }
    reactor->Finish(std::move(status));
  }
};

CallRecord StartRecord(RpcMetrics* metrics, const WallClock& clock,
                       RpcMethod method) {
  return CallRecord{metrics, &clock, method,
                    metrics != nullptr ? clock.Now() : WallClock::TimePoint{}};
}

// The fidelity header of a call, parsed (the first value when the key
// repeats; docs/admin-api.md, "The fidelity header").
FidelityHeader FidelityOf(const grpc::CallbackServerContext& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(
      grpc::string_ref(kFidelityHeader.data(), kFidelityHeader.size()));
  if (it == metadata.end()) return FidelityHeader{};
  return FidelityHeader::Parse(
      std::string_view(it->second.data(), it->second.size()));
}

// Tells the caller that the placement bound evicted placements of its
// stream (common/eviction_header.h). Called on the apply thread before the
// call is finished, which happens on the ack thread after it.
void MarkEvicted(grpc::CallbackServerContext* context) {
  context->AddTrailingMetadata(std::string(kEvictedHeader),
                               std::string(kEvictedValue));
}

// Decodes `request` into `message`. Reads the slices in place.
grpc::Status Decode(const grpc::ByteBuffer& request, pb::MessageLite* message) {
  // Copying a ByteBuffer only takes references to its slices.
  grpc::ByteBuffer slices(request);
  grpc::ProtoBufferReader reader(&slices);
  if (!reader.status().ok()) return reader.status();
  if (!message->ParseFromZeroCopyStream(&reader)) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        fmt::format("failed to decode the request as {}",
                                    message->GetTypeName()));
  }
  return grpc::Status::OK;
}

// Serializes `message` into one slice owned by `response`.
grpc::Status Encode(const pb::MessageLite& message,
                    grpc::ByteBuffer* response) {
  const size_t size = message.ByteSizeLong();
  if (size > INT_MAX) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "response message is too large to encode");
  }
  grpc::Slice slice(size);
  message.SerializeWithCachedSizesToArray(const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer encoded(&slice, 1);
  response->Swap(&encoded);
  return grpc::Status::OK;
}

// Writes the wire form of `answer` into one slice owned by `response`.
grpc::Status EncodePrefixAnswer(const PrefixAnswer& answer,
                                grpc::ByteBuffer* response) {
  const size_t size = PrefixResponseWireSize(answer);
  if (size > INT_MAX) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "response message is too large to encode");
  }
  grpc::Slice slice(size);
  WritePrefixResponseWire(answer, const_cast<uint8_t*>(slice.begin()));
  grpc::ByteBuffer encoded(&slice, 1);
  response->Swap(&encoded);
  return grpc::Status::OK;
}

// Decodes `request`, runs `serve` and encodes its response: everything of a
// unary call after the size check.
template <typename Request, typename Response, typename Serve>
grpc::Status DecodeServeEncode(const grpc::ByteBuffer& request,
                               grpc::ByteBuffer* response, Serve& serve) {
  alignas(8) char initial_block[kInitialArenaBlockBytes];
  pb::Arena arena(InitialBlock(initial_block, sizeof(initial_block)));
  auto* req = pb::Arena::CreateMessage<Request>(&arena);
  if (grpc::Status s = Decode(request, req); !s.ok()) return s;
  auto* resp = pb::Arena::CreateMessage<Response>(&arena);
  if (absl::Status s = serve(*req, resp); !s.ok()) return ToGrpcStatus(s);
  return Encode(*resp, response);
}

// Runs one unary call that is never shed or admitted: the size check on the
// callback thread, then decode, `serve` and encode on `executor`, whose
// queue is `queue`; a full queue refuses the call at once. The request
// and response buffers belong to the call and stay valid until the reactor
// finishes.
template <typename Request, typename Response, typename Serve>
grpc::ServerUnaryReactor* ServeUnaryOn(TaskExecutor& executor, WorkQueue queue,
                                       const CallRecord& record,
                                       grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response,
                                       Serve serve) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (grpc::Status s = CheckRequestSize(*request); !s.ok()) {
    record.Finish(reactor, std::move(s));
    return reactor;
  }
  if (!executor.TrySubmit(
          [record, reactor, request, response, serve]() mutable {
            record.Finish(reactor, DecodeServeEncode<Request, Response>(
                                       *request, response, serve));
          })) {
    record.Finish(reactor, QueueFullRefusal(queue, executor.capacity()));
  }
  return reactor;
}

// The answer of a mutation whose log is not durable yet: encoded at once
// (the messages live on the arena of the task that decided it), sent once
// the log is durable up to the mutation, or the failure instead.
struct DeferredAnswer {
  CallRecord record;
  grpc::ServerUnaryReactor* reactor;
  PendingAck ack;
  grpc::Status encoded;

  void operator()() const {
    const absl::Status s = ack.Wait();
    record.Finish(reactor, s.ok() ? encoded : ToGrpcStatus(s));
  }
};

// Finishes a decided mutation's call now when `ack` needs no wait (nullopt);
// otherwise returns its deferred answer, for the ack executor.
template <typename Response>
std::optional<DeferredAnswer> AnswerNowOrDefer(
    const CallRecord& record, grpc::ServerUnaryReactor* reactor, PendingAck ack,
    const Response& resp, grpc::ByteBuffer* response) {
  if (!ack.waits()) {
    const absl::Status s = ack.Wait();
    record.Finish(reactor, s.ok() ? Encode(resp, response) : ToGrpcStatus(s));
    return std::nullopt;
  }
  grpc::Status encoded = Encode(resp, response);
  return DeferredAnswer{record, reactor, std::move(ack), std::move(encoded)};
}

// What a mutation without an answer at once passes to ServeMutationOn.
struct NeverAtOnce {
  template <typename Request, typename Response>
  std::optional<PendingAck> operator()(const Request&, Response*) const {
    return std::nullopt;
  }
};

// A Configure's answer at once (IndexOperations::ConfigureIfUnchanged),
// tried only where it can be given: a replica's write-through never gives
// one, so its calls are not decoded twice.
struct ConfigureAtOnce {
  IndexOperations* writes;
  bool enabled;
  std::optional<PendingAck> operator()(
      const v1::ConfigureExpectedWorkersRequest& req,
      v1::ConfigureExpectedWorkersResponse* resp) const {
    return writes->ConfigureIfUnchanged(req, resp);
  }
};

// Answers on the callback thread a mutation that `at_once` can answer
// without waiting for the mutation mutex (an unchanged Configure:
// IndexOperations::ConfigureIfUnchanged). REQUIRES: every mutation accepted
// before it has finished. An answer that waits for the log
// goes to `acks`, as one from the apply thread does. False, with nothing
// changed and nothing sent, when `at_once` declines, the request does not
// decode, or `acks` is full: the call then takes the apply queue, which
// decides it (and reports a decoding error).
template <typename Request, typename Response, typename AtOnce>
bool AnswerAtOnce(TaskExecutor& acks, const CallRecord& record,
                  grpc::ServerUnaryReactor* reactor,
                  const grpc::ByteBuffer& request, grpc::ByteBuffer* response,
                  AtOnce& at_once) {
  alignas(8) char initial_block[kInitialArenaBlockBytes];
  pb::Arena arena(InitialBlock(initial_block, sizeof(initial_block)));
  auto* req = pb::Arena::CreateMessage<Request>(&arena);
  if (!Decode(request, req).ok()) return false;
  auto* resp = pb::Arena::CreateMessage<Response>(&arena);
  std::optional<PendingAck> ack = at_once(*req, resp);
  if (!ack.has_value()) return false;
  std::optional<DeferredAnswer> later =
      AnswerNowOrDefer(record, reactor, *std::move(ack), *resp, response);
  // Nothing was changed, so a full ack queue can still hand the call over.
  return !later.has_value() || acks.TrySubmit(*std::move(later));
}

// A mutation: like ServeUnaryOn on `applies`, but `serve` returns a
// PendingAck. An answer that must wait for the log to be durable is
// encoded at once (the request and response messages live on the apply
// task's arena) and handed to `acks`, whose single thread waits and
// finishes the calls in order while the apply thread goes on with the next
// mutation. The mutation has taken effect by then, so its answer is never
// dropped: when `acks` is full, the apply thread waits and answers itself
// (counted in `ack_queue_full`).
// `authorizer` (null: open) runs first, on the callback thread; then a
// replica refuses (replica/replica_refusal.h); then the size check, an
// answer at once when `at_once` gives one (AnswerAtOnce), and the apply
// queue's bound.
template <typename Request, typename Response, typename Serve,
          typename AtOnce = NeverAtOnce>
grpc::ServerUnaryReactor* ServeMutationOn(
    TaskExecutor& applies, TaskExecutor& acks,
    std::atomic<uint64_t>& ack_queue_full, const WriteAuthorizer* authorizer,
    bool replica, std::string_view method, const CallRecord& record,
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response, Serve serve, AtOnce at_once = AtOnce()) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (authorizer != nullptr) {
    if (grpc::Status s = authorizer->Check(*context, method); !s.ok()) {
      record.Finish(reactor, std::move(s));
      return reactor;
    }
  }
  if (replica) {
    record.Finish(reactor, replica::ReplicaRefusal(method));
    return reactor;
  }
  if (grpc::Status s = CheckRequestSize(*request); !s.ok()) {
    record.Finish(reactor, std::move(s));
    return reactor;
  }
  if constexpr (!std::is_same_v<AtOnce, NeverAtOnce>) {
    // Only behind no mutation received before it: mutations take effect in
    // the order they were received, a decision at once included.
    if (at_once.enabled && applies.unfinished() == 0 &&
        AnswerAtOnce<Request, Response>(acks, record, reactor, *request,
                                        response, at_once)) {
      return reactor;
    }
  }
  const bool accepted =
      applies.TrySubmit([&acks, &ack_queue_full, record, reactor, request,
                         response, serve]() mutable {
        alignas(8) char initial_block[kInitialArenaBlockBytes];
        pb::Arena arena(InitialBlock(initial_block, sizeof(initial_block)));
        auto* req = pb::Arena::CreateMessage<Request>(&arena);
        if (grpc::Status s = Decode(*request, req); !s.ok()) {
          record.Finish(reactor, std::move(s));
          return;
        }
        auto* resp = pb::Arena::CreateMessage<Response>(&arena);
        const std::optional<DeferredAnswer> later = AnswerNowOrDefer(
            record, reactor, serve(*req, resp), *resp, response);
        if (later.has_value() && !acks.TrySubmit(*later)) {
          ack_queue_full.fetch_add(1, std::memory_order_relaxed);
          (*later)();
        }
      });
  if (!accepted) {
    record.Finish(reactor,
                  QueueFullRefusal(WorkQueue::kApply, applies.capacity()));
  }
  return reactor;
}

}  // namespace

// One admitted prefix query on its way to the scan executor. Owns the arena
// that holds its request.
struct KvIndexerService::PrefixCall {
  PrefixCall()
      : arena(InitialBlock(initial_block, sizeof(initial_block))),
        request(pb::Arena::CreateMessage<v1::MatchExternalKvPrefixRequest>(
            &arena)) {}

  alignas(8) char initial_block[kInitialArenaBlockBytes];
  pb::Arena arena;
  v1::MatchExternalKvPrefixRequest* request;
  PrefixAdmission::Permit permit;
};

KvIndexerService::KvIndexerService(
    IndexOperations& operations, uint32_t prefix_query_max_inflight,
    const WallClock& clock, RejectionLog* rejection_log, bool read_heartbeats,
    const WriteAuthorizer* write_authorizer, const QueueLimits& queues,
    int apply_nice_increment)
    : operations_(&operations),
      read_heartbeats_(read_heartbeats),
      write_authorizer_(write_authorizer != nullptr &&
                                write_authorizer->enabled()
                            ? write_authorizer
                            : nullptr),
      admission_(prefix_query_max_inflight),
      shedder_(clock),
      rejection_log_(rejection_log != nullptr ? rejection_log
                                              : &own_rejection_log_),
      // Every queued scan holds one of the admission permits.
      scans_(prefix_query_max_inflight, "kvidx-scan",
             prefix_query_max_inflight),
      acks_(1, "kvidx-ack", queues.apply),
      applies_(kApplyThreads, "kvidx-apply", queues.apply,
               apply_nice_increment),
      lookups_(kLookupThreads, "kvidx-lookup", queues.lookup) {}

void KvIndexerService::AttachMetrics(RpcMetrics* rpc, Histogram* apply_wait) {
  rpc_metrics_ = rpc;
  applies_.ObserveWaitsInto(apply_wait);
}

void KvIndexerService::CountQueueRejectionsInto(Counter* apply_rejections,
                                                Counter* lookup_rejections) {
  applies_.CountRejectionsInto(apply_rejections);
  lookups_.CountRejectionsInto(lookup_rejections);
}

grpc::ServerUnaryReactor* KvIndexerService::ApplyExternalKvBatch(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  HeartbeatHeader heartbeat;
  if (read_heartbeats_) heartbeat = HeartbeatOf(*context);
  return ServeMutationOn<v1::ApplyExternalKvBatchRequest,
                         v1::ApplyExternalKvBatchResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/ApplyExternalKvBatch",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kApplyExternalKvBatch),
      context, request, response,
      // The peer names the sender for duplicate-claim detection.
      [this, context, peer = context->peer(), heartbeat = std::move(heartbeat),
       fidelity = FidelityOf(*context)](
          const v1::ApplyExternalKvBatchRequest& req,
          v1::ApplyExternalKvBatchResponse* resp) {
        bool evicted = false;
        PendingAck ack = writes_->Apply(req, resp,
                                        {.peer = peer,
                                         .heartbeat = heartbeat,
                                         .fidelity = fidelity,
                                         .evicted = &evicted});
        if (evicted) MarkEvicted(context);
        return ack;
      });
}

grpc::ServerUnaryReactor* KvIndexerService::ReplaceExternalKvSnapshot(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::ReplaceExternalKvSnapshotRequest,
                         v1::ReplaceExternalKvSnapshotResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/ReplaceExternalKvSnapshot",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kReplaceExternalKvSnapshot),
      context, request, response,
      [this, context, peer = context->peer(), fidelity = FidelityOf(*context)](
          const v1::ReplaceExternalKvSnapshotRequest& req,
          v1::ReplaceExternalKvSnapshotResponse* resp) {
        bool evicted = false;
        PendingAck ack = writes_->Replace(
            req, resp,
            {.peer = peer, .fidelity = fidelity, .evicted = &evicted});
        if (evicted) MarkEvicted(context);
        return ack;
      });
}

grpc::ServerUnaryReactor* KvIndexerService::ConfigureExpectedWorkers(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::ConfigureExpectedWorkersRequest,
                         v1::ConfigureExpectedWorkersResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/ConfigureExpectedWorkers",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kConfigureExpectedWorkers),
      context, request, response,
      [this](const v1::ConfigureExpectedWorkersRequest& req,
             v1::ConfigureExpectedWorkersResponse* resp) {
        return writes_->Configure(req, resp);
      },
      // A heartbeat that changes nothing is decided here when nothing is
      // ahead of it, without the hand-off to the apply thread.
      ConfigureAtOnce{.writes = writes_, .enabled = writes_ == operations_});
}

grpc::ServerUnaryReactor* KvIndexerService::InvalidateWorker(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::InvalidateWorkerRequest,
                         v1::InvalidateWorkerResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/InvalidateWorker",
      StartRecord(rpc_metrics_, shedder_.clock(), RpcMethod::kInvalidateWorker),
      context, request, response,
      [this](const v1::InvalidateWorkerRequest& req,
             v1::InvalidateWorkerResponse* resp) {
        return writes_->Invalidate(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::BeginExternalKvSnapshot(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::BeginExternalKvSnapshotRequest,
                         v1::BeginExternalKvSnapshotResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/BeginExternalKvSnapshot",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kBeginExternalKvSnapshot),
      context, request, response,
      [this](const v1::BeginExternalKvSnapshotRequest& req,
             v1::BeginExternalKvSnapshotResponse* resp) {
        return writes_->Begin(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::AppendExternalKvSnapshot(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::AppendExternalKvSnapshotRequest,
                         v1::AppendExternalKvSnapshotResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/AppendExternalKvSnapshot",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kAppendExternalKvSnapshot),
      context, request, response,
      [this](const v1::AppendExternalKvSnapshotRequest& req,
             v1::AppendExternalKvSnapshotResponse* resp) {
        return writes_->Append(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::CommitExternalKvSnapshot(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::CommitExternalKvSnapshotRequest,
                         v1::CommitExternalKvSnapshotResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/CommitExternalKvSnapshot",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kCommitExternalKvSnapshot),
      context, request, response,
      [this, context](const v1::CommitExternalKvSnapshotRequest& req,
                      v1::CommitExternalKvSnapshotResponse* resp) {
        bool evicted = false;
        PendingAck ack = writes_->Commit(req, resp, {.evicted = &evicted});
        if (evicted) MarkEvicted(context);
        return ack;
      });
}

grpc::ServerUnaryReactor* KvIndexerService::AbortExternalKvSnapshot(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeMutationOn<v1::AbortExternalKvSnapshotRequest,
                         v1::AbortExternalKvSnapshotResponse>(
      applies_, acks_, ack_queue_full_, write_authorizer_, RefusesWrites(),
      "/kv_indexer.v1.KVIndexer/AbortExternalKvSnapshot",
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kAbortExternalKvSnapshot),
      context, request, response,
      [this](const v1::AbortExternalKvSnapshotRequest& req,
             v1::AbortExternalKvSnapshotResponse* resp) {
        return writes_->Abort(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::MatchExternalKv(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeUnaryOn<v1::MatchExternalKvRequest, v1::MatchExternalKvResponse>(
      lookups_, WorkQueue::kLookup,
      StartRecord(rpc_metrics_, shedder_.clock(), RpcMethod::kMatchExternalKv),
      context, request, response,
      [this](const v1::MatchExternalKvRequest& req,
             v1::MatchExternalKvResponse* resp) {
        return operations_->Match(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::GetExternalKvHitCounts(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return ServeUnaryOn<v1::GetExternalKvHitCountsRequest,
                      v1::GetExternalKvHitCountsResponse>(
      lookups_, WorkQueue::kLookup,
      StartRecord(rpc_metrics_, shedder_.clock(),
                  RpcMethod::kGetExternalKvHitCounts),
      context, request, response,
      [this](const v1::GetExternalKvHitCountsRequest& req,
             v1::GetExternalKvHitCountsResponse* resp) {
        return operations_->HitCounts(req, resp);
      });
}

grpc::ServerUnaryReactor* KvIndexerService::MatchExternalKvPrefix(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  // The arrival stamp comes first, before any other work.
  const WallClock::TimePoint arrival = shedder_.clock().Now();
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const CallRecord record{rpc_metrics_, &shedder_.clock(),
                          RpcMethod::kMatchExternalKvPrefix, arrival};

  // Steps 1 and 2 first, so that an oversize or shed query costs nothing
  // more.
  if (grpc::Status s = PrecheckPrefix(arrival, context->deadline(), *request);
      !s.ok()) {
    record.Finish(reactor, std::move(s));
    return reactor;
  }

  // With an inline slot free, the rest runs here, on the callback thread,
  // with its arena on the stack: no allocation for the call and no thread
  // hand-off (see kInlineScanSlots).
  if (PrefixAdmission::Permit inline_slot = inline_scans_.TryAcquire()) {
    grpc::Status s;
    {
      alignas(8) char initial_block[kInitialArenaBlockBytes];
      pb::Arena arena(InitialBlock(initial_block, sizeof(initial_block)));
      auto* req =
          pb::Arena::CreateMessage<v1::MatchExternalKvPrefixRequest>(&arena);
      PrefixAdmission::Permit permit;
      s = DecodeAndAdmitPrefix(*request, req, &permit);
      if (s.ok()) s = ScanPrefix(*req, permit, response);
    }
    // Free before Finish: gRPC may send the answer inside Finish, and the
    // client's next query must find the slot free.
    inline_slot.Release();
    record.Finish(reactor, std::move(s));
    return reactor;
  }

  auto call = std::make_unique<PrefixCall>();
  if (grpc::Status s =
          DecodeAndAdmitPrefix(*request, call->request, &call->permit);
      !s.ok()) {
    record.Finish(reactor, std::move(s));
    return reactor;
  }
  // The task owns the call once it is accepted. A refusal cannot happen
  // (the permit bounds the queue), but would leave `call` here to free.
  PrefixCall* const raw = call.get();
  if (scans_.TrySubmit([this, raw, record, reactor, response] {
        const std::unique_ptr<PrefixCall> owned(raw);
        record.Finish(reactor,
                      ScanPrefix(*owned->request, owned->permit, response));
      })) {
    (void)call.release();
  } else {
    call.reset();  // gives the permit back
    rejection_log_->RecordOverload();
    record.Finish(reactor, grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                        std::string(kOverloadStatusMessage)));
  }
  return reactor;
}

grpc::Status KvIndexerService::PrecheckPrefix(WallClock::TimePoint arrival,
                                              WallClock::TimePoint deadline,
                                              const grpc::ByteBuffer& request) {
  // Oversize requests never reach the handler in the reference
  // implementation, so their status wins over shedding.
  if (grpc::Status s = CheckPrefixRequestSize(request); !s.ok()) return s;

  if (const ShedDecision shed = shedder_.DecideByDeadline(arrival, deadline);
      shed.shed) {
    rejection_log_->RecordShed(shed.waited, shed.budget);
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        std::string(kShedStatusMessage));
  }
  return grpc::Status::OK;
}

grpc::Status KvIndexerService::DecodeAndAdmitPrefix(
    const grpc::ByteBuffer& request, v1::MatchExternalKvPrefixRequest* decoded,
    PrefixAdmission::Permit* permit) {
  if (grpc::Status s = Decode(request, decoded); !s.ok()) return s;
  if (absl::Status s = ValidatePrefix(*decoded); !s.ok()) {
    return ToGrpcStatus(s);
  }
  *permit = admission_.TryAcquire();
  if (!*permit) {
    rejection_log_->RecordOverload();
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        std::string(kOverloadStatusMessage));
  }
  return grpc::Status::OK;
}

grpc::Status KvIndexerService::ScanPrefix(
    const v1::MatchExternalKvPrefixRequest& request,
    PrefixAdmission::Permit& permit, grpc::ByteBuffer* response) {
  grpc::Status encoded = grpc::Status::OK;
  const absl::Status s =
      operations_->MatchPrefix(request, [&](const PrefixAnswer& answer) {
        // The permit bounds scans, not the encoding of their answers.
        permit.Release();
        encoded = EncodePrefixAnswer(answer, response);
        // An answer is handed over only on OK, so an encoded one is sent.
        if (prefix_hits_ != nullptr && encoded.ok()) {
          prefix_hits_->Record(static_cast<uint32_t>(PrefixLimit(
                                   static_cast<size_t>(request.hashes_size()),
                                   request.max_blocks())),
                               answer);
        }
      });
  permit.Release();
  return s.ok() ? encoded : ToGrpcStatus(s);
}

}  // namespace kvindexer
