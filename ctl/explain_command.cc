#include <fstream>
#include <istream>
#include <ostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/env.h"
#include "ctl/commands.h"
#include "ctl/exit_codes.h"
#include "ctl/explain_view.h"
#include "ctl/hash_list.h"
#include "ctl/json_output.h"

namespace kvindexer::ctl {
namespace {

std::string ReadAll(std::istream& in) {
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every hash of the command line, in order: arguments, "-" (stdin) and
// --file.
absl::Status CollectHashes(const CommandContext& context,
                           std::vector<int64_t>* hashes) {
  const CtlOptions& options = context.options;
  for (size_t i = 0; i < options.hash_args.size(); ++i) {
    const std::string& arg = options.hash_args[i];
    absl::Status added =
        arg == "-"
            ? AppendHashes(ReadAll(*context.io.in), "stdin", hashes)
            : AppendHashes(arg, absl::StrCat("argument ", i + 1), hashes);
    if (!added.ok()) return added;
  }
  if (options.hash_file) {
    if (*options.hash_file == "-") {
      return AppendHashes(ReadAll(*context.io.in), "stdin", hashes);
    }
    std::ifstream file(*options.hash_file);
    if (!file) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--file: cannot read ", QuoteEnvValue(*options.hash_file)));
    }
    return AppendHashes(ReadAll(file), *options.hash_file, hashes);
  }
  return absl::OkStatus();
}

void SetStream(const StreamArg& stream, ::kv_indexer::v1::StreamId* out) {
  out->set_namespace_(stream.ns);
  out->set_worker_id(stream.worker_id);
  out->set_dp_rank(stream.dp_rank);
}

}  // namespace

int RunExplain(const CommandContext& context) {
  std::vector<int64_t> hashes;
  absl::Status collected = CollectHashes(context, &hashes);
  if (!collected.ok())
    return context.UsageFailed(std::string(collected.message()));
  if (hashes.empty()) return context.UsageFailed("explain: no hashes given");

  admin_v1::ExplainPrefixRequest request;
  request.mutable_hashes()->Add(hashes.begin(), hashes.end());
  request.set_max_blocks(context.options.max_blocks);
  for (const std::string& id : context.options.extra_workers) {
    request.add_worker_ids(id);
  }
  for (const StreamArg& stream : context.options.extra_streams) {
    SetStream(stream, request.add_streams());
  }
  for (const std::string& address : context.options.eligible_addresses) {
    request.add_eligible_worker_addresses(address);
  }
  for (const StreamArg& stream : context.options.eligible_streams) {
    SetStream(stream, request.add_eligible_streams());
  }
  admin_v1::ExplainPrefixResponse response;
  const grpc::Status status = context.stub.ExplainPrefix(
      context.NewContext().get(), request, &response);
  if (!status.ok()) return context.RpcFailed("ExplainPrefix", status);
  if (context.options.json) {
    *context.io.out << MessageJson(response) << "\n";
  } else {
    *context.io.out << RenderExplain(response);
  }
  return kExitOk;
}

}  // namespace kvindexer::ctl
