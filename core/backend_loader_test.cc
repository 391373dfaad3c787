#include "core/backend_loader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kFixtureDir = KVINDEXER_LOADER_FIXTURE_DIR;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(BackendLoader, LoadsByNameFromTheSearchPath) {
  auto loaded = LoadedBackend::Load("corefixture_good",
                                    "/nonexistent-dir::" + kFixtureDir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_NE((*loaded)->backend(), nullptr);
  EXPECT_STREQ((*loaded)->descriptor().name, "loader_fixture");
  EXPECT_EQ((*loaded)->path(),
            kFixtureDir + "/kvindexer-backend-corefixture_good.so");
  uint64_t count = 1;
  const int64_t hash = 5;
  EXPECT_EQ((*loaded)->backend()->HitCounts(HashSpan{&hash, 1}, &count).code,
            BackendCode::kOk);
  EXPECT_EQ(count, 0u);
}

// "memory" (later reference builds) is the default backend. Whether the test
// finds that plugin depends on what the build made, so either outcome is
// checked for the file it names.
TEST(BackendLoader, MemoryNamesTheDefaultBackend) {
  const std::string file =
      "kvindexer-backend-" + std::string(kDefaultBackendName) + ".so";
  auto loaded = LoadedBackend::Load("memory", "/nonexistent-dir");
  if (loaded.ok()) {
    EXPECT_THAT((*loaded)->path(), ::testing::EndsWith("/" + file));
  } else {
    EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
    EXPECT_THAT(
        Message(loaded.status()),
        AllOf(HasSubstr(file),
              ::testing::Not(HasSubstr("kvindexer-backend-memory.so"))));
  }
}

TEST(BackendLoader, ValkeyIsRefusedByName) {
  auto loaded = LoadedBackend::Load("valkey", kFixtureDir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(loaded.status()),
              AllOf(HasSubstr("KV_INDEXER_BACKEND"), HasSubstr("valkey"),
                    HasSubstr("\"memory\"")));
}

TEST(BackendLoader, RecordsTheBackendsAbiMinor) {
  auto loaded = LoadedBackend::Load("corefixture_good", kFixtureDir);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->abi_minor(), kBackendAbiMinor);
  for (uint32_t minor = 0; minor <= kBackendAbiMinor; ++minor) {
    EXPECT_TRUE((*loaded)->SupportsAbiMinor(minor)) << minor;
  }
  EXPECT_FALSE((*loaded)->SupportsAbiMinor(kBackendAbiMinor + 1));
}

TEST(BackendLoader, LoadsByPath) {
  const std::string path =
      kFixtureDir + "/kvindexer-backend-corefixture_good.so";
  auto loaded = LoadedBackend::Load(path, "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->path(), path);
}

TEST(BackendLoader, MissingNameListsThePlacesSearched) {
  auto loaded = LoadedBackend::Load("nosuch", "/tmp/a-dir:/tmp/b-dir");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(
      Message(loaded.status()),
      AllOf(HasSubstr("KV_INDEXER_BACKEND=\"nosuch\""),
            HasSubstr("/../lib/kvindexer/backends/kvindexer-backend-nosuch.so"),
            HasSubstr("/tmp/a-dir/kvindexer-backend-nosuch.so"),
            HasSubstr("/tmp/b-dir/kvindexer-backend-nosuch.so")));
}

TEST(BackendLoader, MissingPathIsNamed) {
  auto loaded = LoadedBackend::Load("/no/such/backend.so", "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(loaded.status()),
              AllOf(HasSubstr("KV_INDEXER_BACKEND=\"/no/such/backend.so\""),
                    HasSubstr("/no/such/backend.so")));
}

TEST(BackendLoader, EmptySpecIsRejected) {
  auto loaded = LoadedBackend::Load("", "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(Message(loaded.status()), HasSubstr("KV_INDEXER_BACKEND"));
}

TEST(BackendLoader, NotASharedObject) {
  char path[] = "/tmp/kvindexer-core-loader-XXXXXX.so";
  const int fd = mkstemps(path, 3);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "not an elf", 10), 10);
  close(fd);
  auto loaded = LoadedBackend::Load(path, "");
  unlink(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(Message(loaded.status()),
              AllOf(HasSubstr("KV_INDEXER_BACKEND"), HasSubstr("dlopen"),
                    HasSubstr(path)));
}

TEST(BackendLoader, LibraryWithoutEntrySymbol) {
  // Any shared object that is not a backend: the C math library.
  const char* libm = nullptr;
  for (const char* candidate :
       {"/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib/aarch64-linux-gnu/libm.so.6", "/lib64/libm.so.6"}) {
    if (access(candidate, R_OK) == 0) {
      libm = candidate;
      break;
    }
  }
  if (libm == nullptr) GTEST_SKIP() << "no libm.so.6 found";
  auto loaded = LoadedBackend::Load(libm, "");
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(Message(loaded.status()),
              AllOf(HasSubstr("KV_INDEXER_BACKEND"),
                    HasSubstr("kvindexer_backend_descriptor")));
}

TEST(BackendLoader, AbiMajorMismatchNamesBothVersions) {
  auto loaded = LoadedBackend::Load("corefixture_abi_major", kFixtureDir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(
      Message(loaded.status()),
      AllOf(HasSubstr("KV_INDEXER_BACKEND=\"corefixture_abi_major\""),
            HasSubstr("major version 99"), HasSubstr("major version 1")));
}

TEST(BackendLoader, CreateFailureCarriesTheBackendsReason) {
  auto loaded = LoadedBackend::Load("corefixture_create_fails", kFixtureDir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(Message(loaded.status()),
              AllOf(HasSubstr("KV_INDEXER_BACKEND"),
                    HasSubstr("fixture refuses to start")));
}

}  // namespace
}  // namespace kvindexer
