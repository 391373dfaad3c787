// LeftRightGate: the reader/writer protocol behind the two snapshot copies
// (Ramalhete and Correia's Left-Right, with per-slot read indicators).
//
// Readers are wait-free: Arrive() is one load, one fetch_add on a counter
// slot picked per thread, and one load of the live side; Depart() is one
// fetch_sub. They never wait for the writer and never retry.
//
// The writer (one at a time; the caller serialises writers) modifies the copy
// that is not live, calls PublishAndDrain() to make it live, and may modify the
// other copy once PublishAndDrain() returns: by then no reader can still be
// looking at it.
//
// REQUIRES: a thread never calls PublishAndDrain() while it is itself inside a
// read section (it would wait for itself).
#ifndef KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_LEFT_RIGHT_GATE_H_
#define KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_LEFT_RIGHT_GATE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>

namespace kvindexer::robin {

class LeftRightGate {
 public:
  struct ReadToken {
    uint32_t version_index;
    uint32_t slot;
    uint32_t live;  // the copy to read: 0 or 1
  };

  ReadToken Arrive() noexcept {
    ReadToken token;
    token.slot = ThreadSlot();
    token.version_index = version_index_.load(std::memory_order_seq_cst);
    slots_[token.version_index][token.slot].readers.fetch_add(
        1, std::memory_order_seq_cst);
    token.live = live_.load(std::memory_order_seq_cst);
    return token;
  }

  void Depart(const ReadToken& token) noexcept {
    slots_[token.version_index][token.slot].readers.fetch_sub(
        1, std::memory_order_release);
  }

  // The live copy as the writer sees it.
  uint32_t live() const noexcept {
    return live_.load(std::memory_order_relaxed);
  }

  // Makes copy `1 - live()` live and waits until no reader can still be
  // reading the previous one. `while_waiting`, when set, runs once before the
  // first wait (a test hook).
  void PublishAndDrain(const std::function<void()>& while_waiting) noexcept {
    live_.store(1 - live_.load(std::memory_order_relaxed),
                std::memory_order_seq_cst);
    if (while_waiting) while_waiting();
    const uint32_t previous = version_index_.load(std::memory_order_relaxed);
    const uint32_t next = 1 - previous;
    WaitEmpty(next);
    version_index_.store(next, std::memory_order_seq_cst);
    WaitEmpty(previous);
  }

 private:
  static constexpr uint32_t kSlots = 64;

  struct alignas(64) Slot {
    std::atomic<int64_t> readers{0};
  };

  static uint32_t ThreadSlot() noexcept {
    static std::atomic<uint32_t> next_slot{0};
    thread_local const uint32_t slot =
        next_slot.fetch_add(1, std::memory_order_relaxed) % kSlots;
    return slot;
  }

  void WaitEmpty(uint32_t version_index) noexcept {
    for (uint32_t i = 0; i < kSlots; ++i) {
      uint32_t spins = 0;
      while (slots_[version_index][i].readers.load(std::memory_order_seq_cst) !=
             0) {
        if (++spins < 64) continue;
        std::this_thread::yield();
      }
    }
  }

  Slot slots_[2][kSlots];
  std::atomic<uint32_t> version_index_{0};
  std::atomic<uint32_t> live_{0};
};

// RAII read section.
class ReadSection {
 public:
  explicit ReadSection(LeftRightGate& gate) noexcept
      : gate_(gate), token_(gate.Arrive()) {}
  ~ReadSection() { gate_.Depart(token_); }
  ReadSection(const ReadSection&) = delete;
  ReadSection& operator=(const ReadSection&) = delete;

  uint32_t live() const { return token_.live; }

 private:
  LeftRightGate& gate_;
  LeftRightGate::ReadToken token_;
};

}  // namespace kvindexer::robin

#endif  // KVINDEXER_BACKENDS_ROBIN_SHARDED_SNAPSHOT_LEFT_RIGHT_GATE_H_
