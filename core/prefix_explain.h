// ExplainPrefix: one prefix query answered with its reasons (docs/admin-api.md,
// "ExplainPrefix"). For every candidate (a worker holding block 0; for a
// coverage query, a selected and covered stream holding it) and every
// worker the caller names, how many leading blocks it serves and why its
// scan stopped where it did.
//
// Each worker's scan runs the production rules (core/prefix_scanner.h,
// BasicPrefixScanner) block by block with a trace that records the first
// block the worker does not serve and what is wrong with it; there is no
// second copy of the rules. The answer is assembled as the production query
// (core/prefix_query.h) assembles it, and a seeded randomized test
// (core/prefix_explain_test.cc) holds the two to the same answers. It is for
// the admin API only: one full-window PrefixScan, no early stop, a few
// allocations per worker; never on the router's path.
//
// Thread safety: ExplainPrefix may be called concurrently; the backend gives
// each call one snapshot.
#ifndef KVINDEXER_CORE_PREFIX_EXPLAIN_H_
#define KVINDEXER_CORE_PREFIX_EXPLAIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/prefix_query.h"
#include "core/prefix_scanner.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// Why a worker's scan ended where it did. Values match
// kvindexer.admin.v1.StopReason.
enum class StopReason : uint8_t {
  kUnspecified = 0,
  kWindowEnd = 1,        // every block of the window matched
  kBlockMissing = 2,     // stop_block has no placement of the worker
  kTierNotAllowed = 3,   // held, but only at tiers the spec does not allow
  kComponentHole = 4,    // held at an allowed tier without the component
  kSwaWindowNotMet = 5,  // SWA held, but its run since a hole is too short
  kFailClosed = 6,       // legacy worker with a component mask: result 0
  kInvalidSpec = 7,      // the spec selects the invalid mode: result 0
  kNotCandidate = 8,     // does not hold block 0
  kUnknownWorker = 9,    // no record anywhere
  kNotSelected = 10,     // a coverage query did not select the stream
  kNotReady = 11,        // a coverage query selected it; it is not covered
};

// "window_end", "block_missing", ...: for logs and tests.
std::string_view StopReasonName(StopReason reason);

struct WorkerExplanation {
  // The backend id (core/stream_key.h): a worker id, or an encoded key.
  std::string worker_id;
  std::string address;
  std::optional<CacheSpec> spec;
  bool candidate = false;
  // The rule that decided (from the spec, as the production scanner picks
  // it); meaningless for kUnknownWorker.
  PrefixScanner::Mode mode = PrefixScanner::Mode::kLegacy;
  // Leading blocks the worker serves (the production scanner's result).
  uint32_t matched = 0;
  // Left out of the answer: an empty address, or matched == 0.
  bool excluded = false;
  std::string excluded_reason;
  StopReason stop_reason = StopReason::kUnspecified;
  // 0-based block the reason is about (the first block not matched, or the
  // block that failed the legacy rule closed); 0 when none.
  uint32_t stop_block = 0;
  // The component the reason is about (kComponentFull/Swa/Mamba), 0 if none.
  uint32_t stop_component = 0;
  std::string detail;
};

struct PrefixExplanation {
  // Exactly the MatchExternalKvPrefix answer for the same request on the
  // same snapshot.
  ::kv_indexer::v1::MatchExternalKvPrefixResponse answer;
  // Candidates in block-0 order, then the named workers that are not
  // candidates, in the order named (each worker once).
  std::vector<WorkerExplanation> workers;
};

// What the host knows of a named worker the scan did not announce.
struct KnownWorker {
  std::string address;
  std::optional<CacheSpec> spec;
};

// Scans req.hashes[0..PrefixLimit) on `backend` in one PrefixScan and
// explains it. `named_workers` are backend ids. `lookup` is asked about
// named workers the backend did not announce (nullopt: unknown). The answer
// is not bounded by max_prefix_answer_bytes.
//
// A coverage query passes `streams` as RunPrefixQuery takes them
// (core/coverage_candidates.h): only the streams it maps can be
// candidates, the answer carries the coverage, and a named stream that is
// not a candidate is explained kNotSelected when the selection left it out,
// kNotReady when it selected it but the stream is not covered, and
// kNotCandidate otherwise. A stream with no record is kUnknownWorker in
// every case. REQUIRES: ValidatePrefix(req).ok().
[[nodiscard]] absl::Status ExplainPrefix(
    IndexBackend* backend,
    const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req,
    const std::vector<std::string>& named_workers,
    absl::FunctionRef<std::optional<KnownWorker>(std::string_view)> lookup,
    PrefixExplanation* out, const CandidateStreams* streams = nullptr);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_EXPLAIN_H_
