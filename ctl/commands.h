// The five commands of kv-indexer-ctl (docs/cli.md, "Commands"). Each makes
// its RPCs, writes its result and returns the exit code; RunCtl has already
// parsed the command line and opened the channel.
#ifndef KVINDEXER_CTL_COMMANDS_H_
#define KVINDEXER_CTL_COMMANDS_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string_view>

#include "ctl/admin_connection.h"
#include "ctl/ctl_options.h"
#include "ctl/run_ctl.h"
#include "kvindexer_admin.grpc.pb.h"

namespace kvindexer::ctl {

namespace admin_v1 = ::kvindexer::admin::v1;

struct CommandContext {
  const CtlOptions& options;
  const AdminConnection& connection;
  std::shared_ptr<grpc::Channel> channel;
  ::kvindexer::admin::v1::KvIndexerAdmin::Stub& stub;
  const CtlIo& io;

  // A ClientContext with the --timeout deadline, carrying the read
  // credential (AdminConnection::ReadCredential), for a read.
  std::unique_ptr<grpc::ClientContext> NewContext() const;
  // The same carrying the write credential instead, for a change.
  std::unique_ptr<grpc::ClientContext> NewMutationContext() const;
  // Writes the one-line error for `what` and returns its exit code.
  int RpcFailed(std::string_view what, const grpc::Status& status) const;
  // Writes a one-line usage/configuration error; returns kExitUsage.
  int UsageFailed(std::string_view message) const;
};

int RunStatus(const CommandContext& context);
int RunWorkers(const CommandContext& context);
int RunExplain(const CommandContext& context);
int RunRemoveWorker(const CommandContext& context);
int RunTop(const CommandContext& context);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_COMMANDS_H_
