// The tests of LoadedBackend (core/backend_loader.h): name and path
// resolution, and tiny plugin fixtures (fixtures/), each broken in one way:
// every failure must be a clear status naming the problem and the
// KV_INDEXER_BACKEND value, never a crash. Also the minor the host uses with
// a backend written against ABI 1.0 only (abi_1_0_backend/). Not per-backend;
// run as the ctest entry conformance.loader.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/backend_loader.h"
#include "core/indexer.h"
#include "core/removal_reason.h"
#include "gtest/gtest.h"

namespace kvindexer {
namespace {

const std::string kFixtureDir = KVINDEXER_FIXTURE_DIR;

std::string FixturePath(const std::string& name) {
  return absl::StrCat(kFixtureDir, "/kvindexer-backend-fixture_", name, ".so");
}

// The backend written against ABI 1.0 only (abi_1_0_backend/), "pinned" or
// "rebuilt".
std::string Abi10BackendPath(const std::string& variant) {
  return absl::StrCat(KVINDEXER_ABI_1_0_BACKEND_DIR,
                      "/kvindexer-backend-abi_1_0_", variant, ".so");
}

// Loads `spec` and returns the failure message; fails the test when the load
// succeeds.
std::string LoadError(const std::string& spec,
                      const std::string& search_path = "") {
  auto loaded = LoadedBackend::Load(spec, search_path);
  EXPECT_FALSE(loaded.ok()) << spec << " loaded but should not have";
  if (loaded.ok()) return "";
  EXPECT_FALSE(loaded.status().message().empty());
  return std::string(loaded.status().message());
}

::testing::AssertionResult Mentions(const std::string& message,
                                    const std::string& what) {
  if (absl::AsciiStrToLower(message).find(absl::AsciiStrToLower(what)) !=
      std::string::npos) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "message \"" << message << "\" does not mention \"" << what << "\"";
}

TEST(LoaderTest, GoodFixtureLoadsByPath) {
  auto loaded = LoadedBackend::Load(FixturePath("good"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_NE((*loaded)->backend(), nullptr);
  EXPECT_STREQ((*loaded)->descriptor().name, "fixture_good");
  EXPECT_TRUE(Mentions((*loaded)->path(), "kvindexer-backend-fixture_good.so"));
}

TEST(LoaderTest, RecordsTheBackendsAbiMinor) {
  auto loaded = LoadedBackend::Load(FixturePath("good"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->abi_minor(), kBackendAbiMinor);
  for (uint32_t minor = 0; minor <= kBackendAbiMinor; ++minor) {
    EXPECT_TRUE((*loaded)->SupportsAbiMinor(minor)) << minor;
  }
  EXPECT_FALSE((*loaded)->SupportsAbiMinor(kBackendAbiMinor + 1));
  // The fixture says nothing of its readers.
  EXPECT_EQ((*loaded)->read_concurrency(), ReadConcurrency::kUnknown);
}

// A backend built against ABI 1.0 still loads under a 1.1 host; the host
// then knows it has no RemoveWorker (backend.h: it composes
// CLEAR_ALL_AT_TIER batches instead). The fixture's RemoveWorker aborts, so
// nothing here may call it.
TEST(LoaderTest, AnAbi10BackendLoadsWithoutRemoveWorker) {
  auto loaded = LoadedBackend::Load(FixturePath("abi_minor_0"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_STREQ((*loaded)->descriptor().name, "fixture_abi_minor_0");
  EXPECT_EQ((*loaded)->abi_minor(), 0u);
  EXPECT_TRUE((*loaded)->SupportsAbiMinor(0));
  EXPECT_FALSE((*loaded)->SupportsAbiMinor(1));
  // Its descriptor ends before read_concurrency (ABI 1.3).
  EXPECT_EQ((*loaded)->read_concurrency(), ReadConcurrency::kUnknown);
  IndexBackend* backend = (*loaded)->backend();
  ASSERT_NE(backend, nullptr);
  // What ABI 1.0 offers still works.
  const ApplyBatchView batch{
      StringView{"w", 1}, StringView{"a", 1}, 0, {}, nullptr, 0};
  EXPECT_EQ(backend->Apply(batch).code, BackendCode::kOk);
  BackendStats stats{};
  stats.struct_size = sizeof(stats);
  backend->GetStats(&stats);
}

// Nor CountPlacements (ABI 1.2): the host reports the counts as unknown
// without asking (the fixture's CountPlacements aborts).
TEST(LoaderTest, AnAbi10BackendHasNoPlacementCounts) {
  auto loaded = LoadedBackend::Load(FixturePath("abi_minor_0"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  Indexer indexer((*loaded)->backend(), nullptr, RequestLimits{},
                  (*loaded)->abi_minor());
  kv_indexer::v1::ApplyExternalKvBatchRequest req;
  req.set_worker_id("w");
  req.set_worker_address("a");
  kv_indexer::v1::ApplyExternalKvBatchResponse resp;
  ASSERT_TRUE(indexer.operations().Apply(req, &resp).Wait().ok());
  const std::vector<WorkerSnapshot> workers =
      indexer.operator_view().ListWorkers();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_FALSE(workers[0].placements_by_tier.has_value());
  EXPECT_FALSE(indexer.operator_view().PlacementCounts("w").has_value());
}

// A backend written against ABI 1.0 and rebuilt unchanged against this
// header: its descriptor says this header's minor (kit::MakeDescriptor), but
// RemoveWorker and CountPlacements are the header's defaults. The loader
// finds RemoveWorker answering kUnimplemented and uses it as a 1.0 backend.
TEST(LoaderTest, ARebuiltAbi10BackendIsUsedAsOne) {
  auto loaded = LoadedBackend::Load(Abi10BackendPath("rebuilt"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_STREQ((*loaded)->descriptor().name, "abi_1_0_rebuilt");
  EXPECT_EQ((*loaded)->descriptor().abi_minor, kBackendAbiMinor);
  EXPECT_EQ((*loaded)->abi_minor(), 0u);
  EXPECT_TRUE((*loaded)->SupportsAbiMinor(0));
  EXPECT_FALSE((*loaded)->SupportsAbiMinor(1));
}

// The same source with abi_minor 0 in its descriptor, as a 1.0 plugin says
// it: nothing to find.
TEST(LoaderTest, APinnedAbi10BackendIsUsedAsOne) {
  auto loaded = LoadedBackend::Load(Abi10BackendPath("pinned"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_STREQ((*loaded)->descriptor().name, "abi_1_0_pinned");
  EXPECT_EQ((*loaded)->descriptor().abi_minor, 0u);
  EXPECT_EQ((*loaded)->abi_minor(), 0u);
}

// Over either build the Indexer takes the 1.0 paths, never the defaults: a
// removal is a CLEAR_ALL_AT_TIER batch (the placements go, the backend's
// record stays) and placement counts are unknown.
TEST(LoaderTest, TheHostUsesAnAbi10SourceThroughThe10Paths) {
  for (const char* variant : {"pinned", "rebuilt"}) {
    SCOPED_TRACE(variant);
    auto loaded = LoadedBackend::Load(Abi10BackendPath(variant), "");
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    Indexer indexer((*loaded)->backend(), nullptr, RequestLimits{},
                    (*loaded)->abi_minor());
    kv_indexer::v1::ApplyExternalKvBatchRequest req;
    req.set_worker_id("w");
    req.set_worker_address("a");
    for (int tier : {kTierHbm, kTierDram}) {
      kv_indexer::v1::ExternalKvAction* action = req.add_actions();
      action->set_type(kv_indexer::v1::ExternalKvActionType(kActionReport));
      action->set_tier(kv_indexer::v1::TierType(tier));
      action->add_hashes(tier);
      action->add_hashes(10 + tier);
    }
    kv_indexer::v1::ApplyExternalKvBatchResponse resp;
    ASSERT_TRUE(indexer.operations().Apply(req, &resp).Wait().ok());
    EXPECT_FALSE(indexer.operator_view().PlacementCounts("w").has_value());
    const std::vector<WorkerSnapshot> workers =
        indexer.operator_view().ListWorkers();
    ASSERT_EQ(workers.size(), 1u);
    EXPECT_FALSE(workers[0].placements_by_tier.has_value());

    ASSERT_TRUE(
        indexer.operator_view().RemoveWorker("w", RemovalReason::kAdmin).ok());
    BackendStats stats{};
    stats.struct_size = sizeof(stats);
    (*loaded)->backend()->GetStats(&stats);
    EXPECT_EQ(stats.placements, 0u);
    EXPECT_EQ(stats.blocks, 0u);
    EXPECT_EQ(stats.workers, 1u);  // ABI 1.0 has no way to delete a record
    EXPECT_TRUE(indexer.operator_view().ListWorkers().empty());
  }
}

TEST(LoaderTest, NameResolvedThroughSearchPath) {
  // An empty entry in the path is skipped.
  auto loaded = LoadedBackend::Load(
      "fixture_good",
      absl::StrCat("/nonexistent-kvindexer-dir::", kFixtureDir));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_STREQ((*loaded)->descriptor().name, "fixture_good");
  EXPECT_EQ((*loaded)->path(), FixturePath("good"));
  // The backend it created answers.
  uint64_t count = 1;
  const int64_t hash = 5;
  EXPECT_EQ((*loaded)->backend()->HitCounts(HashSpan{&hash, 1}, &count).code,
            BackendCode::kOk);
  EXPECT_EQ(count, 0u);
}

TEST(LoaderTest, NameNotFoundListsPlacesSearched) {
  const std::string message = LoadError(
      "fixture_good", "/nonexistent-kvindexer-a:/nonexistent-kvindexer-b");
  EXPECT_TRUE(Mentions(message, "KV_INDEXER_BACKEND=\"fixture_good\""));
  // First the plugin folder next to the executable, then the search path.
  EXPECT_TRUE(Mentions(
      message, "/../lib/kvindexer/backends/kvindexer-backend-fixture_good.so"));
  EXPECT_TRUE(Mentions(
      message, "/nonexistent-kvindexer-a/kvindexer-backend-fixture_good.so"));
  EXPECT_TRUE(Mentions(
      message, "/nonexistent-kvindexer-b/kvindexer-backend-fixture_good.so"));
  EXPECT_TRUE(Mentions(LoadError("no_such_backend", ""),
                       "kvindexer-backend-no_such_backend.so"));
}

TEST(LoaderTest, EmptySpecIsRejected) {
  EXPECT_TRUE(Mentions(LoadError(""), "KV_INDEXER_BACKEND"));
}

// "memory", the later reference builds' name for their in-memory store,
// selects the default backend. Whether this build made that plugin decides
// which outcome the test sees; either way it must concern that file.
TEST(LoaderTest, MemoryNamesTheDefaultBackend) {
  const std::string file =
      "kvindexer-backend-" + std::string(kDefaultBackendName) + ".so";
  auto loaded = LoadedBackend::Load("memory", "/nonexistent-kvindexer-dir");
  if (loaded.ok()) {
    EXPECT_TRUE(Mentions((*loaded)->path(), "/" + file));
  } else {
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
    const std::string message(loaded.status().message());
    EXPECT_TRUE(Mentions(message, file));
    EXPECT_FALSE(Mentions(message, "kvindexer-backend-memory.so"));
  }
}

TEST(LoaderTest, ValkeyIsRefusedByName) {
  auto loaded = LoadedBackend::Load("valkey", kFixtureDir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message(loaded.status().message());
  EXPECT_TRUE(Mentions(message, "KV_INDEXER_BACKEND"));
  EXPECT_TRUE(Mentions(message, "valkey"));
  EXPECT_TRUE(Mentions(message, "\"memory\""));
}

TEST(LoaderTest, FileDoesNotExist) {
  const std::string path = "/nonexistent-kvindexer/kvindexer-backend-x.so";
  auto loaded = LoadedBackend::Load(path, "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  const std::string message(loaded.status().message());
  EXPECT_TRUE(Mentions(message, absl::StrCat("KV_INDEXER_BACKEND=\"", path)));
}

TEST(LoaderTest, NotAnElfFile) {
  const std::string path = absl::StrCat(
      ::testing::TempDir(), "kvindexer-backend-junk-", getpid(), ".so");
  {
    std::ofstream out(path);
    for (int i = 0; i < 200; ++i) out << "this is not a shared object\n";
  }
  // What dlopen itself says about the file, which the loader passes on.
  std::string reason;
  if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    dlclose(handle);
  } else {
    reason = dlerror();
  }
  const std::string message = LoadError(path);
  std::remove(path.c_str());
  ASSERT_FALSE(reason.empty());
  EXPECT_TRUE(Mentions(message, "KV_INDEXER_BACKEND"));
  EXPECT_TRUE(Mentions(message, path));
  EXPECT_TRUE(Mentions(message, reason));
}

TEST(LoaderTest, MissingEntrySymbol) {
  const std::string message = LoadError(FixturePath("missing_symbol"));
  EXPECT_TRUE(Mentions(message, "kvindexer_backend_descriptor"));
  EXPECT_TRUE(Mentions(message, FixturePath("missing_symbol")));
}

TEST(LoaderTest, NullDescriptor) {
  const std::string message = LoadError(FixturePath("null_descriptor"));
  EXPECT_TRUE(Mentions(message, "descriptor"));
  EXPECT_TRUE(Mentions(message, "null"));
  EXPECT_TRUE(Mentions(message, FixturePath("null_descriptor")));
}

// Every string of the descriptor is printed at start-up: a null one is
// refused by name instead of crashing the host.
TEST(LoaderTest, NullDescriptorStringIsRefusedByName) {
  const std::string message = LoadError(FixturePath("null_name"));
  EXPECT_TRUE(Mentions(message, "name"));
  EXPECT_TRUE(Mentions(message, "null"));
  EXPECT_TRUE(Mentions(message, FixturePath("null_name")));
}

TEST(LoaderTest, WrongAbiMajorNamesBothValues) {
  const std::string message = LoadError(FixturePath("bad_abi_major"));
  EXPECT_TRUE(Mentions(message, "major"));
  EXPECT_TRUE(Mentions(message, std::to_string(kBackendAbiMajor + 41)));
  EXPECT_TRUE(Mentions(message, std::to_string(kBackendAbiMajor)));
  EXPECT_TRUE(Mentions(message, FixturePath("bad_abi_major")));
}

TEST(LoaderTest, NewerAbiMinorNamesBothValues) {
  const std::string message = LoadError(FixturePath("newer_abi_minor"));
  EXPECT_TRUE(Mentions(message, "minor"));
  EXPECT_TRUE(Mentions(message, std::to_string(kBackendAbiMinor + 57)));
  EXPECT_TRUE(Mentions(message, std::to_string(kBackendAbiMinor)));
  EXPECT_TRUE(Mentions(message, FixturePath("newer_abi_minor")));
}

TEST(LoaderTest, TooSmallDescriptorNamesBothSizes) {
  const std::string message = LoadError(FixturePath("small_struct"));
  EXPECT_TRUE(Mentions(message, "size"));
  EXPECT_TRUE(Mentions(message, "12"));
  EXPECT_TRUE(Mentions(message, std::to_string(sizeof(BackendDescriptor))));
  EXPECT_TRUE(Mentions(message, FixturePath("small_struct")));
}

TEST(LoaderTest, CreateFailurePassesTheReasonOn) {
  const std::string message = LoadError(FixturePath("create_fails"));
  EXPECT_TRUE(Mentions(message, "out of frobnicators (fixture)"));
  EXPECT_TRUE(Mentions(message, FixturePath("create_fails")));
}

TEST(LoaderTest, FailedLoadsLeaveTheLoaderUsable) {
  for (const char* broken : {"missing_symbol", "null_descriptor", "null_name",
                             "bad_abi_major", "create_fails"}) {
    LoadError(FixturePath(broken));
  }
  auto loaded = LoadedBackend::Load(FixturePath("good"), "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto second = LoadedBackend::Load(FixturePath("good"), "");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE((*loaded)->backend(), (*second)->backend());
}

}  // namespace
}  // namespace kvindexer
