// A StreamRecovery wired to the fakes: FakeGatedServer, FakePublisher (as
// replay and snapshot source when asked), FakeLiveQueue, FakeClock and,
// when asked, FakeWorkerProbe.
//
// Thread safety: not thread-safe.
#ifndef KVINDEXER_BRIDGE_TESTS_RECOVERY_TEST_FIXTURE_H_
#define KVINDEXER_BRIDGE_TESTS_RECOVERY_TEST_FIXTURE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>

#include "bridge/stream_recovery.h"
#include "bridge/tests/fake_gated_server.h"
#include "bridge/tests/fake_publisher.h"
#include "bridge/tests/fake_recovery_env.h"

namespace kvindexer::bridge::testing {

inline constexpr char kWorker[] = "w";

struct RecoveryRig {
  struct Setup {
    bool replay = false;
    bool snapshot = false;
    SequenceGate gate = SequenceGate::kAuto;
    size_t buffer_steps = 10'000;
    size_t live_capacity = 4096;
    uint64_t seed = 1;
    bool worker_probe = false;  // heartbeats check `worker_probe` first
    std::function<absl::Status()> before_sync = nullptr;  // RecoveryIo's
  };

  explicit RecoveryRig(Setup setup, RecoveryOptions options = {})
      : queue(&clock, setup.live_capacity),
        publisher(
            [this](uint64_t seq, std::string topic, std::string payload) {
              queue.PushBatch(seq, std::move(payload), std::move(topic));
            },
            setup.buffer_steps, setup.snapshot),
        worker_probe(&clock),
        rng(setup.seed) {
    options.header.worker_id = kWorker;
    options.header.worker_address = "http://w:1";
    options.gate = setup.gate;
    RecoveryIo io;
    io.applier = &server;
    io.live = &queue;
    io.replay = setup.replay ? &publisher : nullptr;
    io.snapshot = setup.snapshot ? &publisher : nullptr;
    io.worker_probe = setup.worker_probe ? &worker_probe : nullptr;
    io.clock = &clock;
    io.random = [this] { return rng(); };
    io.stats = &stats;
    io.before_sync = std::move(setup.before_sync);
    engine = std::make_unique<StreamRecovery>(std::move(options), io);
  }

  absl::Status RunFor(std::chrono::milliseconds duration) {
    clock.StopAfter(duration);
    return engine->Run();
  }

  FakeClock clock;
  FakeGatedServer server;
  FakeLiveQueue queue;
  FakePublisher publisher;
  FakeWorkerProbe worker_probe;
  std::mt19937_64 rng;
  BridgeStats stats;
  std::unique_ptr<StreamRecovery> engine;
};

}  // namespace kvindexer::bridge::testing

#endif  // KVINDEXER_BRIDGE_TESTS_RECOVERY_TEST_FIXTURE_H_
