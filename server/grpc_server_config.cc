#include "server/grpc_server_config.h"

#include <string>

#include "absl/strings/ascii.h"
#include "common/absl_view.h"

namespace kvindexer {
namespace {

constexpr std::string_view kMemoryQuotaAccepted =
    "0 (no quota) or a number of MiB from 16 to 1048576, for example 1024";
constexpr Uint32Syntax kMemoryQuotaSyntax{.max = 1048576};
constexpr uint32_t kMinMemoryQuotaMib = 16;
constexpr std::string_view kMaxConnectionsAccepted =
    "a positive integer of connections (1..1048576), for example 4096";
constexpr Uint32Syntax kMaxConnectionsSyntax{.min = 1,
                                             .max = kMaxGrpcMaxConnections};
constexpr std::string_view kReflectionAccepted =
    "on, 1, true or yes to offer gRPC server reflection; off, 0, false or no "
    "not to (any letter case)";

}  // namespace

absl::StatusOr<GrpcServerConfig> LoadGrpcServerConfig(const EnvLookup& env) {
  GrpcServerConfig config;
  if (auto v = LookupTrimmed(env, kGrpcMemoryQuotaMibVar)) {
    auto mib = ParseEnvUint32(kGrpcMemoryQuotaMibVar, *v, kMemoryQuotaSyntax,
                              kMemoryQuotaAccepted);
    if (!mib.ok()) return mib.status();
    if (*mib != 0 && *mib < kMinMemoryQuotaMib) {
      return InvalidEnvValue(kGrpcMemoryQuotaMibVar, *v, kMemoryQuotaAccepted);
    }
    config.memory_quota_mib = *mib;
  }
  if (absl::Status s =
          ReadEnvUint32(env, kGrpcMaxConnectionsVar, kMaxConnectionsSyntax,
                        kMaxConnectionsAccepted, &config.max_connections);
      !s.ok()) {
    return s;
  }
  if (auto v = LookupTrimmed(env, kGrpcReflectionVar)) {
    const std::string lower = absl::AsciiStrToLower(AbslView(*v));
    if (lower == "on" || lower == "1" || lower == "true" || lower == "yes") {
      config.reflection = true;
    } else if (lower == "off" || lower == "0" || lower == "false" ||
               lower == "no") {
      config.reflection = false;
    } else {
      return InvalidEnvValue(kGrpcReflectionVar, *v, kReflectionAccepted);
    }
  }
  return config;
}

}  // namespace kvindexer
