// The exit codes of kv-indexer-ctl (docs/cli.md, "Exit codes"). Scripts
// branch on them, so each value is part of the interface: never renumber.
#ifndef KVINDEXER_CTL_EXIT_CODES_H_
#define KVINDEXER_CTL_EXIT_CODES_H_

#include <grpcpp/support/status.h>

namespace kvindexer::ctl {

enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,        // anything not listed below
  kExitUsage = 2,        // bad command line, hash, flag or variable
  kExitUnreachable = 3,  // UNAVAILABLE, DEADLINE_EXCEEDED
  kExitRefused = 4,      // UNAUTHENTICATED, PERMISSION_DENIED
  kExitNotFound = 5,     // NOT_FOUND
};

// The exit code for an RPC that ended with `code` (kExitOk for OK).
ExitCode ExitCodeForRpc(grpc::StatusCode code);

// "UNAVAILABLE", "NOT_FOUND", ... as gRPC spells the code.
const char* StatusCodeName(grpc::StatusCode code);

}  // namespace kvindexer::ctl

#endif  // KVINDEXER_CTL_EXIT_CODES_H_
