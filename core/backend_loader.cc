#include "core/backend_loader.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string.h>

#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/backend_abi_check.h"

namespace kvindexer {
namespace {

bool IsPath(absl::string_view spec) {
  return absl::StrContains(spec, '/') || absl::EndsWith(spec, ".so");
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The directory of the running executable, or empty if it cannot be read.
std::string ExecutableDir() {
  std::vector<char> buf(4096);
  const ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return {};
  std::string path(buf.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  return path.substr(0, slash == 0 ? 1 : slash);
}

std::string Describe(absl::string_view spec) {
  return absl::StrCat("KV_INDEXER_BACKEND=\"", spec, "\"");
}

std::string DlError() {
  const char* error = ::dlerror();
  return error != nullptr ? error : "unknown dlopen error";
}

}  // namespace

LoadedBackend::~LoadedBackend() {
  if (backend_ != nullptr && descriptor_ != nullptr &&
      descriptor_->destroy != nullptr) {
    descriptor_->destroy(backend_);
  }
  backend_ = nullptr;
  if (handle_ != nullptr) ::dlclose(handle_);
}

absl::StatusOr<std::unique_ptr<LoadedBackend>> LoadedBackend::Load(
    std::string_view spec_std, std::string_view search_path_std) {
  // Debian's abseil has its own string_view type, not std::string_view.
  const absl::string_view spec(spec_std.data(), spec_std.size());
  const absl::string_view search_path(search_path_std.data(),
                                      search_path_std.size());
  const std::string what = Describe(spec);
  if (spec.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is empty; expected a backend name (for example \"",
                     absl::string_view(kDefaultBackendName.data(),
                                       kDefaultBackendName.size()),
                     "\") or a path to a backend .so file"));
  }

  if (spec ==
      absl::string_view(kValkeyBackendName.data(), kValkeyBackendName.size())) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": the valkey store of later reference builds is not available in "
        "this server; use \"memory\" (the default, ",
        absl::string_view(kDefaultBackendName.data(),
                          kDefaultBackendName.size()),
        "), another backend name, or a path to a backend .so file"));
  }
  // 0. The later reference builds' name for their in-memory store.
  const absl::string_view lookup_name =
      spec == absl::string_view(kMemoryBackendAlias.data(),
                                kMemoryBackendAlias.size())
          ? absl::string_view(kDefaultBackendName.data(),
                              kDefaultBackendName.size())
          : spec;

  // 1. Find the file.
  std::vector<std::string> searched;
  std::string path;
  if (IsPath(spec)) {
    std::string candidate(spec);
    // dlopen searches the library path for a name without a slash; make it
    // refer to the file the user named.
    if (!absl::StrContains(candidate, '/')) candidate = "./" + candidate;
    searched.push_back(candidate);
    if (IsRegularFile(candidate)) path = candidate;
  } else {
    const std::string file =
        absl::StrCat("kvindexer-backend-", lookup_name, ".so");
    std::vector<std::string> dirs;
    if (std::string exe_dir = ExecutableDir(); !exe_dir.empty()) {
      dirs.push_back(absl::StrCat(exe_dir, "/../lib/kvindexer/backends"));
    }
    for (absl::string_view dir :
         absl::StrSplit(search_path, ':', absl::SkipEmpty())) {
      dirs.emplace_back(dir);
    }
    for (const std::string& dir : dirs) {
      std::string candidate = absl::StrCat(dir, "/", file);
      searched.push_back(candidate);
      if (path.empty() && IsRegularFile(candidate)) path = candidate;
    }
  }
  if (path.empty()) {
    return absl::NotFoundError(absl::StrCat(
        what, ": no backend file found; searched: ",
        searched.empty() ? "(nowhere)" : absl::StrJoin(searched, ", "),
        IsPath(spec) ? ""
                     : " (the plugin folder next to the executable, then "
                       "each directory of KV_INDEXER_BACKEND_PATH)"));
  }

  auto loaded = std::unique_ptr<LoadedBackend>(new LoadedBackend());
  loaded->path_ = path;

  // 2. Load it.
  ::dlerror();
  loaded->handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (loaded->handle_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": dlopen(\"", path, "\") failed: ", DlError()));
  }

  // 3. The entry symbol.
  ::dlerror();
  void* symbol = ::dlsym(loaded->handle_, KVINDEXER_BACKEND_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": ", path, " does not export the entry symbol ",
        KVINDEXER_BACKEND_ENTRY_SYMBOL,
        " (is it a kvindexer backend built with KVINDEXER_DEFINE_BACKEND?): ",
        DlError()));
  }
  auto entry = reinterpret_cast<KvindexerBackendEntryFn>(symbol);

  // 4. The descriptor.
  const BackendDescriptor* descriptor = entry();
  if (descriptor == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": ", path, ": ", KVINDEXER_BACKEND_ENTRY_SYMBOL,
                     "() returned a null descriptor"));
  }
  if (absl::Status abi = CheckDescriptorAbi(*descriptor); !abi.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": ", path, " ", abi.message()));
  }
  // The host prints these at start-up and in the admin API.
  for (const auto& [field, value] :
       {std::pair<const char*, const char*>{"name", descriptor->name},
        {"version", descriptor->version},
        {"build_info", descriptor->build_info}}) {
    if (value == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": ", path, " has a descriptor whose ", field,
          " is a null pointer; expected a string (\"\" at least)"));
    }
  }
  if (descriptor->create == nullptr || descriptor->destroy == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": ", path, " has a descriptor without ",
                     descriptor->create == nullptr ? "create()" : "destroy()"));
  }
  loaded->descriptor_ = descriptor;

  // 5. Create the backend.
  char error[512];
  memset(error, 0, sizeof(error));
  IndexBackend* backend = descriptor->create(error, sizeof(error));
  error[sizeof(error) - 1] = '\0';
  if (backend == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, ": backend \"", descriptor->name, "\" (", path,
                     ") failed to create an index: ",
                     error[0] != '\0' ? error : "(no reason given)"));
  }
  loaded->backend_ = backend;
  // 6. The calls its minor promises that it leaves to the header's defaults.
  loaded->abi_minor_ = ImplementedAbiMinor(*backend, descriptor->abi_minor);
  return loaded;
}

std::string_view ReadConcurrencyName(ReadConcurrency concurrency) {
  switch (concurrency) {
    case ReadConcurrency::kReadersWaitForWriters:
      return "readers_wait_for_writers";
    case ReadConcurrency::kReadersNeverWait:
      return "readers_never_wait";
    case ReadConcurrency::kUnknown:
      break;
  }
  return "unknown";
}

ReadConcurrency LoadedBackend::read_concurrency() const {
  // The declared minor, not abi_minor(): the member is there whenever the
  // descriptor's minor says so, whatever calls the backend implements.
  if (descriptor_->abi_minor < 3) return ReadConcurrency::kUnknown;
  switch (descriptor_->read_concurrency) {
    case ReadConcurrency::kReadersWaitForWriters:
    case ReadConcurrency::kReadersNeverWait:
      return descriptor_->read_concurrency;
    case ReadConcurrency::kUnknown:
      break;
  }
  return ReadConcurrency::kUnknown;
}

}  // namespace kvindexer
