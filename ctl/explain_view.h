// The human form of `kv-indexer-ctl explain` (docs/cli.md, "explain").
#ifndef KVINDEXER_CTL_EXPLAIN_VIEW_H_
#define KVINDEXER_CTL_EXPLAIN_VIEW_H_

#include <string>

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

std::string RenderExplain(
    const ::kvindexer::admin::v1::ExplainPrefixResponse& response);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_EXPLAIN_VIEW_H_
