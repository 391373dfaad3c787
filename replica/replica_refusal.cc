#include "replica/replica_refusal.h"

#include "fmt/format.h"
#include "replica/event_source_config.h"

namespace kvindexer::replica {

grpc::Status ReplicaRefusal(std::string_view method) {
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      fmt::format("{} is refused: this server is a replica that follows the "
                  "fleet event log ({}=jetstream) and changes only through "
                  "its records; send writes to the bridges that append to "
                  "the log",
                  method, kEventSourceVar));
}

}  // namespace kvindexer::replica
