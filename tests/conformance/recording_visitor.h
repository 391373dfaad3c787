// RecordingVisitor: a BlockVisitor that keeps every callback of one Match or
// PrefixScan, in order, for tests that look at the raw ABI (worker ordinals,
// announcement order, early stop).
//
// Thread safety: none; one visitor per call.
#ifndef KVINDEXER_TESTS_CONFORMANCE_RECORDING_VISITOR_H_
#define KVINDEXER_TESTS_CONFORMANCE_RECORDING_VISITOR_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kvindexer/backend.h"

namespace kvindexer::conformance {

// Records every callback in order. Stops after `stop_after` OnBlock calls
// (the last one returns false) when stop_after > 0.
class RecordingVisitor final : public BlockVisitor {
 public:
  struct Event {
    bool is_worker = false;
    // Worker events.
    uint32_t worker = 0;
    std::string id, address;
    bool has_spec = false;
    CacheSpec spec{};
    // Block events.
    size_t index = 0;
    uint32_t token_count = 0;
    std::vector<Placement> placements;
  };

  explicit RecordingVisitor(int stop_after = 0) : stop_after_(stop_after) {}

  void OnWorker(const WorkerView& w) noexcept override {
    Event e;
    e.is_worker = true;
    e.worker = w.worker;
    e.id.assign(w.id.data, w.id.size);
    e.address.assign(w.address.data, w.address.size);
    e.has_spec = w.has_cache_spec != 0;
    e.spec = w.cache_spec;
    events.push_back(std::move(e));
  }
  bool OnBlock(const BlockView& b) noexcept override {
    Event e;
    e.index = b.index;
    e.token_count = b.token_count;
    e.placements.assign(b.placements, b.placements + b.placement_count);
    events.push_back(std::move(e));
    ++blocks_;
    return stop_after_ == 0 || blocks_ < stop_after_;
  }

  // Worker ordinal -> id, checking that every placement's worker was
  // announced by an earlier OnWorker, and each worker only once.
  ::testing::AssertionResult WorkersAnnouncedFirst() const {
    std::map<uint32_t, std::string> known;
    for (const Event& e : events) {
      if (e.is_worker) {
        if (!known.emplace(e.worker, e.id).second) {
          return ::testing::AssertionFailure()
                 << "OnWorker called twice for worker " << e.worker;
        }
        continue;
      }
      for (const Placement& p : e.placements) {
        if (!known.count(p.worker)) {
          return ::testing::AssertionFailure()
                 << "placement of worker " << p.worker << " on block index "
                 << e.index << " before its OnWorker";
        }
      }
    }
    return ::testing::AssertionSuccess();
  }
  std::vector<const Event*> Blocks() const {
    std::vector<const Event*> out;
    for (const Event& e : events) {
      if (!e.is_worker) out.push_back(&e);
    }
    return out;
  }
  // Worker ordinal -> the id its OnWorker named.
  std::map<uint32_t, std::string> Announced() const {
    std::map<uint32_t, std::string> out;
    for (const Event& e : events) {
      if (e.is_worker) out[e.worker] = e.id;
    }
    return out;
  }
  const Event* Worker(const std::string& id) const {
    for (const Event& e : events) {
      if (e.is_worker && e.id == id) return &e;
    }
    return nullptr;
  }

  std::vector<Event> events;

 private:
  int stop_after_;
  int blocks_ = 0;
};

}  // namespace kvindexer::conformance

#endif  // KVINDEXER_TESTS_CONFORMANCE_RECORDING_VISITOR_H_
