// Every worker of a server's ListWorkers, page by page (docs/admin-api.md,
// "ListWorkers > Pages"): what `workers` and `top` show.
#ifndef KVINDEXER_CTL_WORKER_PAGES_H_
#define KVINDEXER_CTL_WORKER_PAGES_H_

#include <grpcpp/grpcpp.h>

#include "ctl/commands.h"
#include "kvindexer_admin.pb.h"

namespace kvindexer::ctl {

// The most pages one listing follows: ten million workers at the server's
// default page size, far beyond any server's worker bound. A server that
// gives more, or gives a token twice, is answered with an error rather
// than followed for ever.
inline constexpr int kMaxWorkerPages = 10000;

// Appends every worker to out->workers, in the server's order (by id); each
// page's call has the --timeout deadline. The first failed page's status
// is returned (and `out` holds the pages before it).
grpc::Status ListAllWorkers(const CommandContext& context,
                            admin_v1::ListWorkersResponse* out);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_WORKER_PAGES_H_
