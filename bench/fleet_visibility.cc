#include "fleet_visibility.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "grpcpp/grpcpp.h"

namespace kvindexer::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Pending {
  int64_t hash = 0;
  Clock::time_point called;
  std::vector<std::optional<Clock::time_point>> seen;  // per replica
};

// The batches announced so far and, per replica, those it has not shown.
class Tracker {
 public:
  explicit Tracker(size_t replicas) : unseen_(replicas) {}

  void Add(int64_t hash, Clock::time_point called) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t id = pending_.size();
    pending_.push_back(
        {hash, called,
         std::vector<std::optional<Clock::time_point>>(unseen_.size())});
    for (std::vector<size_t>& u : unseen_) u.push_back(id);
  }

  // Up to `max` ids and hashes replica `r` has not shown yet.
  std::vector<std::pair<size_t, int64_t>> Unseen(size_t r, size_t max) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<size_t, int64_t>> out;
    for (size_t i = 0; i < unseen_[r].size() && out.size() < max; ++i) {
      out.emplace_back(unseen_[r][i], pending_[unseen_[r][i]].hash);
    }
    return out;
  }

  void Seen(size_t r, const absl::flat_hash_set<size_t>& ids,
            Clock::time_point at) {
    std::lock_guard<std::mutex> lock(mu_);
    for (const size_t id : ids) pending_[id].seen[r] = at;
    std::vector<size_t>& u = unseen_[r];
    u.erase(std::remove_if(u.begin(), u.end(),
                           [&](size_t id) { return ids.contains(id); }),
            u.end());
  }

  size_t UnseenCount() {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const std::vector<size_t>& u : unseen_) n += u.size();
    return n;
  }

  // REQUIRES: no concurrent calls.
  const std::vector<Pending>& pending() const { return pending_; }

 private:
  std::mutex mu_;
  std::vector<Pending> pending_;
  std::vector<std::vector<size_t>> unseen_;
};

int64_t Nanos(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

}  // namespace

VisibilityFigures MeasureVisibility(fleet::EventLog& log,
                                    const std::vector<ChannelPool*>& replicas,
                                    const PacedAppendOptions& options,
                                    std::chrono::microseconds poll_gap) {
  Tracker tracker(replicas.size());
  std::atomic<bool> appending{true};
  std::atomic<uint64_t> polls{0};
  std::vector<std::thread> pollers;
  for (size_t r = 0; r < replicas.size(); ++r) {
    pollers.emplace_back([&, r] {
      const auto give_up_after = std::chrono::seconds(30);
      std::optional<Clock::time_point> drained_since;
      Clock::time_point last_poll;
      while (true) {
        const std::vector<std::pair<size_t, int64_t>> unseen =
            tracker.Unseen(r, 4096);
        if (unseen.empty()) {
          if (!appending.load()) return;
          std::this_thread::sleep_for(std::chrono::microseconds(200));
          continue;
        }
        if (!appending.load()) {
          if (!drained_since.has_value()) drained_since = Clock::now();
          if (Clock::now() - *drained_since > give_up_after) return;
        }
        // At most one poll per gap, so that polling does not take the
        // replicas' cores.
        std::this_thread::sleep_until(last_poll + poll_gap);
        last_poll = Clock::now();
        ::kv_indexer::v1::MatchExternalKvRequest request;
        for (const auto& [id, hash] : unseen) request.add_hashes(hash);
        ::kv_indexer::v1::MatchExternalKvResponse response;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(5));
        const grpc::Status status =
            replicas[r]->Next()->MatchExternalKv(&ctx, request, &response);
        const Clock::time_point at = Clock::now();
        ++polls;
        if (!status.ok()) continue;
        absl::flat_hash_set<int64_t> held;
        for (const auto& match : response.matches()) {
          for (const auto& tier : match.hashes_by_tier()) {
            held.insert(tier.hashes().begin(), tier.hashes().end());
          }
        }
        absl::flat_hash_set<size_t> ids;
        for (const auto& [id, hash] : unseen) {
          if (held.contains(hash)) ids.insert(id);
        }
        if (!ids.empty()) tracker.Seen(r, ids, at);
      }
    });
  }

  VisibilityFigures figures;
  figures.append = PacedAppend(log, options, [&](const PacedBatch& batch) {
    tracker.Add(batch.hashes.back(), batch.apply_called);
  });
  appending = false;
  for (std::thread& t : pollers) t.join();
  figures.polls = polls;

  const std::vector<Pending>& pending = tracker.pending();
  LatencyRecorder all(pending.size() + 1);
  std::vector<std::unique_ptr<LatencyRecorder>> each;
  for (size_t r = 0; r < replicas.size(); ++r) {
    each.push_back(std::make_unique<LatencyRecorder>(pending.size() + 1));
  }
  for (const Pending& p : pending) {
    std::optional<Clock::time_point> last;
    bool everywhere = true;
    for (size_t r = 0; r < p.seen.size(); ++r) {
      if (!p.seen[r].has_value()) {
        everywhere = false;
        continue;
      }
      each[r]->Record(Nanos(*p.seen[r] - p.called));
      if (!last.has_value() || *p.seen[r] > *last) last = p.seen[r];
    }
    if (everywhere && last.has_value()) {
      all.Record(Nanos(*last - p.called));
    } else {
      ++figures.invisible;
    }
  }
  figures.visible_all = all.Summarize();
  for (const std::unique_ptr<LatencyRecorder>& e : each) {
    figures.visible_each.push_back(e->Summarize());
  }
  return figures;
}

}  // namespace kvindexer::bench
