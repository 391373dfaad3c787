// Loads an IndexBackend plugin with dlopen and checks its descriptor.
//
// KV_INDEXER_BACKEND is either a path (it contains a '/' or ends in ".so") or
// a name ("memory" stands for kDefaultBackendName). A name N is looked up as
// kvindexer-backend-N.so, first in the plugin folder installed next to the
// executable (<exe dir>/../lib/kvindexer/backends) and then in each directory
// of KV_INDEXER_BACKEND_PATH (colon-separated).
//
// Every failure names what went wrong: file missing (with the places searched),
// dlopen error, entry symbol missing, ABI major/minor or descriptor size
// mismatch (with both values), create() failure (with the backend's reason).
//
// A backend built against an older ABI minor version loads
// (backend_abi_check.h). Before the host calls a virtual function, or reads a
// member of a struct the backend fills, that ABI minor N added, it checks
// SupportsAbiMinor(N). A backend whose descriptor says a minor but which
// leaves a call of that minor to the header's default (kUnimplemented) is
// used at the minor before that call's (ImplementedAbiMinor).
#ifndef KVINDEXER_CORE_BACKEND_LOADER_H_
#define KVINDEXER_CORE_BACKEND_LOADER_H_

#include <stdint.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kvindexer/backend.h"

namespace kvindexer {

inline constexpr std::string_view kDefaultBackendName =
    "robin_sharded_snapshot";

// Later reference builds name their in-memory store KV_INDEXER_BACKEND=memory
// (docs/contract.md, "Later reference builds"). The name selects the
// default backend here, so such a deployment's configuration starts this server
// unchanged. Their other store, "valkey", is refused with an error that says
// so. A plugin file named kvindexer-backend-memory.so or
// kvindexer-backend-valkey.so can therefore only be loaded by its path.
inline constexpr std::string_view kMemoryBackendAlias = "memory";
inline constexpr std::string_view kValkeyBackendName = "valkey";

// "unknown", "readers_wait_for_writers" or "readers_never_wait", for logs.
std::string_view ReadConcurrencyName(ReadConcurrency concurrency);

// Owns the library handle and one backend created from it. The backend is
// destroyed before the library is closed.
class LoadedBackend {
 public:
  ~LoadedBackend();
  LoadedBackend(const LoadedBackend&) = delete;
  LoadedBackend& operator=(const LoadedBackend&) = delete;

  // `spec` is a name or a path as described above; `search_path` is the value
  // of KV_INDEXER_BACKEND_PATH (may be empty).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LoadedBackend>> Load(
      std::string_view spec, std::string_view search_path);

  IndexBackend* backend() const { return backend_; }
  const BackendDescriptor& descriptor() const { return *descriptor_; }
  const std::string& path() const { return path_; }

  // The ABI minor version the host uses with the backend: the one its
  // descriptor says it was built against (descriptor().abi_minor), unless a
  // call that minor promises answered kUnimplemented when the backend was
  // loaded, the header's default for a call it does not override; then the
  // minor before that call's (ImplementedAbiMinor). Never greater than
  // descriptor().abi_minor or kBackendAbiMinor.
  uint32_t abi_minor() const { return abi_minor_; }
  // True when abi_minor() >= `minor`, so that what `minor` added to the ABI
  // (virtual functions, members of the structs the backend fills, descriptor
  // members) exists in the backend and may be used.
  bool SupportsAbiMinor(uint32_t minor) const { return minor <= abi_minor_; }
  // What the descriptor says of queries and mutations (ABI 1.3, read from
  // descriptors that declare minor 3 or later); kUnknown before that.
  ReadConcurrency read_concurrency() const;

 private:
  LoadedBackend() = default;

  void* handle_ = nullptr;
  const BackendDescriptor* descriptor_ = nullptr;
  IndexBackend* backend_ = nullptr;
  uint32_t abi_minor_ = 0;
  std::string path_;
};

}  // namespace kvindexer

#endif  // KVINDEXER_CORE_BACKEND_LOADER_H_
