#include "durable/wal_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "durable/data_dir.h"
#include "durable/posix_file.h"
#include "durable/record_framing.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

constexpr char kWriteFailedPrefix[] = "state log write failed: ";

// Debian's abseil has its own string_view type, not std::string_view.
std::string_view MessageOf(const absl::Status& status) {
  return std::string_view(status.message().data(), status.message().size());
}

absl::Status WriteFailed(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(kWriteFailedPrefix, what));
}

int RetryingFdatasync(FileIo& io, int fd) {
  while (io.Fdatasync(fd) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

int RetryingFtruncate(FileIo& io, int fd, off_t length) {
  while (io.Ftruncate(fd, length) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

// An open log file: its descriptor and its size (header included).
struct OpenedFile {
  UniqueFd fd;
  uint64_t size = 0;
};

// Opens wal-<generation>.log for appending, creating it with its header when
// it is absent (or empty: a crash between creation and the header write),
// and syncs it and the directory.
absl::StatusOr<OpenedFile> OpenLogFile(FileIo& io, const std::string& dir,
                                       uint64_t generation) {
  const std::string path = JoinPath(dir, WalFileName(generation));
  OpenedFile file;
  file.fd.Reset(OpenStateFile(path, O_RDWR | O_APPEND | O_CREAT));
  if (!file.fd.valid()) {
    return WriteFailed(
        absl::StrCat("cannot open ", path, ": ", OpenErrorText(errno)));
  }
  struct stat st;
  if (::fstat(file.fd.get(), &st) != 0) {
    return WriteFailed(
        absl::StrCat("cannot stat ", path, ": ", ErrnoText(errno)));
  }
  file.size = static_cast<uint64_t>(st.st_size);
  if (file.size == 0) {
    const std::string header = EncodeFileHeader(FileKind::kWal, generation);
    if (const int err = WriteFully(io, file.fd.get(), header); err != 0) {
      // Leave no half header behind (recovery would cope, but needn't).
      RetryingFtruncate(io, file.fd.get(), 0);
      return WriteFailed(absl::StrCat("cannot write the header of ", path, ": ",
                                      ErrnoText(err)));
    }
    file.size = header.size();
  } else {
    // Recovery has scanned and, if need be, repaired the file; anything
    // else here is a bug or an outside hand, and appending to it would bury
    // good records behind bad ones.
    std::string header(kFileHeaderBytes, '\0');
    const ssize_t n = ::pread(file.fd.get(), header.data(), header.size(), 0);
    if (n < 0) {
      return WriteFailed(absl::StrCat("cannot read the header of ", path, ": ",
                                      ErrnoText(errno)));
    }
    header.resize(static_cast<size_t>(n));
    absl::StatusOr<FileHeader> decoded =
        DecodeFileHeader(header, FileKind::kWal);
    if (!decoded.ok()) {
      return absl::Status(decoded.status().code(),
                          absl::StrCat("cannot continue log ", path, ": ",
                                       decoded.status().message()));
    }
    if (decoded->generation != generation) {
      return absl::DataLossError(absl::StrCat("cannot continue log ", path,
                                              ": its header says "
                                              "generation ",
                                              decoded->generation));
    }
  }
  if (const int err = RetryingFdatasync(io, file.fd.get()); err != 0) {
    return WriteFailed(
        absl::StrCat("cannot sync ", path, ": ", ErrnoText(err)));
  }
  if (const int err = SyncDirectory(io, dir); err != 0) {
    return WriteFailed(
        absl::StrCat("cannot sync directory ", dir, ": ", ErrnoText(err)));
  }
  return file;
}

// Leaves wal-<generation>.poisoned in `dir`, holding `reason`: the next
// start must not continue the file (durable/durable_store.h). Best effort:
// the disk may be failing. A marker that cannot be synced still tells a
// restart of the process on this host, which is the case where the page
// cache may hold writes the disk does not.
void LeavePoisonMarker(FileIo& io, const std::string& dir, uint64_t generation,
                       std::string_view reason) {
  const std::string path = JoinPath(dir, PoisonMarkerFileName(generation));
  const UniqueFd fd(OpenStateFile(path, O_WRONLY | O_CREAT | O_TRUNC));
  if (!fd.valid()) {
    spdlog::error(
        "wal: cannot create {}: {}; the next start cannot tell that {} "
        "failed, and will continue it",
        path, OpenErrorText(errno), WalFileName(generation));
    return;
  }
  // The text is for people; the file's presence is what counts.
  int err = WriteFully(io, fd.get(), std::string(reason) + "\n");
  if (err == 0) err = RetryingFdatasync(io, fd.get());
  if (err == 0) err = SyncDirectory(io, dir);
  if (err != 0) {
    spdlog::warn(
        "wal: {} is created but not synced ({}): it survives a restart of "
        "the process, not a crash of the host",
        path, ErrnoText(err));
  }
}

}  // namespace

// Who touches what: the appender (one thread, under the Indexer's mutation
// mutex) owns `frame` and is the only one to change `fd`, `file_size`,
// `end`, `generation` and the retract bookkeeping; it changes the shared
// ones under `mu`. Waiters read `end` and `fd` under `mu`. While `syncing`
// is true exactly one thread runs an fdatasync outside `mu`, so the
// appender waits for it to finish before it truncates or switches files.
struct WalWriter::State {
  std::mutex mu;
  std::condition_variable synced;
  // Signalled by Append (a record past `durable`) and by the destructor.
  std::condition_variable appended;
  bool closing = false;     // guarded by mu
  UniqueFd fd;              // guarded by mu for readers; appender writes
  uint64_t generation = 0;  // appender only
  uint64_t file_size = 0;   // appender only: header included
  uint64_t end = 0;         // guarded by mu
  uint64_t durable = 0;     // guarded by mu
  uint64_t syncs = 0;       // guarded by mu: WaitDurable's fdatasyncs
  bool syncing = false;     // guarded by mu
  absl::Status poison;      // guarded by mu
  // The file that was being written when the writer was poisoned.
  uint64_t poisoned_generation = 0;  // guarded by mu
  // Set with poison; cleared by the one ReportPoison that reports it.
  std::atomic<bool> unreported_poison{false};
  // Set with poison, never cleared: ReportPoison's fast path.
  std::atomic<bool> ever_poisoned{false};
  // Held for the whole of a report, so that a caller that returns the
  // failure does so only once it is reported (the marker written, the
  // monitor told), whichever thread, the sync-ahead one included, found it.
  std::mutex report_mu;
  // The last record appended, while it can still be retracted: its size,
  // or 0 after a rotation.
  uint64_t last_size = 0;  // appender only
  std::string frame;       // appender only: reused record buffer

  // Waits until no sync is in flight. REQUIRES: `lock` holds mu.
  void AwaitNoSync(std::unique_lock<std::mutex>& lock) {
    synced.wait(lock, [this] { return !syncing; });
  }
  // Records the first fatal error; the public method that called it
  // reports it (ReportPoison) once it has released mu. REQUIRES: mu held.
  void Poison(absl::Status status) {
    if (poison.ok()) {
      poison = std::move(status);
      poisoned_generation = generation;
      unreported_poison.store(true, std::memory_order_release);
      ever_poisoned.store(true, std::memory_order_release);
    }
  }
};

// Calls ReportPoison when the public method that declares it (before any
// lock) returns.
class WalWriter::ReportPoisonOnReturn {
 public:
  explicit ReportPoisonOnReturn(WalWriter* writer) : writer_(writer) {}
  ~ReportPoisonOnReturn() { writer_->ReportPoison(); }
  ReportPoisonOnReturn(const ReportPoisonOnReturn&) = delete;
  ReportPoisonOnReturn& operator=(const ReportPoisonOnReturn&) = delete;

 private:
  WalWriter* writer_;
};

WalWriter::WalWriter(std::string dir, WalSync sync, FileIo* io,
                     WalFailureMonitor* monitor)
    : dir_(std::move(dir)),
      sync_(sync),
      io_(io),
      own_monitor_(monitor == nullptr ? std::make_unique<WalFailureMonitor>()
                                      : nullptr),
      monitor_(monitor != nullptr ? monitor : own_monitor_.get()),
      state_(std::make_unique<State>()) {}

void WalWriter::ReportPoison() {
  State& s = *state_;
  if (!s.ever_poisoned.load(std::memory_order_acquire)) return;
  // Waits for a report another thread is making.
  const std::lock_guard<std::mutex> reporting(s.report_mu);
  if (!s.unreported_poison.load(std::memory_order_acquire)) return;
  std::string reason;
  uint64_t generation = 0;
  {
    const std::lock_guard<std::mutex> lock(s.mu);
    if (!s.unreported_poison.exchange(false, std::memory_order_acq_rel)) {
      return;
    }
    generation = s.poisoned_generation;
    absl::string_view message = s.poison.message();
    absl::ConsumePrefix(&message, kWriteFailedPrefix);
    reason = std::string(message);
  }
  LeavePoisonMarker(*io_, dir_, generation, reason);
  monitor_->Poisoned(
      absl::StrCat(reason, " (", JoinPath(dir_, WalFileName(generation)), ")"));
}

absl::Status WalWriter::poison() const {
  const std::lock_guard<std::mutex> lock(state_->mu);
  return state_->poison;
}

WalWriter::~WalWriter() {
  if (!sync_ahead_.joinable()) return;
  {
    const std::lock_guard<std::mutex> lock(state_->mu);
    state_->closing = true;
  }
  state_->appended.notify_all();
  sync_ahead_.join();
}

void WalWriter::SyncAhead() {
  pthread_setname_np(pthread_self(), "kvidx-walsync");
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  while (true) {
    s.appended.wait(lock, [&s] {
      return s.closing || (s.poison.ok() && s.durable < s.end);
    });
    if (s.closing) return;
    const uint64_t target = s.end;
    lock.unlock();
    // As any waiter: joins a sync in flight, or becomes the syncer. A
    // failure poisons the writer, which every caller then hears of.
    (void)WaitDurable(target);
    lock.lock();
  }
}

absl::StatusOr<std::unique_ptr<WalWriter>> WalWriter::Open(
    const std::string& dir, uint64_t generation, WalSync sync, FileIo* io,
    WalFailureMonitor* monitor, bool sync_ahead) {
  if (io == nullptr) io = &FileIo::Real();
  absl::StatusOr<OpenedFile> file = OpenLogFile(*io, dir, generation);
  if (!file.ok()) return file.status();
  std::unique_ptr<WalWriter> writer(new WalWriter(dir, sync, io, monitor));
  writer->state_->fd = std::move(file->fd);
  writer->state_->file_size = file->size;
  writer->state_->generation = generation;
  if (sync == WalSync::kAlways && sync_ahead) {
    WalWriter* w = writer.get();
    writer->sync_ahead_ = std::thread([w] { w->SyncAhead(); });
  }
  return writer;
}

absl::StatusOr<uint64_t> WalWriter::Append(std::string_view payload) {
  const ReportPoisonOnReturn report(this);
  State& s = *state_;
  absl::Status poisoned;
  {
    const std::lock_guard<std::mutex> lock(s.mu);
    poisoned = s.poison;
  }
  if (!poisoned.ok()) {
    monitor_->Refused(WalRefusal::kPoisoned, MessageOf(poisoned));
    return poisoned;
  }
  if (payload.empty() || payload.size() > kMaxRecordBytes) {
    absl::Status invalid = absl::InvalidArgumentError(
        absl::StrCat("state log record of ", payload.size(),
                     " bytes; accepted: 1 to ", kMaxRecordBytes));
    monitor_->Refused(WalRefusal::kInvalidRecord, MessageOf(invalid));
    return invalid;
  }
  s.frame.clear();
  AppendRecord(payload, &s.frame);
  // The descriptor was opened O_APPEND: every write lands at the end of the
  // file, also after a failed write was cut back.
  if (const int err = WriteFully(*io_, s.fd.get(), s.frame); err != 0) {
    if (const int cut = RetryingFtruncate(*io_, s.fd.get(),
                                          static_cast<off_t>(s.file_size));
        cut != 0) {
      // Part of a record stays in the file: appending after it would put
      // good records behind a bad one, which recovery drops.
      absl::Status now_poisoned;
      {
        const std::lock_guard<std::mutex> lock(s.mu);
        s.Poison(WriteFailed(
            absl::StrCat(ErrnoText(err),
                         "; cutting the log back failed: ", ErrnoText(cut))));
        now_poisoned = s.poison;
      }
      monitor_->Refused(WalRefusalForErrno(err), MessageOf(now_poisoned));
      return now_poisoned;
    }
    absl::Status failed = WriteFailed(ErrnoText(err));
    monitor_->Refused(WalRefusalForErrno(err), MessageOf(failed));
    return failed;
  }
  s.file_size += s.frame.size();
  s.last_size = s.frame.size();
  const std::lock_guard<std::mutex> lock(s.mu);
  s.end += s.frame.size();
  s.appended.notify_one();
  return s.end;
}

void WalWriter::Retract(uint64_t end) {
  const ReportPoisonOnReturn report(this);
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (end != s.end || s.last_size == 0) {
    s.Poison(
        absl::InternalError(absl::StrCat("state log retract of offset ", end,
                                         " does not match the last record "
                                         "(end ",
                                         s.end, ")")));
    return;
  }
  // A sync in flight may cover the record; let it finish, then clamp what
  // counts as durable.
  s.AwaitNoSync(lock);
  const uint64_t new_size = s.file_size - s.last_size;
  if (const int err =
          RetryingFtruncate(*io_, s.fd.get(), static_cast<off_t>(new_size));
      err != 0) {
    s.Poison(WriteFailed(
        absl::StrCat("cannot take back the last record: ", ErrnoText(err))));
    return;
  }
  s.file_size = new_size;
  s.end -= s.last_size;
  s.last_size = 0;
  // A sync already covered the record: make its removal durable too, or a
  // host crash could bring back a mutation that never took effect.
  if (s.durable > s.end && sync_ == WalSync::kAlways) {
    if (const int err = RetryingFdatasync(*io_, s.fd.get()); err != 0) {
      s.Poison(WriteFailed(absl::StrCat(
          "fdatasync after taking back a record: ", ErrnoText(err))));
      return;
    }
  }
  s.durable = std::min(s.durable, s.end);
}

uint64_t WalWriter::syncs() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->syncs;
}

uint64_t WalWriter::end() const {
  const std::lock_guard<std::mutex> lock(state_->mu);
  return state_->end;
}

absl::Status WalWriter::WaitDurable(uint64_t offset) {
  const ReportPoisonOnReturn report(this);
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  while (true) {
    // Nothing past the end can become durable (a retracted record). A
    // record that is durable already stays acknowledged even when a later
    // sync failed.
    if (sync_ == WalSync::kAlways && s.durable >= std::min(offset, s.end)) {
      return absl::OkStatus();
    }
    if (!s.poison.ok()) return s.poison;
    if (sync_ == WalSync::kNone) return absl::OkStatus();
    if (s.syncing) {
      s.synced.wait(lock);
      continue;
    }
    // Become the syncer for everything appended so far: the waiters that
    // arrive meanwhile are covered by this sync or by the next one.
    s.syncing = true;
    const uint64_t target = s.end;
    const int fd = s.fd.get();
    lock.unlock();
    const int err = RetryingFdatasync(*io_, fd);
    lock.lock();
    s.syncing = false;
    if (err != 0) {
      s.Poison(WriteFailed(absl::StrCat("fdatasync: ", ErrnoText(err))));
    } else {
      s.durable = std::max(s.durable, target);
      ++s.syncs;
    }
    s.synced.notify_all();
  }
}

absl::Status WalWriter::Rotate(uint64_t generation) {
  const ReportPoisonOnReturn report(this);
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  if (!s.poison.ok()) return s.poison;
  if (generation <= s.generation) {
    return absl::InvalidArgumentError(
        absl::StrCat("state log rotation to generation ", generation,
                     " after generation ", s.generation));
  }
  // Hold the sync slot for the whole switch: waiters must not sync a
  // descriptor that is about to close, and everything in the old file must
  // be durable before offsets move on to the new one.
  s.AwaitNoSync(lock);
  s.syncing = true;
  const uint64_t target = s.end;
  lock.unlock();
  int err = 0;
  if (sync_ == WalSync::kAlways) err = RetryingFdatasync(*io_, s.fd.get());
  std::optional<absl::StatusOr<OpenedFile>> next;
  if (err == 0) next.emplace(OpenLogFile(*io_, dir_, generation));
  lock.lock();
  s.syncing = false;
  s.synced.notify_all();
  if (err != 0) {
    s.Poison(WriteFailed(absl::StrCat("fdatasync: ", ErrnoText(err))));
    return s.poison;
  }
  // On failure the writer goes on in the old file, which is intact.
  if (!next->ok()) return next->status();
  if (sync_ == WalSync::kAlways) s.durable = std::max(s.durable, target);
  s.fd = std::move((*next)->fd);
  s.file_size = (*next)->size;
  s.generation = generation;
  s.last_size = 0;
  return absl::OkStatus();
}

uint64_t WalWriter::generation() const { return state_->generation; }

uint64_t WalWriter::bytes_in_generation() const {
  return state_->file_size - kFileHeaderBytes;
}

}  // namespace kvindexer::durable
