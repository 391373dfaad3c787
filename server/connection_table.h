// ConnectionTable: the census of the gRPC port's open connections, for the
// connection cap (server/connection_listener.h).
//
// The listener hands each accepted socket to gRPC, which closes it when the
// connection ends and tells nobody. So the table remembers each socket by
// its descriptor and its inode: a descriptor that is closed, or that now
// names another file (the number was reused), is a connection that ended.
// Sweep finds those by fstat(2), which neither blocks nor touches the
// socket. A socket's inode stays its own while the socket is open, so a
// live connection is never taken for an ended one.
//
// Thread safety: every method may be called concurrently.
#ifndef KVINDEXER_SERVER_CONNECTION_TABLE_H_
#define KVINDEXER_SERVER_CONNECTION_TABLE_H_

#include <sys/types.h>

#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace kvindexer {

class ConnectionTable {
 public:
  // Records the open socket `fd`. False, with nothing recorded, when `fd`
  // is not an open socket.
  bool Add(int fd);
  // Forgets the connections that ended; returns how many are open.
  size_t Sweep();
  // Connections recorded, ended or not, since the last sweep.
  size_t recorded() const;

 private:
  mutable std::mutex mu_;
  std::unordered_map<int, ino_t> inodes_;  // by descriptor; guarded by mu_
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_CONNECTION_TABLE_H_
