// A start-up fill as a bulk load (backend ABI 1.4,
// IndexBackend::SetWriteMode): no client can reach the index while the
// server recovers its data directory (docs/durability.md, "Recovery") or a
// fleet replica loads its first snapshot (docs/fleet.md), so the serving
// backend is told to fill itself unpublished and to publish once, at the
// end.
#ifndef KVINDEXER_DURABLE_STARTUP_BULK_LOAD_H_
#define KVINDEXER_DURABLE_STARTUP_BULK_LOAD_H_

#include <cstdint>

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer::durable {

class StartupBulkLoad {
 public:
  // Sets WriteMode::kBulkLoad on `backend` when it is used at ABI minor 4
  // or later (null, or an older minor: nothing is asked). A backend that
  // declines is loaded as before, with an INFO line saying why.
  StartupBulkLoad(IndexBackend* backend, uint32_t abi_minor);
  // Finishes the load if Finish was not called.
  ~StartupBulkLoad();
  StartupBulkLoad(const StartupBulkLoad&) = delete;
  StartupBulkLoad& operator=(const StartupBulkLoad&) = delete;

  // Sets WriteMode::kServing when the load began (once; later calls return
  // OK). An error is INTERNAL naming the backend's reason: the backend's
  // state can no longer be trusted and the server must not start.
  absl::Status Finish();

  bool active() const { return backend_ != nullptr; }

 private:
  IndexBackend* backend_ = nullptr;  // null once finished, or never begun
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_STARTUP_BULK_LOAD_H_
