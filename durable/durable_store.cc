// Placeholder until durable_store lands: every Open fails.
#include "durable/durable_store.h"

namespace kvindexer::durable {

struct DurableStore::State {};

absl::StatusOr<std::unique_ptr<DurableStore>> DurableStore::Open(
    const DurableOptions&, Indexer*) {
  return absl::UnimplementedError("restart-safe state is not built yet");
}
DurableStore::~DurableStore() = default;
absl::StatusOr<uint64_t> DurableStore::Append(const state::v1::WalRecord&) {
  return absl::UnimplementedError("placeholder");
}
void DurableStore::Retract(uint64_t) {}
uint64_t DurableStore::end() const { return 0; }
absl::Status DurableStore::WaitDurable(uint64_t) { return absl::OkStatus(); }
void DurableStore::WaitForCheckpoints() {}
uint64_t DurableStore::checkpoints_written() const { return 0; }

}  // namespace kvindexer::durable
