// The command line of kv-indexer-ctl: one command plus flags, in any order
// (docs/cli.md, "Commands" and "Flags and environment"). Parsing is pure:
// files, stdin and the environment are read later, by the commands.
#ifndef KVINDEXER_CTL_CTL_OPTIONS_H_
#define KVINDEXER_CTL_CTL_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kvindexer::ctl {

enum class Command { kHelp, kStatus, kWorkers, kExplain, kRemoveWorker, kTop };

// A stream's key as typed: NAMESPACE/WORKER/RANK (docs/cli.md, "Streams").
struct StreamArg {
  std::string ns;
  std::string worker_id;
  uint32_t dp_rank = 0;

  bool operator==(const StreamArg&) const = default;
};

struct CtlOptions {
  Command command = Command::kHelp;

  // Connection (every command). Unset: from the environment.
  std::optional<std::string> endpoint;
  std::chrono::milliseconds timeout{5000};  // deadline of each RPC
  std::optional<std::string> tls_ca_file;
  std::optional<std::string> tls_cert_file;
  std::optional<std::string> tls_key_file;
  std::optional<std::string> tls_server_name;
  std::optional<std::string> token_file;
  std::optional<std::string> read_token_file;
  bool json = false;

  // explain: hashes as typed (positional arguments; "-" is stdin), and/or
  // a file of hashes (`--file`, "-" is stdin).
  std::vector<std::string> hash_args;
  std::optional<std::string> hash_file;
  uint32_t max_blocks = 0;
  std::vector<std::string> extra_workers;
  // Streams to explain by key (--stream), and a coverage query's selection
  // (--eligible-address, --eligible-stream).
  std::vector<StreamArg> extra_streams;
  std::vector<std::string> eligible_addresses;
  std::vector<StreamArg> eligible_streams;

  // remove-worker. With --namespace or --dp-rank, the stream (namespace,
  // worker_id, dp_rank); without either, the legacy stream of worker_id.
  std::string worker_id;
  std::string reason;
  std::optional<std::string> ns;
  std::optional<uint32_t> dp_rank;

  // top: 0 iterations means until interrupted.
  std::chrono::milliseconds interval{2000};
  uint32_t iterations = 0;
};

// Parses argv[1..]. InvalidArgument with a one-line message naming the
// argument for every usage error.
[[nodiscard]] absl::StatusOr<CtlOptions> ParseCtlArgs(
    const std::vector<std::string>& args);

// The --help text.
const char* UsageText();

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_CTL_OPTIONS_H_
