// StreamDiscovery with a scripted /server_info: retries while unanswered,
// parks on a refusal, and before a resynchronisation asks for a restart
// only when what the worker advertises changed.
#include "bridge/stream_discovery.h"

#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace kvindexer::bridge {
namespace stream_discovery_test {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

KvEventsDescriptor Advertised(uint32_t port_base = 5557,
                              uint32_t block_size = 16) {
  KvEventsDescriptor d;
  d.publisher = "zmq";
  d.endpoint_host = "0.0.0.0";
  d.endpoint_port_base = port_base;
  d.topic = "kv";
  d.block_size = block_size;
  d.dp_size = 4;
  return d;
}

// Answers the fetches from a script; once it is used up, repeats its last
// answer.
class ScriptedWorker {
 public:
  void Then(absl::StatusOr<KvEventsDescriptor> answer) {
    std::lock_guard<std::mutex> lock(mu_);
    script_.push_back(std::move(answer));
  }
  StreamDiscovery::Fetch AsFetch() {
    return [this](const WorkerUrl& url) {
      std::lock_guard<std::mutex> lock(mu_);
      hosts_.push_back(url.host);
      absl::StatusOr<KvEventsDescriptor> answer = script_.front();
      if (script_.size() > 1) script_.pop_front();
      return answer;
    };
  }
  size_t fetches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return hosts_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<absl::StatusOr<KvEventsDescriptor>> script_;
  std::vector<std::string> hosts_;
};

WorkerEntry Entry() {
  WorkerEntry entry;
  entry.worker_id = "w";
  entry.worker_address = "http://10.1.2.3:30000";
  entry.discover = true;
  entry.dp_rank = 1;
  return entry;
}

const Backoff kFast{1ms, 2ms};

TEST(StreamDiscovery, ResolveRetriesUntilTheWorkerAnswers) {
  ScriptedWorker worker;
  worker.Then(absl::UnavailableError("connection refused"));
  worker.Then(absl::UnavailableError("timed out"));
  worker.Then(Advertised());
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(), kFast);
  EXPECT_EQ(discovery.advertised_dp_size(), 0u);
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(followed->event_endpoint, "tcp://10.1.2.3:5558");
  EXPECT_EQ(followed->event_topic, "kv");
  EXPECT_EQ(followed->page_size, 16u);
  EXPECT_EQ(worker.fetches(), 3u);
  EXPECT_EQ(discovery.advertised_dp_size(), 4u);
}

TEST(StreamDiscovery, ResolveReturnsARefusalAtOnce) {
  ScriptedWorker worker;
  worker.Then(absl::FailedPreconditionError("/server_info refused: x"));
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(), kFast);
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  ASSERT_FALSE(followed.ok());
  EXPECT_EQ(followed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(worker.fetches(), 1u);

  WorkerEntry mismatched = Entry();
  mismatched.page_size = 64;
  mismatched.page_size_set = true;
  ScriptedWorker other;
  other.Then(Advertised());
  StreamDiscovery refusing(mismatched, &stop, other.AsFetch(), kFast);
  followed = refusing.Resolve();
  ASSERT_FALSE(followed.ok());
  EXPECT_THAT(std::string(followed.status().message()),
              HasSubstr("block_size 16 differs from the entry's page_size 64"));
}

TEST(StreamDiscovery, ResolveEndsWhenStopped) {
  ScriptedWorker worker;
  worker.Then(absl::UnavailableError("connection refused"));
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(),
                            Backoff(10ms, 20ms));
  std::thread stopper([&] {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (worker.fetches() < 3 &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    stop.Trigger();
  });
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  stopper.join();
  EXPECT_EQ(followed.status().code(), absl::StatusCode::kCancelled);
}

TEST(StreamDiscovery, RecheckGoesOnWhenTheSameOrUnanswered) {
  ScriptedWorker worker;
  worker.Then(Advertised());
  worker.Then(Advertised());
  worker.Then(absl::UnavailableError("timed out"));
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(), kFast);
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_TRUE(discovery.Recheck(*followed).ok());
  EXPECT_TRUE(discovery.Recheck(*followed).ok());
  EXPECT_EQ(worker.fetches(), 3u);
}

TEST(StreamDiscovery, RecheckAsksForARestartWhenTheAdvertisementChanged) {
  ScriptedWorker worker;
  worker.Then(Advertised());
  worker.Then(Advertised(/*port_base=*/6000));
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(), kFast);
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  ASSERT_TRUE(followed.ok()) << followed.status();
  absl::Status checked = discovery.Recheck(*followed);
  EXPECT_EQ(checked.code(), absl::StatusCode::kAborted);
  EXPECT_THAT(std::string(checked.message()),
              HasSubstr("now advertises tcp://10.1.2.3:6001"));
}

TEST(StreamDiscovery, RecheckReturnsANewRefusal) {
  ScriptedWorker worker;
  worker.Then(Advertised());
  worker.Then(absl::FailedPreconditionError(
      "/server_info refused: kv_events is null or missing"));
  StopRequest stop;
  StreamDiscovery discovery(Entry(), &stop, worker.AsFetch(), kFast);
  absl::StatusOr<WorkerEntry> followed = discovery.Resolve();
  ASSERT_TRUE(followed.ok()) << followed.status();
  EXPECT_EQ(discovery.Recheck(*followed).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace stream_discovery_test
}  // namespace kvindexer::bridge
