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

  // remove-worker
  std::string worker_id;
  std::string reason;

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
