#include "backend_registry.h"

#include <cctype>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvindexer::conformance {
namespace {

std::vector<std::unique_ptr<BackendUnderTest>>& Registry() {
  static auto* registry = new std::vector<std::unique_ptr<BackendUnderTest>>();
  return *registry;
}

std::string Label(const std::string& name, std::set<std::string>* used) {
  std::string base;
  for (char c : name) {
    base.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  }
  if (base.empty()) base = "backend";
  std::string label = base;
  for (int i = 2; !used->insert(label).second; ++i) {
    label = absl::StrCat(base, "_", i);
  }
  return label;
}

}  // namespace

absl::Status LoadBackends(const std::string& list,
                          const std::string& search_path) {
  std::vector<std::string> specs;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    absl::string_view spec = absl::StripAsciiWhitespace(part);
    if (!spec.empty()) specs.emplace_back(spec);
  }
  if (specs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kBackendVariable, " names no backend"));
  }
  std::set<std::string> used;
  for (const std::string& spec : specs) {
    auto loaded = LoadedBackend::Load(spec, search_path);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("cannot load backend '", spec,
                                       "': ", loaded.status().message()));
    }
    auto entry = std::make_unique<BackendUnderTest>();
    entry->spec = spec;
    const char* name = (*loaded)->descriptor().name;
    entry->label = Label(name != nullptr ? name : spec, &used);
    entry->loaded = std::move(*loaded);
    Registry().push_back(std::move(entry));
  }
  return absl::OkStatus();
}

std::vector<const BackendUnderTest*> BackendsUnderTest() {
  std::vector<const BackendUnderTest*> out;
  for (const auto& b : Registry()) out.push_back(b.get());
  return out;
}

}  // namespace kvindexer::conformance
