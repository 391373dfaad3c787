#include <ostream>

#include "ctl/commands.h"
#include "ctl/exit_codes.h"
#include "ctl/json_output.h"
#include "ctl/worker_pages.h"
#include "ctl/workers_view.h"

namespace kvindexer::ctl {

int RunWorkers(const CommandContext& context) {
  admin_v1::ListWorkersResponse response;
  const grpc::Status status = ListAllWorkers(context, &response);
  if (!status.ok()) return context.RpcFailed("ListWorkers", status);
  if (context.options.json) {
    *context.io.out << MessageJson(response) << "\n";
  } else {
    *context.io.out << RenderWorkers(response);
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
