#include "core/prefix_explain.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/backend_status.h"
#include "core/prefix_query.h"
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

// Production's Mode choice (core/prefix_scanner.cc), with the reason when
// the spec is invalid.
PrefixScanner::Mode ModeOf(const std::optional<CacheSpec>& spec,
                           std::string* invalid_why) {
  if (!spec.has_value()) return PrefixScanner::Mode::kLegacy;
  if (spec->components == 0) {
    *invalid_why = "its cache spec has components = 0";
    return PrefixScanner::Mode::kInvalid;
  }
  if (spec->version > kSupportedSpecVersion) {
    *invalid_why = fmt::format(
        "its cache spec has version {}, newer than the supported {}",
        spec->version, kSupportedSpecVersion);
    return PrefixScanner::Mode::kInvalid;
  }
  if ((spec->components & kComponentSwa) != 0 && spec->swa_window_tokens == 0) {
    *invalid_why = "its cache spec has SWA with swa_window_tokens = 0";
    return PrefixScanner::Mode::kInvalid;
  }
  return PrefixScanner::Mode::kComponentAware;
}

// One worker's scan, rule by rule, remembering the first block it does not
// serve and why.
class Tracer {
 public:
  explicit Tracer(WorkerExplanation* w) : w_(w) {
    w_->mode = ModeOf(w_->spec, &invalid_why_);
    if (w_->spec.has_value()) spec_ = *w_->spec;
    full_tiers_ = spec_.full_tier_mask & kServableTierMask;
    swa_tiers_ = spec_.swa_tier_mask & kServableTierMask;
    mamba_tiers_ = spec_.mamba_tier_mask & kServableTierMask;
  }

  void Push(const WorkerBlock& block) {
    const uint32_t n = processed_++;
    switch (w_->mode) {
      case PrefixScanner::Mode::kLegacy:
        PushLegacy(block, n);
        break;
      case PrefixScanner::Mode::kComponentAware:
        PushComponentAware(block, n);
        break;
      case PrefixScanner::Mode::kInvalid:
        break;
    }
  }

  // Fills the worker's result and reason once the window is done.
  void Finish(uint32_t window) {
    switch (w_->mode) {
      case PrefixScanner::Mode::kInvalid:
        Set(StopReason::kInvalidSpec, 0, 0,
            fmt::format("{}: the worker serves no block", invalid_why_));
        w_->matched = 0;
        return;
      case PrefixScanner::Mode::kLegacy:
        if (failed_closed_) {
          w_->matched = 0;
          Set(StopReason::kFailClosed, fail_block_, 0,
              fmt::format("block {} is held with a component mask ({}) but "
                          "the worker has no cache spec: the legacy rule "
                          "fails the whole window closed",
                          fail_block_, fail_holdings_));
          return;
        }
        w_->matched = best_;
        break;
      case PrefixScanner::Mode::kComponentAware:
        w_->matched = best_;
        break;
    }
    if (w_->matched == window) {
      Set(StopReason::kWindowEnd, 0, 0,
          fmt::format("all {} blocks of the window matched", window));
      return;
    }
    if (w_->mode == PrefixScanner::Mode::kLegacy) {
      Set(StopReason::kBlockMissing, best_, 0,
          fmt::format("block {} has no placement of this worker (legacy "
                      "rule: the leading blocks held at any tier)",
                      best_));
      return;
    }
    std::string detail = std::move(pending_detail_);
    // An SWA hole at the first unmatched block can be made good by a run
    // that reaches the window later; when SWA came back but never reached
    // it before FULL (or the window) ended, that is the real reason.
    if (pending_component_ == kComponentSwa && swa_run_after_hole_ &&
        !swa_window_met_after_hole_) {
      pending_ = StopReason::kSwaWindowNotMet;
      detail += fmt::format(
          "; after it the SWA run held at most {} tokens before {}, fewer "
          "than the window's {}",
          swa_max_run_after_hole_,
          full_ended_ ? fmt::format("FULL ends at block {}", full_end_)
                      : std::string("the window ends"),
          spec_.swa_window_tokens);
    }
    if (full_ended_ && full_end_ > best_) {
      detail += fmt::format(
          "; no later block up to {} qualifies as a boundary, and FULL ends "
          "at block {}",
          full_end_ - 1, full_end_);
    } else if (!full_ended_ && best_ + 1 < window) {
      detail += fmt::format(
          "; FULL covers the whole window but no later block qualifies as a "
          "boundary");
    }
    Set(pending_, best_, pending_component_, std::move(detail));
  }

 private:
  void Set(StopReason reason, uint32_t block, uint32_t component,
           std::string detail) {
    w_->stop_reason = reason;
    w_->stop_block = block;
    w_->stop_component = component;
    w_->detail = std::move(detail);
  }

  void PushLegacy(const WorkerBlock& block, uint32_t n) {
    if (failed_closed_) return;
    if (!block.present()) {
      gap_seen_ = true;
      return;
    }
    if ((block.masks[0] | block.masks[1] | block.masks[2] | block.masks[3]) !=
        0) {
      failed_closed_ = true;
      fail_block_ = n;
      fail_holdings_ = Holdings(block);
      return;
    }
    if (!gap_seen_) best_ = n + 1;
  }

  // Component `component` on `block` under servable tiers `tiers`, as
  // production's Available (core/prefix_scanner.cc).
  static bool Available(const WorkerBlock& block, uint32_t component,
                        uint32_t tiers) {
    const uint32_t candidate_tiers = block.tier_bits & tiers;
    if (candidate_tiers == 0) return false;
    return ((candidate_tiers & kTierBitHbm) != 0 &&
            (block.masks[kTierHbm] & component) != 0) ||
           ((candidate_tiers & kTierBitDram) != 0 &&
            (block.masks[kTierDram] & component) != 0);
  }

  // Why `component` is not available on block n.
  void Missing(const WorkerBlock& block, uint32_t n, uint32_t component,
               uint32_t tiers, StopReason* reason, std::string* detail) const {
    const std::string_view name = ComponentName(component);
    if (!block.present()) {
      *reason = StopReason::kBlockMissing;
      *detail = fmt::format("block {} has no placement of this worker", n);
    } else if ((block.tier_bits & tiers) != 0) {
      *reason = StopReason::kComponentHole;
      *detail = fmt::format(
          "block {} is held ({}) at a tier allowed for {} ({}) but without "
          "{} in its mask",
          n, Holdings(block), name, TierList(tiers), name);
    } else {
      *reason = StopReason::kTierNotAllowed;
      *detail = fmt::format(
          "block {} is held only at tiers {} may not be served from ({}; "
          "{} is allowed at {})",
          n, name, Holdings(block), name, TierList(tiers));
    }
  }

  void Pending(StopReason reason, uint32_t component, std::string detail) {
    pending_ = reason;
    pending_component_ = component;
    pending_detail_ = std::move(detail);
    swa_run_after_hole_ = false;
    swa_window_met_after_hole_ = false;
    swa_max_run_after_hole_ = 0;
  }

  void PushComponentAware(const WorkerBlock& block, uint32_t n) {
    if (!active_) return;
    // Only block `best_` (the first not matched so far) needs a reason: a
    // later block that qualifies moves best_ past it.
    const bool first_unmatched = n == best_;
    // 1. FULL.
    if (!Available(block, kComponentFull, full_tiers_)) {
      active_ = false;
      full_ended_ = true;
      full_end_ = n;
      if (first_unmatched) {
        StopReason reason;
        std::string detail;
        Missing(block, n, kComponentFull, full_tiers_, &reason, &detail);
        Pending(reason, kComponentFull, std::move(detail));
      }
      return;
    }
    bool boundary_ok = true;
    StopReason reason = StopReason::kUnspecified;
    uint32_t component = 0;
    std::string detail;
    // 3. SWA.
    if ((spec_.components & kComponentSwa) != 0) {
      if (Available(block, kComponentSwa, swa_tiers_)) {
        swa_run_ += block.token_count;
        boundary_ok = !swa_broken_ || swa_run_ >= spec_.swa_window_tokens;
        if (!first_unmatched) {
          // After the first unmatched block: what became of its SWA hole.
          swa_run_after_hole_ = true;
          swa_max_run_after_hole_ = std::max(swa_max_run_after_hole_, swa_run_);
          if (boundary_ok) swa_window_met_after_hole_ = true;
        }
        if (!boundary_ok) {
          reason = StopReason::kSwaWindowNotMet;
          component = kComponentSwa;
          detail = fmt::format(
              "block {}: the SWA run since the hole at block {} holds {} "
              "tokens, fewer than the window's {}",
              n, swa_hole_, swa_run_, spec_.swa_window_tokens);
        }
      } else {
        swa_run_ = 0;
        swa_broken_ = true;
        swa_hole_ = n;
        boundary_ok = false;
        component = kComponentSwa;
        Missing(block, n, kComponentSwa, swa_tiers_, &reason, &detail);
      }
    }
    // 4. MAMBA, at the boundary block only.
    if ((spec_.components & kComponentMamba) != 0 &&
        !Available(block, kComponentMamba, mamba_tiers_)) {
      if (boundary_ok) {
        component = kComponentMamba;
        Missing(block, n, kComponentMamba, mamba_tiers_, &reason, &detail);
      } else {
        detail += "; MAMBA is not available there either";
      }
      boundary_ok = false;
    }
    if (boundary_ok) {
      best_ = n + 1;
    } else if (first_unmatched) {
      Pending(reason, component, std::move(detail));
    }
  }

  WorkerExplanation* w_;
  std::string invalid_why_;
  CacheSpec spec_{};
  uint32_t full_tiers_ = 0;
  uint32_t swa_tiers_ = 0;
  uint32_t mamba_tiers_ = 0;
  uint32_t processed_ = 0;
  uint32_t best_ = 0;
  // Legacy.
  bool gap_seen_ = false;
  bool failed_closed_ = false;
  uint32_t fail_block_ = 0;
  std::string fail_holdings_;
  // Component-aware.
  bool active_ = true;
  bool full_ended_ = false;
  uint32_t full_end_ = 0;
  bool swa_broken_ = false;
  uint32_t swa_hole_ = 0;
  uint64_t swa_run_ = 0;
  StopReason pending_ = StopReason::kUnspecified;
  uint32_t pending_component_ = 0;
  std::string pending_detail_;
  // Since the pending reason was recorded: SWA was available on some block,
  // the window was met on some block, and the longest run seen.
  bool swa_run_after_hole_ = false;
  bool swa_window_met_after_hole_ = false;
  uint64_t swa_max_run_after_hole_ = 0;
};

// Gathers the scan: every announced worker, the candidates of block 0, and
// each candidate's trace over every block.
class ExplainVisitor final : public BlockVisitor {
 public:
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
    }
    for (WorkerBlock& b : views_) b = WorkerBlock{};
    for (size_t i = 0; i < block.placement_count; ++i) {
      const Placement& p = block.placements[i];
      const auto it = candidate_of_.find(p.worker);
      if (it != candidate_of_.end()) views_[it->second].Add(p.tier, p.mask);
    }
    for (size_t c = 0; c < tracers_.size(); ++c) {
      views_[c].token_count = block.token_count;
      tracers_[c].Push(views_[c]);
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
  void Finish(uint32_t window) {
    for (Tracer& t : tracers_) t.Finish(window);
  }

 private:
  void SelectCandidates(const BlockView& block) {
    // Block-0 placement order, each worker once, as production's.
    for (size_t i = 0; i < block.placement_count; ++i) {
      const uint32_t worker = block.placements[i].worker;
      if (candidate_of_.contains(worker)) continue;
      candidate_of_[worker] = candidates_.size();
      WorkerExplanation& w = candidates_.emplace_back();
      w.candidate = true;
      // A worker the backend did not announce has no address and no spec,
      // as in production.
      const auto it = announced_.find(worker);
      if (it != announced_.end()) {
        w.worker_id = it->second.id;
        w.address = it->second.address;
        w.spec = it->second.spec;
      }
    }
    // Tracers point into candidates_, which no longer grows.
    tracers_.reserve(candidates_.size());
    for (WorkerExplanation& w : candidates_) tracers_.emplace_back(&w);
    views_.assign(candidates_.size(), WorkerBlock{});
  }

  size_t blocks_seen_ = 0;
  bool first_block_miss_ = false;
  absl::flat_hash_map<uint32_t, Announced> announced_;
  absl::flat_hash_map<uint32_t, size_t> candidate_of_;
  std::vector<WorkerExplanation> candidates_;
  std::vector<Tracer> tracers_;
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
  }
  return "unspecified";
}

absl::Status ExplainPrefix(
    IndexBackend* backend, const v1::MatchExternalKvPrefixRequest& req,
    const std::vector<std::string>& named_workers,
    absl::FunctionRef<std::optional<KnownWorker>(std::string_view)> lookup,
    PrefixExplanation* out) {
  const size_t limit =
      PrefixLimit(static_cast<size_t>(req.hashes_size()), req.max_blocks());
  ExplainVisitor visitor;
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

  // The answer, assembled as production's (core/prefix_query.cc, Answer).
  if (visitor.first_block_miss()) {
    out->answer.set_blocks_read(1);
  } else {
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
      v1::ExternalKvPrefixMatch* m = out->answer.add_matches();
      m->set_worker_id(out->workers[c].worker_id);
      m->set_worker_address(out->workers[c].address);
      m->set_matched_prefix_blocks(matched);
    }
    out->answer.set_best_prefix_blocks(ranked.empty() ? 0 : ranked[0].first);
    out->answer.set_blocks_read(window);
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
    std::string ignored;
    w.mode = ModeOf(w.spec, &ignored);
    w.stop_reason = StopReason::kNotCandidate;
    w.excluded_reason = "not a candidate";
    w.detail =
        "block 0 has no placement of this worker: only workers holding the "
        "first block are candidates";
  }
  return absl::OkStatus();
}

}  // namespace kvindexer
