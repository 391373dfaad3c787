#include "core/backend_abi_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace kvindexer {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

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
  EXPECT_EQ(DescriptorSizeAtMinor(kBackendAbiMinor), sizeof(BackendDescriptor));
  // A minor this header does not know: the newest layout it knows.
  EXPECT_EQ(DescriptorSizeAtMinor(kBackendAbiMinor + 1),
            sizeof(BackendDescriptor));
}

}  // namespace
}  // namespace kvindexer
