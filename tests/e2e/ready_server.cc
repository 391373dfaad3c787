#include "tests/e2e/ready_server.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace kvindexer::e2e {

absl::StatusOr<ReadyServer> StartReadyServer(
    test_support::ProcessOptions options, int port,
    std::chrono::milliseconds timeout) {
  absl::StatusOr<test_support::ListeningServer> listening =
      test_support::StartListeningServer(std::move(options), port, timeout);
  if (!listening.ok()) return listening.status();
  ReadyServer server;
  server.process = std::move(listening->process);
  server.address = listening->address;
  server.port = listening->port;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  server.channel = grpc::CreateCustomChannel(
      server.address, grpc::InsecureChannelCredentials(), args);
  server.stub = ::kv_indexer::v1::KVIndexer::NewStub(server.channel);
  const bool ready = test_support::WaitUntil(
      [&] {
        ::kv_indexer::v1::GetExternalKvHitCountsRequest request;
        request.add_hashes(0);
        ::kv_indexer::v1::GetExternalKvHitCountsResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::seconds(1));
        return server.stub->GetExternalKvHitCounts(&context, request, &response)
            .ok();
      },
      timeout, std::chrono::milliseconds(20));
  if (!ready) {
    return absl::DeadlineExceededError(absl::StrCat(
        "the server at ", server.address,
        " did not answer GetExternalKvHitCounts within ", timeout.count(),
        " ms; its output:\n", server.process->Output()));
  }
  return server;
}

}  // namespace kvindexer::e2e
