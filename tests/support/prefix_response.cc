#include "tests/support/prefix_response.h"

#include "core/request_validation.h"

namespace kvindexer::test_support {

namespace v1 = ::kv_indexer::v1;

void FillPrefixResponse(const PrefixAnswer& answer,
                        v1::MatchExternalKvPrefixResponse* resp) {
  resp->Clear();
  resp->mutable_matches()->Reserve(static_cast<int>(answer.matches.size()));
  for (const PrefixMatchView& m : answer.matches) {
    v1::ExternalKvPrefixMatch* match = resp->add_matches();
    match->set_worker_address(m.worker_address.data(), m.worker_address.size());
    match->set_matched_prefix_blocks(m.matched_prefix_blocks);
    match->set_worker_id(m.worker_id.data(), m.worker_id.size());
  }
  resp->set_best_prefix_blocks(answer.best_prefix_blocks);
  resp->set_blocks_read(answer.blocks_read);
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
