// The --help text; docs/cli.md says the same at length.
#include "ctl/ctl_options.h"

namespace kvindexer::ctl {

const char* UsageText() {
  return R"(Usage: kv-indexer-ctl COMMAND [ARGS] [FLAGS]

Inspect and manage a running kv-indexer-server through its admin API
(kvindexer.admin.v1).

Commands:
  status                  server version, uptime, health, backend, workers,
                          memory, admission and data directory
  workers                 every stream the index knows, as a table (namespace
                          and rank columns when any stream has them)
  explain HASH...         why a prefix query answers what it does, per worker;
                          hashes separated by commas or spaces, - reads stdin
      --max-blocks N      scan at most N blocks (default 0: the server's)
      --worker ID[,ID]    also explain every stream of these worker ids
                          (repeatable)
      --stream NS/ID/RANK also explain this stream (repeatable; /ID/RANK for
                          the empty namespace)
      --eligible-address ADDR
                          a coverage query: select the streams at ADDR
                          (repeatable)
      --eligible-stream NS/ID/RANK
                          a coverage query: select this stream (repeatable;
                          wins over --eligible-address, as on the server)
      --file PATH         read hashes from PATH (- for stdin)
  remove-worker ID        remove a worker's legacy stream and its placements
                          (sends the write token)
      --namespace NS      remove the stream (NS, ID, rank) instead
      --dp-rank N         its rank (default 0)
      --reason TEXT       logged by the server with the removal
  top                     live view, most active workers first
      --interval SECONDS  refresh period (default 2)
      --iterations N      stop after N refreshes (default: until interrupted)
  help                    this text

Flags for every command:
  --endpoint URI          server: http://host:port, https://host:port or
                          unix:/path (default: $KV_INDEXER_ENDPOINT, else
                          http://[::1]:50051)
  --timeout SECONDS       deadline of each RPC (default 5)
  --json                  print responses as JSON (one document per line)
  --tls-ca FILE           CA bundle to verify the server ($KV_INDEXER_TLS_CA_FILE)
  --tls-cert FILE         client certificate ($KV_INDEXER_TLS_CLIENT_CERT_FILE)
  --tls-key FILE          client key ($KV_INDEXER_TLS_CLIENT_KEY_FILE)
  --tls-server-name NAME  name to verify instead of the host
                          ($KV_INDEXER_TLS_SERVER_NAME)
  --token-file FILE       write token for mutations
                          ($KV_INDEXER_WRITE_TOKEN_FILE); reads send it too
                          when no read token is set
  --read-token-file FILE  admin read token, sent on every read
                          ($KV_INDEXER_ADMIN_READ_TOKEN_FILE)
  -h, --help              this text

Hashes: signed decimal (-42), unsigned decimal (below 2^64) or 0x + 1-16 hex
digits.

Exit codes:
  0  success
  1  any other error
  2  usage error: unknown command or flag, bad value or hash, bad endpoint,
     unreadable TLS or token file
  3  server unreachable (UNAVAILABLE, DEADLINE_EXCEEDED)
  4  refused (UNAUTHENTICATED, PERMISSION_DENIED)
  5  not found (NOT_FOUND, e.g. remove-worker of an unknown id)
)";
}

}  // namespace kvindexer::ctl
