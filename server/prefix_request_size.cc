#include "server/prefix_request_size.h"

#include <cstdint>
#include <string>
#include <vector>

#include "common/wire_vocabulary.h"
#include "fmt/format.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace kvindexer {
namespace {

using google::protobuf::internal::WireFormatLite;

// MatchExternalKvPrefixRequest's eligible_worker_addresses and
// eligible_streams.
constexpr uint32_t kEligibleAddressesField = 3;
constexpr uint32_t kEligibleStreamsField = 4;

grpc::Status TooLarge(size_t size, size_t maximum) {
  return grpc::Status(
      grpc::StatusCode::OUT_OF_RANGE,
      fmt::format("request message is {} bytes; maximum is {}", size, maximum));
}

}  // namespace

bool CarriesCoverageFields(const grpc::ByteBuffer& request) {
  std::vector<grpc::Slice> slices;
  if (!request.Dump(&slices).ok()) return false;
  std::string bytes;
  bytes.reserve(request.Length());
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  google::protobuf::io::CodedInputStream in(
      reinterpret_cast<const uint8_t*>(bytes.data()),
      static_cast<int>(bytes.size()));
  in.SetTotalBytesLimit(static_cast<int>(bytes.size()));
  for (;;) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return false;
    const uint32_t field = WireFormatLite::GetTagFieldNumber(tag);
    if (field == kEligibleAddressesField || field == kEligibleStreamsField) {
      return true;
    }
    if (!WireFormatLite::SkipField(&in, tag)) return false;
  }
}

grpc::Status CheckPrefixRequestSize(const grpc::ByteBuffer& request) {
  const size_t size = request.Length();
  if (size <= kMaxRequestBytes) return grpc::Status::OK;
  // Every other request keeps 8 MiB and its message.
  if (!CarriesCoverageFields(request)) return TooLarge(size, kMaxRequestBytes);
  if (size > kMaxCoverageRequestBytes) {
    return TooLarge(size, kMaxCoverageRequestBytes);
  }
  return grpc::Status::OK;
}

}  // namespace kvindexer
