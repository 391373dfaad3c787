#include "tests/support/prefix_response.h"

#include "core/request_validation.h"

namespace kvindexer::test_support {

namespace v1 = ::kv_indexer::v1;

namespace {

void SetStreamId(const StreamCoverageView& s, v1::StreamId* id) {
  id->set_namespace_(s.ns.data(), s.ns.size());
  id->set_worker_id(s.worker_id.data(), s.worker_id.size());
  id->set_dp_rank(s.dp_rank);
}

}  // namespace

void FillPrefixResponse(const PrefixAnswer& answer,
                        v1::MatchExternalKvPrefixResponse* resp) {
  resp->Clear();
  resp->mutable_matches()->Reserve(static_cast<int>(answer.matches.size()));
  for (const PrefixMatchView& m : answer.matches) {
    v1::ExternalKvPrefixMatch* match = resp->add_matches();
    match->set_worker_address(m.worker_address.data(), m.worker_address.size());
    match->set_matched_prefix_blocks(m.matched_prefix_blocks);
    match->set_worker_id(m.worker_id.data(), m.worker_id.size());
    if (m.stream != nullptr) {
      SetStreamId(*m.stream, match->mutable_stream_id());
      match->set_worker_generation(m.stream->worker_generation.data(),
                                   m.stream->worker_generation.size());
    }
  }
  resp->set_best_prefix_blocks(answer.best_prefix_blocks);
  resp->set_blocks_read(answer.blocks_read);
  if (answer.coverage == nullptr) return;
  for (const StreamCoverageView& s : answer.coverage->streams) {
    v1::StreamCoverage* c = resp->add_coverage();
    SetStreamId(s, c->mutable_stream_id());
    c->set_worker_address(s.worker_address.data(), s.worker_address.size());
    c->set_ready(s.ready);
    c->set_worker_epoch(s.worker_epoch.data(), s.worker_epoch.size());
    c->set_watermark(s.watermark);
    c->set_worker_generation(s.worker_generation.data(),
                             s.worker_generation.size());
  }
  resp->set_complete_coverage(answer.coverage->complete);
  for (std::string_view a : answer.coverage->uncovered_worker_addresses) {
    resp->add_uncovered_worker_addresses(a.data(), a.size());
  }
}

absl::Status MatchPrefix(IndexOperations& indexer,
                         const v1::MatchExternalKvPrefixRequest& req,
                         v1::MatchExternalKvPrefixResponse* resp) {
  if (absl::Status s = ValidatePrefix(req); !s.ok()) return s;
  return indexer.MatchPrefix(req, [resp](const PrefixAnswer& answer) {
    FillPrefixResponse(answer, resp);
  });
}

}  // namespace kvindexer::test_support
