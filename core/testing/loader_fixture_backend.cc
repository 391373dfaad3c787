// A tiny backend plugin for the loader tests. Compiled several times with
// FIXTURE_* definitions to produce a good plugin and specific broken ones.
#include <stdio.h>

#include "kvindexer/backend.h"

namespace {

class NullBackend final : public kvindexer::IndexBackend {
 public:
  kvindexer::BackendStatus Apply(
      const kvindexer::ApplyBatchView&) noexcept override {
    return Ok();
  }
  kvindexer::BackendStatus Match(kvindexer::HashSpan, bool,
                                 kvindexer::BlockVisitor*) noexcept override {
    return Ok();
  }
  kvindexer::BackendStatus PrefixScan(
      kvindexer::HashSpan, kvindexer::BlockVisitor*) noexcept override {
    return Ok();
  }
  kvindexer::BackendStatus HitCounts(kvindexer::HashSpan hashes,
                                     uint64_t* counts) noexcept override {
    for (size_t i = 0; i < hashes.size; ++i) counts[i] = 0;
    return Ok();
  }
  void GetStats(kvindexer::BackendStats*) noexcept override {}

 private:
  static kvindexer::BackendStatus Ok() {
    return kvindexer::BackendStatus{kvindexer::BackendCode::kOk, {0}};
  }
};

kvindexer::IndexBackend* Create(char* error, size_t error_size) noexcept {
#if defined(FIXTURE_CREATE_FAILS)
  snprintf(error, error_size, "fixture refuses to start");
  return nullptr;
#else
  (void)error;
  (void)error_size;
  return new NullBackend();
#endif
}

void Destroy(kvindexer::IndexBackend* backend) noexcept { delete backend; }

#if defined(FIXTURE_ABI_MAJOR)
constexpr uint32_t kMajor = FIXTURE_ABI_MAJOR;
#else
constexpr uint32_t kMajor = kvindexer::kBackendAbiMajor;
#endif

const kvindexer::BackendDescriptor kDescriptor = {
    kMajor,
    kvindexer::kBackendAbiMinor,
    sizeof(kvindexer::BackendDescriptor),
    "loader_fixture",
    "0",
    "test fixture",
    &Create,
    &Destroy,
};

}  // namespace

KVINDEXER_DEFINE_BACKEND(kDescriptor)
