#include "server/connection_table.h"

#include <sys/stat.h>

namespace kvindexer {
namespace {

// The inode of the socket `fd` names, or 0 when it names none.
ino_t SocketInode(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return 0;
  return st.st_ino;
}

}  // namespace

bool ConnectionTable::Add(int fd) {
  const ino_t inode = SocketInode(fd);
  if (inode == 0) return false;
  std::lock_guard<std::mutex> lock(mu_);
  // An entry under the same number is a connection that ended: the number
  // could not have been handed out again otherwise.
  inodes_[fd] = inode;
  return true;
}

size_t ConnectionTable::Sweep() {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(inodes_, [](const auto& entry) {
    return SocketInode(entry.first) != entry.second;
  });
  return inodes_.size();
}

size_t ConnectionTable::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return inodes_.size();
}

}  // namespace kvindexer
