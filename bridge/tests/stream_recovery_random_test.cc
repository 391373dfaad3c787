// Seeded randomised fault test of the recovery engine
// (docs/bridge-events.md, "Recovery"): a simulated publisher produces random
// store / remove / clear batches with a bounded replay buffer while faults
// are injected everywhere (live drops, duplicates, delayed and reordered
// delivery, publisher restarts from seq 0, SUB reconnects, server restarts
// that lose everything, failing calls, lost responses, failing replays and
// snapshots, tiny request limits so batches span several chunks; server
// restarts and reconnects also land between two calls, e.g. between the
// chunks of one batch). Half the seeds also heartbeat (docs/bridge-events.md,
// "Recovery > Worker liveness"), so heartbeats meet every fault too.
//
// Against the FakeGatedServer every gated apply that moves the checkpoint
// to c and every Replace at c is checked at once: the index must be a
// subset of the publisher's cache as of batch c, and equal to it when the
// engine says it is exact. After a fault-free tail the index must equal the
// publisher's cache when the stream says it is exact, and be a subset of it
// (never a block the worker does not hold) when it says it is degraded.
//
// Runs against the FakeGatedServer (1000 seeds) and against the real core
// Indexer (500 seeds, end check only). KV_INDEXER_RECOVERY_SEEDS overrides
// the number of seeds; a failure names its seed, and
// KV_INDEXER_RECOVERY_SEED runs one seed with debug logging.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bridge/stream_recovery.h"
#include "bridge/tests/fake_publisher.h"
#include "bridge/tests/fake_recovery_env.h"
#include "bridge/tests/sim_server.h"
#include "gtest/gtest.h"
#include "spdlog/spdlog.h"

namespace kvindexer::bridge::testing {
namespace {

using std::chrono::milliseconds;
using Clock = RecoveryClock::Clock;
using Op = PublisherOp;
using Placements = std::set<std::pair<int64_t, int>>;

enum class Mode { kSnapshot, kReplay, kLive };

struct Outcome {
  bool exact = false;
  std::string degraded_reason;
  Placements index;
  Placements truth;
  absl::Status status;
  BridgeStats stats;
  uint64_t published = 0;
  bool livelock = false;
  bool synchronised = false;
  // The first step check that failed (empty: none); see FinishStepCheck.
  std::string step_failure;
  uint64_t steps_checked = 0;
};

std::string Describe(const Placements& p) {
  std::string out;
  for (const auto& [h, t] : p) absl::StrAppend(&out, h, "@", t, " ");
  return out;
}

class Simulation {
 public:
  Simulation(uint64_t seed, Mode mode, std::unique_ptr<SimServer> server)
      : rng_(seed),
        server_(std::move(server)),
        mode_(mode),
        heartbeats_((seed / 3) % 2 == 1),
        queue_(&clock_, 8 + Pick(64)),
        publisher_(
            [this](uint64_t seq, std::string topic, std::string payload) {
              Deliver(seq, std::move(topic), std::move(payload));
            },
            4 + Pick(60), mode == Mode::kSnapshot) {
    server_->fault_hook = [this](SimServer::Call) {
      FinishStepCheck();
      // A livelock (RPCs with no time passing) ends the run as a failure.
      if (++calls_ > kMaxCalls && !livelock_) {
        livelock_ = true;
        clock_.StopAfter(milliseconds(0));
      }
      if (!faults_) return SimServer::Fault::kNone;
      const double r = Uniform();
      if (r < 0.03) return SimServer::Fault::kFail;
      if (r < 0.06) return SimServer::Fault::kLoseResponse;
      // The server restarts or the SUB socket reconnects between two calls,
      // e.g. between the chunks of a batch.
      if (r < 0.063) {
        server_->RestartEmpty();
      } else if (r < 0.066) {
        delayed_.clear();
        queue_.PushMarker(LiveItem::Kind::kDisconnected);
        queue_.PushMarker(LiveItem::Kind::kConnected);
      }
      return SimServer::Fault::kNone;
    };
    server_->on_checkpoint = [this](uint64_t checkpoint, bool answered) {
      FinishStepCheck();
      pending_.emplace(PendingCheck{
          checkpoint, answered,
          server_->Placements("w", static_cast<int64_t>(next_hash_))});
    };
    publisher_.on_record = [this](uint64_t seq) {
      history_[seq].push_back(publisher_.cache());
    };
    clock_.on_tick = [this](Clock::time_point now) {
      FinishStepCheck();
      Tick(now);
    };
  }

  Outcome Run() {
    RecoveryOptions options;
    options.header.worker_id = "w";
    options.header.worker_address = "http://w:1";
    // Small limits so that batches span several chunks (the gated-last
    // rule and uncertain outcomes in the middle of a batch).
    if (Pick(2) == 0) {
      options.limits.max_hashes = 1 + Pick(4);
      options.limits.max_actions = 1 + Pick(3);
    }
    if (heartbeats_) options.heartbeat_ttl = milliseconds(3000);
    RecoveryIo io;
    io.applier = server_.get();
    io.live = &queue_;
    io.replay = mode_ == Mode::kLive ? nullptr : &publisher_;
    io.snapshot = mode_ == Mode::kSnapshot ? &publisher_ : nullptr;
    io.clock = &clock_;
    std::mt19937_64 engine_rng(rng_());
    io.random = [&engine_rng] { return engine_rng(); };
    Outcome out;
    io.stats = &out.stats;
    StreamRecovery engine(options, io);
    engine_ = &engine;

    fault_end_ = Clock::time_point(milliseconds(15'000));
    tail_end_ = fault_end_ + milliseconds(500);
    clock_.StopAfter(milliseconds(45'000));
    out.status = engine.Run();
    FinishStepCheck();
    engine_ = nullptr;
    out.step_failure = step_failure_;
    out.steps_checked = steps_checked_;
    out.exact = engine.exact();
    out.synchronised = engine.synchronised();
    out.degraded_reason = engine.degraded_reason();
    out.index = server_->Placements("w", static_cast<int64_t>(next_hash_));
    out.truth = publisher_.cache();
    out.published = published_;
    out.livelock = livelock_;
    return out;
  }

 private:
  uint64_t Pick(uint64_t n) { return rng_() % n; }

  // After every gated apply that moved the checkpoint to c and every
  // Replace at c, the index must be a subset of the publisher's cache as of
  // batch c (of some incarnation: the server does not know which), and
  // equal to it when the engine says it is exact. The engine's claim is
  // read at the next call, tick or the end of the run, once it has taken
  // in the answer (an install that degrades marks it after the Replace);
  // it is not asked when the answer was lost.
  void FinishStepCheck() {
    if (!pending_ || engine_ == nullptr) return;
    const PendingCheck step = *std::move(pending_);
    pending_.reset();
    ++steps_checked_;
    const uint64_t checkpoint = step.checkpoint;
    const Placements& index = step.index;
    const bool exact = step.answered && engine_->exact();
    auto it = history_.find(checkpoint);
    if (it != history_.end()) {
      for (const Placements& cache : it->second) {
        if (exact ? index == cache
                  : std::includes(cache.begin(), cache.end(), index.begin(),
                                  index.end())) {
          return;
        }
      }
    }
    if (!step_failure_.empty()) return;
    step_failure_ = absl::StrCat(
        "at ", clock_.Elapsed().count(), " ms, checkpoint ", checkpoint,
        exact ? " (exact)" : " (not exact)", ": index ", Describe(index));
    if (it != history_.end()) {
      for (const Placements& cache : it->second) {
        absl::StrAppend(&step_failure_, "\n    cache: ", Describe(cache));
      }
    }
    for (const auto& [seq, caches] : history_) {
      for (size_t i = 0; i < caches.size(); ++i) {
        if (caches[i] == index) {
          absl::StrAppend(&step_failure_, "\n    (the cache at seq ", seq,
                          " of its incarnation #", i, " in that seq)");
        }
      }
    }
  }
  double Uniform() { return std::uniform_real_distribution<>(0, 1)(rng_); }

  void Deliver(uint64_t seq, std::string topic, std::string payload) {
    if (faults_) {
      const double r = Uniform();
      if (r < 0.04) return;  // lost
      if (r < 0.06) {        // duplicated
        queue_.PushBatch(seq, payload, topic);
      } else if (r < 0.09) {  // delayed: later batches may overtake it
        delayed_.push_back({clock_.Now() + milliseconds(10 + Pick(300)),
                            {seq, std::move(topic), std::move(payload)}});
        return;
      }
    }
    queue_.PushBatch(seq, std::move(payload), std::move(topic));
  }

  void ReleaseDelayed(Clock::time_point now) {
    for (auto it = delayed_.begin(); it != delayed_.end();) {
      if (it->first <= now) {
        queue_.PushBatch(it->second.seq, std::move(it->second.payload),
                         std::move(it->second.topic));
        it = delayed_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::vector<Op> RandomOps() {
    std::vector<Op> ops;
    const uint64_t n = Pick(4);  // 0..3 events; 0 = an empty batch
    for (uint64_t i = 0; i < n; ++i) {
      const double r = Uniform();
      if (r < 0.02) {
        ops.push_back(Op::Clear());
      } else if (r < 0.35 && !publisher_.cache().empty()) {
        // Remove a few held blocks (and sometimes one never stored).
        std::vector<int64_t> hashes;
        int tier = 1;
        auto it = publisher_.cache().begin();
        std::advance(it, static_cast<long>(Pick(publisher_.cache().size())));
        tier = it->second;
        hashes.push_back(it->first);
        if (Pick(4) == 0) hashes.push_back(static_cast<int64_t>(next_hash_++));
        ops.push_back(Op::Remove(hashes, Medium(tier)));
      } else {
        std::vector<int64_t> hashes;
        const uint64_t k = 1 + Pick(4);
        for (uint64_t j = 0; j < k; ++j) {
          // Mostly new blocks, sometimes a re-store of a held one.
          if (Pick(5) == 0 && !publisher_.cache().empty()) {
            hashes.push_back(publisher_.cache().begin()->first);
          } else {
            hashes.push_back(static_cast<int64_t>(next_hash_++));
          }
        }
        // Snapshot-v1 keeps no tier: a snapshot publisher stores at GPU
        // only (docs/bridge-events.md, "Recovery > Modes").
        const int tier = mode_ == Mode::kSnapshot ? 1 : (Pick(5) == 0 ? 2 : 1);
        ops.push_back(Op::Store(hashes, Medium(tier)));
      }
    }
    return ops;
  }

  static std::string Medium(int tier) {
    return tier == 1 ? "GPU" : tier == 2 ? "CPU_PINNED" : "DISK";
  }

  void Tick(Clock::time_point now) {
    faults_ = now < fault_end_;
    ReleaseDelayed(now);
    if (now >= tail_end_ || now < next_publish_) return;
    if (faults_) {
      const double r = Uniform();
      if (r < 0.004) {
        // A publisher restart: its connection drops (messages still in
        // flight are lost) and a new incarnation connects.
        delayed_.clear();
        queue_.PushMarker(LiveItem::Kind::kDisconnected);
        publisher_.Restart();
        queue_.PushMarker(LiveItem::Kind::kConnected);
      } else if (r < 0.008) {
        server_->RestartEmpty();
      } else if (r < 0.011) {
        // A network blip: a reconnect that loses what was in flight.
        delayed_.clear();
        queue_.PushMarker(LiveItem::Kind::kDisconnected);
        queue_.PushMarker(LiveItem::Kind::kConnected);
      } else if (r < 0.02) {
        publisher_.replay_fail_next = 1;
      } else if (r < 0.025) {
        publisher_.snapshot_fail_next = 1;
      }
    }
    publisher_.Publish(RandomOps());
    ++published_;
    next_publish_ = now + milliseconds(5 + Pick(60));
  }

  std::mt19937_64 rng_;
  std::unique_ptr<SimServer> server_;
  const Mode mode_;
  // Every other seed of each mode heartbeats once a second (no worker
  // probe): heartbeats are probes interleaved with everything else.
  const bool heartbeats_;
  FakeClock clock_;
  FakeLiveQueue queue_;
  FakePublisher publisher_;
  std::vector<std::pair<Clock::time_point, LiveBatch>> delayed_;
  Clock::time_point next_publish_{};
  Clock::time_point fault_end_{};
  Clock::time_point tail_end_{};
  bool faults_ = true;
  uint64_t next_hash_ = 1;
  uint64_t published_ = 0;
  const StreamRecovery* engine_ = nullptr;
  // Publisher caches per seq, one per incarnation that published it.
  std::map<uint64_t, std::vector<Placements>> history_;
  struct PendingCheck {
    uint64_t checkpoint = 0;
    bool answered = false;
    Placements index;
  };
  std::optional<PendingCheck> pending_;
  std::string step_failure_;
  uint64_t steps_checked_ = 0;
  static constexpr uint64_t kMaxCalls = 200'000;
  uint64_t calls_ = 0;
  bool livelock_ = false;
};

int SeedCount(int default_seeds) {
  const char* v = std::getenv("KV_INDEXER_RECOVERY_SEEDS");
  return v != nullptr ? std::max(1, std::atoi(v)) : default_seeds;
}

void RunSeeds(const std::function<std::unique_ptr<SimServer>()>& make_server,
              int default_seeds) {
  spdlog::set_level(spdlog::level::off);
  std::vector<uint64_t> seeds;
  if (const char* one = std::getenv("KV_INDEXER_RECOVERY_SEED")) {
    seeds.push_back(std::strtoull(one, nullptr, 10));
    spdlog::set_level(spdlog::level::debug);
  } else {
    for (int i = 0; i < SeedCount(default_seeds); ++i) seeds.push_back(i);
  }
  int exact = 0;
  int failures = 0;
  uint64_t steps = 0;
  for (uint64_t seed : seeds) {
    const Mode mode = static_cast<Mode>(seed % 3);
    Outcome out = Simulation(seed, mode, make_server()).Run();
    ASSERT_TRUE(out.status.ok()) << "seed " << seed << ": " << out.status;
    const bool subset = std::includes(out.truth.begin(), out.truth.end(),
                                      out.index.begin(), out.index.end());
    const bool ok = !out.livelock && out.synchronised &&
                    out.step_failure.empty() &&
                    (out.exact ? out.index == out.truth : subset);
    if (!ok && ++failures <= 5) {
      ADD_FAILURE() << "seed " << seed << " (mode " << seed % 3 << ", "
                    << (out.exact ? "exact"
                                  : "degraded: " + out.degraded_reason)
                    << ", " << out.published << " batches"
                    << (out.livelock ? ", LIVELOCK" : "")
                    << (out.synchronised ? "" : ", NOT SYNCHRONISED") << ")"
                    << (out.step_failure.empty()
                            ? ""
                            : "\n  step check failed " + out.step_failure)
                    << "\n  index: " << Describe(out.index)
                    << "\n  truth: " << Describe(out.truth) << "\n  "
                    << out.stats.FormatLine();
    }
    exact += out.exact ? 1 : 0;
    steps += out.steps_checked;
  }
  spdlog::set_level(spdlog::level::info);
  // The faults stop before the end; most runs finish exact again.
  std::printf("%d of %zu runs ended exact; %llu steps checked\n", exact,
              seeds.size(), static_cast<unsigned long long>(steps));
  EXPECT_EQ(failures, 0);
}

TEST(StreamRecoveryRandom, AgainstFakeServer) {
  RunSeeds(MakeFakeSimServer, 1000);
}

// The same schedules against the real gate, Replace and placement rules.
TEST(StreamRecoveryRandom, AgainstCoreIndexer) {
  RunSeeds(MakeCoreSimServer, 500);
}

}  // namespace
}  // namespace kvindexer::bridge::testing
