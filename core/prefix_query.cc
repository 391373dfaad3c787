#include "core/prefix_query.h"

#include <string.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/backend_status.h"
#include "core/prefix_response_wire.h"
#include "core/request_limits.h"
#include "core/stream_key.h"
#include "fmt/format.h"

namespace kvindexer {

namespace v1 = ::kv_indexer::v1;

namespace {

// First allocations of a query's worker records and their text: room for a
// typical fleet without regrowth.
constexpr size_t kRecordReserve = 64;
constexpr size_t kTextReserve = 4096;

}  // namespace

size_t PrefixLimit(size_t hash_count, uint32_t max_blocks) {
  if (max_blocks == 0) return hash_count;
  return std::min(hash_count, static_cast<size_t>(max_blocks));
}

absl::Status PrefixAnswerTooLarge(size_t answer_bytes,
                                  size_t max_answer_bytes) {
  return absl::ResourceExhaustedError(
      fmt::format("prefix answer is {} bytes; maximum is {} ({})", answer_bytes,
                  max_answer_bytes, kMaxPrefixAnswerBytesVar));
}

absl::Status RunPrefixQuery(
    IndexBackend* backend, const v1::MatchExternalKvPrefixRequest& req,
    size_t max_answer_bytes,
    absl::FunctionRef<void(const PrefixAnswer&)> deliver,
    const CandidateStreams* streams) {
  const size_t limit =
      PrefixLimit(static_cast<size_t>(req.hashes_size()), req.max_blocks());
  // Reused by this thread's queries. A visitor never starts another query
  // on its own thread, so one per thread is enough.
  thread_local PrefixQuery query(0);
  query.Reset(limit, streams);
  const BackendStatus status =
      backend->PrefixScan(HashSpan{req.hashes().data(), limit}, &query);
  if (absl::Status s = ToAbslStatus(status); !s.ok()) return s;
  // The size costs one pass over the entries, whose addresses are only
  // counted, never copied.
  absl::Status bounded = absl::OkStatus();
  if (absl::Status s = query.Answer([&](const PrefixAnswer& answer) {
        const size_t bytes = PrefixResponseWireSize(answer);
        if (bytes > max_answer_bytes) {
          bounded = PrefixAnswerTooLarge(bytes, max_answer_bytes);
          return;
        }
        deliver(answer);
      });
      !s.ok()) {
    return s;
  }
  return bounded;
}

void PrefixQuery::Reset(size_t limit, const CandidateStreams* streams) {
  limit_ = limit;
  streams_ = streams;
  blocks_seen_ = 0;
  first_block_miss_ = false;
  stopped_early_ = false;
  record_of_.Clear();
  candidate_of_.Clear();
  records_.clear();
  text_.clear();
  candidates_.clear();
  unsettled_.clear();
  classes_.clear();
  next_classes_.clear();
  class_rules_.clear();
  previous_.clear();
  run_blocks_ = 0;
  run_tokens_ = 0;
}

PrefixQuery::WorkerRecord& PrefixQuery::RecordFor(uint32_t worker) {
  int32_t index = record_of_.Find(worker);
  if (index == WorkerSlotMap::kNone) {
    if (records_.capacity() == 0) records_.reserve(kRecordReserve);
    index = static_cast<int32_t>(records_.size());
    records_.emplace_back();
    records_.back().eligible = streams_ == nullptr;
    record_of_.Set(worker, index);
  }
  return records_[static_cast<size_t>(index)];
}

void PrefixQuery::OnWorker(const WorkerView& worker) noexcept {
  // Only workers on block 0 can be candidates; later ones are not needed.
  if (blocks_seen_ > 0) return;
  WorkerRecord& record = RecordFor(worker.worker);
  // One buffer for all the text keeps the query at a few allocations.
  if (text_.capacity() == 0) text_.reserve(kTextReserve);
  record.id_offset = text_.size();
  record.id_size = worker.id.size;
  text_.append(worker.id.data, worker.id.size);
  record.address_offset = text_.size();
  record.address_size = worker.address.size;
  text_.append(worker.address.data, worker.address.size);
  record.has_spec = worker.has_cache_spec != 0;
  record.spec = worker.cache_spec;
  if (streams_ != nullptr) {
    auto it =
        streams_->by_id.find(std::string_view(worker.id.data, worker.id.size));
    record.eligible = it != streams_->by_id.end();
    record.stream = record.eligible ? it->second : nullptr;
  }
}

void PrefixQuery::SelectCandidates(const BlockView& block) {
  candidates_.reserve(block.placement_count);
  for (size_t i = 0; i < block.placement_count; ++i) {
    // A worker the backend did not announce gets an empty record; with no
    // address it can never appear in the result.
    WorkerRecord& record = RecordFor(block.placements[i].worker);
    if (record.candidate >= 0 || !record.eligible) continue;
    const auto record_index = static_cast<uint32_t>(&record - records_.data());
    record.candidate = static_cast<int32_t>(candidates_.size());
    candidate_of_.Set(block.placements[i].worker, record.candidate);
    candidates_.emplace_back(block.placements[i].worker, record_index,
                             record.has_spec ? &record.spec : nullptr);
  }
  classes_.assign(candidates_.size(), 0);
  next_classes_.assign(candidates_.size(), 0);
  class_rules_.clear();
  class_rules_.reserve(candidates_.size());
  for (const Candidate& candidate : candidates_) {
    class_rules_.push_back(candidate.scanner.class_rule());
  }
  unsettled_.reserve(candidates_.size());
  for (size_t c = 0; c < candidates_.size(); ++c) {
    if (candidates_[c].scanner.settled()) {
      candidate_of_.Set(candidates_[c].worker, WorkerSlotMap::kNone);
    } else {
      unsettled_.push_back(static_cast<uint32_t>(c));
    }
  }
}

bool PrefixQuery::SameAsPrevious(const BlockView& block) const {
  return block.placement_count == previous_.size() &&
         (block.placement_count == 0 ||
          memcmp(block.placements, previous_.data(),
                 block.placement_count * sizeof(Placement)) == 0);
}

void PrefixQuery::ClassifyBlock(const BlockView& block) {
  std::fill(next_classes_.begin(), next_classes_.end(), 0);
  // Settled candidates are out of candidate_of_, so they stay 0.
  for (size_t i = 0; i < block.placement_count; ++i) {
    const Placement& p = block.placements[i];
    const int32_t c = candidate_of_.Find(p.worker);
    if (c < 0) continue;
    const auto index = static_cast<size_t>(c);
    next_classes_[index] |= ContributionOf(index, p);
  }
}

void PrefixQuery::ExtendRun(const BlockView& block) {
  ++run_blocks_;
  run_tokens_ += block.token_count;
  if (blocks_seen_ == limit_) FlushRun();
}

void PrefixQuery::FlushRun() {
  if (run_blocks_ == 0) return;
  // A repeated list cannot settle a candidate that its first block did not.
  for (const uint32_t c : unsettled_) {
    Candidate& candidate = candidates_[c];
    candidate.scanner.PushRun(candidate.block, run_blocks_, run_tokens_);
  }
  run_blocks_ = 0;
  run_tokens_ = 0;
}

void PrefixQuery::PushNewList(const BlockView& block) {
  previous_.assign(block.placements, block.placements + block.placement_count);
  for (const uint32_t c : unsettled_) candidates_[c].block = WorkerBlock{};
  // Settled candidates are out of candidate_of_, so they gather nothing.
  for (size_t i = 0; i < block.placement_count; ++i) {
    const Placement& p = block.placements[i];
    const int32_t c = candidate_of_.Find(p.worker);
    if (c >= 0) candidates_[static_cast<size_t>(c)].block.Add(p.tier, p.mask);
  }
  for (size_t i = 0; i < unsettled_.size();) {
    Candidate& candidate = candidates_[unsettled_[i]];
    candidate.scanner.PushRun(candidate.block, 1, block.token_count);
    if (candidate.scanner.settled()) {
      next_classes_[unsettled_[i]] = 0;
      candidate_of_.Set(candidate.worker, WorkerSlotMap::kNone);
      unsettled_[i] = unsettled_.back();
      unsettled_.pop_back();
    } else {
      ++i;
    }
  }
  // next_classes_ held this block's classes (ClassifyBlock), settled ones
  // now 0: they are the current list's.
  classes_.swap(next_classes_);
}

bool PrefixQuery::OnBlock(const BlockView& block) noexcept {
  const bool first = blocks_seen_ == 0;
  ++blocks_seen_;
  if (first) {
    if (block.placement_count == 0) {
      first_block_miss_ = true;
      return false;
    }
    SelectCandidates(block);
    if (candidates_.empty()) {
      // Only a coverage query can hold block 0 for no candidate.
      first_block_miss_ = true;
      return false;
    }
    ClassifyBlock(block);
  } else if (SameAsPrevious(block)) {
    ExtendRun(block);
    return true;
  } else {
    ClassifyBlock(block);
    if (next_classes_ == classes_) {
      // Every candidate sees a block of its current class: the run goes on,
      // and the raw comparison continues from this block's list.
      previous_.assign(block.placements,
                       block.placements + block.placement_count);
      ExtendRun(block);
      return true;
    }
    FlushRun();
  }
  PushNewList(block);
  if (unsettled_.empty() && blocks_seen_ < limit_) {
    stopped_early_ = true;
    return false;
  }
  return true;
}

absl::Status PrefixQuery::Answer(
    absl::FunctionRef<void(const PrefixAnswer&)> deliver) const {
  const PrefixCoverage* coverage =
      streams_ != nullptr ? streams_->coverage : nullptr;
  if (first_block_miss_) {
    deliver(PrefixAnswer{{}, 0, 1, coverage});
    return absl::OkStatus();
  }
  if (!stopped_early_ && blocks_seen_ != limit_) {
    return absl::InternalError(absl::StrCat("backend prefix scan visited ",
                                            blocks_seen_, " of ", limit_,
                                            " blocks"));
  }
  auto& entries = ranked_;  // (prefix, candidate)
  entries.clear();
  entries.reserve(candidates_.size());
  for (size_t c = 0; c < candidates_.size(); ++c) {
    const Candidate& candidate = candidates_[c];
    const uint32_t prefix = candidate.scanner.result();
    if (prefix == 0 || records_[candidate.record].address_size == 0) continue;
    entries.emplace_back(prefix, static_cast<uint32_t>(c));
  }
  // Longest first; candidate order breaks ties, as a stable sort would.
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  auto& matches = matches_;
  matches.clear();
  matches.reserve(entries.size());
  for (const auto& [prefix, c] : entries) {
    const WorkerRecord& record = records_[candidates_[c].record];
    // A stream's match names its worker id, never its backend id.
    matches.push_back(PrefixMatchView{
        WorkerIdOf(std::string_view(Text(record.id_offset), record.id_size)),
        std::string_view(Text(record.address_offset), record.address_size),
        prefix, record.stream});
  }
  deliver(PrefixAnswer{matches, entries.empty() ? 0 : entries.front().first,
                       static_cast<uint32_t>(limit_), coverage});
  return absl::OkStatus();
}

}  // namespace kvindexer
