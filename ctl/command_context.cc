#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ctl/commands.h"
#include "ctl/exit_codes.h"

namespace kvindexer::ctl {

std::unique_ptr<grpc::ClientContext> CommandContext::NewContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + options.timeout);
  AddBearerToken(connection.ReadCredential(), context.get());
  return context;
}

std::unique_ptr<grpc::ClientContext> CommandContext::NewMutationContext()
    const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + options.timeout);
  AddBearerToken(connection.WriteCredential(), context.get());
  return context;
}

int CommandContext::RpcFailed(std::string_view what,
                              const grpc::Status& status) const {
  // One line whatever the server wrote, so that scripts can log it as is.
  const std::string message =
      absl::StrReplaceAll(status.error_message(), {{"\n", " "}, {"\r", " "}});
  *io.err << "kv-indexer-ctl: " << what << " failed at " << connection.endpoint
          << ": " << StatusCodeName(status.error_code()) << ": " << message
          << "\n";
  return ExitCodeForRpc(status.error_code());
}

int CommandContext::UsageFailed(std::string_view message) const {
  *io.err << "kv-indexer-ctl: " << message << "\n";
  return kExitUsage;
}

}  // namespace kvindexer::ctl
