#include "core/prefix_scanner.h"

#include <initializer_list>

namespace kvindexer {
namespace {

PrefixScanner::Mode ModeFor(const CacheSpec* spec) {
  if (spec == nullptr) return PrefixScanner::Mode::kLegacy;
  if (spec->components == 0 || spec->version > kSupportedSpecVersion) {
    return PrefixScanner::Mode::kInvalid;
  }
  if ((spec->components & kComponentSwa) != 0 && spec->swa_window_tokens == 0) {
    return PrefixScanner::Mode::kInvalid;
  }
  return PrefixScanner::Mode::kComponentAware;
}

}  // namespace

PrefixScanner::PrefixScanner(const CacheSpec* spec) : mode_(ModeFor(spec)) {
  if (spec != nullptr) spec_ = *spec;
  full_tiers_ = spec_.full_tier_mask & kServableTierMask;
  swa_tiers_ = spec_.swa_tier_mask & kServableTierMask;
  mamba_tiers_ = spec_.mamba_tier_mask & kServableTierMask;
  switch (mode_) {
    case Mode::kLegacy:
      // PushLegacy reads presence and whether any mask is set.
      class_rule_.base = 1;
      class_rule_.nonzero = 2;
      break;
    case Mode::kComponentAware:
      // Available() reads, per component the spec has, whether an HBM or
      // DRAM placement that may serve it carries it.
      for (uint32_t tier : {kTierHbm, kTierDram}) {
        const uint32_t bit = 1u << tier;
        uint32_t serves = 0;
        if ((full_tiers_ & bit) != 0) serves |= kComponentFull;
        if ((spec_.components & kComponentSwa) != 0 &&
            (swa_tiers_ & bit) != 0) {
          serves |= kComponentSwa;
        }
        if ((spec_.components & kComponentMamba) != 0 &&
            (mamba_tiers_ & bit) != 0) {
          serves |= kComponentMamba;
        }
        class_rule_.serves[tier] = static_cast<uint8_t>(serves);
      }
      break;
    case Mode::kInvalid:
      break;
  }
}

bool PrefixScanner::Available(const WorkerBlock& block, uint32_t component,
                              uint32_t tiers) {
  const uint32_t candidate_tiers = block.tier_bits & tiers;
  if (candidate_tiers == 0) return false;
  return ((candidate_tiers & kTierBitHbm) != 0 &&
          (block.masks[kTierHbm] & component) != 0) ||
         ((candidate_tiers & kTierBitDram) != 0 &&
          (block.masks[kTierDram] & component) != 0);
}

void PrefixScanner::PushRun(const WorkerBlock& block, uint32_t count,
                            uint64_t tokens) {
  processed_ += count;
  switch (mode_) {
    case Mode::kLegacy:
      PushLegacy(block);
      break;
    case Mode::kComponentAware:
      PushComponentAware(block, tokens);
      break;
    case Mode::kInvalid:
      break;
  }
}

void PrefixScanner::PushLegacy(const WorkerBlock& block) {
  if (failed_closed_) return;
  if (!block.present()) {
    gap_seen_ = true;
    return;
  }
  // Any non-zero mask anywhere in the window fails the worker closed.
  if ((block.masks[0] | block.masks[1] | block.masks[2] | block.masks[3]) !=
      0) {
    failed_closed_ = true;
    return;
  }
  if (!gap_seen_) best_ = processed_;
}

void PrefixScanner::PushComponentAware(const WorkerBlock& block,
                                       uint64_t tokens) {
  if (!active_) return;
  // 1. FULL is always required.
  if (!Available(block, kComponentFull, full_tiers_)) {
    active_ = false;
    return;
  }
  bool boundary_ok = true;
  // 3. SWA: the run ending at the boundary must be unbroken from the head or
  // cover the window.
  if ((spec_.components & kComponentSwa) != 0) {
    if (Available(block, kComponentSwa, swa_tiers_)) {
      swa_run_ += tokens;
      boundary_ok = !swa_head_broken_ || swa_run_ >= spec_.swa_window_tokens;
    } else {
      swa_run_ = 0;
      swa_head_broken_ = true;
      boundary_ok = false;
    }
  }
  // 4. MAMBA: needed at the boundary block only.
  if ((spec_.components & kComponentMamba) != 0 &&
      !Available(block, kComponentMamba, mamba_tiers_)) {
    boundary_ok = false;
  }
  if (boundary_ok) best_ = processed_;
}

uint32_t PrefixScanner::result() const {
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

bool PrefixScanner::settled() const {
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

}  // namespace kvindexer
