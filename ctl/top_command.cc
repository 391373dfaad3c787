#include <optional>
#include <ostream>

#include "ctl/commands.h"
#include "ctl/exit_codes.h"
#include "ctl/json_output.h"
#include "ctl/top_view.h"
#include "ctl/worker_pages.h"

namespace kvindexer::ctl {
namespace {

// Cursor home, then erase the screen: every terminal since the VT100.
constexpr char kClearScreen[] = "\x1b[H\x1b[2J";

}  // namespace

int RunTop(const CommandContext& context) {
  const CtlOptions& options = context.options;
  std::optional<TopSample> previous;
  for (uint32_t i = 0; options.iterations == 0 || i < options.iterations; ++i) {
    if (i > 0) context.io.sleep(options.interval);
    TopSample sample;
    grpc::Status status = context.stub.GetStats(
        context.NewContext().get(), admin_v1::GetStatsRequest(), &sample.stats);
    if (!status.ok()) return context.RpcFailed("GetStats", status);
    status = ListAllWorkers(context, &sample.workers);
    if (!status.ok()) return context.RpcFailed("ListWorkers", status);
    if (options.json) {
      // JSON lines: one object per refresh, no screen control.
      *context.io.out << "{\"stats\":" << MessageJson(sample.stats)
                      << ",\"workers\":" << MessageJson(sample.workers)
                      << "}\n";
    } else {
      *context.io.out << kClearScreen
                      << RenderTop(context.connection.endpoint,
                                   previous ? &*previous : nullptr, sample);
    }
    context.io.out->flush();
    previous = std::move(sample);
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
