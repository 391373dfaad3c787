// The kvindexer backend ABI: the only interface a storage backend implements.
//
// A backend is a shared object loaded with dlopen(RTLD_NOW | RTLD_LOCAL). It
// exports exactly one symbol, kvindexer_backend_descriptor (see the bottom of
// this file), which returns a static descriptor. The host checks the
// descriptor's ABI numbers and size before it touches anything else.
//
// ABI rules ("C++ as extended C"; docs/backend-abi.md has the full set):
//   * Only plain data crosses the boundary: fixed-width integers, views
//     (pointer and length), and the POD structs below. No std::string,
//     std::vector, abseil, protobuf or spdlog types.
//   * Every virtual function is noexcept. Nothing throws across the boundary;
//     failures come back as a BackendStatus.
//   * Structs that may grow carry their size first; new members are only ever
//     appended, each labelled with the ABI minor version that added it.
//   * Virtual function order is frozen for a given ABI major version. A new
//     virtual function is appended and bumps the minor version.
//   * Every virtual function a minor version added has a default that answers
//     kUnimplemented, so a backend written against an older minor still
//     compiles; the host then uses it as a backend of that older minor
//     (docs/backend-abi.md, "Source compatibility across minors").
//   * The library handle outlives every object created from it.
//
// Semantics live in the host, not here. The host validates every request,
// collapses repeated hashes, and runs the FULL/SWA/MAMBA prefix rules. A
// backend stores placements, applies batches atomically, and hands the host
// consistent views of blocks and workers. The conformance suite in
// tests/conformance checks every obligation written below.
//
// Thread safety: every IndexBackend method may be called concurrently from any
// number of threads, in any combination. Each call observes one consistent
// snapshot of the index: all of an Apply or none of it.
#ifndef KVINDEXER_BACKEND_H_
#define KVINDEXER_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

namespace kvindexer {

// Version of this header. The host refuses a backend whose major differs, or
// whose minor is greater than the host's (it may call functions the host does
// not know). It accepts a backend built against an older minor, and then never
// calls a virtual function or reads a struct member added after that minor.
inline constexpr uint32_t kBackendAbiMajor = 1;
inline constexpr uint32_t kBackendAbiMinor = 4;

// Status codes. The values are the gRPC canonical codes, so the host maps them
// one to one.
//
// kInternal from a mutation (Apply, RemoveWorker) tells the host that the
// backend cannot continue: its state can no longer be trusted to take
// writes, whatever it answers next. The host records the first one, keeps
// serving reads and reports NOT_SERVING on grpc.health.v1 until restarted
// (docs/health.md, "When the backend fails"). A failure that a later call
// may not meet (out of memory, a bad argument) must use another code,
// such as kResourceExhausted or kInvalidArgument, and leave the state as
// it was.
//
// kUnimplemented is what IndexBackend's default of a call that a minor
// version added returns (see RemoveWorker below): the backend does not
// implement that call. It is the only code the host reads as "this backend
// lacks the call" rather than as a failure; a backend never returns it from
// a call it implements.
enum class BackendCode : int32_t {
  kOk = 0,
  kInvalidArgument = 3,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
};

// The result of a fallible backend call. OK costs one integer comparison.
// `message` is NUL-terminated; it is empty when code is kOk.
struct BackendStatus {
  BackendCode code;
  char message[220];
};

// Pointer+length views. The memory is owned by whoever passes the view and is
// valid only for the duration of the call (or callback) that receives it.
struct HashSpan {
  const int64_t* data;
  size_t size;
};

struct U32Span {
  const uint32_t* data;
  size_t size;
};

struct StringView {
  const char* data;  // not NUL-terminated
  size_t size;
};

// Raw enum numbers of kv_indexer.v1 (docs/contract.md,
// "Enums and bit constants"). Tiers are 1..3 by the
// time a batch reaches a backend.
enum : uint32_t {
  kTierHbm = 1,
  kTierDram = 2,
  kTierSsd = 3,
  kMaxTier = 3,
};

enum : uint32_t {
  kActionReport = 1,
  kActionRevoke = 2,
  kActionClearAllAtTier = 3,
};

// WorkerCacheSpec, field for field. Backends store it and give it back; they
// never interpret it.
struct CacheSpec {
  uint32_t version;
  uint32_t components;
  uint32_t swa_window_tokens;
  uint32_t full_tier_mask;
  uint32_t swa_tier_mask;
  uint32_t mamba_tier_mask;
};

// One validated action. For REPORT, `component_masks` and `block_sizes` are
// either empty or exactly `hashes.size` long, and `hashes` holds no repeated
// value (the host has already kept only each hash's last occurrence). REVOKE
// and CLEAR carry no side arrays; CLEAR carries no hashes.
struct ActionView {
  uint32_t type;  // kActionReport, kActionRevoke or kActionClearAllAtTier
  uint32_t tier;  // kTierHbm, kTierDram or kTierSsd
  HashSpan hashes;
  U32Span component_masks;
  U32Span block_sizes;
};

// One validated ApplyExternalKvBatch request.
struct ApplyBatchView {
  StringView worker_id;  // never empty
  StringView worker_address;
  uint32_t has_cache_spec;  // 0: absent, which clears any stored spec
  CacheSpec cache_spec;     // meaningful only when has_cache_spec != 0
  const ActionView* actions;
  size_t action_count;
};

// A worker as the backend knows it. `worker` is a small dense ordinal the
// backend assigns when it first sees a worker id. Under ABI 1.0 records are
// never deleted and ordinals never reused. From ABI 1.1 RemoveWorker deletes a
// record and frees its ordinal, which a worker seen later may receive; within
// one call's snapshot an ordinal always names one worker.
struct WorkerView {
  uint32_t worker;
  StringView id;
  StringView address;
  uint32_t has_cache_spec;
  CacheSpec cache_spec;
};

// One placement of a block: (worker, tier) -> component mask.
struct Placement {
  uint32_t worker;
  uint32_t tier;
  uint32_t mask;
};

// Read-only view of one block within a snapshot.
struct BlockView {
  size_t index;          // position in the hash list the call was given
  uint32_t token_count;  // 0 when unknown or when the block is absent
  const Placement* placements;
  size_t placement_count;  // 0 when the block is absent
};

// Implemented by the host to receive the results of Match and PrefixScan.
// Every view is valid only during the callback that receives it.
class BlockVisitor {
 public:
  // Called once per call for each worker, before the first OnBlock that
  // carries one of its placements.
  virtual void OnWorker(const WorkerView& worker) noexcept = 0;
  // Called for each requested hash in order, absent blocks included. Return
  // false to stop early; the backend then makes no further callbacks.
  virtual bool OnBlock(const BlockView& block) noexcept = 0;

 protected:
  ~BlockVisitor() = default;
};

// Sizes the backend reports about itself. The caller zero-initialises the
// struct and sets struct_size; the backend writes only the fields that
// struct_size covers, so either side may be built against an older minor.
struct BackendStats {
  uint32_t struct_size;  // set by the caller to sizeof(BackendStats)
  uint64_t blocks;       // block records
  uint64_t placements;   // (worker, tier, block) entries
  uint64_t workers;      // worker records
  uint64_t hit_counters;
  uint64_t memory_bytes;  // the backend's own accounting of heap in use
};

// How the backend takes mutations (ABI 1.4; IndexBackend::SetWriteMode).
enum class WriteMode : uint32_t {
  kServing = 0,   // every mutation is visible to readers when it returns
  kBulkLoad = 1,  // mutations may stay invisible until kServing is set again
};

class IndexBackend {
 public:
  virtual ~IndexBackend() = default;

  // Applies a validated batch atomically: a concurrent reader sees all of it
  // or none of it. In order:
  //   1. upsert the worker: address := worker_address (empty overwrites);
  //      spec := cache_spec when present, otherwise no spec;
  //   2. apply the actions in order:
  //      REPORT: for each hash set placement (worker, tier) := mask (0 when
  //        the mask array is empty), replacing any earlier mask; when its size
  //        is > 0 set the block's token_count := size (0 never erases).
  //      REVOKE: for each hash remove placement (worker, tier) if present;
  //        when a block loses its last placement, delete the block record and
  //        its hit counter.
  //      CLEAR_ALL_AT_TIER: revoke every hash the worker holds at the tier.
  // Hit counters change only by deletion.
  virtual BackendStatus Apply(const ApplyBatchView& batch) noexcept = 0;

  // Looks up each hash (the host passes distinct hashes) in one snapshot and
  // calls visitor->OnBlock for each, in order. When count_as_hit is true,
  // every hash that has at least one placement in that snapshot gets its hit
  // counter raised by one (created at 1, saturating at UINT64_MAX), even if
  // the visitor stops early. The increments of one call are atomic with
  // respect to Apply and to concurrent readers: a concurrent HitCounts sees
  // all of them or none. Visitor callbacks must not call into the same
  // backend.
  virtual BackendStatus Match(HashSpan hashes, bool count_as_hit,
                              BlockVisitor* visitor) noexcept = 0;

  // Visits hashes[0..size) in order in one snapshot, stopping when the
  // visitor returns false. Hashes may repeat. Never changes state.
  virtual BackendStatus PrefixScan(HashSpan hashes,
                                   BlockVisitor* visitor) noexcept = 0;

  // Writes the hit counter of hashes.data[i] to counts[i], 0 when the hash
  // has no counter. `counts` has room for hashes.size values.
  virtual BackendStatus HitCounts(HashSpan hashes,
                                  uint64_t* counts) noexcept = 0;

  // Fills *stats; fields past stats->struct_size are left alone.
  virtual void GetStats(BackendStats* stats) noexcept = 0;

  // Calls added by minor versions. Each has a default, so that a backend
  // written against an older minor still compiles against this header: the
  // default changes nothing, writes zeros through the out-parameters it is
  // given and returns kUnimplemented. The host calls one only on a backend
  // it uses at that call's minor or later. Its descriptor must say that
  // minor, and when the backend is loaded each such call is made once,
  // oldest first, with the empty worker id (a no-op for a backend that
  // implements it): the first that answers kUnimplemented makes the host use
  // the backend as one of the minor before that call's (docs/backend-abi.md,
  // "Source compatibility across minors").

  // ABI 1.1. The host calls it only on a backend it uses at minor >= 1; for
  // older ones it composes CLEAR_ALL_AT_TIER batches instead, and their
  // records stay.
  //
  // Removes a worker atomically for readers: every placement it holds at
  // every tier is revoked (blocks left with no placement are deleted with
  // their hit counters, as in REVOKE) and its record is deleted, so the
  // memory it used comes back. Its ordinal becomes free; a worker first seen
  // after the removal may receive it. A concurrent reader sees the worker
  // with all of its placements or not at all. Removing a worker id the
  // backend has no record of changes nothing and returns OK. On return
  // *existed is 1 when a record was deleted, else 0 (existed may be null).
  //
  // Default: kUnimplemented, *existed = 0; nothing removed.
  virtual BackendStatus RemoveWorker(StringView /*worker_id*/,
                                     uint32_t* existed) noexcept {
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kUnimplemented,
                         "RemoveWorker (backend ABI 1.1) is not implemented "
                         "by this backend"};
  }

  // ABI 1.2. The host calls it only on a backend it uses at minor >= 2; for
  // older ones it reports the counts as unknown.
  // It is an operator's figure (the admin API's ListWorkers), never on a
  // query's path, and, with a placement bound configured, what the host's
  // eviction decisions rest on: it is then called under the host's
  // mutation lock after every mutation of the worker, and every conforming
  // backend must give the same counts after the same calls.
  //
  // Counts the placements `worker_id` holds at each tier, in one consistent
  // snapshot: counts_by_tier[t] := the number of blocks with a placement
  // (worker, t), for t = 1..kMaxTier, and counts_by_tier[0] := 0.
  // `counts_by_tier` has room for kMaxTier + 1 values. A worker id the
  // backend has no record of gets zeros and *existed = 0; otherwise
  // *existed = 1 (existed may be null). Never changes state. It may wait for
  // a writer, but must not hold up readers (Match, PrefixScan) more than
  // GetStats does; O(1) per tier is expected (backends already keep each
  // worker's holdings per tier for CLEAR_ALL_AT_TIER).
  //
  // Default: kUnimplemented, zero counts, *existed = 0.
  virtual BackendStatus CountPlacements(StringView /*worker_id*/,
                                        uint64_t* counts_by_tier,
                                        uint32_t* existed) noexcept {
    if (counts_by_tier != nullptr) {
      for (uint32_t tier = 0; tier <= kMaxTier; ++tier) {
        counts_by_tier[tier] = 0;
      }
    }
    if (existed != nullptr) *existed = 0;
    return BackendStatus{BackendCode::kUnimplemented,
                         "CountPlacements (backend ABI 1.2) is not implemented "
                         "by this backend"};
  }

  // ABI 1.4. The host calls it only on a backend it uses at minor >= 4; for
  // older ones it loads a data directory through ordinary mutations.
  // A hint that lets a backend fill an index faster when nobody is reading
  // it yet (docs/backend-abi.md, "ABI 1.4: bulk loading").
  //
  // kBulkLoad: starts a load, allowed only while the backend holds no
  // worker (one just created, or emptied by RemoveWorker); otherwise
  // kFailedPrecondition and nothing changes (unless a load is already in
  // force: see below). Until kServing is set again the host calls only Apply,
  // RemoveWorker, CountPlacements and the non-counting reads (Match with
  // count_as_hit false, PrefixScan, HitCounts, GetStats), never two
  // mutations at once. Mutations take effect as always (each one whole,
  // CountPlacements follows them), but a read may see any state from the
  // one before the load up to the last mutation, each mutation whole. A
  // backend may answer a mutation that fails during the load with kInternal
  // (it need not keep what it would roll back from).
  // kServing: every mutation made so far is visible to every read that
  // starts after the call returns; from then on the ordinary contract holds.
  // Setting the mode already in force changes nothing and returns OK, even
  // kBulkLoad once the load has added workers. A backend that cannot end a
  // load for lack of memory returns kInternal (its state can no longer be
  // trusted).
  //
  // Default: kUnimplemented; nothing changes.
  virtual BackendStatus SetWriteMode(WriteMode /*mode*/) noexcept {
    return BackendStatus{BackendCode::kUnimplemented,
                         "SetWriteMode (backend ABI 1.4) is not implemented "
                         "by this backend"};
  }
};

// Whether a query can wait for a mutation (ABI 1.3). Performance only:
// either way every call sees whole mutations. The host schedules its apply
// thread by it: below the other threads only when no query can be kept
// waiting behind it (docs/backend-abi.md, "ABI 1.3").
enum class ReadConcurrency : uint32_t {
  kUnknown = 0,                // not said: treated as kReadersWaitForWriters
  kReadersWaitForWriters = 1,  // a query may wait for a running mutation
  kReadersNeverWait = 2,       // queries never wait for a mutation
};

// Returned by the entry function. Static storage owned by the backend
// library; valid while the library is loaded.
struct BackendDescriptor {
  uint32_t abi_major;      // kBackendAbiMajor the backend was built against
  uint32_t abi_minor;      // kBackendAbiMinor the backend was built against
  uint32_t struct_size;    // sizeof(BackendDescriptor) in the backend's build
  const char* name;        // short name, e.g. "absl_rwlock"
  const char* version;     // backend version string
  const char* build_info;  // compiler, flags, build type; free form
  // Creates a backend. On failure returns null and writes a NUL-terminated
  // reason into error[0..error_size). OWNERSHIP: the caller owns the result
  // and must release it with destroy() from the same descriptor.
  IndexBackend* (*create)(char* error, size_t error_size) noexcept;
  void (*destroy)(IndexBackend* backend) noexcept;
  // ABI 1.3; the host reads it only from a descriptor of minor 3 or later.
  // Sources written before 1.3 leave it out and say kUnknown.
  ReadConcurrency read_concurrency = ReadConcurrency::kUnknown;
};

// ---------------------------------------------------------------------------
// Frozen layouts. Every struct above crosses the boundary, so its size,
// alignment and member offsets are part of ABI 1.0 on LP64 (x86-64 and
// AArch64 Linux, the only targets the ABI is defined for). A change that
// trips one of these asserts breaks every backend already built: append a
// member instead (docs/backend-abi.md), bump kBackendAbiMinor and add the new
// offset here.
static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8 &&
                  sizeof(long) == 8,  // NOLINT(runtime/int)
              "the kvindexer backend ABI is defined for LP64 targets only");

static_assert(sizeof(BackendCode) == 4);
static_assert(std::is_standard_layout_v<BackendStatus> &&
              std::is_trivially_copyable_v<BackendStatus>);
static_assert(sizeof(BackendStatus) == 224 && alignof(BackendStatus) == 4);
static_assert(offsetof(BackendStatus, code) == 0);
static_assert(offsetof(BackendStatus, message) == 4);

static_assert(std::is_standard_layout_v<HashSpan> &&
              std::is_trivially_copyable_v<HashSpan>);
static_assert(sizeof(HashSpan) == 16 && alignof(HashSpan) == 8);
static_assert(offsetof(HashSpan, data) == 0);
static_assert(offsetof(HashSpan, size) == 8);

static_assert(std::is_standard_layout_v<U32Span> &&
              std::is_trivially_copyable_v<U32Span>);
static_assert(sizeof(U32Span) == 16 && alignof(U32Span) == 8);
static_assert(offsetof(U32Span, data) == 0);
static_assert(offsetof(U32Span, size) == 8);

static_assert(std::is_standard_layout_v<StringView> &&
              std::is_trivially_copyable_v<StringView>);
static_assert(sizeof(StringView) == 16 && alignof(StringView) == 8);
static_assert(offsetof(StringView, data) == 0);
static_assert(offsetof(StringView, size) == 8);

static_assert(std::is_standard_layout_v<CacheSpec> &&
              std::is_trivially_copyable_v<CacheSpec>);
static_assert(sizeof(CacheSpec) == 24 && alignof(CacheSpec) == 4);
static_assert(offsetof(CacheSpec, version) == 0);
static_assert(offsetof(CacheSpec, components) == 4);
static_assert(offsetof(CacheSpec, swa_window_tokens) == 8);
static_assert(offsetof(CacheSpec, full_tier_mask) == 12);
static_assert(offsetof(CacheSpec, swa_tier_mask) == 16);
static_assert(offsetof(CacheSpec, mamba_tier_mask) == 20);

// Passed as an array (ApplyBatchView::actions): its size is its stride and
// can never change within a major version.
static_assert(std::is_standard_layout_v<ActionView> &&
              std::is_trivially_copyable_v<ActionView>);
static_assert(sizeof(ActionView) == 56 && alignof(ActionView) == 8);
static_assert(offsetof(ActionView, type) == 0);
static_assert(offsetof(ActionView, tier) == 4);
static_assert(offsetof(ActionView, hashes) == 8);
static_assert(offsetof(ActionView, component_masks) == 24);
static_assert(offsetof(ActionView, block_sizes) == 40);

static_assert(std::is_standard_layout_v<ApplyBatchView> &&
              std::is_trivially_copyable_v<ApplyBatchView>);
static_assert(sizeof(ApplyBatchView) == 80 && alignof(ApplyBatchView) == 8);
static_assert(offsetof(ApplyBatchView, worker_id) == 0);
static_assert(offsetof(ApplyBatchView, worker_address) == 16);
static_assert(offsetof(ApplyBatchView, has_cache_spec) == 32);
static_assert(offsetof(ApplyBatchView, cache_spec) == 36);
static_assert(offsetof(ApplyBatchView, actions) == 64);
static_assert(offsetof(ApplyBatchView, action_count) == 72);

static_assert(std::is_standard_layout_v<WorkerView> &&
              std::is_trivially_copyable_v<WorkerView>);
static_assert(sizeof(WorkerView) == 72 && alignof(WorkerView) == 8);
static_assert(offsetof(WorkerView, worker) == 0);
static_assert(offsetof(WorkerView, id) == 8);
static_assert(offsetof(WorkerView, address) == 24);
static_assert(offsetof(WorkerView, has_cache_spec) == 40);
static_assert(offsetof(WorkerView, cache_spec) == 44);

// Passed as an array (BlockView::placements): frozen like ActionView.
static_assert(std::is_standard_layout_v<Placement> &&
              std::is_trivially_copyable_v<Placement>);
static_assert(sizeof(Placement) == 12 && alignof(Placement) == 4);
static_assert(offsetof(Placement, worker) == 0);
static_assert(offsetof(Placement, tier) == 4);
static_assert(offsetof(Placement, mask) == 8);

static_assert(std::is_standard_layout_v<BlockView> &&
              std::is_trivially_copyable_v<BlockView>);
static_assert(sizeof(BlockView) == 32 && alignof(BlockView) == 8);
static_assert(offsetof(BlockView, index) == 0);
static_assert(offsetof(BlockView, token_count) == 8);
static_assert(offsetof(BlockView, placements) == 16);
static_assert(offsetof(BlockView, placement_count) == 24);

static_assert(std::is_standard_layout_v<BackendStats> &&
              std::is_trivially_copyable_v<BackendStats>);
static_assert(sizeof(BackendStats) == 48 && alignof(BackendStats) == 8);
static_assert(offsetof(BackendStats, struct_size) == 0);
static_assert(offsetof(BackendStats, blocks) == 8);
static_assert(offsetof(BackendStats, placements) == 16);
static_assert(offsetof(BackendStats, workers) == 24);
static_assert(offsetof(BackendStats, hit_counters) == 32);
static_assert(offsetof(BackendStats, memory_bytes) == 40);

static_assert(std::is_standard_layout_v<BackendDescriptor> &&
              std::is_trivially_copyable_v<BackendDescriptor>);
static_assert(sizeof(BackendDescriptor) == 64 &&
              alignof(BackendDescriptor) == 8);
static_assert(offsetof(BackendDescriptor, abi_major) == 0);
static_assert(offsetof(BackendDescriptor, abi_minor) == 4);
static_assert(offsetof(BackendDescriptor, struct_size) == 8);
static_assert(offsetof(BackendDescriptor, name) == 16);
static_assert(offsetof(BackendDescriptor, version) == 24);
static_assert(offsetof(BackendDescriptor, build_info) == 32);
static_assert(offsetof(BackendDescriptor, create) == 40);
static_assert(offsetof(BackendDescriptor, destroy) == 48);
static_assert(sizeof(ReadConcurrency) == 4);
static_assert(sizeof(WriteMode) == 4);
static_assert(offsetof(BackendDescriptor, read_concurrency) == 56);

}  // namespace kvindexer

// The single symbol a backend exports.
#define KVINDEXER_BACKEND_ENTRY_SYMBOL "kvindexer_backend_descriptor"
extern "C" {
typedef const kvindexer::BackendDescriptor* (*KvindexerBackendEntryFn)(void);
}

// Use in exactly one translation unit of a backend:
//   KVINDEXER_DEFINE_BACKEND(descriptor_expression)
#define KVINDEXER_DEFINE_BACKEND(descriptor)        \
  extern "C" __attribute__((visibility("default"))) \
  const ::kvindexer::BackendDescriptor*             \
  kvindexer_backend_descriptor(void) {              \
    return &(descriptor);                           \
  }

#endif  // KVINDEXER_BACKEND_H_
