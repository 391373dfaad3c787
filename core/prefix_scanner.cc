#include "core/prefix_scanner.h"

#include <initializer_list>

namespace kvindexer {

SpecProblem CheckSpec(const CacheSpec* spec) {
  if (spec == nullptr) return SpecProblem::kNone;
  if (spec->components == 0) return SpecProblem::kNoComponents;
  if (spec->version > kSupportedSpecVersion) return SpecProblem::kNewerVersion;
  if ((spec->components & kComponentSwa) != 0 && spec->swa_window_tokens == 0) {
    return SpecProblem::kSwaWithoutWindow;
  }
  return SpecProblem::kNone;
}

PrefixMode ModeFor(const CacheSpec* spec) {
  if (spec == nullptr) return PrefixMode::kLegacy;
  return CheckSpec(spec) == SpecProblem::kNone ? PrefixMode::kComponentAware
                                               : PrefixMode::kInvalid;
}

PrefixClassRule ClassRuleFor(PrefixMode mode, const CacheSpec& spec) {
  PrefixClassRule rule;
  switch (mode) {
    case PrefixMode::kLegacy:
      // PushLegacy reads presence and whether any mask is set.
      rule.base = 1;
      rule.nonzero = 2;
      break;
    case PrefixMode::kComponentAware:
      // Available() reads, per component the spec has, whether an HBM or
      // DRAM placement that may serve it carries it.
      for (uint32_t tier : {kTierHbm, kTierDram}) {
        const uint32_t bit = 1u << tier;
        uint32_t serves = 0;
        if ((spec.full_tier_mask & kServableTierMask & bit) != 0) {
          serves |= kComponentFull;
        }
        if ((spec.components & kComponentSwa) != 0 &&
            (spec.swa_tier_mask & kServableTierMask & bit) != 0) {
          serves |= kComponentSwa;
        }
        if ((spec.components & kComponentMamba) != 0 &&
            (spec.mamba_tier_mask & kServableTierMask & bit) != 0) {
          serves |= kComponentMamba;
        }
        rule.serves[tier] = static_cast<uint8_t>(serves);
      }
      break;
    case PrefixMode::kInvalid:
      break;
  }
  return rule;
}

template class BasicPrefixScanner<NoPrefixTrace>;

}  // namespace kvindexer
