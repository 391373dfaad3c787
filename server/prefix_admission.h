// PrefixAdmission: the server's bound on concurrently running prefix scans
// (KV_INDEXER_PREFIX_QUERY_MAX_INFLIGHT; docs/contract.md,
// "MatchExternalKvPrefix > Admission control").
//
// Acquisition never blocks and nothing is queued: TryAcquire either returns a
// held permit or an empty one at once. A permit is released when it is
// destroyed. Only MatchExternalKvPrefix takes permits. The service uses a
// second instance, with its own limit, for its inline scan slots.
//
// Thread safety: TryAcquire and in_flight may be called concurrently; a Permit
// is owned by one thread at a time. Lock-free (one atomic counter).
#ifndef KVINDEXER_SERVER_PREFIX_ADMISSION_H_
#define KVINDEXER_SERVER_PREFIX_ADMISSION_H_

#include <atomic>
#include <cstdint>

namespace kvindexer {

class PrefixAdmission {
 public:
  // RAII handle for one permit. Move-only; an empty permit holds nothing.
  class Permit {
   public:
    Permit() = default;
    Permit(Permit&& other) noexcept : owner_(other.owner_) {
      other.owner_ = nullptr;
    }
    Permit& operator=(Permit&& other) noexcept;
    Permit(const Permit&) = delete;
    Permit& operator=(const Permit&) = delete;
    ~Permit() { Release(); }

    bool held() const { return owner_ != nullptr; }
    explicit operator bool() const { return held(); }
    // Gives the permit back early. Idempotent.
    void Release();

   private:
    friend class PrefixAdmission;
    explicit Permit(PrefixAdmission* owner) : owner_(owner) {}
    PrefixAdmission* owner_ = nullptr;
  };

  // REQUIRES: limit > 0.
  explicit PrefixAdmission(uint32_t limit) : limit_(limit) {}
  PrefixAdmission(const PrefixAdmission&) = delete;
  PrefixAdmission& operator=(const PrefixAdmission&) = delete;

  // REQUIRES: every permit is released before the PrefixAdmission dies.
  [[nodiscard]] Permit TryAcquire();

  uint32_t in_flight() const {
    return in_flight_.load(std::memory_order_relaxed);
  }

 private:
  const uint32_t limit_;
  std::atomic<uint32_t> in_flight_{0};
};

}  // namespace kvindexer

#endif  // KVINDEXER_SERVER_PREFIX_ADMISSION_H_
