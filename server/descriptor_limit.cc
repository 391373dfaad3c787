#include "server/descriptor_limit.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "server/grpc_server_config.h"

namespace kvindexer {

std::optional<std::string> EnsureDescriptorsFor(size_t max_connections) {
  const rlim_t needed =
      static_cast<rlim_t>(max_connections) + kReservedDescriptors;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    return fmt::format("cannot read the file descriptor limit: {}",
                       std::strerror(errno));
  }
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < needed) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max == RLIM_INFINITY
                          ? needed
                          : std::min<rlim_t>(needed, limit.rlim_max);
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  if (limit.rlim_cur == RLIM_INFINITY || limit.rlim_cur >= needed) {
    return std::nullopt;
  }
  return fmt::format(
      "{}={} needs {} file descriptors with the {} the server keeps for its "
      "other files, but the process may open only {} (RLIMIT_NOFILE, hard "
      "limit {}): connections beyond what the descriptors allow are refused "
      "and logged before the cap is reached. Raise the limit (systemd "
      "LimitNOFILE=, docker --ulimit nofile=, ulimit -n) or lower {}",
      kGrpcMaxConnectionsVar, max_connections, needed, kReservedDescriptors,
      limit.rlim_cur,
      limit.rlim_max == RLIM_INFINITY ? std::string("unlimited")
                                      : std::to_string(limit.rlim_max),
      kGrpcMaxConnectionsVar);
}

}  // namespace kvindexer
