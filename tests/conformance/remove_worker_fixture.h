// The fixture of the RemoveWorker suites (ABI 1.1): ConformanceTest, skipped
// for a backend built against ABI 1.0, plus raw-ABI helpers.
//
// The gate is the minor the host uses with the backend, read through
// LoadedBackend (the same SupportsAbiMinor the host asks): a 1.0 backend's
// vtable has no RemoveWorker entry, so calling it would jump to whatever
// follows the table, and a backend that leaves RemoveWorker to the header's
// default is used as a 1.0 backend.
#ifndef KVINDEXER_TESTS_CONFORMANCE_REMOVE_WORKER_FIXTURE_H_
#define KVINDEXER_TESTS_CONFORMANCE_REMOVE_WORKER_FIXTURE_H_

#include <cstdint>
#include <string>

#include "conformance_fixture.h"
#include "recording_visitor.h"

namespace kvindexer::conformance {

// The ABI minor that added IndexBackend::RemoveWorker.
inline constexpr uint32_t kRemoveWorkerAbiMinor = 1;

class RemoveWorkerFixture : public ConformanceTest {
 protected:
  void SetUp() override {
    if (!SupportsAbiMinor(kRemoveWorkerAbiMinor)) {
      GTEST_SKIP() << "backend \"" << descriptor().name
                   << "\" is used as backend " << AbiInUse()
                   << ", which has no RemoveWorker (added in 1."
                   << kRemoveWorkerAbiMinor
                   << "); the host composes CLEAR_ALL_AT_TIER batches for it "
                      "instead";
    }
    ConformanceTest::SetUp();
  }

  // RemoveWorker through the raw ABI. EXPECTs OK; returns *existed.
  uint32_t Remove(const std::string& id) {
    uint32_t existed = 7;  // neither 0 nor 1: the backend must write it
    const BackendStatus s =
        backend()->RemoveWorker(StringView{id.data(), id.size()}, &existed);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message << " removing " << id;
    EXPECT_TRUE(existed == 0 || existed == 1) << "existed = " << existed;
    return existed;
  }

  BackendStats Stats() {
    BackendStats stats{};
    stats.struct_size = sizeof(stats);
    backend()->GetStats(&stats);
    return stats;
  }

  // Every callback of a non-counting Match / a PrefixScan over `hashes`.
  RecordingVisitor RawMatch(const Hashes& hashes) {
    RecordingVisitor v;
    const BackendStatus s = backend()->Match(
        HashSpan{hashes.data(), hashes.size()}, /*count_as_hit=*/false, &v);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    return v;
  }
  RecordingVisitor RawScan(const Hashes& hashes) {
    RecordingVisitor v;
    const BackendStatus s =
        backend()->PrefixScan(HashSpan{hashes.data(), hashes.size()}, &v);
    EXPECT_EQ(s.code, BackendCode::kOk) << s.message;
    return v;
  }
};

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_REMOVE_WORKER_FIXTURE_H_
