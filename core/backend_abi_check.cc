#include "core/backend_abi_check.h"

#include <array>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace kvindexer {
namespace {

// sizeof(BackendDescriptor) at each minor of ABI major 1. A new minor adds
// its entry: the same size, or the larger one its appended members make.
constexpr size_t kDescriptorSizes[] = {
    // 1.0: abi_major .. destroy
    offsetof(BackendDescriptor, read_concurrency),
    // 1.1: unchanged (IndexBackend::RemoveWorker)
    offsetof(BackendDescriptor, read_concurrency),
    // 1.2: unchanged (CountPlacements)
    offsetof(BackendDescriptor, read_concurrency),
    sizeof(BackendDescriptor),  // 1.3: read_concurrency
    sizeof(BackendDescriptor),  // 1.4: unchanged (SetWriteMode)
};
static_assert(std::size(kDescriptorSizes) == kBackendAbiMinor + 1,
              "kBackendAbiMinor changed: add the descriptor's size at the new "
              "minor to kDescriptorSizes");

// The empty worker id: no worker has it, so each probe below is a no-op in a
// backend that implements the call (backend.h).
constexpr StringView kNoWorker = {"", 0};

BackendCode ProbeRemoveWorker(IndexBackend& backend) {
  uint32_t existed = 0;
  return backend.RemoveWorker(kNoWorker, &existed).code;
}

BackendCode ProbeCountPlacements(IndexBackend& backend) {
  std::array<uint64_t, kMaxTier + 1> counts{};
  uint32_t existed = 0;
  return backend.CountPlacements(kNoWorker, counts.data(), &existed).code;
}

// kServing is the mode a backend starts in, so setting it is a no-op.
BackendCode ProbeSetWriteMode(IndexBackend& backend) {
  return backend.SetWriteMode(WriteMode::kServing).code;
}

// At each minor of ABI major 1, a call to the virtual function it added, or
// null when it added none. A new minor adds its entry.
using Probe = BackendCode (*)(IndexBackend& backend);
constexpr Probe kProbes[] = {
    nullptr,                // 1.0: the ABI as first released
    &ProbeRemoveWorker,     // 1.1: IndexBackend::RemoveWorker
    &ProbeCountPlacements,  // 1.2: IndexBackend::CountPlacements
    nullptr,                // 1.3: BackendDescriptor::read_concurrency
    &ProbeSetWriteMode,     // 1.4: IndexBackend::SetWriteMode
};
static_assert(std::size(kProbes) == kBackendAbiMinor + 1,
              "kBackendAbiMinor changed: add the new minor's call to kProbes "
              "(nullptr when it added no virtual function)");

}  // namespace

size_t DescriptorSizeAtMinor(uint32_t minor) {
  constexpr size_t kKnown = std::size(kDescriptorSizes);
  return kDescriptorSizes[minor < kKnown ? minor : kKnown - 1];
}

absl::Status CheckDescriptorAbi(const BackendDescriptor& descriptor,
                                AbiVersion host) {
  if (descriptor.abi_major != host.major) {
    return absl::FailedPreconditionError(absl::StrCat(
        "was built for backend ABI major version ", descriptor.abi_major,
        ", but this host speaks major version ", host.major,
        "; rebuild the backend against this host's kvindexer/backend.h"));
  }
  if (descriptor.abi_minor > host.minor) {
    return absl::FailedPreconditionError(
        absl::StrCat("was built for backend ABI version ", descriptor.abi_major,
                     ".", descriptor.abi_minor, ", newer than this host's ",
                     host.major, ".", host.minor, " (backend ABI minor ",
                     descriptor.abi_minor, " > host minor ", host.minor,
                     "); upgrade the host or rebuild the backend"));
  }
  const size_t required = DescriptorSizeAtMinor(descriptor.abi_minor);
  if (descriptor.struct_size < required) {
    return absl::FailedPreconditionError(absl::StrCat(
        "has a descriptor struct_size of ", descriptor.struct_size,
        " bytes, smaller than the ", required, " bytes ABI ",
        descriptor.abi_major, ".", descriptor.abi_minor, " requires"));
  }
  return absl::OkStatus();
}

uint32_t ImplementedAbiMinor(IndexBackend& backend, uint32_t declared_minor) {
  for (uint32_t minor = 1;
       minor <= declared_minor && minor < std::size(kProbes); ++minor) {
    if (kProbes[minor] != nullptr &&
        kProbes[minor](backend) == BackendCode::kUnimplemented) {
      return minor - 1;
    }
  }
  return declared_minor;
}

}  // namespace kvindexer
