// The fleet epoch (fleet/fleet_epoch.h): its exact bytes and format, and
// that every opener of one JetStream stream computes the same one.
#include "fleet/fleet_epoch.h"

#include <memory>
#include <optional>
#include <string>

#include "fleet/event_log.h"
#include "fleet/jetstream_event_log.h"
#include "fleet/memory_event_log.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/jetstream_test_stream.h"
#include "tests/support/nats_server.h"

namespace kvindexer::fleet {
// Named, not anonymous: the unity build joins test files.
namespace fleet_epoch_test {

using ::testing::MatchesRegex;

TEST(FleetEpochTest, HashesNamePrefixAndCreationTime) {
  const LogIdentity identity{.stream = "KVINDEXER_EVENTS",
                             .subject_prefix = "kvindexer",
                             .created_unix_ns = 1765000000123456789};
  EXPECT_EQ(
      FleetEpochInput(identity),
      std::string("KVINDEXER_EVENTS\0kvindexer\0001765000000123456789", 46));
  // The first 16 bytes of SHA-256 of those bytes (computed independently).
  EXPECT_EQ(FleetEpoch(identity), "31ff864c-a65a-9cfe-602c-1893232892d4");
  EXPECT_EQ(FleetEpoch({.stream = "S", .subject_prefix = "p"}),
            "11cdb39c-31e8-82c7-d13b-9f3c619c2a6d");
}

TEST(FleetEpochTest, EveryPartCounts) {
  const LogIdentity base{
      .stream = "S", .subject_prefix = "p", .created_unix_ns = 7};
  const std::string epoch = FleetEpoch(base);
  EXPECT_THAT(epoch, MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"
                                  "[0-9a-f]{4}-[0-9a-f]{12}"));
  LogIdentity other = base;
  other.created_unix_ns = 8;
  EXPECT_NE(FleetEpoch(other), epoch);
  other = base;
  other.stream = "T";
  EXPECT_NE(FleetEpoch(other), epoch);
  other = base;
  other.subject_prefix = "q";
  EXPECT_NE(FleetEpoch(other), epoch);
  // The separators keep the parts apart.
  EXPECT_NE(FleetEpoch({.stream = "Sp", .subject_prefix = ""}),
            FleetEpoch({.stream = "S", .subject_prefix = "p"}));
}

TEST(FleetEpochTest, TheMemoryLogHasNoIdentity) {
  MemoryEventLog log;
  EXPECT_FALSE(log.identity().has_value());
}

TEST(FleetEpochTest, EveryOpenerOfAStreamSeesTheSameIdentity) {
  KVINDEXER_SKIP_WITHOUT_NATS_SERVER();
  absl::StatusOr<test_support::NatsServer*> nats =
      test_support::SharedNatsServer();
  ASSERT_TRUE(nats.ok()) << nats.status();
  const EventLogConfig config =
      test_support::FreshEventLogConfig({(*nats)->url()}, "EPOCH");
  // The first creates the stream, the second finds it.
  absl::StatusOr<std::unique_ptr<EventLog>> creator =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(creator.ok()) << creator.status();
  absl::StatusOr<std::unique_ptr<EventLog>> finder =
      OpenJetStreamEventLog(config);
  ASSERT_TRUE(finder.ok()) << finder.status();
  const std::optional<LogIdentity> a = (*creator)->identity();
  const std::optional<LogIdentity> b = (*finder)->identity();
  ASSERT_TRUE(a.has_value());
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(a->stream, config.stream);
  EXPECT_EQ(a->subject_prefix, config.subject_prefix);
  EXPECT_GT(a->created_unix_ns, 0);
  EXPECT_EQ(a->created_unix_ns, b->created_unix_ns);
  EXPECT_EQ(FleetEpoch(*a), FleetEpoch(*b));

  // Another stream on the same server: another epoch.
  absl::StatusOr<std::unique_ptr<EventLog>> other = OpenJetStreamEventLog(
      test_support::FreshEventLogConfig({(*nats)->url()}, "EPOCH"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(FleetEpoch(*(*other)->identity()), FleetEpoch(*a));
}

}  // namespace fleet_epoch_test
}  // namespace kvindexer::fleet
