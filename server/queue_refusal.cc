#include "server/queue_refusal.h"

#include <string>

#include "fmt/format.h"
#include "server/queue_config.h"

namespace kvindexer {

std::string_view WorkQueueName(WorkQueue queue) {
  switch (queue) {
    case WorkQueue::kApply:
      return "apply";
    case WorkQueue::kLookup:
      return "lookup";
    case WorkQueue::kAdmin:
      return "admin";
  }
  return "unknown";
}

std::string_view WorkQueueVariable(WorkQueue queue) {
  switch (queue) {
    case WorkQueue::kApply:
      return kApplyQueueMaxVar;
    case WorkQueue::kLookup:
      return kLookupQueueMaxVar;
    case WorkQueue::kAdmin:
      return kAdminQueueMaxVar;
  }
  return "";
}

grpc::Status QueueFullRefusal(WorkQueue queue, size_t capacity) {
  return grpc::Status(
      grpc::StatusCode::RESOURCE_EXHAUSTED,
      fmt::format(
          "the server's {} queue is full: {} calls are waiting ({}={}); "
          "this call was not run and changed nothing, retry it later",
          WorkQueueName(queue), capacity, WorkQueueVariable(queue), capacity));
}

}  // namespace kvindexer
