#include "core/coverage_candidates.h"

namespace kvindexer {

void CoverageCandidates::Build(const CoverageSelection& selection) {
  views_.clear();
  uncovered_.clear();
  streams_.by_id.clear();
  views_.reserve(selection.streams.size());
  for (const auto& stream : selection.streams) {
    const CoveredStream& s = *stream;
    views_.push_back(StreamCoverageView{.ns = s.key.ns,
                                        .worker_id = s.key.worker_id,
                                        .dp_rank = s.key.dp_rank,
                                        .worker_address = s.address,
                                        .ready = s.covered,
                                        .worker_epoch = s.epoch,
                                        .watermark = s.watermark,
                                        .worker_generation = s.generation});
  }
  // Only covered streams may be candidates.
  for (size_t i = 0; i < views_.size(); ++i) {
    if (views_[i].ready) {
      streams_.by_id.emplace(selection.streams[i]->backend_id, &views_[i]);
    }
  }
  for (const std::string& a : selection.uncovered_addresses) {
    uncovered_.push_back(a);
  }
  coverage_ = PrefixCoverage{views_, selection.complete, uncovered_};
  streams_.coverage = &coverage_;
}

}  // namespace kvindexer
