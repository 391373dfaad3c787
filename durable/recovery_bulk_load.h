// Recovery as a bulk load (backend ABI 1.4, IndexBackend::SetWriteMode;
// docs/durability.md, "Recovery"): no client can reach the index before
// start-up recovery ends, so the serving backend is told to fill itself
// unpublished and to publish once, at the end.
#ifndef KVINDEXER_DURABLE_RECOVERY_BULK_LOAD_H_
#define KVINDEXER_DURABLE_RECOVERY_BULK_LOAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

class RecoveryBulkLoad {
 public:
  // Sets WriteMode::kBulkLoad on `backend` when it is used at ABI minor 4
  // or later (null, or an older minor: nothing is asked). A backend that
  // declines is loaded as before, with an INFO line saying why.
  RecoveryBulkLoad(IndexBackend* backend, uint32_t abi_minor);
  // Finishes the load if Finish was not called.
  ~RecoveryBulkLoad();
  RecoveryBulkLoad(const RecoveryBulkLoad&) = delete;
  RecoveryBulkLoad& operator=(const RecoveryBulkLoad&) = delete;

  // Sets WriteMode::kServing when the load began (once; later calls return
  // OK). An error is INTERNAL naming the backend's reason: the backend's
  // state can no longer be trusted and the server must not start.
  absl::Status Finish();

  bool active() const { return backend_ != nullptr; }

 private:
  IndexBackend* backend_ = nullptr;  // null once finished, or never begun
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_RECOVERY_BULK_LOAD_H_
