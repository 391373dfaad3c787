#include "server/status_report_validation.h"

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/status_report_parser.h"

namespace kvindexer {
namespace status_validation_test {

using ::testing::HasSubstr;

StatusReportStream Entry(std::string ns, std::string id, uint32_t dp_rank,
                         bool ready) {
  StatusReportStream s;
  s.ns = std::move(ns);
  s.worker_id = std::move(id);
  s.dp_rank = dp_rank;
  s.ready = ready;
  return s;
}

StatusReport ValidReport() {
  StatusReport r;
  r.indexer_id = "idx";
  r.endpoint = "http://10.0.0.1:50051";
  r.ready = false;
  r.normalized_load = 0.5;
  r.total_workers = 2;
  r.ready_workers = 1;
  r.streams = {
      Entry("", "a", 0, true),
      Entry("ns", "b", 0, false),
  };
  return r;
}

TEST(StatusReportValidation, AcceptsAValidReport) {
  EXPECT_TRUE(ValidateStatusReport(ValidReport()).ok());
  StatusReport all_ready = ValidReport();
  all_ready.streams[1].ready = true;
  all_ready.streams[1].worker_epoch = "e";
  all_ready.streams[1].worker_generation = "g";
  all_ready.ready_workers = 2;
  all_ready.ready = true;
  EXPECT_TRUE(ValidateStatusReport(all_ready).ok());
  StatusReport empty_list = ValidReport();
  empty_list.streams.clear();  // the counts stand alone
  EXPECT_TRUE(ValidateStatusReport(empty_list).ok());
}

struct Violation {
  std::string name;
  std::function<void(StatusReport&)> apply;
  std::string message;
};

TEST(StatusReportValidation, RejectsEachViolation) {
  const std::vector<Violation> violations = {
      {"empty id", [](StatusReport& r) { r.indexer_id = ""; },
       "indexer_id is blank"},
      {"blank id", [](StatusReport& r) { r.indexer_id = " \t\xE3\x80\x80"; },
       "indexer_id is blank"},
      {"blank endpoint", [](StatusReport& r) { r.endpoint = "\xC2\xA0\n"; },
       "endpoint is blank"},
      {"load above 1", [](StatusReport& r) { r.normalized_load = 1.0001; },
       "normalized_load"},
      {"negative load", [](StatusReport& r) { r.normalized_load = -0.1; },
       "normalized_load"},
      {"NaN load",
       [](StatusReport& r) {
         r.normalized_load = std::numeric_limits<double>::quiet_NaN();
       },
       "normalized_load"},
      {"infinite load",
       [](StatusReport& r) {
         r.normalized_load = std::numeric_limits<double>::infinity();
       },
       "normalized_load"},
      {"ready above total",
       [](StatusReport& r) {
         r.streams.clear();
         r.ready_workers = 3;
       },
       "ready_workers 3 > total_workers 2"},
      {"empty worker id", [](StatusReport& r) { r.streams[1].worker_id = ""; },
       "empty worker_id"},
      {"ready namespaced stream without generation",
       [](StatusReport& r) {
         r.streams[1].ready = true;
         r.streams[1].worker_epoch = "e";
         r.streams[0].ready = false;
       },
       "without an epoch or a generation"},
      {"ready namespaced stream without epoch",
       [](StatusReport& r) {
         r.streams[1].ready = true;
         r.streams[1].worker_generation = "g";
         r.streams[0].ready = false;
       },
       "without an epoch or a generation"},
      {"repeated key",
       [](StatusReport& r) {
         r.streams[1] = r.streams[0];
         r.ready_workers = 2;
         r.ready = true;
       },
       "repeats a key"},
      {"list shorter than total", [](StatusReport& r) { r.total_workers = 3; },
       "2 streams listed"},
      {"ready entries differ", [](StatusReport& r) { r.ready_workers = 0; },
       "1 streams ready, ready_workers 0"},
      {"ready with a stream not ready", [](StatusReport& r) { r.ready = true; },
       "ready is true"},
      {"not ready with every stream ready",
       [](StatusReport& r) {
         r.streams.clear();
         r.ready_workers = 2;
       },
       "ready is false"},
      {"ready with no streams",
       [](StatusReport& r) {
         r.streams.clear();
         r.total_workers = 0;
         r.ready_workers = 0;
         r.ready = true;
       },
       "ready is true"},
  };
  for (const Violation& v : violations) {
    StatusReport r = ValidReport();
    v.apply(r);
    const absl::Status status = ValidateStatusReport(r);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << v.name;
    EXPECT_THAT(std::string(status.message()), HasSubstr(v.message)) << v.name;
  }
}

TEST(StatusReportValidation, SameWorkerInOtherRanksOrNamespacesIsFine) {
  StatusReport r = ValidReport();
  r.streams = {
      Entry("", "w", 0, false),
      Entry("", "w", 1, false),
      Entry("x", "w", 0, false),
  };
  r.total_workers = 3;
  r.ready_workers = 0;
  EXPECT_TRUE(ValidateStatusReport(r).ok());
}

TEST(StatusReportValidation, IsBlankText) {
  EXPECT_TRUE(IsBlankText(""));
  EXPECT_TRUE(IsBlankText(" \t\n\r\v\f"));
  EXPECT_TRUE(
      IsBlankText("\xC2\x85\xC2\xA0\xE1\x9A\x80\xE2\x80\x8A"
                  "\xE2\x80\xA8\xE2\x80\xAF\xE3\x80\x80"));
  EXPECT_FALSE(IsBlankText(" x "));
  EXPECT_FALSE(
      IsBlankText("\xE2\x80\x8B"));  // zero width space: not White_Space
  EXPECT_FALSE(IsBlankText("\xFF"));
  EXPECT_FALSE(IsBlankText("\xC2"));
}

// The parser is as strict as the router's deserialiser.
const char kGood[] =
    "{\"indexer_id\":\"i\",\"endpoint\":\"e\",\"ready\":false,"
    "\"normalized_load\":0,\"total_workers\":1,\"ready_workers\":0,"
    "\"streams\":[{\"namespace\":\"\",\"worker_id\":\"w\",\"dp_rank\":0,"
    "\"worker_address\":\"\",\"ready\":false,\"worker_epoch\":\"\","
    "\"watermark\":18446744073709551615,\"worker_generation\":\"\"}]}";

std::string Replace(std::string text, std::string_view from,
                    std::string_view to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

TEST(StatusReportParser, ReadsAGoodBody) {
  absl::StatusOr<StatusReport> r = ParseStatusReport(kGood);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->streams.at(0).watermark, 18446744073709551615ull);
  EXPECT_TRUE(ValidateStatusReportBody(kGood).ok());
  // White space, escapes, unknown keys and exponents where a double goes.
  const std::string spaced = Replace(
      Replace(kGood, "\"ready\":false,", " \"ready\" : false , \"x\":[{}],"),
      "\"normalized_load\":0", "\"normalized_load\":5e-1");
  r = ParseStatusReport(
      " " + Replace(spaced, "\"i\"", "\"\\u00e9\\ud83d\\ude00\"") + "\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->indexer_id, "\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(r->normalized_load, 0.5);
}

TEST(StatusReportParser, RejectsWhatTheRouterCannotRead) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {Replace(kGood, "\"watermark\":18446744073709551615",
               "\"watermark\":18446744073709551616"),
       "not an integer"},
      {Replace(kGood, "\"watermark\":18446744073709551615",
               "\"watermark\":1.0"),
       "not an integer"},
      {Replace(kGood, "\"watermark\":18446744073709551615", "\"watermark\":-1"),
       "not an integer"},
      {Replace(kGood, "\"watermark\":18446744073709551615",
               "\"watermark\":\"7\""),
       "not a number"},
      {Replace(kGood, "\"dp_rank\":0", "\"dp_rank\":4294967296"),
       "not an integer"},
      {Replace(kGood, "\"ready\":false,\"normalized",
               "\"ready\":0,\"normalized"),
       "not true or false"},
      {Replace(kGood, "\"indexer_id\":\"i\",", ""), "no key \"indexer_id\""},
      {Replace(kGood, "\"indexer_id\":\"i\",",
               "\"indexer_id\":\"i\",\"indexer_id\":\"j\","),
       "repeats key"},
      {Replace(kGood, "\"streams\":[", "\"streams\":{\"a\":["), "expected"},
      {std::string(kGood) + "x", "content after the document"},
      {Replace(kGood, "\"i\"", "\"\xFF\""), "invalid UTF-8"},
      {Replace(kGood, "\"i\"", "\"a\nb\""), "control character"},
      {Replace(kGood, "\"i\"", "\"\\ud800\""), "surrogate"},
      {Replace(kGood, "\"normalized_load\":0", "\"normalized_load\":1e999"),
       "out of a double's range"},
      {Replace(kGood, "\"normalized_load\":0", "\"normalized_load\":01"),
       "expected"},
      {"[]", "not an object"},
      {"", "unexpected end"},
      {std::string(100, '[') + std::string(100, ']'), "nesting"},
  };
  for (const auto& [body, message] : bad) {
    const absl::StatusOr<StatusReport> r = ParseStatusReport(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(message)) << body;
  }
}

}  // namespace status_validation_test
}  // namespace kvindexer
