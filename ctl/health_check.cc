#include "ctl/health_check.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>
#include <grpcpp/generic/generic_stub.h>

#include <vector>

namespace kvindexer::ctl {
namespace {

const char* ServingStatusName(uint64_t value) {
  switch (value) {
    case 1:
      return "SERVING";
    case 2:
      return "NOT_SERVING";
    case 3:
      return "SERVICE_UNKNOWN";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

bool DecodeHealthResponse(const std::string& bytes,
                          std::string* serving_status) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream input(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  uint64_t status = 0;  // proto3 default: UNKNOWN
  while (true) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) break;
    if (tag == WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_VARINT)) {
      if (!input.ReadVarint64(&status)) return false;
    } else if (!WireFormatLite::SkipField(&input, tag)) {
      return false;
    }
  }
  if (!input.ConsumedEntireMessage()) return false;
  *serving_status = ServingStatusName(status);
  return true;
}

grpc::Status CheckServerHealth(const std::shared_ptr<grpc::Channel>& channel,
                               std::chrono::milliseconds timeout,
                               std::string* serving_status) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  grpc::CompletionQueue cq;
  // HealthCheckRequest{service: ""} encodes to zero bytes.
  grpc::ByteBuffer request;
  grpc::Slice empty;
  request = grpc::ByteBuffer(&empty, 1);
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request,
                            &cq);
  call->StartCall();
  grpc::ByteBuffer response;
  grpc::Status status;
  call->Finish(&response, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  // The deadline bounds this wait: the call always completes.
  if (!cq.Next(&tag, &ok)) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "completion queue shut");
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  if (!status.ok()) return status;
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "unreadable response");
  }
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (!DecodeHealthResponse(bytes, serving_status)) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "malformed grpc.health.v1 response");
  }
  return grpc::Status::OK;
}

}  // namespace kvindexer::ctl
