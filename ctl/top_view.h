// One frame of `kv-indexer-ctl top` (docs/cli.md, "top"): the server's
// figures with their change since the previous frame, then the workers, most
// active first.
#ifndef KVINDEXER_CTL_TOP_VIEW_H_
#define KVINDEXER_CTL_TOP_VIEW_H_

#include <string>

#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

struct TopSample {
  ::kvindexer::admin::v1::GetStatsResponse stats;
  ::kvindexer::admin::v1::ListWorkersResponse workers;
};

// `previous` is null for the first frame (every change then shows as 0).
// Workers are ordered by the size of their placement change since
// `previous`, then by how recently they applied, then by placements, then
// by id.
std::string RenderTop(const std::string& endpoint, const TopSample* previous,
                      const TopSample& current);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_TOP_VIEW_H_
