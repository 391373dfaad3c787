// The human form of `kv-indexer-ctl workers` (docs/cli.md, "workers").
#ifndef KVINDEXER_CTL_WORKERS_VIEW_H_
#define KVINDEXER_CTL_WORKERS_VIEW_H_

#include <string>

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

std::string RenderWorkers(
    const ::kvindexer::admin::v1::ListWorkersResponse& response);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_WORKERS_VIEW_H_
