// MatchExternalKvPrefix over a backend scan: candidate selection, one
// PrefixScanner per candidate, and result assembly (docs/contract.md,
// "MatchExternalKvPrefix": "Candidates and the scan", "Prefix rules",
// "Result assembly").
//
// The candidates are the workers holding block 0 at any tier. Every candidate
// sees every block of the window. The backend scan is stopped early only when
// no candidate's result can change any more; blocks_read still reports the
// whole window, as the contract requires.
//
// Consecutive blocks of a prompt usually carry the same placements. A block
// whose placement list equals the previous one's, entry for entry, gives
// every candidate the same view again, so it only extends a pending run
// (block count and token sum) that is pushed to the scanners in one
// PrefixScanner::PushRun when the list changes or the window ends. Such a
// block costs one comparison, whatever the number of candidates. A block
// whose list differs may still look the same to every candidate (a worker's
// copy moved from HBM to DRAM, both servable): each placement is reduced to
// its candidate's PrefixScanner::Contribution, and when every unsettled
// candidate's class equals its class on the previous list, the block extends
// the run too. Only a block that changes some candidate's class is pushed
// candidate by candidate.
#ifndef KVINDEXER_CORE_PREFIX_QUERY_H_
#define KVINDEXER_CORE_PREFIX_QUERY_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/prefix_answer.h"
#include "core/prefix_scanner.h"
#include "core/worker_slot_map.h"
#include "kv_indexer.pb.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// The number of leading hashes a prefix query considers (docs/contract.md,
// "MatchExternalKvPrefix > Candidates and the scan", step 1).
[[nodiscard]] size_t PrefixLimit(size_t hash_count, uint32_t max_blocks);

// Runs one prefix query: PrefixScan over hashes[0..limit) and assembly of the
// answer, which is handed to `deliver` (once, and only on OK). An answer
// whose encoding (PrefixResponseWireSize) exceeds max_answer_bytes is refused
// whole with RESOURCE_EXHAUSTED and never delivered: dropping entries would
// tell the router that those workers hold nothing (docs/contract.md, "Limits
// > Bounds"). REQUIRES: ValidatePrefix(req).ok().
//
// A coverage query passes `streams`: only the workers it maps (by backend
// id) can be candidates, each match carries its stream, and the answer
// carries `streams->coverage`. When no such worker holds block 0, the
// answer is a first-block miss. Null: a seed-era query.
struct CandidateStreams {
  absl::flat_hash_map<std::string_view, const StreamCoverageView*> by_id;
  const PrefixCoverage* coverage = nullptr;
};
[[nodiscard]] absl::Status RunPrefixQuery(
    IndexBackend* backend,
    const ::kv_indexer::v1::MatchExternalKvPrefixRequest& req,
    size_t max_answer_bytes,
    absl::FunctionRef<void(const PrefixAnswer&)> deliver,
    const CandidateStreams* streams = nullptr);

// The refusal of an answer of `answer_bytes` encoded bytes over the ceiling
// `max_answer_bytes`: RESOURCE_EXHAUSTED naming both and the variable.
[[nodiscard]] absl::Status PrefixAnswerTooLarge(size_t answer_bytes,
                                                size_t max_answer_bytes);

// The visitor behind RunPrefixQuery, exposed for tests. One scan per Reset:
// RunPrefixQuery keeps one per thread and resets it for each query, so that a
// query reuses the previous one's buffers instead of allocating its own.
class PrefixQuery final : public BlockVisitor {
 public:
  // `limit` is the number of blocks the backend was asked to visit.
  explicit PrefixQuery(size_t limit) : limit_(limit) {}

  // Prepares for a new scan of `limit` blocks, keeping allocated buffers;
  // `streams` as for RunPrefixQuery, and outliving the scan and Answer.
  void Reset(size_t limit, const CandidateStreams* streams = nullptr);

  void OnWorker(const WorkerView& worker) noexcept override;
  bool OnBlock(const BlockView& block) noexcept override;

  // Hands the answer of the finished scan to `deliver`. Fails with INTERNAL
  // (and delivers nothing) when the backend delivered fewer blocks than asked
  // without being stopped.
  [[nodiscard]] absl::Status Answer(
      absl::FunctionRef<void(const PrefixAnswer&)> deliver) const;

 private:
  // A worker announced before block 0. Its id and address live in text_.
  struct WorkerRecord {
    size_t id_offset = 0;
    size_t id_size = 0;
    size_t address_offset = 0;
    size_t address_size = 0;
    bool has_spec = false;
    CacheSpec spec{};
    int32_t candidate = -1;  // index into candidates_, or -1
    // May be a candidate (always, for a seed-era query); the stream it is,
    // for a coverage query.
    bool eligible = true;
    const StreamCoverageView* stream = nullptr;
  };
  struct Candidate {
    Candidate(uint32_t worker_ordinal, uint32_t record_index,
              const CacheSpec* spec)
        : worker(worker_ordinal), record(record_index), scanner(spec) {}
    uint32_t worker;
    uint32_t record;
    PrefixScanner scanner;
    // The candidate's view of the blocks of the current placement list.
    WorkerBlock block;
  };

  WorkerRecord& RecordFor(uint32_t worker);
  const char* Text(size_t offset) const { return text_.data() + offset; }
  void SelectCandidates(const BlockView& block);
  // True when `block` carries exactly the placements of the previous block.
  bool SameAsPrevious(const BlockView& block) const;
  // Fills next_classes_ with every unsettled candidate's class on `block`.
  void ClassifyBlock(const BlockView& block);
  // Adds `block` to the pending run; flushes it at the end of the window.
  void ExtendRun(const BlockView& block);
  // Gathers every unsettled candidate's view of `block` (a new placement
  // list) and pushes it as a run of one block. REQUIRES: ClassifyBlock(block)
  // ran last; its classes become the current list's.
  void PushNewList(const BlockView& block);
  // Pushes the pending run of repeated blocks, if any.
  void FlushRun();

  size_t limit_;
  const CandidateStreams* streams_ = nullptr;
  size_t blocks_seen_ = 0;
  bool first_block_miss_ = false;
  bool stopped_early_ = false;
  WorkerSlotMap record_of_;     // worker ordinal -> index into records_
  WorkerSlotMap candidate_of_;  // worker ordinal -> index into candidates_
  std::vector<WorkerRecord> records_;
  std::string text_;  // the announced ids and addresses, back to back
  std::vector<Candidate> candidates_;  // in block-0 placement order
  std::vector<uint32_t> unsettled_;    // candidates whose result may change
  // Per candidate: its class on the current list (0 once settled), and the
  // scratch of ClassifyBlock.
  std::vector<uint8_t> classes_;
  std::vector<uint8_t> next_classes_;
  // Per candidate, its scanner's class rule, kept densely.
  std::vector<PrefixScanner::ClassRule> class_rules_;
  uint8_t ContributionOf(size_t candidate, const Placement& p) const {
    return class_rules_[candidate].Contribution(p.tier, p.mask);
  }
  // The previous block's placements, and the blocks after it that repeated
  // them and have not been pushed yet.
  std::vector<Placement> previous_;
  uint32_t run_blocks_ = 0;
  uint64_t run_tokens_ = 0;
  // Answer's buffers, kept for reuse.
  mutable std::vector<std::pair<uint32_t, uint32_t>> ranked_;
  mutable std::vector<PrefixMatchView> matches_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_PREFIX_QUERY_H_
