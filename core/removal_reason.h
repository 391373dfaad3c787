// RemovalReason: why a worker's record and placements are removed
// (OperatorView::RemoveWorker; docs/contract.md, "Recovery > Worker liveness
// and removal"). Shown in log lines as RemovalReasonName.
#ifndef KVINDEXER_CORE_REMOVAL_REASON_H_
#define KVINDEXER_CORE_REMOVAL_REASON_H_

#include <string_view>

namespace kvindexer {

enum class RemovalReason {
  kConfigure,  // ConfigureExpectedWorkers left it out
  kLiveness,   // its heartbeat expired
  kAdmin,      // an operator asked
  kReload,     // a fleet replica empties its index to load a snapshot
};

constexpr std::string_view RemovalReasonName(RemovalReason reason) {
  switch (reason) {
    case RemovalReason::kConfigure:
      return "configure";
    case RemovalReason::kLiveness:
      return "liveness";
    case RemovalReason::kAdmin:
      return "admin";
    case RemovalReason::kReload:
      return "reload";
  }
  return "unknown";
}

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_REMOVAL_REASON_H_
