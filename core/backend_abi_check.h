// The host's rule for accepting a backend plugin's descriptor: which ABI
// versions and descriptor sizes it takes (docs/backend-abi.md, "Versioning").
//
//   * A different major version is refused: the layouts and the virtual
//     function order may differ.
//   * A newer minor version than the host's is refused: the backend may rely
//     on calls or struct members the host does not know.
//   * An older (or equal) minor version is accepted. The host then never
//     calls a virtual function, and never reads a member of a struct the
//     backend fills, that a later minor added (LoadedBackend::
//     SupportsAbiMinor).
//   * The descriptor's struct_size must cover the descriptor as it was at the
//     backend's minor version.
//   * The minor the host then uses is the descriptor's, lowered when a call
//     that minor promises answers kUnimplemented, the code of the header's
//     default for a call the backend does not override: a backend written
//     against an older minor and rebuilt unchanged against this header is
//     used as what it was written for (ImplementedAbiMinor).
#ifndef KVINDEXER_CORE_BACKEND_ABI_CHECK_H_
#define KVINDEXER_CORE_BACKEND_ABI_CHECK_H_

#include <stddef.h>
#include <stdint.h>

#include "absl/status/status.h"
#include "kvindexer/backend.h"

namespace kvindexer {

// An ABI version: what a host speaks, or what a backend was built against.
struct AbiVersion {
  uint32_t major;
  uint32_t minor;
};

// This build's host version: kBackendAbiMajor.kBackendAbiMinor.
inline constexpr AbiVersion kHostAbi = {kBackendAbiMajor, kBackendAbiMinor};

// sizeof(BackendDescriptor) as it was at ABI minor `minor` of this major: the
// smallest struct_size a backend built against that minor can report. A
// minor newer than this header gets the newest size it knows.
size_t DescriptorSizeAtMinor(uint32_t minor);

// OK when a host speaking `host` may use a backend with `descriptor`;
// otherwise FailedPrecondition whose message, meant to follow the plugin's
// path, names the field that differs and both values.
absl::Status CheckDescriptorAbi(const BackendDescriptor& descriptor,
                                AbiVersion host = kHostAbi);

// The ABI minor the host uses with `backend`, whose descriptor says
// `declared_minor` (already accepted by CheckDescriptorAbi): for each minor
// from 1 to declared_minor that added a virtual function, that function is
// called once with the empty worker id, which no worker can have (a no-op
// that returns OK in a backend that implements it; backend.h). The result
// is one below the first minor whose call answers kUnimplemented, else
// declared_minor. Calls that a later minor than declared_minor added are
// never made. REQUIRES: nothing else uses `backend` during the call (the
// loader calls it right after create()).
uint32_t ImplementedAbiMinor(IndexBackend& backend, uint32_t declared_minor);

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_BACKEND_ABI_CHECK_H_
