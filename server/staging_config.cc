#include "server/staging_config.h"

namespace kvindexer {

absl::StatusOr<StagingLimits> LoadStagingLimits(const EnvLookup& env) {
  StagingLimits limits;
  struct Entry {
    std::string_view var;
    Uint32Syntax syntax;
    std::string_view accepted;
    uint32_t* value;
  };
  const Entry entries[] = {
      {kStagingMaxPlacementsVar,
       {.min = 1, .max = kMaxStagingMaxPlacements},
       "a positive integer of placements (1..50000000), for example 20000000",
       &limits.max_placements},
      {kStagingMaxTransactionsVar,
       {.min = 1},
       "a positive integer of transactions (1..4294967295), for example 256",
       &limits.max_transactions},
      {kStagingIdleTimeoutMsVar,
       {.min = kMinStagingIdleTimeoutMs, .max = kMaxStagingIdleTimeoutMs},
       "an integer of milliseconds (1000..3600000), for example 60000",
       &limits.idle_timeout_ms},
  };
  for (const Entry& e : entries) {
    if (absl::Status s =
            ReadEnvUint32(env, e.var, e.syntax, e.accepted, e.value);
        !s.ok()) {
      return s;
    }
  }
  return limits;
}

}  // namespace kvindexer
