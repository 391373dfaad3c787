// Nothing acknowledged is lost when the server is killed (docs/durability.md,
// "What survives a restart"): a client streams gated applies for one worker
// and records every acknowledged applied_seq; the server gets SIGKILL at a
// random instant and is restarted on the same data directory. Afterwards a
// probe must report a checkpoint between the last acknowledged seq and the
// last sent one, and MatchExternalKv over every hash ever sent must equal
// the reference model folded to exactly that checkpoint. The gate then
// continues from it (the next seq is accepted, a repeat is a duplicate, a
// gap still invalidates).
//
// KV_INDEXER_CHECKPOINT_BYTES is the minimum (1 MiB), so a run writes
// several checkpoints and kills also land during log rotation and while a
// checkpoint is written. Runs alternate KV_INDEXER_WAL_SYNC=always and
// =none: both must survive a process crash.
//
// Runs: KV_INDEXER_DURABILITY_RUNS (default 6, for CI); run i uses seed
// KV_INDEXER_DURABILITY_SEED (default 20261201) + i, printed with every
// failure. The soak (BENCHMARKS.md, "Restart-safe state"):
//   KV_INDEXER_DURABILITY_RUNS=60 build/dev/bin/kvindexer_durability_e2e_tests
//   --gtest_filter='DurabilityKillTest.*' (one command line)
//
// The kill delay is drawn from the run's seed and waited on the clock: it is
// the fault being injected, not a synchronisation. Everything else waits on
// conditions.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e/durability_client.h"
#include "tests/e2e/durability_files.h"
#include "tests/e2e/durability_server.h"
#include "tests/support/requests.h"
#include "tests/support/scratch_dir.h"

namespace kvindexer::e2e {
namespace durability_kill_test {
namespace {

using ::kvindexer::test_support::Batch;
using ::kvindexer::test_support::ReferenceModel;
using ::kvindexer::test_support::ScratchDir;
using ::testing::HasSubstr;

constexpr uint64_t kDefaultRuns = 6;
constexpr uint64_t kDefaultSeed = 20261201;
constexpr uint64_t kCheckpointBytes = 1 << 20;  // the minimum
// About 5 KiB per logged apply: a checkpoint every ~200 applies.
constexpr size_t kUniverse = 40'000;
constexpr uint32_t kReportHashes = 512;
constexpr uint32_t kRevokeHashes = 128;
constexpr int kMinKillDelayMs = 50;
constexpr int kMaxKillDelayMs = 1000;
// A bound on one run's stream, far above what the delay allows.
constexpr uint64_t kMaxSeq = 100'000;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  uint64_t value = 0;
  if (text == nullptr || *text == '\0') return fallback;
  if (!absl::SimpleAtoi(text, &value)) {
    ADD_FAILURE() << name << "=" << text << " is not a number";
    return fallback;
  }
  return value;
}

// What the streaming client saw.
struct StreamOutcome {
  uint64_t sent = 0;   // highest seq handed to gRPC
  uint64_t acked = 0;  // highest seq answered OK (applied, not a duplicate)
  absl::Status end;    // the failure that ended the stream; OK if stopped
  std::string wrong_answer;  // an OK answer that was not the expected one
};

// Sends gated applies seq 1, 2, ... one at a time (a gated stream is
// ordered) until one fails or `stop` is set.
void StreamUntilFailure(v1::KVIndexer::Stub* stub, GatedWorkerStream* stream,
                        const std::atomic<bool>* stop, StreamOutcome* out) {
  while (!stop->load() && stream->sent() < kMaxSeq) {
    const v1::ApplyExternalKvBatchRequest& request = stream->Next();
    out->sent = request.seq();
    v1::ApplyExternalKvBatchResponse response;
    absl::Status status = Send(*stub, request, &response);
    if (!status.ok()) {
      out->end = status;
      return;
    }
    if (response.duplicate() || response.applied_seq() != request.seq()) {
      out->wrong_answer = absl::StrCat(
          "seq ", request.seq(), " answered applied_seq ",
          response.applied_seq(), " duplicate ", response.duplicate());
      return;
    }
    out->acked = request.seq();
  }
}

// Counts over the runs, printed at the end: evidence of where kills landed.
struct KillTally {
  int runs = 0;
  int with_checkpoint = 0;       // a checkpoint file existed at the kill
  int during_compaction = 0;     // the newest log had no checkpoint yet
  int during_checkpoint = 0;     // ... and its file was being written
  int with_unacked_applied = 0;  // recovered past the last acknowledgement
  uint64_t acked_total = 0;
};

void RunOnce(uint64_t run, uint64_t seed, KillTally* tally) {
  std::mt19937_64 rng(seed);
  const std::string sync = run % 2 == 0 ? "always" : "none";
  SCOPED_TRACE(absl::StrCat("run ", run, " seed ", seed, " WAL_SYNC=", sync));
  auto scratch = ScratchDir::Create("kvindexer-durability-kill-");
  ASSERT_TRUE(scratch.ok()) << scratch.status();
  DurableServerOptions options;
  // A directory that does not exist yet: the server creates it.
  options.data_dir = (*scratch)->Sub("data");
  options.wal_sync = sync;
  options.checkpoint_bytes = kCheckpointBytes;

  std::unique_ptr<DurableServer> server = DurableServer::Start(options);
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(RegisterGatedWorker(server->stub()).ok());

  GatedWorkerStream stream(seed, kUniverse, kReportHashes, kRevokeHashes);
  const auto delay =
      std::chrono::milliseconds(std::uniform_int_distribution<int>(
          kMinKillDelayMs, kMaxKillDelayMs)(rng));
  std::atomic<bool> stop{false};
  StreamOutcome outcome;
  std::thread client(StreamUntilFailure, &server->stub(), &stream, &stop,
                     &outcome);
  std::this_thread::sleep_for(delay);  // the fault's random instant
  server->process().Signal(SIGKILL);
  const auto killed = server->process().WaitForExit(kDurableExitBound);
  stop.store(true);
  client.join();
  ASSERT_TRUE(killed.has_value());
  ASSERT_FALSE(killed->exited) << "the server ended by itself ("
                               << killed->ToString() << ") before the kill:\n"
                               << server->process().Output();
  // The stream ends because the server went away (gRPC reports that as
  // UNAVAILABLE, CANCELLED, INTERNAL or UNKNOWN depending on where the call
  // was), or because it was told to stop between two applies; never because
  // the server refused an apply or answered it wrongly.
  EXPECT_EQ(outcome.wrong_answer, "");
  EXPECT_THAT(
      outcome.end.code(),
      ::testing::AnyOf(absl::StatusCode::kOk, absl::StatusCode::kUnavailable,
                       absl::StatusCode::kCancelled,
                       absl::StatusCode::kInternal, absl::StatusCode::kUnknown))
      << outcome.end;
  EXPECT_THAT(std::string(outcome.end.message()),
              ::testing::Not(HasSubstr("state log write failed")));
  absl::StatusOr<DataDirFiles> at_kill = ListDataDir(options.data_dir);
  ASSERT_TRUE(at_kill.ok()) << at_kill.status();

  std::unique_ptr<DurableServer> restarted = DurableServer::Start(options);
  ASSERT_NE(restarted, nullptr);
  const std::optional<RecoveredLine> recovered = restarted->Recovered();
  ASSERT_TRUE(recovered.has_value());
  absl::StatusOr<uint64_t> checkpoint = ProbeCheckpoint(restarted->stub());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status() << "\n"
                               << restarted->process().Output();
  EXPECT_GE(*checkpoint, outcome.acked)
      << "acknowledged applies were lost: sent " << outcome.sent << ", acked "
      << outcome.acked << "\n"
      << restarted->process().Output();
  EXPECT_LE(*checkpoint, outcome.sent)
      << "the server reports a seq that was never sent";

  ReferenceModel model = stream.ModelAt(*checkpoint);
  const Placements want = ModelPlacements(model, stream.universe());
  absl::StatusOr<Placements> got =
      ServerPlacements(restarted->stub(), stream.universe());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(*got == want) << "after recovery to checkpoint " << *checkpoint
                            << ": " << FirstDifference(*got, want);
  EXPECT_EQ(recovered->workers, 1u) << recovered->text;
  EXPECT_EQ(recovered->placements, PlacementCount(want)) << recovered->text;

  // checkpoint-<g> holds the state at the start of wal-<g>: a newer log
  // means the checkpoint of its start was still being built.
  const bool compacting = !at_kill->wals.empty() &&
                          (at_kill->checkpoints.empty() ||
                           at_kill->checkpoints.back() < at_kill->wals.back());
  std::printf(
      "run %llu seed %llu %s: killed after %lld ms; sent %llu, acked %llu, "
      "recovered %llu; files at the kill: %zu checkpoints, %zu logs%s; %s\n",
      static_cast<unsigned long long>(run),
      static_cast<unsigned long long>(seed), sync.c_str(),
      static_cast<long long>(delay.count()),
      static_cast<unsigned long long>(outcome.sent),
      static_cast<unsigned long long>(outcome.acked),
      static_cast<unsigned long long>(*checkpoint), at_kill->checkpoints.size(),
      at_kill->wals.size(),
      !compacting                   ? ""
      : at_kill->writing_checkpoint ? ", the next checkpoint being written"
                                    : ", the next checkpoint being built",
      recovered->text.substr(recovered->text.find("recovered ")).c_str());
  ++tally->runs;
  tally->with_checkpoint += at_kill->checkpoints.empty() ? 0 : 1;
  tally->during_compaction += compacting ? 1 : 0;
  tally->during_checkpoint += at_kill->writing_checkpoint ? 1 : 0;
  tally->with_unacked_applied += *checkpoint > outcome.acked ? 1 : 0;
  tally->acked_total += outcome.acked;

  // Gate continuity: the next seq continues from the recovered checkpoint
  // (resending what the server did not keep, as a bridge would).
  const uint64_t next = *checkpoint + 1;
  const v1::ApplyExternalKvBatchRequest& resend =
      next <= stream.sent() ? stream.request(next) : stream.Next();
  v1::ApplyExternalKvBatchResponse answer;
  ASSERT_TRUE(Send(restarted->stub(), resend, &answer).ok());
  EXPECT_FALSE(answer.duplicate());
  EXPECT_EQ(answer.applied_seq(), next);
  ASSERT_TRUE(Send(restarted->stub(), resend, &answer).ok());
  EXPECT_TRUE(answer.duplicate());
  EXPECT_EQ(answer.applied_seq(), next);
  ASSERT_TRUE(model.Apply(resend).ok());
  got = ServerPlacements(restarted->stub(), stream.universe());
  ASSERT_TRUE(got.ok()) << got.status();
  const Placements want_next = ModelPlacements(model, stream.universe());
  EXPECT_TRUE(*got == want_next) << FirstDifference(*got, want_next);
  // ... and a gap still invalidates the worker.
  absl::Status gap = Send(restarted->stub(),
                          Batch(kDurableWorker, kDurableAddress)
                              .Gated(kDurableEpoch, next + 2)
                              .Report(kTierHbm, {stream.universe()[0]}),
                          &answer);
  EXPECT_EQ(gap.code(), absl::StatusCode::kFailedPrecondition) << gap;
  EXPECT_THAT(gap.message(), HasSubstr("event sequence gap"));
  got = ServerPlacements(restarted->stub(), stream.universe());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(PlacementCount(*got), 0u);

  restarted->Stop();
}

TEST(DurabilityKillTest, AcknowledgedAppliesSurviveSigkillAtRandomInstants) {
  const uint64_t runs = EnvOr("KV_INDEXER_DURABILITY_RUNS", kDefaultRuns);
  const uint64_t seed = EnvOr("KV_INDEXER_DURABILITY_SEED", kDefaultSeed);
  KillTally tally;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t run = 0; run < runs; ++run) {
    RunOnce(run, seed + run, &tally);
    if (HasFailure()) break;
  }
  std::printf(
      "%d runs in %.1f s: %d killed with a checkpoint on disk, %d while the "
      "next one was being built, %d of them while its file was being "
      "written, %d recovered past the last acknowledgement; %llu "
      "acknowledged applies in all\n",
      tally.runs,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count(),
      tally.with_checkpoint, tally.during_compaction, tally.during_checkpoint,
      tally.with_unacked_applied,
      static_cast<unsigned long long>(tally.acked_total));
}

}  // namespace
}  // namespace durability_kill_test
}  // namespace kvindexer::e2e
