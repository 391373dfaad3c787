// KV_INDEXER_WAL_SYNC: when a logged mutation counts as durable.
#ifndef KVINDEXER_DURABLE_WAL_SYNC_H_
#define KVINDEXER_DURABLE_WAL_SYNC_H_

namespace kvindexer::durable {

enum class WalSync {
  kAlways,  // on stable storage (fdatasync), concurrent writers sharing syncs
  kNone,    // written to the OS: survives a process crash, not a host crash
};

}  // namespace kvindexer::durable

#endif  // KVINDEXER_DURABLE_WAL_SYNC_H_
