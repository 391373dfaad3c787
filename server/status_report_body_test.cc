#include "server/status_report_body.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/status_report_parser.h"
#include "server/status_report_validation.h"

namespace kvindexer {
namespace status_body_test {

using ::testing::HasSubstr;

const StatusReportIdentity kIdentity{.indexer_id = "idx-1",
                                     .endpoint = "http://10.0.0.1:50051"};

ReportedStream Keyed(std::string ns, std::string id, uint32_t dp_rank = 0) {
  ReportedStream s;
  s.ns = std::move(ns);
  s.worker_id = std::move(id);
  s.dp_rank = dp_rank;
  return s;
}

ReportedStream Legacy(std::string id, bool covered, std::string epoch = "",
                      uint64_t watermark = 0) {
  ReportedStream s = Keyed("", std::move(id));
  s.worker_address = "http://w:8000";
  s.covered = covered;
  s.worker_epoch = std::move(epoch);
  s.watermark = watermark;
  return s;
}

StatusInputs Serving(std::vector<ReportedStream> streams) {
  StatusInputs inputs;
  inputs.serving = true;
  inputs.streams = std::move(streams);
  inputs.permits_capacity = 32;
  return inputs;
}

StreamCounts Counts(uint64_t total, uint64_t covered) {
  StreamCounts c;
  c.total = total;
  c.covered = covered;
  return c;
}

StatusReport Parse(const std::string& body) {
  absl::StatusOr<StatusReport> report = ParseStatusReport(body);
  EXPECT_TRUE(report.ok()) << report.status() << "\n" << body;
  EXPECT_TRUE(ValidateStatusReportBody(body).ok())
      << ValidateStatusReportBody(body) << "\n"
      << body;
  return report.ok() ? *report : StatusReport{};
}

TEST(StatusReportBody, NoStreamsIsNotReady) {
  const std::string body = BuildStatusReportBody(kIdentity, Serving({}));
  EXPECT_EQ(body,
            "{\"indexer_id\":\"idx-1\",\"endpoint\":\"http://10.0.0.1:50051\","
            "\"ready\":false,\"normalized_load\":0,\"total_workers\":0,"
            "\"ready_workers\":0,\"streams\":[]}");
  Parse(body);
}

TEST(StatusReportBody, ExactKeysAndTypesForOneStream) {
  StatusInputs inputs = Serving({Legacy("w", true, "e1", 7)});
  inputs.permits_held = 8;
  const std::string body = BuildStatusReportBody(kIdentity, inputs);
  EXPECT_EQ(body,
            "{\"indexer_id\":\"idx-1\",\"endpoint\":\"http://10.0.0.1:50051\","
            "\"ready\":true,\"normalized_load\":0.25,\"total_workers\":1,"
            "\"ready_workers\":1,\"streams\":[{\"namespace\":\"\","
            "\"worker_id\":\"w\",\"dp_rank\":0,\"worker_address\":"
            "\"http://w:8000\",\"ready\":true,\"worker_epoch\":\"e1\","
            "\"watermark\":7,\"worker_generation\":\"\"}]}");
  Parse(body);
}

TEST(StatusReportBody, ReadyOnlyWhenEveryStreamIsCovered) {
  StatusReport r = Parse(BuildStatusReportBody(
      kIdentity, Serving({Legacy("a", true), Legacy("b", false)})));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.total_workers, 2u);
  EXPECT_EQ(r.ready_workers, 1u);
  r = Parse(BuildStatusReportBody(
      kIdentity, Serving({Legacy("a", true), Legacy("b", true)})));
  EXPECT_TRUE(r.ready);
  EXPECT_EQ(r.ready_workers, 2u);
}

TEST(StatusReportBody, NotServingOrLaggingReportsNoStreamReady) {
  StatusInputs inputs = Serving({Legacy("a", true), Legacy("b", true)});
  inputs.serving = false;
  StatusReport r = Parse(BuildStatusReportBody(kIdentity, inputs));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.total_workers, 2u);
  EXPECT_EQ(r.ready_workers, 0u);
  for (const StatusReportStream& s : r.streams) EXPECT_FALSE(s.ready);

  inputs.serving = true;
  inputs.replica_caught_up = false;
  r = Parse(BuildStatusReportBody(kIdentity, inputs));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.ready_workers, 0u);
}

TEST(StatusReportBody, FinalReportListsEveryStreamNotReady) {
  StatusInputs inputs = Serving({Legacy("a", true, "e", 3)});
  const StatusReport r = Parse(BuildFinalStatusReportBody(kIdentity, inputs));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.total_workers, 1u);
  EXPECT_EQ(r.ready_workers, 0u);
  ASSERT_EQ(r.streams.size(), 1u);
  EXPECT_FALSE(r.streams[0].ready);
  EXPECT_EQ(r.streams[0].worker_epoch, "e");
  EXPECT_EQ(r.streams[0].watermark, 3u);
}

TEST(StatusReportBody, NamespacedStreamNeedsEpochAndGeneration) {
  ReportedStream s = Keyed("ns", "w");
  s.covered = true;
  StatusReport r = Parse(BuildStatusReportBody(kIdentity, Serving({s})));
  EXPECT_FALSE(r.streams[0].ready);
  EXPECT_EQ(r.ready_workers, 0u);
  s.worker_epoch = "e";
  s.worker_generation = "g";
  r = Parse(BuildStatusReportBody(kIdentity, Serving({s})));
  EXPECT_TRUE(r.streams[0].ready);
  EXPECT_TRUE(r.ready);
}

TEST(StatusReportBody, SortedByKeyBytewiseAndDeduplicated) {
  std::vector<ReportedStream> in = {
      Keyed("b", "w", 1),    Keyed("b", "w", 0),
      Keyed("", "\xC3\xA9"),  // é sorts after z
      Keyed("", "z"),        Keyed("", "Z"),
      Keyed("a", "w", 10),   Keyed("a", "w", 9),
      Keyed("", "z"),        Keyed("", ""),  // left out
  };
  const StatusReport r = Parse(BuildStatusReportBody(kIdentity, Serving(in)));
  std::vector<std::tuple<std::string, std::string, uint32_t>> keys;
  for (const auto& s : r.streams)
    keys.emplace_back(s.ns, s.worker_id, s.dp_rank);
  const std::vector<std::tuple<std::string, std::string, uint32_t>> want = {
      {"", "Z", 0},   {"", "z", 0},  {"", "\xC3\xA9", 0}, {"a", "w", 9},
      {"a", "w", 10}, {"b", "w", 0}, {"b", "w", 1},
  };
  EXPECT_EQ(keys, want);
  EXPECT_EQ(r.total_workers, 7u);
}

TEST(StatusReportBody, AboveTheCapTheStreamsArrayIsEmpty) {
  std::vector<ReportedStream> many;
  for (size_t i = 0; i <= kMaxReportedStreams; ++i) {
    many.push_back(Legacy("w" + std::to_string(i), i % 2 == 0));
  }
  StatusReport r = Parse(BuildStatusReportBody(kIdentity, Serving(many)));
  EXPECT_TRUE(r.streams.empty());
  EXPECT_EQ(r.total_workers, kMaxReportedStreams + 1);
  EXPECT_EQ(r.ready_workers, kMaxReportedStreams / 2 + 1);
  EXPECT_FALSE(r.ready);

  many.pop_back();  // exactly the cap: listed
  r = Parse(BuildStatusReportBody(kIdentity, Serving(many)));
  EXPECT_EQ(r.streams.size(), kMaxReportedStreams);

  StatusInputs counted = Serving({});
  counted.counts = Counts(100000, 100000);
  r = Parse(BuildStatusReportBody(kIdentity, counted));
  EXPECT_TRUE(r.ready);
  EXPECT_TRUE(r.streams.empty());
  EXPECT_EQ(r.ready_workers, 100000u);
  r = Parse(BuildFinalStatusReportBody(kIdentity, counted));
  EXPECT_FALSE(r.ready);
  EXPECT_EQ(r.ready_workers, 0u);
  counted.counts = Counts(5, 9);  // clamped
  r = Parse(BuildStatusReportBody(kIdentity, counted));
  EXPECT_EQ(r.ready_workers, 5u);
}

TEST(StatusReportBody, LoadIsClampedAndFinite) {
  EXPECT_EQ(NormalizedLoad(0, 32), 0.0);
  EXPECT_EQ(NormalizedLoad(16, 32), 0.5);
  EXPECT_EQ(NormalizedLoad(32, 32), 1.0);
  EXPECT_EQ(NormalizedLoad(40, 32), 1.0);
  EXPECT_EQ(NormalizedLoad(0, 0), 0.0);
  EXPECT_EQ(NormalizedLoad(1, 0), 1.0);
  StatusInputs inputs = Serving({});
  inputs.permits_held = 1;
  inputs.permits_capacity = 3;
  const StatusReport r = Parse(BuildStatusReportBody(kIdentity, inputs));
  EXPECT_DOUBLE_EQ(r.normalized_load, 1.0 / 3.0);
}

TEST(StatusReportBody, StringsAreEscapedAndRoundTrip) {
  std::string every_control;
  for (int c = 1; c < 0x20; ++c) every_control += static_cast<char>(c);
  const std::vector<std::string> odd = {
      "quote\"back\\slash/",
      every_control,
      std::string("nul\0byte", 8),
      "caf\xC3\xA9 \xE2\x80\xA8 \xF0\x9F\x98\x80 \x7F",
      "\xE3\x80\x80",  // ideographic space
  };
  for (const std::string& text : odd) {
    ReportedStream s = Legacy(text, true, text, 1);
    s.worker_address = text;
    StatusInputs inputs = Serving({s});
    const StatusReportIdentity identity{.indexer_id = "id " + text,
                                        .endpoint = text + "x"};
    const std::string body = BuildStatusReportBody(identity, inputs);
    for (const char c : body) {
      EXPECT_GE(static_cast<unsigned char>(c), 0x20) << body;
    }
    const StatusReport r = Parse(body);
    ASSERT_EQ(r.streams.size(), 1u);
    EXPECT_EQ(r.streams[0].worker_id, text);
    EXPECT_EQ(r.streams[0].worker_address, text);
    EXPECT_EQ(r.streams[0].worker_epoch, text);
    EXPECT_EQ(r.indexer_id, "id " + text);
  }
  std::string out;
  AppendJsonString(out, std::string("\x01\x1f\"\\\n", 5));
  EXPECT_EQ(out, "\"\\u0001\\u001f\\\"\\\\\\n\"");
}

TEST(StatusReportBody, InvalidUtf8BecomesReplacementCharacters) {
  const std::string bad = "a\xFF\xC0\x80z\xED\xA0\x80";
  const StatusReport r =
      Parse(BuildStatusReportBody(kIdentity, Serving({Legacy(bad, true)})));
  ASSERT_EQ(r.streams.size(), 1u);
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(r.streams[0].worker_id,
            "a" + fffd + fffd + fffd + "z" + fffd + fffd + fffd);
}

// Random inputs, odd strings included: every body, regular and final,
// parses and passes the router's checks, and says what the inputs say.
std::string RandomText(std::mt19937_64& rng) {
  static const std::vector<std::string> pieces = {"",
                                                  "w",
                                                  "ns",
                                                  "\"",
                                                  "\\",
                                                  std::string(1, '\0'),
                                                  "\n",
                                                  "\t",
                                                  "\x1f",
                                                  " ",
                                                  "\xC3\xA9",
                                                  "\xF0\x9F\x98\x80",
                                                  "\xFF",
                                                  "\xE2\x80\xA8",
                                                  "0",
                                                  "-",
                                                  "\xE3\x80\x80"};
  std::string out;
  const int n = static_cast<int>(rng() % 4);
  for (int i = 0; i < n; ++i) out += pieces[rng() % pieces.size()];
  return out;
}

TEST(StatusReportBody, RandomInputsAlwaysPassValidation) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 400; ++round) {
    StatusInputs inputs;
    inputs.serving = rng() % 4 != 0;
    inputs.replica_caught_up = rng() % 4 != 0;
    inputs.permits_capacity = static_cast<uint32_t>(rng() % 5);
    inputs.permits_held = static_cast<uint32_t>(rng() % 8);
    const size_t n = round % 50 == 0 ? kMaxReportedStreams + 1 + rng() % 3
                                     : static_cast<size_t>(rng() % 12);
    for (size_t i = 0; i < n; ++i) {
      inputs.streams.push_back(ReportedStream{
          .ns = rng() % 2 ? "" : RandomText(rng),
          .worker_id = n > 100 ? "w" + std::to_string(i) : RandomText(rng),
          .dp_rank = static_cast<uint32_t>(rng() % 3 == 0 ? rng() : rng() % 2),
          .worker_address = RandomText(rng),
          .covered = rng() % 3 != 0,
          .worker_epoch = RandomText(rng),
          .watermark = rng() % 2 ? rng() : 0,
          .worker_generation = RandomText(rng),
      });
    }
    if (rng() % 10 == 0) {
      inputs.counts = Counts(rng() % 10, rng() % 10);
    }
    const StatusReportIdentity identity{.indexer_id = "i" + RandomText(rng),
                                        .endpoint = "e" + RandomText(rng)};
    for (const bool final_report : {false, true}) {
      const std::string body =
          final_report ? BuildFinalStatusReportBody(identity, inputs)
                       : BuildStatusReportBody(identity, inputs);
      const absl::Status valid = ValidateStatusReportBody(body);
      ASSERT_TRUE(valid.ok()) << valid << "\nround " << round << "\n" << body;
      const StatusReport r = *ParseStatusReport(body);
      if (final_report || !inputs.serving || !inputs.replica_caught_up) {
        EXPECT_FALSE(r.ready);
        EXPECT_EQ(r.ready_workers, 0u);
      }
      EXPECT_TRUE(std::is_sorted(
          r.streams.begin(), r.streams.end(),
          [](const StatusReportStream& a, const StatusReportStream& b) {
            return std::tie(a.ns, a.worker_id, a.dp_rank) <
                   std::tie(b.ns, b.worker_id, b.dp_rank);
          }));
    }
  }
}

}  // namespace status_body_test
}  // namespace kvindexer
