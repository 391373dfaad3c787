#include <ostream>

#include "ctl/commands.h"
#include "ctl/exit_codes.h"
#include "ctl/health_check.h"
#include "ctl/json_output.h"
#include "ctl/status_view.h"

namespace kvindexer::ctl {

int RunStatus(const CommandContext& context) {
  admin_v1::GetStatsResponse stats;
  const grpc::Status status = context.stub.GetStats(
      context.NewContext().get(), admin_v1::GetStatsRequest(), &stats);
  if (!status.ok()) return context.RpcFailed("GetStats", status);

  // The stats already carry the health; the probe's own answer is shown too
  // because it is what Kubernetes sees. A server without the health service
  // still has a status.
  std::string health;
  const grpc::Status check =
      CheckServerHealth(context.channel, context.options.timeout, &health);
  if (!check.ok()) {
    health = check.error_code() == grpc::StatusCode::UNIMPLEMENTED
                 ? "not offered"
                 : std::string("failed: ") + StatusCodeName(check.error_code());
  }
  if (context.options.json) {
    *context.io.out << "{\"stats\":" << MessageJson(stats)
                    << ",\"health_check\":" << JsonString(health) << "}\n";
  } else {
    *context.io.out << RenderStatus(context.connection.endpoint, stats, health);
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
