#include "replica/replica_refusal.h"

#include "fmt/format.h"
#include "replica/event_source_config.h"

namespace kvindexer::replica {

absl::Status ReplicaRefusalStatus(std::string_view method) {
  return absl::FailedPreconditionError(
      fmt::format("{} is refused: this server is a replica that follows the "
                  "fleet event log ({}=jetstream) and changes only through "
                  "its records; send writes to the bridges that append to "
                  "the log",
                  method, kEventSourceVar));
}

grpc::Status ReplicaRefusal(std::string_view method) {
  const absl::Status status = ReplicaRefusalStatus(method);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      std::string(status.message()));
}

}  // namespace kvindexer::replica
