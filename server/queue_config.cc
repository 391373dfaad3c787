#include "server/queue_config.h"

namespace kvindexer {
namespace {

constexpr Uint32Syntax kQueueSyntax{.min = 1, .max = kMaxQueueLimit};

}  // namespace

absl::StatusOr<QueueLimits> LoadQueueLimits(const EnvLookup& env) {
  QueueLimits limits;
  struct Entry {
    std::string_view var;
    std::string_view accepted;
    uint32_t* value;
  };
  const Entry entries[] = {
      {kApplyQueueMaxVar,
       "a positive integer of mutations (1..1048576), for example 1024",
       &limits.apply},
      {kLookupQueueMaxVar,
       "a positive integer of calls (1..1048576), for example 1024",
       &limits.lookup},
      {kAdminQueueMaxVar,
       "a positive integer of calls (1..1048576), for example 64",
       &limits.admin},
  };
  for (const Entry& e : entries) {
    if (absl::Status s =
            ReadEnvUint32(env, e.var, kQueueSyntax, e.accepted, e.value);
        !s.ok()) {
      return s;
    }
  }
  return limits;
}

}  // namespace kvindexer
