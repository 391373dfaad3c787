#include "core/prefix_explain.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/backend_status.h"
#include "core/prefix_query.h"
#include "core/prefix_response_wire.h"
#include "core/stream_key.h"
#include "fmt/format.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

namespace {

std::string_view ComponentName(uint32_t component) {
  switch (component) {
    case kComponentFull:
      return "FULL";
    case kComponentSwa:
      return "SWA";
    case kComponentMamba:
      return "MAMBA";
    default:
      return "?";
  }
}

std::string_view TierName(uint32_t tier) {
  switch (tier) {
    case kTierHbm:
      return "HBM";
    case kTierDram:
      return "DRAM";
    case kTierSsd:
      return "SSD";
    default:
      return "tier>3";
  }
}

// "HBM, DRAM" for a tier-bit set; "no servable tier" when empty.
std::string TierList(uint32_t bits) {
  std::string out;
  for (uint32_t tier = kTierHbm; tier <= kMaxTier; ++tier) {
    if ((bits & (1u << tier)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += TierName(tier);
  }
  return out.empty() ? "no servable tier" : out;
}

// "HBM mask 0x1, SSD mask 0x7": what the worker holds on one block.
std::string Holdings(const WorkerBlock& block) {
  std::string out;
  for (uint32_t slot = 0; slot <= kMaxTier; ++slot) {
    if ((block.tier_bits & (1u << slot)) == 0) continue;
    if (!out.empty()) out += ", ";
    out += fmt::format("{} mask {:#x}", slot == 0 ? "tier>3" : TierName(slot),
                       block.masks[slot]);
  }
  return out;
}

// Why the spec selects the invalid mode, as the detail states it.
std::string InvalidWhy(SpecProblem problem, const CacheSpec& spec) {
  switch (problem) {
    case SpecProblem::kNoComponents:
      return "its cache spec has components = 0";
    case SpecProblem::kNewerVersion:
      return fmt::format(
          "its cache spec has version {}, newer than the supported {}",
          spec.version, kSupportedSpecVersion);
    case SpecProblem::kSwaWithoutWindow:
      return "its cache spec has SWA with swa_window_tokens = 0";
    case SpecProblem::kNone:
      break;
  }
  return "its cache spec is invalid";
}

// Why `component` is not available on block n, held as `block`, where the
// spec allows it at the servable tiers `tiers`.
StopReason Missing(const WorkerBlock& block, uint32_t n, uint32_t component,
                   uint32_t tiers, std::string* detail) {
  const std::string_view name = ComponentName(component);
  if (!block.present()) {
    *detail = fmt::format("block {} has no placement of this worker", n);
    return StopReason::kBlockMissing;
  }
  if ((block.tier_bits & tiers) != 0) {
    *detail = fmt::format(
        "block {} is held ({}) at a tier allowed for {} ({}) but without "
        "{} in its mask",
        n, Holdings(block), name, TierList(tiers), name);
    return StopReason::kComponentHole;
  }
  *detail = fmt::format(
      "block {} is held only at tiers {} may not be served from ({}; "
      "{} is allowed at {})",
      n, name, Holdings(block), name, TierList(tiers));
  return StopReason::kTierNotAllowed;
}

// The trace (core/prefix_scanner.h, NoPrefixTrace) of one worker's scan, fed
// one block at a time: it remembers the first block the worker does not
// serve and why. Only that block needs a reason, since a later block that
// qualifies as a boundary moves the prefix past it; what happens after it
// (FULL ending, SWA coming back) only adds to the detail.
class StopTrace {
 public:
  explicit StopTrace(uint64_t swa_window_tokens)
      : swa_window_tokens_(swa_window_tokens) {}

  void InvalidSpec(SpecProblem problem) { problem_ = problem; }

  void FailedClosed(uint32_t n, const WorkerBlock& held) {
    failed_closed_ = true;
    fail_block_ = n;
    fail_holdings_ = Holdings(held);
  }

  void Unavailable(uint32_t n, const WorkerBlock& held, uint32_t component,
                   uint32_t tiers) {
    switch (component) {
      case kComponentFull:
        full_ended_ = true;
        full_end_ = n;
        if (n == unmatched_) {
          std::string detail;
          const StopReason reason = Missing(held, n, component, tiers, &detail);
          Pending(reason, component, std::move(detail));
        }
        break;
      case kComponentSwa:
        swa_hole_ = n;
        block_ok_ = false;
        block_component_ = component;
        block_reason_ = Missing(held, n, component, tiers, &block_detail_);
        break;
      case kComponentMamba:
        if (block_ok_) {
          block_component_ = component;
          block_reason_ = Missing(held, n, component, tiers, &block_detail_);
        } else {
          block_detail_ += "; MAMBA is not available there either";
        }
        block_ok_ = false;
        break;
      default:
        break;
    }
  }

  void SwaRun(uint32_t n, uint64_t run_tokens, bool window_met) {
    if (n != unmatched_) {
      // After the first unmatched block: what became of its SWA hole.
      swa_run_after_hole_ = true;
      swa_max_run_after_hole_ = std::max(swa_max_run_after_hole_, run_tokens);
      if (window_met) swa_window_met_after_hole_ = true;
    }
    if (!window_met) {
      block_ok_ = false;
      block_reason_ = StopReason::kSwaWindowNotMet;
      block_component_ = kComponentSwa;
      block_detail_ = fmt::format(
          "block {}: the SWA run since the hole at block {} holds {} "
          "tokens, fewer than the window's {}",
          n, swa_hole_, run_tokens, swa_window_tokens_);
    }
  }

  void Boundary(uint32_t n, bool ok) {
    if (ok) {
      unmatched_ = n + 1;
    } else if (n == unmatched_) {
      Pending(block_reason_, block_component_, std::move(block_detail_));
    }
    block_ok_ = true;
    block_reason_ = StopReason::kUnspecified;
    block_component_ = 0;
    block_detail_.clear();
  }

  // Fills w's result and reason once this trace's scanner, in `mode`, has
  // seen the whole window of `window` blocks and serves `matched` of them.
  void Conclude(PrefixMode mode, uint32_t matched, uint32_t window,
                WorkerExplanation* w) const {
    w->mode = mode;
    w->matched = matched;
    if (w->mode == PrefixMode::kInvalid) {
      Set(w, StopReason::kInvalidSpec, 0, 0,
          fmt::format("{}: the worker serves no block",
                      InvalidWhy(problem_, *w->spec)));
      return;
    }
    if (failed_closed_) {
      Set(w, StopReason::kFailClosed, fail_block_, 0,
          fmt::format("block {} is held with a component mask ({}) but "
                      "the worker has no cache spec: the legacy rule "
                      "fails the whole window closed",
                      fail_block_, fail_holdings_));
      return;
    }
    const uint32_t best = w->matched;
    if (best == window) {
      Set(w, StopReason::kWindowEnd, 0, 0,
          fmt::format("all {} blocks of the window matched", window));
      return;
    }
    if (w->mode == PrefixMode::kLegacy) {
      Set(w, StopReason::kBlockMissing, best, 0,
          fmt::format("block {} has no placement of this worker (legacy "
                      "rule: the leading blocks held at any tier)",
                      best));
      return;
    }
    StopReason reason = pending_;
    std::string detail = pending_detail_;
    // An SWA hole at the first unmatched block can be made good by a run
    // that reaches the window later; when SWA came back but never reached
    // it before FULL (or the window) ended, that is the real reason.
    if (pending_component_ == kComponentSwa && swa_run_after_hole_ &&
        !swa_window_met_after_hole_) {
      reason = StopReason::kSwaWindowNotMet;
      detail += fmt::format(
          "; after it the SWA run held at most {} tokens before {}, fewer "
          "than the window's {}",
          swa_max_run_after_hole_,
          full_ended_ ? fmt::format("FULL ends at block {}", full_end_)
                      : std::string("the window ends"),
          swa_window_tokens_);
    }
    if (full_ended_ && full_end_ > best) {
      detail += fmt::format(
          "; no later block up to {} qualifies as a boundary, and FULL ends "
          "at block {}",
          full_end_ - 1, full_end_);
    } else if (!full_ended_ && best + 1 < window) {
      detail += fmt::format(
          "; FULL covers the whole window but no later block qualifies as a "
          "boundary");
    }
    Set(w, reason, best, pending_component_, std::move(detail));
  }

 private:
  static void Set(WorkerExplanation* w, StopReason reason, uint32_t block,
                  uint32_t component, std::string detail) {
    w->stop_reason = reason;
    w->stop_block = block;
    w->stop_component = component;
    w->detail = std::move(detail);
  }

  // Records the reason the first unmatched block is not a boundary.
  void Pending(StopReason reason, uint32_t component, std::string detail) {
    pending_ = reason;
    pending_component_ = component;
    pending_detail_ = std::move(detail);
    swa_run_after_hole_ = false;
    swa_window_met_after_hole_ = false;
    swa_max_run_after_hole_ = 0;
  }

  uint64_t swa_window_tokens_;
  SpecProblem problem_ = SpecProblem::kNone;
  // Legacy.
  bool failed_closed_ = false;
  uint32_t fail_block_ = 0;
  std::string fail_holdings_;
  // Component-aware. unmatched_: the first block not matched so far (the
  // scanner's result as the blocks arrive).
  uint32_t unmatched_ = 0;
  bool full_ended_ = false;
  uint32_t full_end_ = 0;
  uint32_t swa_hole_ = 0;
  // The block being pushed: whether it still qualifies, and if not, why.
  bool block_ok_ = true;
  StopReason block_reason_ = StopReason::kUnspecified;
  uint32_t block_component_ = 0;
  std::string block_detail_;
  // Why the first unmatched block is not a boundary.
  StopReason pending_ = StopReason::kUnspecified;
  uint32_t pending_component_ = 0;
  std::string pending_detail_;
  // Since the pending reason was recorded: SWA was available on some block,
  // the window was met on some block, and the longest run seen.
  bool swa_run_after_hole_ = false;
  bool swa_window_met_after_hole_ = false;
  uint64_t swa_max_run_after_hole_ = 0;
};

using ExplainingScanner = BasicPrefixScanner<StopTrace>;

// Gathers the scan: every announced worker, the candidates of block 0, and
// each candidate's scan, traced, over every block.
class ExplainVisitor final : public BlockVisitor {
 public:
  // `streams` as ExplainPrefix takes them; null: a seed-era query.
  explicit ExplainVisitor(const CandidateStreams* streams)
      : streams_(streams) {}

  struct Announced {
    std::string id;
    std::string address;
    std::optional<CacheSpec> spec;
  };

  void OnWorker(const WorkerView& worker) noexcept override {
    Announced& a = announced_[worker.worker];
    a.id.assign(worker.id.data, worker.id.size);
    a.address.assign(worker.address.data, worker.address.size);
    a.spec.reset();
    if (worker.has_cache_spec != 0) a.spec = worker.cache_spec;
  }

  bool OnBlock(const BlockView& block) noexcept override {
    const bool first = blocks_seen_ == 0;
    ++blocks_seen_;
    if (first) {
      if (block.placement_count == 0) {
        first_block_miss_ = true;
        return false;
      }
      SelectCandidates(block);
      if (candidates_.empty()) {
        // Only a coverage query can hold block 0 for no candidate; its
        // answer is a first-block miss, as production's.
        first_block_miss_ = true;
        return false;
      }
    }
    for (WorkerBlock& b : views_) b = WorkerBlock{};
    for (size_t i = 0; i < block.placement_count; ++i) {
      const Placement& p = block.placements[i];
      const auto it = candidate_of_.find(p.worker);
      if (it != candidate_of_.end()) views_[it->second].Add(p.tier, p.mask);
    }
    for (size_t c = 0; c < scanners_.size(); ++c) {
      views_[c].token_count = block.token_count;
      scanners_[c].Push(views_[c]);
    }
    return true;
  }

  // The announced worker with id `id`, if any.
  const Announced* FindAnnounced(std::string_view id) const {
    for (const auto& [ordinal, a] : announced_) {
      if (a.id == id) return &a;
    }
    return nullptr;
  }

  size_t blocks_seen() const { return blocks_seen_; }
  bool first_block_miss() const { return first_block_miss_; }
  std::vector<WorkerExplanation>& candidates() { return candidates_; }
  // The stream of candidate `c`, for a coverage query; null otherwise.
  const StreamCoverageView* stream_of(size_t c) const {
    return candidate_streams_[c];
  }
  void Finish(uint32_t window) {
    for (size_t c = 0; c < scanners_.size(); ++c) {
      const ExplainingScanner& s = scanners_[c];
      s.trace().Conclude(s.mode(), s.result(), window, &candidates_[c]);
    }
  }

 private:
  void SelectCandidates(const BlockView& block) {
    // Block-0 placement order, each worker once, as production's.
    for (size_t i = 0; i < block.placement_count; ++i) {
      const uint32_t worker = block.placements[i].worker;
      if (candidate_of_.contains(worker)) continue;
      const auto it = announced_.find(worker);
      // A coverage query's candidates are the streams it maps; a worker
      // the backend did not announce is none of them.
      const StreamCoverageView* stream = nullptr;
      if (streams_ != nullptr) {
        if (it == announced_.end()) continue;
        const auto s = streams_->by_id.find(it->second.id);
        if (s == streams_->by_id.end()) continue;
        stream = s->second;
      }
      candidate_of_[worker] = candidates_.size();
      candidate_streams_.push_back(stream);
      WorkerExplanation& w = candidates_.emplace_back();
      w.candidate = true;
      // A worker the backend did not announce has no address and no spec,
      // as in production.
      if (it != announced_.end()) {
        w.worker_id = it->second.id;
        w.address = it->second.address;
        w.spec = it->second.spec;
      }
    }
    scanners_.reserve(candidates_.size());
    for (const WorkerExplanation& w : candidates_) {
      const CacheSpec* spec = w.spec.has_value() ? &*w.spec : nullptr;
      scanners_.emplace_back(
          spec, StopTrace(spec != nullptr ? spec->swa_window_tokens : 0));
    }
    views_.assign(candidates_.size(), WorkerBlock{});
  }

  const CandidateStreams* streams_;
  size_t blocks_seen_ = 0;
  bool first_block_miss_ = false;
  absl::flat_hash_map<uint32_t, Announced> announced_;
  absl::flat_hash_map<uint32_t, size_t> candidate_of_;
  std::vector<WorkerExplanation> candidates_;
  std::vector<const StreamCoverageView*> candidate_streams_;  // by candidate
  std::vector<ExplainingScanner> scanners_;                   // by candidate
  std::vector<WorkerBlock> views_;
};

void Exclude(WorkerExplanation& w) {
  if (w.matched == 0) {
    w.excluded = true;
    w.excluded_reason = "matches 0 blocks";
  } else if (w.address.empty()) {
    w.excluded = true;
    w.excluded_reason =
        "its stored address is empty: prefix answers leave such workers out";
  }
}

}  // namespace

std::string_view StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kUnspecified:
      return "unspecified";
    case StopReason::kWindowEnd:
      return "window_end";
    case StopReason::kBlockMissing:
      return "block_missing";
    case StopReason::kTierNotAllowed:
      return "tier_not_allowed";
    case StopReason::kComponentHole:
      return "component_hole";
    case StopReason::kSwaWindowNotMet:
      return "swa_window_not_met";
    case StopReason::kFailClosed:
      return "fail_closed";
    case StopReason::kInvalidSpec:
      return "invalid_spec";
    case StopReason::kNotCandidate:
      return "not_candidate";
    case StopReason::kUnknownWorker:
      return "unknown_worker";
    case StopReason::kNotSelected:
      return "not_selected";
    case StopReason::kNotReady:
      return "not_ready";
  }
  return "unspecified";
}

absl::Status ExplainPrefix(
    IndexBackend* backend, const v1::MatchExternalKvPrefixRequest& req,
    const std::vector<std::string>& named_workers,
    absl::FunctionRef<std::optional<KnownWorker>(std::string_view)> lookup,
    PrefixExplanation* out, const CandidateStreams* streams) {
  const size_t limit =
      PrefixLimit(static_cast<size_t>(req.hashes_size()), req.max_blocks());
  ExplainVisitor visitor(streams);
  if (absl::Status s = ToAbslStatus(
          backend->PrefixScan(HashSpan{req.hashes().data(), limit}, &visitor));
      !s.ok()) {
    return s;
  }
  if (!visitor.first_block_miss() && visitor.blocks_seen() != limit) {
    return absl::InternalError(
        fmt::format("backend prefix scan visited {} of {} blocks",
                    visitor.blocks_seen(), limit));
  }
  const auto window = static_cast<uint32_t>(limit);
  visitor.Finish(window);
  out->workers = std::move(visitor.candidates());
  out->answer.Clear();

  // The answer, assembled as production's (core/prefix_query.cc, Answer)
  // and encoded by the same writer, so that its bytes are the router's.
  const PrefixCoverage* coverage =
      streams != nullptr ? streams->coverage : nullptr;
  std::vector<PrefixMatchView> matches;
  PrefixAnswer answer{{}, 0, 1, coverage};
  if (!visitor.first_block_miss()) {
    std::vector<std::pair<uint32_t, size_t>> ranked;
    for (size_t c = 0; c < out->workers.size(); ++c) {
      WorkerExplanation& w = out->workers[c];
      Exclude(w);
      if (!w.excluded) ranked.emplace_back(w.matched, c);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [matched, c] : ranked) {
      // A stream's match names its worker id, never its backend id.
      matches.push_back(PrefixMatchView{WorkerIdOf(out->workers[c].worker_id),
                                        out->workers[c].address, matched,
                                        visitor.stream_of(c)});
    }
    answer.matches = matches;
    answer.best_prefix_blocks = ranked.empty() ? 0 : ranked[0].first;
    answer.blocks_read = window;
  }
  std::string wire(PrefixResponseWireSize(answer), '\0');
  WritePrefixResponseWire(answer, reinterpret_cast<uint8_t*>(wire.data()));
  if (!out->answer.ParseFromString(wire)) {
    return absl::InternalError("the explained prefix answer does not parse");
  }

  // Which backend ids the coverage query selected, and whether each is
  // covered.
  absl::flat_hash_map<std::string, bool> selected;
  if (coverage != nullptr) {
    for (const StreamCoverageView& v : coverage->streams) {
      selected.emplace(
          EncodeStreamKey(StreamKey{std::string(v.ns), std::string(v.worker_id),
                                    v.dp_rank}),
          v.ready);
    }
  }

  // Named workers that are not candidates.
  absl::flat_hash_set<std::string> seen;
  for (const WorkerExplanation& w : out->workers) seen.insert(w.worker_id);
  for (const std::string& id : named_workers) {
    if (!seen.insert(id).second) continue;
    WorkerExplanation& w = out->workers.emplace_back();
    w.worker_id = id;
    w.excluded = true;
    if (const ExplainVisitor::Announced* a = visitor.FindAnnounced(id)) {
      w.address = a->address;
      w.spec = a->spec;
    } else if (std::optional<KnownWorker> known = lookup(id)) {
      w.address = std::move(known->address);
      w.spec = std::move(known->spec);
    } else {
      w.stop_reason = StopReason::kUnknownWorker;
      w.excluded_reason = "unknown worker";
      w.detail = "the index has no record of this worker";
      continue;
    }
    w.mode = ModeFor(w.spec.has_value() ? &*w.spec : nullptr);
    if (streams != nullptr) {
      const auto it = selected.find(id);
      if (it == selected.end()) {
        w.stop_reason = StopReason::kNotSelected;
        w.excluded_reason = "not selected";
        w.detail =
            "the query's eligible_streams or eligible_worker_addresses do "
            "not select this stream: only selected streams are candidates";
        continue;
      }
      if (!it->second) {
        w.stop_reason = StopReason::kNotReady;
        w.excluded_reason = "not ready";
        w.detail =
            "the query selects this stream but it is not covered (not ready, "
            "or a namespaced stream without an epoch or a generation): only "
            "covered streams are candidates";
        continue;
      }
    }
    w.stop_reason = StopReason::kNotCandidate;
    w.excluded_reason = "not a candidate";
    w.detail =
        "block 0 has no placement of this worker: only workers holding the "
        "first block are candidates";
  }
  return absl::OkStatus();
}

}  // namespace kvindexer
