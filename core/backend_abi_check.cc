#include "core/backend_abi_check.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace kvindexer {
namespace {

// sizeof(BackendDescriptor) at each minor of ABI major 1. A new minor adds
// its entry: the same size, or the larger one its appended members make.
constexpr size_t kDescriptorSizes[] = {
    sizeof(BackendDescriptor),  // 1.0: abi_major .. destroy
    sizeof(BackendDescriptor),  // 1.1: unchanged (IndexBackend::RemoveWorker)
    sizeof(BackendDescriptor),  // 1.2: unchanged (CountPlacements)
};
static_assert(std::size(kDescriptorSizes) == kBackendAbiMinor + 1,
              "kBackendAbiMinor changed: add the descriptor's size at the new "
              "minor to kDescriptorSizes");

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

}  // namespace kvindexer
