// Clients for the grpc.health.v1 and server reflection services that
// kv-indexer-server registers (docs/health.md), for tests of the server.
//
// gRPC installs neither service's messages as headers, so requests are
// encoded here by hand (a few length-delimited fields) and answers are read
// as protobuf unknown fields. Test-only; header-only.
#ifndef KVINDEXER_TESTS_SUPPORT_GRPC_PROBES_H_
#define KVINDEXER_TESTS_SUPPORT_GRPC_PROBES_H_

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/sync_stream.h"

namespace kvindexer::test_support {

// grpc.health.v1.HealthCheckResponse.ServingStatus.
inline constexpr uint64_t kHealthUnknown = 0;
inline constexpr uint64_t kHealthServing = 1;
inline constexpr uint64_t kHealthNotServing = 2;

// Field `number` of a message as a length-delimited value.
inline std::string LengthDelimitedField(int number, std::string_view value) {
  std::string out;
  auto varint = [&out](uint64_t v) {
    while (v >= 0x80) {
      out.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    out.push_back(static_cast<char>(v));
  };
  varint((static_cast<uint64_t>(number) << 3) | 2);
  varint(value.size());
  out.append(value);
  return out;
}

// The values of every length-delimited field `number` of `message`.
inline std::vector<std::string> LengthDelimitedFields(
    const std::string& message, int number) {
  google::protobuf::UnknownFieldSet fields;
  std::vector<std::string> out;
  if (!fields.ParseFromString(message)) return out;
  for (int i = 0; i < fields.field_count(); ++i) {
    const google::protobuf::UnknownField& f = fields.field(i);
    if (f.number() == number &&
        f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(f.length_delimited());
    }
  }
  return out;
}

inline std::string BufferBytes(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (!buffer.Dump(&slices).ok()) return out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

struct HealthAnswer {
  grpc::StatusCode code = grpc::StatusCode::UNKNOWN;
  uint64_t status = kHealthUnknown;  // meaningful when code is OK
};

// grpc.health.v1.Health/Check for `service` ("" for the whole server).
inline HealthAnswer CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                const std::string& service,
                                std::chrono::milliseconds timeout) {
  grpc::GenericStub stub(channel);
  const std::string bytes =
      service.empty() ? std::string() : LengthDelimitedField(1, service);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(),
                 &request, &response, [&done](grpc::Status status) {
                   done.set_value(std::move(status));
                 });
  // Bounded by the call's deadline.
  const grpc::Status status = done.get_future().get();
  HealthAnswer answer{status.error_code(), kHealthUnknown};
  if (!status.ok()) return answer;
  google::protobuf::UnknownFieldSet fields;
  if (fields.ParseFromString(BufferBytes(response))) {
    for (int i = 0; i < fields.field_count(); ++i) {
      if (fields.field(i).number() == 1 &&
          fields.field(i).type() ==
              google::protobuf::UnknownField::TYPE_VARINT) {
        answer.status = fields.field(i).varint();
      }
    }
  }
  return answer;
}

// One request on ServerReflectionInfo (v1alpha, the version gRPC 1.51
// serves); the bytes of its one response, nullopt when the call failed.
inline std::optional<std::string> ReflectOnce(
    const std::shared_ptr<grpc::Channel>& channel,
    const std::string& request_bytes, std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  // What generated stubs use for a bidi stream; with ByteBuffer messages it
  // needs no generated reflection code.
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>>
      stream(grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer,
                                                       grpc::ByteBuffer>::
                 Create(channel.get(),
                        grpc::internal::RpcMethod(
                            "/grpc.reflection.v1alpha.ServerReflection/"
                            "ServerReflectionInfo",
                            grpc::internal::RpcMethod::BIDI_STREAMING),
                        &context));
  grpc::Slice slice(request_bytes);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::optional<std::string> out;
  if (stream->Write(request) && stream->Read(&response)) {
    out = BufferBytes(response);
  }
  stream->WritesDone();
  if (!stream->Finish().ok()) return std::nullopt;
  return out;
}

// The service names reflection lists (ServerReflectionRequest.list_services,
// field 7; the answer's list_services_response, 6, holds ServiceResponse
// messages, 1, each with its name, 1). nullopt when the call failed.
inline std::optional<std::vector<std::string>> ReflectedServices(
    const std::shared_ptr<grpc::Channel>& channel,
    std::chrono::milliseconds timeout) {
  const std::optional<std::string> response =
      ReflectOnce(channel, LengthDelimitedField(7, ""), timeout);
  if (!response.has_value()) return std::nullopt;
  std::vector<std::string> names;
  for (const std::string& list : LengthDelimitedFields(*response, 6)) {
    for (const std::string& service : LengthDelimitedFields(list, 1)) {
      for (std::string& name : LengthDelimitedFields(service, 1)) {
        names.push_back(std::move(name));
      }
    }
  }
  return names;
}

}  // namespace kvindexer::test_support

#endif  // KVINDEXER_TESTS_SUPPORT_GRPC_PROBES_H_
