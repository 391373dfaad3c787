// The human form of `kv-indexer-ctl status` (docs/cli.md, "status").
#ifndef KVINDEXER_CTL_STATUS_VIEW_H_
#define KVINDEXER_CTL_STATUS_VIEW_H_

#include <string>

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

// `health_check` is what grpc.health.v1 answered ("SERVING", ...), or a
// short note when the check itself failed.
std::string RenderStatus(const std::string& endpoint,
                         const ::kvindexer::admin::v1::GetStatsResponse& stats,
                         const std::string& health_check);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_STATUS_VIEW_H_
