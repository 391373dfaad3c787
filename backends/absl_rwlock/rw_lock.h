// RwLock: the absl_rwlock backend's one reader/writer lock, an absl::Mutex,
// plus the scoped guards that take it exclusively or shared.
//
// Under ThreadSanitizer the lock also tells TSan what it does. Debian's
// libabsl_synchronization is not built with TSan, so TSan cannot see the
// ordering absl::Mutex provides and would report every reader/writer pair
// as a race. The __tsan_mutex_* annotations restore that knowledge (they are
// what abseil itself emits when it is built with TSan). Without TSan they
// compile to nothing.
#ifndef KVINDEXER_BACKENDS_ABSL_RWLOCK_RW_LOCK_H_
#define KVINDEXER_BACKENDS_ABSL_RWLOCK_RW_LOCK_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_THREAD__)
#define KVINDEXER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KVINDEXER_TSAN 1
#endif
#endif

#ifdef KVINDEXER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace kvindexer::absl_rwlock {

class ABSL_LOCKABLE RwLock {
 public:
  RwLock() {
#ifdef KVINDEXER_TSAN
    __tsan_mutex_create(this, 0);
#endif
  }
  ~RwLock() {
#ifdef KVINDEXER_TSAN
    __tsan_mutex_destroy(this, 0);
#endif
  }
  RwLock(const RwLock&) = delete;
  RwLock& operator=(const RwLock&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    PreLock(0);
    mu_.Lock();
    PostLock(0);
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    PreUnlock(0);
    mu_.Unlock();
    PostUnlock(0);
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    PreLock(kRead);
    mu_.ReaderLock();
    PostLock(kRead);
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
    PreUnlock(kRead);
    mu_.ReaderUnlock();
    PostUnlock(kRead);
  }

 private:
#ifdef KVINDEXER_TSAN
  static constexpr unsigned kRead = __tsan_mutex_read_lock;
  void PreLock(unsigned flags) { __tsan_mutex_pre_lock(this, flags); }
  void PostLock(unsigned flags) { __tsan_mutex_post_lock(this, flags, 0); }
  void PreUnlock(unsigned flags) { __tsan_mutex_pre_unlock(this, flags); }
  void PostUnlock(unsigned flags) { __tsan_mutex_post_unlock(this, flags); }
#else
  static constexpr unsigned kRead = 1;
  void PreLock(unsigned) {}
  void PostLock(unsigned) {}
  void PreUnlock(unsigned) {}
  void PostUnlock(unsigned) {}
#endif

  absl::Mutex mu_;
};

// Holds `lock` exclusively for the guard's scope.
class ABSL_SCOPED_LOCKABLE WriterGuard {
 public:
  explicit WriterGuard(RwLock* lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->Lock();
  }
  ~WriterGuard() ABSL_UNLOCK_FUNCTION() { lock_->Unlock(); }
  WriterGuard(const WriterGuard&) = delete;
  WriterGuard& operator=(const WriterGuard&) = delete;

 private:
  RwLock* lock_;
};

// Holds `lock` shared for the guard's scope.
class ABSL_SCOPED_LOCKABLE ReaderGuard {
 public:
  explicit ReaderGuard(RwLock* lock) ABSL_SHARED_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_->ReaderLock();
  }
  ~ReaderGuard() ABSL_UNLOCK_FUNCTION() { lock_->ReaderUnlock(); }
  ReaderGuard(const ReaderGuard&) = delete;
  ReaderGuard& operator=(const ReaderGuard&) = delete;

 private:
  RwLock* lock_;
};

}  // namespace kvindexer::absl_rwlock

#endif  // KVINDEXER_BACKENDS_ABSL_RWLOCK_RW_LOCK_H_
