// The staged-snapshot limits (core/staging_limits.h) read from the
// environment (fleet-protocol.md, section 6.3; docs/configuration.md,
// "Snapshot staging").
//
// | Variable                              | Default  | Accepted           |
// | KV_INDEXER_STAGING_MAX_PLACEMENTS     | 20000000 | 1..50000000        |
// | KV_INDEXER_STAGING_MAX_TRANSACTIONS   | 256      | 1..4294967295      |
// | KV_INDEXER_STAGING_IDLE_TIMEOUT_MS    | 60000    | 1000..3600000      |
//
// Decimal digits, surrounding whitespace ignored; unset or blank keeps the
// default. A bad value is
// InvalidArgument naming the variable, the value and the range.
#ifndef KVINDEXER_SERVER_STAGING_CONFIG_H_
#define KVINDEXER_SERVER_STAGING_CONFIG_H_

#include "absl/status/statusor.h"
#include "common/env.h"
#include "core/staging_limits.h"

namespace kvindexer {

[[nodiscard]] absl::StatusOr<StagingLimits> LoadStagingLimits(
    const EnvLookup& env);

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_STAGING_CONFIG_H_
