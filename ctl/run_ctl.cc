#include "ctl/run_ctl.h"

#include <ostream>

#include "ctl/admin_connection.h"
#include "ctl/commands.h"
#include "ctl/ctl_options.h"
#include "ctl/exit_codes.h"

namespace kvindexer::ctl {

int RunCtl(const std::vector<std::string>& args, const CtlIo& io) {
  absl::StatusOr<CtlOptions> options = ParseCtlArgs(args);
  if (!options.ok()) {
    *io.err << "kv-indexer-ctl: " << options.status().message()
            << " (see kv-indexer-ctl --help)\n";
    return kExitUsage;
  }
  if (options->command == Command::kHelp) {
    *io.out << UsageText();
    return kExitOk;
  }
  absl::StatusOr<AdminConnection> connection =
      ResolveConnection(*options, io.env);
  if (!connection.ok()) {
    *io.err << "kv-indexer-ctl: " << connection.status().message() << "\n";
    return kExitUsage;
  }
  std::shared_ptr<grpc::Channel> channel = OpenChannel(*connection);
  std::unique_ptr<admin_v1::KvIndexerAdmin::Stub> stub =
      admin_v1::KvIndexerAdmin::NewStub(channel);
  const CommandContext context{*options, *connection, channel, *stub, io};
  switch (options->command) {
    case Command::kStatus:
      return RunStatus(context);
    case Command::kWorkers:
      return RunWorkers(context);
    case Command::kExplain:
      return RunExplain(context);
    case Command::kRemoveWorker:
      return RunRemoveWorker(context);
    case Command::kTop:
      return RunTop(context);
    case Command::kHelp:
      break;
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
