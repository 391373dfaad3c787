// The per-worker prefix scanner of docs/contract.md,
// "MatchExternalKvPrefix > Prefix rules": the one place that
// decides how many leading blocks of a prompt a worker can serve, under the
// legacy rule or the FULL/SWA/MAMBA component rules.
//
// A scanner is fed one WorkerBlock per block of the query window, in order,
// and keeps O(1) state. Not thread-safe; one scanner per candidate per query.
#ifndef KVINDEXER_CORE_PREFIX_SCANNER_H_
#define KVINDEXER_CORE_PREFIX_SCANNER_H_

#include <stdint.h>

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

class PrefixScanner {
 public:
  enum class Mode : uint8_t { kLegacy, kInvalid, kComponentAware };

  // `spec` is the worker's stored spec, or null when it has none. The spec is
  // copied.
  explicit PrefixScanner(const CacheSpec* spec);

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
  struct ClassRule {
    uint8_t serves[4] = {0, 0, 0, 0};  // by tier; slot 0 for tiers above 3
    uint8_t base = 0;
    uint8_t nonzero = 0;

    uint8_t Contribution(uint32_t tier, uint32_t mask) const {
      return static_cast<uint8_t>((mask & serves[tier <= 3 ? tier : 0]) | base |
                                  (mask != 0 ? nonzero : 0));
    }
  };
  const ClassRule& class_rule() const { return class_rule_; }

  // The reusable prefix length, in blocks, for the blocks pushed so far.
  uint32_t result() const;

  // True when no further Push can change result(): Invalid mode, a
  // component-aware scan whose FULL run has ended, or a legacy scan that has
  // failed closed.
  bool settled() const;

  Mode mode() const { return mode_; }

 private:
  // True when component C is available on `block` under tier mask `tiers`
  // (already intersected with the servable tiers).
  static bool Available(const WorkerBlock& block, uint32_t component,
                        uint32_t tiers);

  void PushLegacy(const WorkerBlock& block);
  void PushComponentAware(const WorkerBlock& block, uint64_t tokens);

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
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_SCANNER_H_
