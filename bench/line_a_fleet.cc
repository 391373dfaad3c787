#include "line_a_fleet.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include "absl/strings/str_cat.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

namespace v1 = ::kv_indexer::v1;

std::unique_ptr<grpc::ClientContext> Context(double timeout_s) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  return context;
}

absl::Status Failed(const char* call, const LineAStream& stream,
                    const grpc::Status& status) {
  return absl::InternalError(absl::StrCat(
      call, " for ", stream.worker_id, " failed: code ",
      static_cast<int>(status.error_code()), " ", status.error_message()));
}

}  // namespace

std::vector<LineAStream> MakeLineAStreams(uint32_t count) {
  std::vector<LineAStream> streams;
  streams.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    streams.push_back(LineAStream{
        absl::StrCat("w", i), i,
        absl::StrCat("http://10.", i / 256, ".", i % 256, ".1:30000"),
        absl::StrCat("gen-", i)});
  }
  return streams;
}

void SetStreamId(const LineAStream& stream, v1::StreamId* id) {
  id->set_namespace_("bench");
  id->set_worker_id(stream.worker_id);
  id->set_dp_rank(0);
}

v1::ConfigureExpectedWorkersRequest ConfigureRequest(
    const std::vector<LineAStream>& streams) {
  v1::ConfigureExpectedWorkersRequest req;
  for (const LineAStream& s : streams) {
    v1::ExpectedWorker* w = req.add_workers();
    SetStreamId(s, w->mutable_stream_id());
    w->set_worker_address(s.address);
    w->set_worker_generation(s.generation);
  }
  return req;
}

absl::Status InstallStaged(v1::KVIndexer::Stub& stub, const LineAStream& stream,
                           const std::vector<int64_t>& hashes,
                           uint32_t append_batch, double rpc_timeout_s) {
  v1::BeginExternalKvSnapshotRequest begin;
  SetStreamId(stream, begin.mutable_stream_id());
  begin.set_worker_address(stream.address);
  begin.set_worker_epoch("bench-epoch");
  begin.set_applied_seq(1);
  begin.mutable_metadata()->set_worker_generation(stream.generation);
  begin.set_expected_placements(hashes.size());
  v1::BeginExternalKvSnapshotResponse begun;
  grpc::Status s =
      stub.BeginExternalKvSnapshot(Context(rpc_timeout_s).get(), begin, &begun);
  if (!s.ok()) return Failed("Begin", stream, s);
  const size_t batch = std::max<uint32_t>(append_batch, 1);
  v1::AppendExternalKvSnapshotRequest append;
  append.set_transaction_id(begun.transaction_id());
  for (size_t first = 0; first < hashes.size(); first += batch) {
    append.clear_placements();
    const size_t end = std::min(hashes.size(), first + batch);
    for (size_t i = first; i < end; ++i) {
      v1::ExternalKvSnapshotPlacement* p = append.add_placements();
      p->set_block_hash(hashes[i]);
      p->set_tier(v1::TIER_HBM);
    }
    v1::AppendExternalKvSnapshotResponse appended;
    s = stub.AppendExternalKvSnapshot(Context(rpc_timeout_s).get(), append,
                                      &appended);
    if (!s.ok()) return Failed("Append", stream, s);
  }
  v1::CommitExternalKvSnapshotRequest commit;
  commit.set_transaction_id(begun.transaction_id());
  v1::CommitExternalKvSnapshotResponse committed;
  s = stub.CommitExternalKvSnapshot(Context(rpc_timeout_s).get(), commit,
                                    &committed);
  if (!s.ok()) return Failed("Commit", stream, s);
  return absl::OkStatus();
}

}  // namespace kvindexer::bench
