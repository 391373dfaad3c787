// The per-worker prefix scanner of docs/contract.md,
// "MatchExternalKvPrefix > Prefix rules": the one place that
// decides how many leading blocks of a prompt a worker can serve, under the
// legacy rule or the FULL/SWA/MAMBA component rules.
//
// A scanner is fed one WorkerBlock per block of the query window, in order,
// and keeps O(1) state. Not thread-safe; one scanner per candidate per query.
//
// The rules are written once, in BasicPrefixScanner<Trace>, which tells its
// Trace of every decision it takes (the events of NoPrefixTrace). The
// production scanner, PrefixScanner, traces nothing: NoPrefixTrace's empty
// inline methods compile away, and its code is what it would be without the
// calls. ExplainPrefix (core/prefix_explain.cc) runs the same rules with a
// trace that records why a worker's scan stopped.
#ifndef KVINDEXER_CORE_PREFIX_SCANNER_H_
#define KVINDEXER_CORE_PREFIX_SCANNER_H_

#include <stdint.h>

#include <utility>

#include "common/wire_vocabulary.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// One worker's placements on one block.
struct WorkerBlock {
  // Bit (1 << tier) for each tier at which the worker holds the block; 0 when
  // the block is absent for the worker. A tier outside 1..3 (never produced
  // by a conforming backend) is recorded as bit 0.
  uint32_t tier_bits = 0;
  // masks[tier]: the component mask at that tier (masks[0] for any tier
  // outside 1..3); meaningful only where tier_bits has the tier's bit.
  uint32_t masks[kMaxTier + 1] = {0, 0, 0, 0};
  // The block's shared token count; 0 when unknown.
  uint32_t token_count = 0;

  // Records one (tier, mask) placement.
  void Add(uint32_t tier, uint32_t mask) {
    const uint32_t slot = tier <= kMaxTier ? tier : 0;
    tier_bits |= 1u << slot;
    masks[slot] |= mask;
  }
  bool present() const { return tier_bits != 0; }
};

// The rule a worker's spec selects: legacy (no spec), invalid (serves
// nothing) or component-aware.
enum class PrefixMode : uint8_t { kLegacy, kInvalid, kComponentAware };

// Why a cache spec selects the invalid mode, in the order checked.
enum class SpecProblem : uint8_t {
  kNone,
  kNoComponents,      // components == 0
  kNewerVersion,      // version > kSupportedSpecVersion
  kSwaWithoutWindow,  // SWA with swa_window_tokens == 0
};

// The first problem of `spec`; kNone when it is valid or null (legacy).
[[nodiscard]] SpecProblem CheckSpec(const CacheSpec* spec);

// What a scanner's decisions depend on in one placement; see
// BasicPrefixScanner::Contribution.
struct PrefixClassRule {
  uint8_t serves[4] = {0, 0, 0, 0};  // by tier; slot 0 for tiers above 3
  uint8_t base = 0;
  uint8_t nonzero = 0;

  uint8_t Contribution(uint32_t tier, uint32_t mask) const {
    return static_cast<uint8_t>((mask & serves[tier <= 3 ? tier : 0]) | base |
                                (mask != 0 ? nonzero : 0));
  }
};

// The trace of the production scanner, and the list of events a trace
// receives. `block` is the 0-based index of the first block of the pushed run
// (a trace that wants every block's events is fed one block at a time); each
// event comes after the scanner's state has taken it in. For one
// component-aware block the order is: FULL unavailable (and nothing more),
// or an SWA event (Unavailable or SwaRun, when the spec has SWA), MAMBA
// unavailable (when the spec has MAMBA), then Boundary.
struct NoPrefixTrace {
  // Construction: the spec selects the invalid mode; no block is served.
  void InvalidSpec(SpecProblem /*problem*/) {}
  // Legacy: `held` carries a component mask and fails the window closed.
  void FailedClosed(uint32_t /*block*/, const WorkerBlock& /*held*/) {}
  // Component-aware: `component` is not available on `held` at the servable
  // tiers `tiers`. FULL ends the scan; SWA breaks the SWA run; MAMBA keeps
  // the block from being a boundary.
  void Unavailable(uint32_t /*block*/, const WorkerBlock& /*held*/,
                   uint32_t /*component*/, uint32_t /*tiers*/) {}
  // Component-aware: SWA is available; the run since the last SWA hole (or
  // from the head) holds `run_tokens`; `window_met` is SWA's boundary
  // verdict (an unbroken head run, or a run covering the window).
  void SwaRun(uint32_t /*block*/, uint64_t /*run_tokens*/,
              bool /*window_met*/) {}
  // Component-aware, FULL available: whether the run's last block is a
  // boundary, i.e. whether the prefix now reaches past it.
  void Boundary(uint32_t /*block*/, bool /*ok*/) {}
};

template <typename Trace>
class BasicPrefixScanner {
 public:
  using Mode = PrefixMode;
  using ClassRule = PrefixClassRule;

  // `spec` is the worker's stored spec, or null when it has none. The spec is
  // copied. `trace` receives the scanner's events (see NoPrefixTrace).
  explicit BasicPrefixScanner(const CacheSpec* spec, Trace trace = Trace());

  // Feeds the next block of the window (the first call is block 0).
  void Push(const WorkerBlock& block) { PushRun(block, 1, block.token_count); }

  // Feeds `count` (>= 1) consecutive blocks on which this worker's placements
  // are all equal to `block`, holding `tokens` tokens between them
  // (block.token_count is ignored). Equivalent to `count` calls of Push, each
  // with its block's own token count: within such a run the legacy outcome is
  // decided by its first block, FULL availability does not change, and the
  // SWA run only grows, so the boundary condition holds at the last block
  // whenever it holds at any block of the run. settled() after the run equals
  // settled() after its first block.
  void PushRun(const WorkerBlock& block, uint32_t count, uint64_t tokens);

  // What this scanner's decisions depend on in one placement (at `tier`,
  // with component `mask`), as a small bit set: for a legacy worker, "held"
  // and "held with a component mask"; for a component-aware worker, whether
  // the placement makes FULL, SWA or MAMBA (those the spec has) available.
  // The class of a WorkerBlock is the OR of its placements' contributions, 0
  // when the block is absent. Blocks of one class are interchangeable: in a
  // run fed to PushRun the blocks need only share a class, not be equal.
  uint8_t Contribution(uint32_t tier, uint32_t mask) const {
    return class_rule_.Contribution(tier, mask);
  }

  // Contribution() as data, so that a caller classifying many placements can
  // keep it next to its own state. Component bits double as class bits
  // (FULL 1, SWA 2, MAMBA 4).
  const ClassRule& class_rule() const { return class_rule_; }

  // The reusable prefix length, in blocks, for the blocks pushed so far.
  uint32_t result() const;

  // True when no further Push can change result(): Invalid mode, a
  // component-aware scan whose FULL run has ended, or a legacy scan that has
  // failed closed.
  bool settled() const;

  Mode mode() const { return mode_; }

  const Trace& trace() const { return trace_; }

 private:
  // True when component C is available on `block` under tier mask `tiers`
  // (already intersected with the servable tiers).
  static bool Available(const WorkerBlock& block, uint32_t component,
                        uint32_t tiers) {
    const uint32_t candidate_tiers = block.tier_bits & tiers;
    if (candidate_tiers == 0) return false;
    return ((candidate_tiers & kTierBitHbm) != 0 &&
            (block.masks[kTierHbm] & component) != 0) ||
           ((candidate_tiers & kTierBitDram) != 0 &&
            (block.masks[kTierDram] & component) != 0);
  }

  // `first`: the index of the run's first block.
  void PushLegacy(const WorkerBlock& block, uint32_t first);
  void PushComponentAware(const WorkerBlock& block, uint32_t first,
                          uint64_t tokens);

  Mode mode_;
  CacheSpec spec_{};
  // Servable tier masks, per component.
  uint32_t full_tiers_ = 0;
  uint32_t swa_tiers_ = 0;
  uint32_t mamba_tiers_ = 0;
  ClassRule class_rule_;

  uint32_t processed_ = 0;  // blocks pushed so far
  uint32_t best_ = 0;
  // Legacy state.
  bool gap_seen_ = false;
  bool failed_closed_ = false;
  // Component-aware state.
  bool active_ = true;
  bool swa_head_broken_ = false;
  uint64_t swa_run_ = 0;  // tokens; 64 bits so long windows cannot overflow
  // Empty for NoPrefixTrace, and then no bigger than without it.
  [[no_unique_address]] Trace trace_;
};

// The production scanner.
using PrefixScanner = BasicPrefixScanner<NoPrefixTrace>;

// The mode `spec` selects, and the class rule of that mode.
[[nodiscard]] PrefixMode ModeFor(const CacheSpec* spec);
[[nodiscard]] PrefixClassRule ClassRuleFor(PrefixMode mode,
                                           const CacheSpec& spec);

// --- Implementation ---

template <typename Trace>
BasicPrefixScanner<Trace>::BasicPrefixScanner(const CacheSpec* spec,
                                              Trace trace)
    : mode_(ModeFor(spec)), trace_(std::move(trace)) {
  if (spec != nullptr) spec_ = *spec;
  full_tiers_ = spec_.full_tier_mask & kServableTierMask;
  swa_tiers_ = spec_.swa_tier_mask & kServableTierMask;
  mamba_tiers_ = spec_.mamba_tier_mask & kServableTierMask;
  class_rule_ = ClassRuleFor(mode_, spec_);
  if (mode_ == Mode::kInvalid) trace_.InvalidSpec(CheckSpec(spec));
}

template <typename Trace>
void BasicPrefixScanner<Trace>::PushRun(const WorkerBlock& block,
                                        uint32_t count, uint64_t tokens) {
  const uint32_t first = processed_;
  processed_ += count;
  switch (mode_) {
    case Mode::kLegacy:
      PushLegacy(block, first);
      break;
    case Mode::kComponentAware:
      PushComponentAware(block, first, tokens);
      break;
    case Mode::kInvalid:
      break;
  }
}

template <typename Trace>
void BasicPrefixScanner<Trace>::PushLegacy(const WorkerBlock& block,
                                           uint32_t first) {
  if (failed_closed_) return;
  if (!block.present()) {
    gap_seen_ = true;
    return;
  }
  // Any non-zero mask anywhere in the window fails the worker closed.
  if ((block.masks[0] | block.masks[1] | block.masks[2] | block.masks[3]) !=
      0) {
    failed_closed_ = true;
    trace_.FailedClosed(first, block);
    return;
  }
  if (!gap_seen_) best_ = processed_;
}

template <typename Trace>
void BasicPrefixScanner<Trace>::PushComponentAware(const WorkerBlock& block,
                                                   uint32_t first,
                                                   uint64_t tokens) {
  if (!active_) return;
  // 1. FULL is always required.
  if (!Available(block, kComponentFull, full_tiers_)) {
    active_ = false;
    trace_.Unavailable(first, block, kComponentFull, full_tiers_);
    return;
  }
  bool boundary_ok = true;
  // 3. SWA: the run ending at the boundary must be unbroken from the head or
  // cover the window.
  if ((spec_.components & kComponentSwa) != 0) {
    if (Available(block, kComponentSwa, swa_tiers_)) {
      swa_run_ += tokens;
      boundary_ok = !swa_head_broken_ || swa_run_ >= spec_.swa_window_tokens;
      trace_.SwaRun(first, swa_run_, boundary_ok);
    } else {
      swa_run_ = 0;
      swa_head_broken_ = true;
      boundary_ok = false;
      trace_.Unavailable(first, block, kComponentSwa, swa_tiers_);
    }
  }
  // 4. MAMBA: needed at the boundary block only.
  if ((spec_.components & kComponentMamba) != 0 &&
      !Available(block, kComponentMamba, mamba_tiers_)) {
    boundary_ok = false;
    trace_.Unavailable(first, block, kComponentMamba, mamba_tiers_);
  }
  trace_.Boundary(first, boundary_ok);
  if (boundary_ok) best_ = processed_;
}

template <typename Trace>
uint32_t BasicPrefixScanner<Trace>::result() const {
  switch (mode_) {
    case Mode::kLegacy:
      return failed_closed_ ? 0 : best_;
    case Mode::kComponentAware:
      return best_;
    case Mode::kInvalid:
      break;
  }
  return 0;
}

template <typename Trace>
bool BasicPrefixScanner<Trace>::settled() const {
  switch (mode_) {
    case Mode::kLegacy:
      return failed_closed_;
    case Mode::kComponentAware:
      return !active_;
    case Mode::kInvalid:
      break;
  }
  return true;
}

// Compiled once, in prefix_scanner.cc, as before the template.
extern template class BasicPrefixScanner<NoPrefixTrace>;

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_SCANNER_H_
