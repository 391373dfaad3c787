// CoverageCandidates: the streams a coverage query (docs/contract.md,
// "Streams > Coverage") lets be candidates, built from its selection. The
// prefix query and its explanation (core/prefix_query.h,
// core/prefix_explain.h) both take them from here, so that the two select
// exactly the same streams: every selected stream is in the coverage, and
// only the covered ones may be candidates.
//
// OWNERSHIP: streams() points into this object and into the selection it
// was built from. REQUIRES: both outlive every use of streams(), and
// neither changes meanwhile. Not thread-safe; one per thread or per call.
#ifndef KVINDEXER_CORE_COVERAGE_CANDIDATES_H_
#define KVINDEXER_CORE_COVERAGE_CANDIDATES_H_

#include <string_view>
#include <vector>

#include "core/prefix_answer.h"
#include "core/prefix_query.h"
#include "core/stream_coverage.h"

namespace kvindexer {

class CoverageCandidates {
 public:
  CoverageCandidates() = default;
  CoverageCandidates(const CoverageCandidates&) = delete;
  CoverageCandidates& operator=(const CoverageCandidates&) = delete;

  // Replaces what an earlier Build made, keeping its buffers.
  void Build(const CoverageSelection& selection);

  // The candidate streams by backend id, with the coverage answer.
  const CandidateStreams& streams() const { return streams_; }

 private:
  std::vector<StreamCoverageView> views_;
  std::vector<std::string_view> uncovered_;
  PrefixCoverage coverage_;
  CandidateStreams streams_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_COVERAGE_CANDIDATES_H_
