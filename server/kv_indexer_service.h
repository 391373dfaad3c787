// KvIndexerService: the kv_indexer.v1.KVIndexer gRPC service on the callback
// API, over the Indexer's IndexOperations (core/index_operations.h;
// docs/contract.md, "ApplyExternalKvBatch" to "Rejection logging").
//
// Every method is registered as a raw method (grpc::ByteBuffer in and out), so
// the service sees a request's serialized size before decoding it: a request
// larger than kMaxRequestBytes is refused with OUT_OF_RANGE as the reference
// implementation does (docs/contract.md, "Transport > Request size").
// Requests and responses live on a per-call
// protobuf Arena; hash arrays are not copied beyond protobuf parsing.
//
// MatchExternalKvPrefix runs, in order:
//   1. the size check (OUT_OF_RANGE);
//   2. deadline shedding: the call is stamped with clock.Now() on entry; it is
//      shed with DEADLINE_EXCEEDED when the clock has reached the absolute
//      deadline gRPC derived from the grpc-timeout header at arrival (gRPC C++
//      does not expose the header itself to the application);
//   3. decoding and validation (INVALID_ARGUMENT);
//   4. admission: a non-blocking permit (RESOURCE_EXHAUSTED);
//   5. the scan, holding the permit: on the callback thread itself while one
//      of kInlineScanSlots is free, otherwise on the scan executor.
// Steps 1 to 4 run on gRPC's callback thread, so a rejection is immediate.
//
// The other methods are never shed and never take a permit. On the
// callback thread they only run the size check (OUT_OF_RANGE, before any
// decoding); decoding, the Indexer call and encoding run on an executor:
//   - the mutations, ApplyExternalKvBatch, ReplaceExternalKvSnapshot,
//     ConfigureExpectedWorkers, InvalidateWorker and the staged snapshot
//     calls (Begin, Append, Commit and AbortExternalKvSnapshot), on the
//     apply executor (kApplyThreads
//     threads), which prefix queries never occupy, so a mutation never waits
//     for a prefix permit or a scan. With one thread, mutations run one at a
//     time in the order their requests were received (docs/contract.md,
//     "Recovery > One writer"). The exception is a Configure that changes
//     nothing: it is decided on the callback thread when no mutation
//     received before it is unfinished and the mutation mutex is free
//     (IndexOperations::ConfigureIfUnchanged), and answered there, or by
//     the ack executor when the log must catch up first. With a data
//     directory a mutation's answer
//     waits for its log record to be durable; that wait runs on the ack
//     executor (one thread, answers in order), so that the apply thread
//     logs the next mutation while a sync runs and one sync acknowledges
//     every mutation it covers (docs/durability.md, "The write-ahead
//     log");
//   - MatchExternalKv and GetExternalKvHitCounts on the lookup executor
//     (kLookupThreads threads): a backend may serve them under an exclusive
//     lock (counting matches), and they must not wait for it on a callback
//     thread.
// See task_executor.h for why work leaves gRPC's callback threads.
//
// The mutations first check the write token (server/write_authorizer.h)
// on the callback thread, before the size check: a peer without the token
// learns nothing about the request bounds and costs no more than a metadata
// lookup; refusals are UNAUTHENTICATED or PERMISSION_DENIED
// (docs/security.md, "Refusals"). The reads (MatchExternalKv,
// MatchExternalKvPrefix, GetExternalKvHitCounts) never look at it.
// A replica of the fleet event log (FollowLog()) then refuses them with
// FAILED_PRECONDITION (replica/replica_refusal.h); its reads are unchanged.
//
// ApplyExternalKvBatch also reads the request metadata
// `kv-indexer-heartbeat-ttl-ms` on the callback thread and passes its parsed
// form to IndexOperations::Apply, which marks the worker when the request
// passes validation (docs/contract.md, "Recovery > Worker liveness and
// removal"). A service built with read_heartbeats false ignores the header, as
// a server without liveness does. ApplyExternalKvBatch and
// ReplaceExternalKvSnapshot read `kv-indexer-fidelity` the same way and pass it
// on (advisory; docs/admin-api.md, "The fidelity header").
//
// Every queue is bounded (server/queue_config.h). A call that finds its
// executor's queue full is answered RESOURCE_EXHAUSTED on the callback
// thread, before its request is decoded (server/queue_refusal.h): a refused
// mutation has changed nothing, and the bridge sends it again after its
// backoff. The ack executor never refuses: its tasks are mutations that
// already took effect. Its queue holds as many answers as the apply queue
// holds mutations; when it is full, the apply thread waits for the log
// itself before it takes the next mutation, so that applies slow down and
// the apply queue, not the ack queue, refuses (counted in
// kvindexer_ack_queue_full_total). The scan executor's queue cannot
// overflow: each queued scan holds an admission permit.
//
// No thread is created per call. The only lock the service itself takes is
// an executor's queue lock, once per call handed to it; a prefix query run
// inline takes none and allocates nothing of its own beyond the response
// (but for the first best match of a worker in the prefix reuse metrics,
// server/prefix_hit_metrics.h).
//
// Thread safety: all methods may run concurrently (IndexOperations is
// thread-safe).
#ifndef KVINDEXER_SERVER_KV_INDEXER_SERVICE_H_
#define KVINDEXER_SERVER_KV_INDEXER_SERVICE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/clock.h"
#include "core/index_operations.h"
#include "grpcpp/grpcpp.h"
#include "kv_indexer.grpc.pb.h"
#include "kvindexer/backend.h"
#include "server/deadline_shedder.h"
#include "server/prefix_admission.h"
#include "server/prefix_hit_metrics.h"
#include "server/queue_config.h"
#include "server/rejection_log.h"
#include "server/rpc_metrics.h"
#include "server/task_executor.h"
#include "server/write_authorizer.h"

namespace kvindexer {

inline constexpr std::string_view kShedStatusMessage =
    "prefix query waited longer than its caller deadline";
inline constexpr std::string_view kOverloadStatusMessage =
    "too many in-flight prefix queries";

namespace internal {
using KVIndexer = ::kv_indexer::v1::KVIndexer;
using RawKvIndexerService = KVIndexer::WithRawCallbackMethod_ConfigureExpectedWorkers<
    KVIndexer::WithRawCallbackMethod_InvalidateWorker<
        KVIndexer::WithRawCallbackMethod_ReplaceExternalKvSnapshot<
            KVIndexer::WithRawCallbackMethod_BeginExternalKvSnapshot<
                KVIndexer::WithRawCallbackMethod_AppendExternalKvSnapshot<
                    KVIndexer::WithRawCallbackMethod_CommitExternalKvSnapshot<
                        KVIndexer::WithRawCallbackMethod_AbortExternalKvSnapshot<
                            KVIndexer::WithRawCallbackMethod_ApplyExternalKvBatch<
                                KVIndexer::WithRawCallbackMethod_MatchExternalKv<
                                    KVIndexer::
                                        WithRawCallbackMethod_MatchExternalKvPrefix<
                                            KVIndexer::
                                                WithRawCallbackMethod_GetExternalKvHitCounts<
                                                    KVIndexer::
                                                        Service>>>>>>>>>>>;
}  // namespace internal

// Threads that decode and run mutations. The Indexer and the backends
// serialise them anyway, so a second thread would only overlap one apply's
// decoding with another's apply, while taking a second core from prefix
// queries on small machines; and it would let a later request overtake an
// earlier one. Must stay 1.
inline constexpr size_t kApplyThreads = 1;
static_assert(kApplyThreads == 1, "mutations must keep their arrival order");
// Nice levels the apply thread runs below the rest of the server, so that a
// long apply yields the CPU to prefix scans and to gRPC's threads when both
// want it. It still runs whenever a core is free; under CPU saturation by
// queries an apply takes longer, but it never waits for a permit or a scan.
// Only for a backend whose queries never wait for a mutation: where a query
// can wait for the apply, a lowered apply thread would keep every such
// query waiting while the queries' own threads take its CPU.
inline constexpr int kApplyNiceIncrement = 10;
// The apply thread's nice increment for a backend that says `concurrency`.
constexpr int ApplyNiceIncrementFor(ReadConcurrency concurrency) {
  return concurrency == ReadConcurrency::kReadersNeverWait ? kApplyNiceIncrement
                                                           : 0;
}
// Prefix queries that may run at once on gRPC's callback threads instead of
// being handed to the scan executor. Handing a query to another thread costs
// a wake-up and a context switch, which on a 2-core machine is several times
// the scan of a 128-block query (BENCHMARKS.md). gRPC 1.51 runs callbacks on
// at least two threads; keeping all but one of them free of scans means a
// scan that takes long (or a backend that blocks) never stops the server from
// rejecting surplus queries or taking applies. A query that finds no slot
// free is handed to the executor. Inline scans also hold an admission permit.
inline constexpr uint32_t kInlineScanSlots = 1;
// Threads that run MatchExternalKv and GetExternalKvHitCounts.
inline constexpr size_t kLookupThreads = 2;

class KvIndexerService final : public internal::RawKvIndexerService {
 public:
  // REQUIRES: operations, clock and rejection_log outlive the service;
  // prefix_query_max_inflight > 0. OWNERSHIP: nothing is taken. A null
  // rejection_log means an internal one that logs through spdlog. A null
  // or disabled write_authorizer leaves the mutations open; otherwise it
  // must outlive the service. `queues` bounds the apply (and ack) and
  // lookup queues; the apply thread runs `apply_nice_increment` nice levels
  // below the server (ApplyNiceIncrementFor).
  KvIndexerService(IndexOperations& operations,
                   uint32_t prefix_query_max_inflight, const WallClock& clock,
                   RejectionLog* rejection_log = nullptr,
                   bool read_heartbeats = true,
                   const WriteAuthorizer* write_authorizer = nullptr,
                   const QueueLimits& queues = QueueLimits{},
                   int apply_nice_increment = kApplyNiceIncrement);
  KvIndexerService(const KvIndexerService&) = delete;
  KvIndexerService& operator=(const KvIndexerService&) = delete;

  // The generated base classes also declare the (disabled) synchronous
  // overloads; these using-declarations keep them visible.
  using internal::RawKvIndexerService::AbortExternalKvSnapshot;
  using internal::RawKvIndexerService::AppendExternalKvSnapshot;
  using internal::RawKvIndexerService::ApplyExternalKvBatch;
  using internal::RawKvIndexerService::BeginExternalKvSnapshot;
  using internal::RawKvIndexerService::CommitExternalKvSnapshot;
  using internal::RawKvIndexerService::ConfigureExpectedWorkers;
  using internal::RawKvIndexerService::GetExternalKvHitCounts;
  using internal::RawKvIndexerService::MatchExternalKv;
  using internal::RawKvIndexerService::MatchExternalKvPrefix;
  using internal::RawKvIndexerService::ReplaceExternalKvSnapshot;

  grpc::ServerUnaryReactor* ConfigureExpectedWorkers(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* InvalidateWorker(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReplaceExternalKvSnapshot(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* BeginExternalKvSnapshot(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* AppendExternalKvSnapshot(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CommitExternalKvSnapshot(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* AbortExternalKvSnapshot(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ApplyExternalKvBatch(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* MatchExternalKv(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* MatchExternalKvPrefix(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetExternalKvHitCounts(
      grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
      grpc::ByteBuffer* response) override;

  const PrefixAdmission& admission() const { return admission_; }
  // Null when mutations are open.
  const WriteAuthorizer* write_authorizer() const { return write_authorizer_; }
  const RejectionLog& rejection_log() const { return *rejection_log_; }

  // Metrics (docs/metrics.md): from now on every call is counted and timed
  // into `rpc`, and each mutation's wait in the apply queue is observed into
  // `apply_wait`. REQUIRES: called before the service is registered with a
  // server; both outlive the service.
  void AttachMetrics(RpcMetrics* rpc, Histogram* apply_wait);
  // From now on every MatchExternalKvPrefix answered OK is counted into
  // `hits`. REQUIRES: as for AttachMetrics.
  void CountPrefixHitsInto(PrefixHitMetrics* hits) { prefix_hits_ = hits; }
  // From now on a mutation refused by a full apply queue increments
  // `apply_rejections`, and a call refused by a full lookup queue
  // `lookup_rejections`. REQUIRES: as for AttachMetrics.
  void CountQueueRejectionsInto(Counter* apply_rejections,
                                Counter* lookup_rejections);
  // The server is a replica of the fleet event log
  // (KV_INDEXER_EVENT_SOURCE=jetstream): from now on the mutations
  // answer FAILED_PRECONDITION once the write token is checked. REQUIRES:
  // called before the service is registered with a server.
  void FollowLog() { replica_ = true; }
  bool follows_log() const { return replica_; }
  // A replica that writes line-A writes through to the log
  // (replica/write_through.h): from now on the mutations are served by
  // `writes`, which refuses what it does not write through, instead of
  // being refused here. REQUIRES: FollowLog was called; called before the
  // service is registered with a server; `writes` outlives the service.
  void WriteThroughLog(IndexOperations* writes) { writes_ = writes; }
  // Mutations waiting for the apply thread.
  size_t apply_queue_depth() const { return applies_.depth(); }
  // Mutations accepted by the apply executor and not yet finished.
  size_t apply_unfinished() const { return applies_.unfinished(); }
  // Answers waiting for the log's sync.
  size_t ack_queue_depth() const { return acks_.depth(); }
  // Calls waiting for a lookup thread.
  size_t lookup_queue_depth() const { return lookups_.depth(); }
  // Mutations refused because the apply queue was full, and lookups
  // refused because the lookup queue was full.
  uint64_t apply_rejected_total() const { return applies_.rejected_total(); }
  uint64_t lookup_rejected_total() const { return lookups_.rejected_total(); }
  // Answers the apply thread waited for itself because the ack queue was
  // full.
  uint64_t ack_queue_full_total() const {
    return ack_queue_full_.load(std::memory_order_relaxed);
  }

 private:
  struct PrefixCall;

  // Steps 1 and 2 of MatchExternalKvPrefix (size check, deadline shed), on
  // the callback thread.
  grpc::Status PrecheckPrefix(WallClock::TimePoint arrival,
                              WallClock::TimePoint deadline,
                              const grpc::ByteBuffer& request);
  // Steps 3 and 4 (decode and validate, admission), on the callback thread.
  // The only validation a prefix query gets. On OK, *decoded holds the
  // request and *permit a held admission permit.
  grpc::Status DecodeAndAdmitPrefix(const grpc::ByteBuffer& request,
                                    v1::MatchExternalKvPrefixRequest* decoded,
                                    PrefixAdmission::Permit* permit);
  // The scan of one admitted query: runs it, releases `permit` and writes
  // the answer's wire form (prefix_response_wire.h) into `response`.
  // REQUIRES: DecodeAndAdmitPrefix accepted `request`.
  grpc::Status ScanPrefix(const v1::MatchExternalKvPrefixRequest& request,
                          PrefixAdmission::Permit& permit,
                          grpc::ByteBuffer* response);

  IndexOperations* operations_;
  const bool read_heartbeats_;
  bool replica_ = false;
  // What serves the mutations: operations_, or a replica's write-through.
  IndexOperations* writes_ = operations_;
  // A replica without a write-through refuses every mutation.
  bool RefusesWrites() const { return replica_ && writes_ == operations_; }
  // Null when mutations are open.
  const WriteAuthorizer* write_authorizer_;
  PrefixAdmission admission_;
  PrefixAdmission inline_scans_{kInlineScanSlots};
  DeadlineShedder shedder_;
  RpcMetrics* rpc_metrics_ = nullptr;        // null: calls are not recorded
  PrefixHitMetrics* prefix_hits_ = nullptr;  // null: answers are not counted
  RejectionLog own_rejection_log_;
  RejectionLog* rejection_log_;
  std::atomic<uint64_t> ack_queue_full_{0};
  // Last: their destructors run pending calls, which use the members above.
  // acks_ before applies_: the apply thread hands answers to it, so it must
  // be destroyed (and drained) after the apply executor.
  TaskExecutor scans_;
  TaskExecutor acks_;
  TaskExecutor applies_;
  TaskExecutor lookups_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_KV_INDEXER_SERVICE_H_
