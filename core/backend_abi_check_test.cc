#include "core/backend_abi_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

BackendDescriptor Descriptor(uint32_t major, uint32_t minor) {
  BackendDescriptor d{};
  d.abi_major = major;
  d.abi_minor = minor;
  d.struct_size = sizeof(BackendDescriptor);
  return d;
}

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

TEST(BackendAbiCheck, ThisHostAcceptsItsOwnVersion) {
  EXPECT_TRUE(
      CheckDescriptorAbi(Descriptor(kBackendAbiMajor, kBackendAbiMinor)).ok());
}

// The rule for older minors, with a host of a later minor than this build's.
TEST(BackendAbiCheck, ALaterHostAcceptsEveryOlderMinor) {
  const AbiVersion host = {kBackendAbiMajor, kBackendAbiMinor + 3};
  for (uint32_t minor = 0; minor <= host.minor; ++minor) {
    EXPECT_TRUE(CheckDescriptorAbi(Descriptor(host.major, minor), host).ok())
        << "minor " << minor;
  }
}

TEST(BackendAbiCheck, ANewerMinorIsRefusedNamingBothVersions) {
  const AbiVersion host = {1, 2};
  const absl::Status status = CheckDescriptorAbi(Descriptor(1, 5), host);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("ABI version 1.5"), HasSubstr("host's 1.2"),
                    HasSubstr("minor 5 > host minor 2")));
}

TEST(BackendAbiCheck, AnotherMajorIsRefusedEitherWay) {
  const AbiVersion host = {2, 0};
  for (uint32_t major : {1u, 3u}) {
    const absl::Status status = CheckDescriptorAbi(Descriptor(major, 0), host);
    EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(Message(status),
                AllOf(HasSubstr("major version " + std::to_string(major)),
                      HasSubstr("speaks major version 2")));
  }
}

TEST(BackendAbiCheck, TheDescriptorMustCoverItsMinorsLayout) {
  BackendDescriptor d = Descriptor(kBackendAbiMajor, 0);
  d.struct_size = DescriptorSizeAtMinor(0) - 8;
  const absl::Status status = CheckDescriptorAbi(d);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(status),
              AllOf(HasSubstr("struct_size of " +
                              std::to_string(DescriptorSizeAtMinor(0) - 8)),
                    HasSubstr(std::to_string(DescriptorSizeAtMinor(0)))));
  // Larger is fine: a descriptor from a later minor of a later host's build.
  d.struct_size = DescriptorSizeAtMinor(0) + 64;
  EXPECT_TRUE(CheckDescriptorAbi(d).ok());
}

TEST(BackendAbiCheck, DescriptorSizes) {
  EXPECT_EQ(DescriptorSizeAtMinor(0), 56u);  // ABI 1.0
  EXPECT_EQ(DescriptorSizeAtMinor(2), 56u);  // ABI 1.2: still 1.0's
  EXPECT_EQ(DescriptorSizeAtMinor(3), 64u);  // ABI 1.3: read_concurrency
  EXPECT_EQ(DescriptorSizeAtMinor(kBackendAbiMinor), sizeof(BackendDescriptor));
  // A minor this header does not know: the newest layout it knows.
  EXPECT_EQ(DescriptorSizeAtMinor(kBackendAbiMinor + 1),
            sizeof(BackendDescriptor));
}

// A descriptor that says 1.3 must hold read_concurrency; one that says 1.2
// may end before it.
TEST(BackendAbiCheck, AMinor3DescriptorHoldsReadConcurrency) {
  BackendDescriptor d = Descriptor(kBackendAbiMajor, 3);
  d.struct_size = 56;
  EXPECT_THAT(CheckDescriptorAbi(d).message(),
              AllOf(HasSubstr("struct_size of 56"), HasSubstr("64 bytes")));
  d.abi_minor = 2;
  EXPECT_TRUE(CheckDescriptorAbi(d).ok());
}

// The five calls of ABI 1.0 and nothing else: the calls later minors added
// are the header's defaults. Subclasses override some of them and record
// each call made.
class Abi10Backend : public IndexBackend {
 public:
  BackendStatus Apply(const ApplyBatchView&) noexcept override { return Ok(); }
  BackendStatus Match(HashSpan, bool, BlockVisitor*) noexcept override {
    return Ok();
  }
  BackendStatus PrefixScan(HashSpan, BlockVisitor*) noexcept override {
    return Ok();
  }
  BackendStatus HitCounts(HashSpan, uint64_t*) noexcept override {
    return Ok();
  }
  void GetStats(BackendStats*) noexcept override {}

  // "<call>(<worker id>)" for each call of a later minor made.
  std::vector<std::string> calls;

 protected:
  static BackendStatus Ok() { return BackendStatus{BackendCode::kOk, {}}; }
  void Record(const char* call, StringView worker_id) {
    calls.push_back(std::string(call) + "(" +
                    std::string(worker_id.data, worker_id.size) + ")");
  }
};

// Implements RemoveWorker (1.1); CountPlacements is the default.
class Abi11Backend : public Abi10Backend {
 public:
  explicit Abi11Backend(BackendCode code = BackendCode::kOk) : code_(code) {}
  BackendStatus RemoveWorker(StringView worker_id,
                             uint32_t* existed) noexcept override {
    Record("RemoveWorker", worker_id);
    *existed = 0;
    return BackendStatus{code_, {}};
  }

 private:
  BackendCode code_;
};

// Implements RemoveWorker and CountPlacements; SetWriteMode is the default.
class Abi12Backend : public Abi11Backend {
 public:
  BackendStatus CountPlacements(StringView worker_id, uint64_t* counts,
                                uint32_t* existed) noexcept override {
    Record("CountPlacements", worker_id);
    for (uint32_t tier = 0; tier <= kMaxTier; ++tier) counts[tier] = 0;
    *existed = 0;
    return Ok();
  }
};

// Implements every later call.
class Abi14Backend final : public Abi12Backend {
 public:
  BackendStatus SetWriteMode(WriteMode mode) noexcept override {
    calls.push_back(mode == WriteMode::kServing ? "SetWriteMode(serving)"
                                                : "SetWriteMode(bulk)");
    return Ok();
  }
};

// CountPlacements without RemoveWorker.
class CountsOnlyBackend final : public Abi10Backend {
 public:
  BackendStatus CountPlacements(StringView worker_id, uint64_t*,
                                uint32_t*) noexcept override {
    Record("CountPlacements", worker_id);
    return Ok();
  }
};

TEST(ImplementedAbiMinor, TheHeadersDefaultsChangeNothingAndSayUnimplemented) {
  Abi10Backend backend;
  uint32_t existed = 7;
  BackendStatus s = backend.RemoveWorker(StringView{"w", 1}, &existed);
  EXPECT_EQ(s.code, BackendCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message), HasSubstr("RemoveWorker"));
  EXPECT_EQ(existed, 0u);
  EXPECT_EQ(backend.RemoveWorker(StringView{"w", 1}, nullptr).code,
            BackendCode::kUnimplemented);

  std::array<uint64_t, kMaxTier + 1> counts;
  counts.fill(9);
  existed = 7;
  s = backend.CountPlacements(StringView{"w", 1}, counts.data(), &existed);
  EXPECT_EQ(s.code, BackendCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message), HasSubstr("CountPlacements"));
  EXPECT_EQ(counts, (std::array<uint64_t, kMaxTier + 1>{}));
  EXPECT_EQ(existed, 0u);
  EXPECT_EQ(backend.CountPlacements(StringView{"w", 1}, nullptr, nullptr).code,
            BackendCode::kUnimplemented);

  s = backend.SetWriteMode(WriteMode::kBulkLoad);
  EXPECT_EQ(s.code, BackendCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message), HasSubstr("SetWriteMode"));
}

// A 1.0 source rebuilt against this header says this header's minor.
TEST(ImplementedAbiMinor, AllDefaultsMeanAbi10) {
  Abi10Backend backend;
  for (uint32_t declared = 0; declared <= kBackendAbiMinor; ++declared) {
    EXPECT_EQ(ImplementedAbiMinor(backend, declared), 0u) << declared;
  }
}

TEST(ImplementedAbiMinor, ABackendThatImplementsEverythingKeepsItsMinor) {
  for (uint32_t declared = 0; declared <= kBackendAbiMinor; ++declared) {
    Abi14Backend backend;
    EXPECT_EQ(ImplementedAbiMinor(backend, declared), declared);
  }
}

// Each call is made once, with the empty worker id, and only when the
// descriptor's minor has it: an older backend's vtable has no such entry.
TEST(ImplementedAbiMinor, CallsOnlyWhatTheDeclaredMinorHasWithTheEmptyId) {
  Abi12Backend at0;
  EXPECT_EQ(ImplementedAbiMinor(at0, 0), 0u);
  EXPECT_THAT(at0.calls, IsEmpty());
  Abi12Backend at1;
  EXPECT_EQ(ImplementedAbiMinor(at1, 1), 1u);
  EXPECT_THAT(at1.calls, ElementsAre("RemoveWorker()"));
  Abi12Backend at2;
  EXPECT_EQ(ImplementedAbiMinor(at2, 2), 2u);
  EXPECT_THAT(at2.calls, ElementsAre("RemoveWorker()", "CountPlacements()"));
  // 1.3 added no call; 1.4's is made with the mode a backend starts in.
  Abi14Backend at4;
  EXPECT_EQ(ImplementedAbiMinor(at4, 4), 4u);
  EXPECT_THAT(at4.calls, ElementsAre("RemoveWorker()", "CountPlacements()",
                                     "SetWriteMode(serving)"));
}

TEST(ImplementedAbiMinor, TheFirstDefaultSetsTheMinor) {
  Abi11Backend counts_by_default;
  EXPECT_EQ(ImplementedAbiMinor(counts_by_default, 2), 1u);
  Abi12Backend no_write_mode;
  EXPECT_EQ(ImplementedAbiMinor(no_write_mode, 4), 3u);
  // Oldest first: without RemoveWorker the backend is a 1.0 one, whatever it
  // implements besides, and nothing later is called.
  CountsOnlyBackend removes_by_default;
  EXPECT_EQ(ImplementedAbiMinor(removes_by_default, 2), 0u);
  EXPECT_THAT(removes_by_default.calls, IsEmpty());
}

// Only kUnimplemented lowers the minor; any other answer is the backend's
// own, which the conformance suite judges.
TEST(ImplementedAbiMinor, OtherFailuresKeepTheMinor) {
  for (BackendCode code :
       {BackendCode::kInternal, BackendCode::kInvalidArgument,
        BackendCode::kResourceExhausted, BackendCode::kUnavailable}) {
    Abi11Backend backend(code);
    EXPECT_EQ(ImplementedAbiMinor(backend, 1), 1u);
  }
}

}  // namespace
}  // namespace kvindexer
