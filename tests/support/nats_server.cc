#include "tests/support/nats_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tests/support/http_get.h"

namespace kvindexer::test_support {
namespace {

using namespace std::chrono_literals;

// How often a start is retried on fresh ports when a port was taken.
constexpr int kStartAttempts = 3;

std::string Loopback(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace

std::string NatsServerBinary() {
  const char* configured = std::getenv("KV_INDEXER_TEST_NATS_SERVER");
  if (configured != nullptr && *configured != '\0') return configured;
  for (const char* path : {"/usr/sbin/nats-server", "/usr/bin/nats-server"}) {
    if (access(path, X_OK) == 0) return path;
  }
  return "";
}

absl::StatusOr<int> PickFreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(
        absl::StrCat("bind 127.0.0.1:0: ", strerror(error)));
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

NatsServer::NatsServer(std::unique_ptr<ScratchDir> dir,
                       std::optional<NatsClusterMembership> membership,
                       std::vector<std::string> extra_args)
    : dir_(std::move(dir)),
      membership_(std::move(membership)),
      extra_args_(std::move(extra_args)) {}

NatsServer::~NatsServer() {
  // Kill before the store directory goes.
  if (process_ != nullptr) process_->Kill();
}

absl::StatusOr<std::unique_ptr<NatsServer>> NatsServer::Start(
    std::vector<std::string> extra_args, std::chrono::milliseconds timeout) {
  if (NatsServerBinary().empty()) {
    return absl::FailedPreconditionError(kNoNatsServerMessage);
  }
  absl::StatusOr<std::unique_ptr<ScratchDir>> dir =
      ScratchDir::Create("kvindexer-nats-");
  if (!dir.ok()) return dir.status();
  std::unique_ptr<NatsServer> server(
      new NatsServer(*std::move(dir), std::nullopt, std::move(extra_args)));
  absl::Status status;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    status = server->PickPorts();
    if (status.ok()) status = server->Launch();
    if (status.ok()) status = server->WaitReady(timeout);
    if (status.ok()) return server;
    // A server that is still running did not lose a port race: it is slow
    // or broken, and fresh ports will not help.
    if (server->Running()) break;
  }
  return status;
}

absl::Status NatsServer::PickPorts() {
  absl::StatusOr<int> port = PickFreeLoopbackPort();
  if (!port.ok()) return port.status();
  absl::StatusOr<int> monitor = PickFreeLoopbackPort();
  if (!monitor.ok()) return monitor.status();
  port_ = *port;
  monitor_port_ = *monitor;
  return absl::OkStatus();
}

absl::Status NatsServer::Launch() {
  if (process_ != nullptr) process_->Kill();
  process_.reset();
  ProcessOptions options;
  options.binary = NatsServerBinary();
  options.output_path = dir_->Sub("nats-server.log");
  options.args = {"-js",
                  "-a",
                  "127.0.0.1",
                  "-p",
                  absl::StrCat(port_),
                  "-m",
                  absl::StrCat(monitor_port_),
                  "-sd",
                  dir_->Sub("store")};
  if (membership_.has_value()) {
    std::vector<std::string> routes;
    for (int peer : membership_->peer_cluster_ports) {
      routes.push_back(absl::StrCat("nats://", Loopback(peer)));
    }
    options.args.insert(
        options.args.end(),
        {"--server_name", membership_->server_name, "--cluster_name",
         membership_->cluster_name, "--cluster",
         absl::StrCat("nats://", Loopback(membership_->cluster_port)),
         "--routes", absl::StrJoin(routes, ",")});
  }
  options.args.insert(options.args.end(), extra_args_.begin(),
                      extra_args_.end());
  absl::StatusOr<std::unique_ptr<ServerProcess>> process =
      ServerProcess::Start(std::move(options));
  if (!process.ok()) return process.status();
  process_ = *std::move(process);
  return absl::OkStatus();
}

absl::Status NatsServer::WaitReady(std::chrono::milliseconds timeout) {
  // /healthz answers 200 once JetStream is enabled and, in a cluster, the
  // node has found the meta leader and its streams are current.
  int last_status = 0;
  std::string last_body;
  const bool ready = WaitUntil(
      [&] {
        if (!process_->Running()) return true;
        absl::StatusOr<HttpResponse> health =
            HttpGet(monitor_port_, "/healthz", 1s);
        if (!health.ok()) return false;
        last_status = health->status;
        last_body = health->body;
        return health->status == 200;
      },
      timeout, 20ms);
  if (!process_->Running()) {
    return absl::UnavailableError(absl::StrCat(
        "nats-server ended (", process_->WaitForExit({})->ToString(),
        ") before it was ready; its output:\n", Output()));
  }
  if (!ready) {
    return absl::DeadlineExceededError(absl::StrCat(
        "nats-server on ", Loopback(port_), " was not healthy within ",
        timeout.count(), " ms (last /healthz: ", last_status, " ", last_body,
        "); its output:\n", Output()));
  }
  return absl::OkStatus();
}

absl::Status NatsServer::Stop(std::chrono::milliseconds timeout) {
  if (process_ == nullptr || !process_->Running()) return absl::OkStatus();
  process_->Signal(SIGCONT);  // a paused server cannot act on SIGTERM
  process_->Signal(SIGTERM);
  const std::optional<ExitStatus> exit = process_->WaitForExit(timeout);
  if (!exit.has_value()) {
    process_->Kill();
    return absl::DeadlineExceededError(absl::StrCat(
        "nats-server did not stop within ", timeout.count(), " ms; killed"));
  }
  return absl::OkStatus();
}

void NatsServer::Kill() {
  if (process_ != nullptr) process_->Kill();
}

bool NatsServer::Pause() {
  if (process_ == nullptr || !process_->Signal(SIGSTOP)) return false;
  // The signal is only queued when kill() returns: wait until every thread
  // has stopped, or the server could still answer a request sent next.
  const std::string tasks = absl::StrCat("/proc/", process_->pid(), "/task");
  return WaitUntil(
      [&] {
        std::error_code error;
        for (const auto& task :
             std::filesystem::directory_iterator(tasks, error)) {
          std::ifstream stat(task.path() / "stat");
          std::string line;
          if (!std::getline(stat, line)) continue;  // the thread ended
          const size_t close = line.rfind(')');
          if (close == std::string::npos || close + 2 >= line.size()) {
            return false;
          }
          const char state = line[close + 2];
          if (state != 'T' && state != 't') return false;
        }
        return !error;
      },
      10s, 1ms);
}

bool NatsServer::Resume() {
  return process_ != nullptr && process_->Signal(SIGCONT);
}

bool NatsServer::Running() {
  return process_ != nullptr && process_->Running();
}

absl::Status NatsServer::Restart(std::chrono::milliseconds timeout) {
  Kill();
  // The same ports: clients reconnect to the URL they know. A port taken
  // meanwhile by someone else shows as a start failure.
  absl::Status status = Launch();
  if (status.ok()) status = WaitReady(timeout);
  return status;
}

std::string NatsServer::url() const {
  return absl::StrCat("nats://", Loopback(port_));
}

std::string NatsServer::Output() const {
  return process_ == nullptr ? std::string() : process_->Output();
}

absl::StatusOr<std::unique_ptr<NatsCluster>> NatsCluster::Start(
    std::chrono::milliseconds timeout) {
  if (NatsServerBinary().empty()) {
    return absl::FailedPreconditionError(kNoNatsServerMessage);
  }
  absl::Status status;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    std::unique_ptr<NatsCluster> cluster(new NatsCluster());
    std::array<int, kNodes> cluster_ports{};
    for (int& port : cluster_ports) {
      absl::StatusOr<int> picked = PickFreeLoopbackPort();
      if (!picked.ok()) return picked.status();
      port = *picked;
    }
    status = absl::OkStatus();
    for (int i = 0; i < kNodes && status.ok(); ++i) {
      absl::StatusOr<std::unique_ptr<ScratchDir>> dir =
          ScratchDir::Create(absl::StrCat("kvindexer-nats-n", i + 1, "-"));
      if (!dir.ok()) return dir.status();
      NatsClusterMembership membership{
          .server_name = absl::StrCat("n", i + 1),
          .cluster_name = "kvindexer-test",
          .cluster_port = cluster_ports[static_cast<size_t>(i)],
          .peer_cluster_ports = {}};
      for (int j = 0; j < kNodes; ++j) {
        if (j != i) {
          membership.peer_cluster_ports.push_back(
              cluster_ports[static_cast<size_t>(j)]);
        }
      }
      auto& node = cluster->nodes_[static_cast<size_t>(i)];
      node.reset(new NatsServer(*std::move(dir), std::move(membership), {}));
      status = node->PickPorts();
      if (status.ok()) status = node->Launch();
    }
    // A node is healthy only once the meta leader is elected, which needs
    // a quorum: start all, then wait for each.
    for (int i = 0; i < kNodes && status.ok(); ++i) {
      status = cluster->nodes_[static_cast<size_t>(i)]->WaitReady(timeout);
    }
    if (status.ok()) return cluster;
    bool all_running = true;
    for (auto& node : cluster->nodes_) {
      all_running = all_running && node != nullptr && node->Running();
    }
    if (all_running) break;
  }
  return status;
}

std::vector<std::string> NatsCluster::url_list() const {
  std::vector<std::string> urls;
  for (const auto& node : nodes_) urls.push_back(node->url());
  return urls;
}

std::string NatsCluster::urls() const { return absl::StrJoin(url_list(), ","); }

absl::StatusOr<NatsServer*> SharedNatsServer() {
  static const absl::StatusOr<std::unique_ptr<NatsServer>> server =
      NatsServer::Start();
  if (!server.ok()) return server.status();
  return server->get();
}

}  // namespace kvindexer::test_support
