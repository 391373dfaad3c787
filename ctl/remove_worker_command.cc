#include <ostream>

#include "absl/strings/str_cat.h"
#include "ctl/commands.h"
#include "ctl/exit_codes.h"
#include "ctl/json_output.h"
#include "ctl/worker_labels.h"

namespace kvindexer::ctl {

int RunRemoveWorker(const CommandContext& context) {
  const CtlOptions& options = context.options;
  admin_v1::RemoveWorkerRequest request;
  request.set_worker_id(options.worker_id);
  request.set_reason(options.reason);
  // Either flag names a stream by its key; neither, the legacy stream.
  if (options.ns.has_value() || options.dp_rank.has_value()) {
    ::kv_indexer::v1::StreamId* stream = request.mutable_stream_id();
    stream->set_namespace_(options.ns.value_or(""));
    stream->set_worker_id(options.worker_id);
    stream->set_dp_rank(options.dp_rank.value_or(0));
  }
  const std::string stream_label =
      StreamLabel(options.ns.value_or(""), options.dp_rank.value_or(0));
  // The token files were read with the TLS files, before any RPC.
  std::unique_ptr<grpc::ClientContext> rpc = context.NewMutationContext();
  admin_v1::RemoveWorkerResponse response;
  const grpc::Status status =
      context.stub.RemoveWorker(rpc.get(), request, &response);
  if (!status.ok()) {
    return context.RpcFailed(
        absl::StrCat("RemoveWorker(", options.worker_id, stream_label, ")"),
        status);
  }
  if (context.options.json) {
    *context.io.out << MessageJson(response) << "\n";
    return kExitOk;
  }
  uint64_t total = 0;
  std::string per_tier;
  for (const auto& count : response.removed_placements()) {
    total += count.placements();
    absl::StrAppend(&per_tier, per_tier.empty() ? "" : ", ",
                    TierLabel(count.tier()), " ", count.placements());
  }
  *context.io.out << "removed worker " << options.worker_id << stream_label;
  if (response.removed_placements().empty()) {
    *context.io.out << " (no placements counted)\n";
  } else {
    *context.io.out << ": " << total << " placements (" << per_tier << ")\n";
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
