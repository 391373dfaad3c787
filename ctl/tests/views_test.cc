// Rendering from fixed responses: the tables a person reads and the JSON a
// script parses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ctl/explain_view.h"
#include "ctl/health_check.h"
#include "ctl/json_output.h"
#include "ctl/status_view.h"
#include "ctl/tests/sample_responses.h"
#include "ctl/text_table.h"
#include "ctl/top_view.h"
#include "ctl/units.h"
#include "ctl/workers_view.h"

namespace kvindexer::ctl {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(TextTableTest, AlignsColumnsAndTrimsTheLastOne) {
  TextTable t({"A", "NUM", "NOTE"});
  t.AlignRight(1);
  t.AddRow({"long-name", "5", "x"});
  t.AddRow({"b", "1234"});
  EXPECT_EQ(t.Render(),
            "A           NUM  NOTE\n"
            "long-name     5  x\n"
            "b          1234\n");
}

TEST(UnitsTest, Durations) {
  EXPECT_EQ(FormatDurationMs(850), "850ms");
  EXPECT_EQ(FormatDurationMs(12'340), "12.3s");
  EXPECT_EQ(FormatDurationMs(303'000), "5m03s");
  EXPECT_EQ(FormatDurationMs(8'040'000), "2h14m");
  EXPECT_EQ(FormatDurationMs(273'600'000), "3d04h");
}

TEST(UnitsTest, BytesAndDeltas) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(FormatDelta(5, 5), "0");
  EXPECT_EQ(FormatDelta(5, 17), "+12");
  EXPECT_EQ(FormatDelta(17, 5), "-12");
}

TEST(WorkersViewTest, Table) {
  EXPECT_EQ(
      RenderWorkers(testing::SampleWorkers()),
      "WORKER  ADDRESS         STATE               READY  EPOCH:SEQ  "
      "FIDELITY               HBM  DRAM  SSD  LAST APPLY  HEARTBEAT\n"
      "w-a     10.0.0.1:30001  sequenced           yes    e1:42      "
      "exact                  100    20    0  1.5s ago    ok 2.0s ago (ttl "
      "10.0s)\n"
      "w-b     -               invalid,configured  no     -          "
      "degraded (replay gap)    ?     ?    ?  never       -\n");
}

TEST(WorkersViewTest, EmptyAndLateHeartbeat) {
  EXPECT_EQ(RenderWorkers({}), "no workers\n");
  auto workers = testing::SampleWorkers();
  workers.mutable_workers(0)->set_heartbeat_deadline_in_ms(-3000);
  EXPECT_THAT(RenderWorkers(workers), HasSubstr("late 3.0s (ttl 10.0s)"));
}

TEST(WorkersViewTest, StreamsAddNamespaceAndRankColumns) {
  auto workers = testing::SampleWorkers();
  admin::v1::WorkerInfo* w = workers.add_workers();
  w->set_worker_id("w-a");
  w->set_namespace_("pool");
  w->set_dp_rank(12);
  const std::string out = RenderWorkers(workers);
  EXPECT_THAT(out, ::testing::StartsWith(
                       "WORKER  NAMESPACE  RANK  ADDRESS         STATE"));
  EXPECT_THAT(out, HasSubstr("\nw-a     -             0  10.0.0.1:30001"));
  EXPECT_THAT(out, HasSubstr("\nw-a     pool         12  -"));
}

TEST(StatusViewTest, EveryFigure) {
  const std::string out =
      RenderStatus("http://127.0.0.1:1", testing::SampleStats(), "SERVING");
  EXPECT_THAT(out, HasSubstr("endpoint   http://127.0.0.1:1\n"));
  EXPECT_THAT(out, HasSubstr("server     kv-indexer-server 0.1.0, up 1h02m\n"));
  EXPECT_THAT(out, HasSubstr("health     SERVING\n"));
  EXPECT_THAT(out, HasSubstr("backend    robin 1.2.0 (ABI 1.2), healthy\n"));
  EXPECT_THAT(out, HasSubstr("index      120 blocks, 300 placements, 2 "
                             "workers, 7 hit counters\n"));
  EXPECT_THAT(out, HasSubstr("memory     3.0 MiB\n"));
  EXPECT_THAT(out, HasSubstr("workers    2 known, 1 ready, 1 sequenced, 1 "
                             "heartbeating\n"));
  EXPECT_THAT(out, HasSubstr("admission  3 of 32 prefix queries in flight\n"));
  EXPECT_THAT(out, HasSubstr("data dir   /var/lib/kvi\n"));
  EXPECT_THAT(out, HasSubstr("checkpoint generation 4"));
  EXPECT_THAT(out, HasSubstr("replay on restart 1.0 KiB of a 4.0 KiB cap, 5 "
                             "writes waited for a checkpoint, one waits now"));
  auto uncapped = testing::SampleStats();
  uncapped.mutable_durability()->set_replay_max_bytes(0);
  EXPECT_THAT(RenderStatus("e", uncapped, "SERVING"),
              HasSubstr("replay on restart 1.0 KiB (no cap)"));
}

TEST(StatusViewTest, FailedBackendAndDisagreeingProbe) {
  auto stats = testing::SampleStats();
  stats.set_health("NOT_SERVING");
  stats.mutable_backend()->set_healthy(false);
  stats.mutable_backend()->set_failure("rollback failed");
  stats.mutable_durability()->set_enabled(false);
  const std::string out = RenderStatus("e", stats, "not offered");
  EXPECT_THAT(out, HasSubstr("NOT_SERVING (health check: not offered)"));
  EXPECT_THAT(out, HasSubstr("FAILED: rollback failed"));
  EXPECT_THAT(out, HasSubstr("data dir   none"));
}

TEST(ExplainViewTest, AnswerAndPerWorkerReasons) {
  const std::string out = RenderExplain(testing::SampleExplain());
  EXPECT_THAT(out, HasSubstr("answer: best 2 blocks, 3 blocks read, 1 "
                             "workers matched\n"));
  EXPECT_THAT(out, HasSubstr("  w-a     10.0.0.1:30001        2\n"));
  EXPECT_THAT(out, HasSubstr("WORKER  MATCHED  RULE             STOPPED"));
  EXPECT_THAT(out, HasSubstr("w-a           2  legacy           "
                             "block_missing @2"));
  EXPECT_THAT(out, HasSubstr("block 2 has no placement of this worker"));
  EXPECT_THAT(out, HasSubstr("sequenced, exact, apply 1.5s ago"));
  EXPECT_THAT(out, HasSubstr("window_end"));
  EXPECT_THAT(out, Not(HasSubstr("window_end @")));
  EXPECT_THAT(out, HasSubstr("excluded: empty address"));
  EXPECT_THAT(out, HasSubstr("unsequenced, degraded, apply never"));
}

TEST(ExplainViewTest, ComponentAndNoCandidates) {
  admin::v1::ExplainPrefixResponse r;
  EXPECT_THAT(RenderExplain(r), HasSubstr("no worker holds block 0"));
  auto* w = r.add_workers();
  w->set_worker_id("w");
  w->set_stop_reason(admin::v1::STOP_REASON_TIER_NOT_ALLOWED);
  w->set_stop_block(4);
  w->set_stop_component(2);
  EXPECT_THAT(RenderExplain(r), HasSubstr("tier_not_allowed @4 SWA"));
}

TEST(ExplainViewTest, CoverageAndStreams) {
  admin::v1::ExplainPrefixResponse r;
  auto* answer = r.mutable_answer();
  answer->set_best_prefix_blocks(2);
  answer->set_blocks_read(2);
  auto* m = answer->add_matches();
  m->set_worker_id("w");
  m->set_worker_address("a");
  m->set_matched_prefix_blocks(2);
  m->mutable_stream_id()->set_namespace_("pool");
  m->mutable_stream_id()->set_worker_id("w");
  m->mutable_stream_id()->set_dp_rank(1);
  answer->add_coverage()->set_ready(true);
  answer->add_coverage()->set_ready(false);
  answer->add_uncovered_worker_addresses("x:1");
  answer->add_uncovered_worker_addresses("y:2");
  auto* w = r.add_workers();
  w->set_worker_id("w");
  *w->mutable_stream_id() = m->stream_id();
  w->set_matched_prefix_blocks(2);
  w->set_stop_reason(admin::v1::STOP_REASON_WINDOW_END);
  w = r.add_workers();
  w->set_worker_id("v");
  w->set_excluded(true);
  w->set_excluded_reason("not selected");
  w->set_stop_reason(admin::v1::STOP_REASON_NOT_SELECTED);
  const std::string out = RenderExplain(r);
  EXPECT_THAT(out, HasSubstr("coverage: 1 of 2 selected streams ready, "
                             "partial; no stream at x:1, y:2\n"));
  EXPECT_THAT(out, HasSubstr("  WORKER  NAMESPACE  RANK  ADDRESS  MATCHED\n"
                             "  w       pool          1  a              2\n"));
  EXPECT_THAT(out, HasSubstr("WORKER  NAMESPACE  RANK  MATCHED"));
  EXPECT_THAT(out, HasSubstr("\nv       -             0        0"));
  EXPECT_THAT(out, HasSubstr("not_selected"));
  EXPECT_THAT(out, HasSubstr("excluded: not selected"));
}

TEST(TopViewTest, DeltasAndActivityOrder) {
  TopSample before{testing::SampleStats(), testing::SampleWorkers()};
  TopSample now = before;
  now.stats.mutable_backend()->set_placements(340);
  // w-c is new and busiest; w-a grew by 5.
  auto* c = now.workers.add_workers();
  c->set_worker_id("w-c");
  c->set_placement_counts_known(true);
  auto* p = c->add_placements();
  p->set_tier(kv_indexer::v1::TIER_HBM);
  p->set_placements(35);
  c->set_last_apply_age_ms(10);
  now.workers.mutable_workers(0)->mutable_placements(0)->set_placements(105);
  const std::string out = RenderTop("http://x:1", &before, now);
  EXPECT_THAT(out, HasSubstr("kv-indexer-server 0.1.0 at http://x:1"));
  EXPECT_THAT(out, ContainsRegex("\nplacements +340 +\\+40\n"));
  EXPECT_THAT(out, ContainsRegex("\nblocks +120 +0\n"));
  // New worker: its change counts from itself (0), so w-a (+5) leads.
  const size_t a = out.find("\nw-a ");
  const size_t b = out.find("\nw-b ");
  const size_t cpos = out.find("\nw-c ");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(cpos, std::string::npos);
  EXPECT_LT(a, cpos);
  EXPECT_LT(cpos, b);
  EXPECT_THAT(out, ContainsRegex("\nw-a +sequenced .* 125 +\\+5 "));
}

TEST(TopViewTest, StreamsOfOneWorkerIdAreRowsOfTheirOwn) {
  TopSample before{testing::SampleStats(), testing::SampleWorkers()};
  auto* ranked = before.workers.add_workers();
  ranked->set_worker_id("w-a");
  ranked->set_namespace_("pool");
  ranked->set_dp_rank(3);
  ranked->set_placement_counts_known(true);
  auto* p = ranked->add_placements();
  p->set_tier(kv_indexer::v1::TIER_HBM);
  p->set_placements(7);
  TopSample now = before;
  now.workers.mutable_workers(2)->mutable_placements(0)->set_placements(9);
  const std::string out = RenderTop("http://x:1", &before, now);
  EXPECT_THAT(out, HasSubstr("WORKER  NAMESPACE  RANK  STATE"));
  // Each stream's change is its own: the legacy w-a did not change.
  EXPECT_THAT(out, ContainsRegex("\nw-a +pool +3 +.* 9 +\\+2 "));
  EXPECT_THAT(out, ContainsRegex("\nw-a +- +0 +sequenced .* 120 +0 "));
}

TEST(JsonOutputTest, ProtoFieldNamesAndDefaultsPrinted) {
  const std::string json = MessageJson(testing::SampleWorkers());
  EXPECT_THAT(json, HasSubstr("\"worker_id\":\"w-a\""));
  EXPECT_THAT(json,
              HasSubstr("\"sequence_state\":\"SEQUENCE_STATE_SEQUENCED\""));
  EXPECT_THAT(json, HasSubstr("\"applied_seq\":\"42\""));
  EXPECT_THAT(json, HasSubstr("\"tier\":\"TIER_HBM\""));
  // Defaults are printed so that scripts find every field.
  EXPECT_THAT(json, HasSubstr("\"ready\":false"));
  EXPECT_THAT(json, Not(HasSubstr("\n")));
  EXPECT_EQ(JsonString("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
}

TEST(HealthCheckTest, DecodesTheStatusEnum) {
  std::string status;
  EXPECT_TRUE(DecodeHealthResponse(std::string("\x08\x01", 2), &status));
  EXPECT_EQ(status, "SERVING");
  EXPECT_TRUE(DecodeHealthResponse(std::string("\x08\x02", 2), &status));
  EXPECT_EQ(status, "NOT_SERVING");
  EXPECT_TRUE(DecodeHealthResponse("", &status));
  EXPECT_EQ(status, "UNKNOWN");
  EXPECT_FALSE(DecodeHealthResponse(std::string("\x08", 1), &status));
}

}  // namespace
}  // namespace kvindexer::ctl
