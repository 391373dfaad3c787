#include "tests/support/fake_worker_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kvindexer::bridge::testing {

FakeWorkerPort::FakeWorkerPort() { Open(); }

FakeWorkerPort::~FakeWorkerPort() { Close(); }

std::string FakeWorkerPort::url() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

bool FakeWorkerPort::Open() {
  if (fd_ >= 0) return true;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  // The port may still have connections in TIME_WAIT from the last Open().
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port_);
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (bind(fd, sa, len) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, sa, &len) != 0) {
    close(fd);
    return false;
  }
  port_ = ntohs(addr.sin_port);
  fd_ = fd;
  stop_ = false;
  acceptor_ = std::thread([this, fd] { AcceptLoop(fd); });
  return true;
}

void FakeWorkerPort::Close() {
  if (fd_ < 0) return;
  stop_ = true;
  acceptor_.join();
  close(fd_);
  fd_ = -1;
}

void FakeWorkerPort::AcceptLoop(int fd) {
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 20) != 1) continue;
    const int client = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    ++accepted_;
    close(client);
  }
}

}  // namespace kvindexer::bridge::testing
