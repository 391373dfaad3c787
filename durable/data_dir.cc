#include "durable/data_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <optional>
#include <string_view>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "durable/file_io.h"
#include "durable/posix_file.h"
#include "spdlog/spdlog.h"

namespace kvindexer::durable {
namespace {

constexpr std::string_view kLockFileName = "LOCK";
constexpr std::string_view kWalPrefix = "wal-";
constexpr std::string_view kWalSuffix = ".log";
constexpr std::string_view kPoisonSuffix = ".poisoned";
constexpr std::string_view kCheckpointPrefix = "checkpoint-";
constexpr std::string_view kCheckpointSuffix = ".ckpt";
constexpr std::string_view kTmpSuffix = ".tmp";
constexpr size_t kGenerationDigits = 16;

// Access problems are the operator's to fix; everything else is INTERNAL.
// `explained`: `message` already says what `err` means.
absl::Status PathError(int err, std::string message, bool explained = false) {
  if (!explained) absl::StrAppend(&message, ": ", ErrnoText(err));
  if (err == EACCES || err == EPERM || err == EROFS) {
    return absl::PermissionDeniedError(message);
  }
  return absl::InternalError(message);
}

// The generation of `name` when it is <prefix><16 digits><suffix>.
std::optional<uint64_t> ParseGeneration(std::string_view name,
                                        std::string_view prefix,
                                        std::string_view suffix) {
  if (name.size() != prefix.size() + kGenerationDigits + suffix.size() ||
      name.substr(0, prefix.size()) != prefix ||
      name.substr(name.size() - suffix.size()) != suffix) {
    return std::nullopt;
  }
  uint64_t generation = 0;
  for (const char c : name.substr(prefix.size(), kGenerationDigits)) {
    if (c < '0' || c > '9') return std::nullopt;
    generation = generation * 10 + static_cast<uint64_t>(c - '0');
  }
  return generation;
}

bool EndsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.substr(text.size() - suffix.size()) == suffix;
}

// mkdir -p with mode 0700 for every directory it creates; each new
// directory's parent is synced so that the creation survives a crash.
absl::Status MakeDirectories(const std::string& path) {
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    const std::string prefix = path.substr(0, pos);
    if (prefix.empty() || prefix == "." || prefix == "..") continue;
    if (::mkdir(prefix.c_str(), 0700) == 0) {
      const size_t slash = prefix.find_last_of('/');
      const std::string parent =
          slash == std::string::npos ? "." : prefix.substr(0, slash + 1);
      if (const int err = SyncDirectory(FileIo::Real(), parent); err != 0) {
        return PathError(err, absl::StrCat("cannot sync directory ", parent,
                                           " after creating ", prefix));
      }
      continue;
    }
    const int err = errno;
    if (err == EEXIST) continue;  // what it is, is checked at the end
    return PathError(
        err,
        absl::StrCat("cannot create data directory ", path,
                     prefix == path ? "" : absl::StrCat(" (at ", prefix, ")")));
  }
  return absl::OkStatus();
}

// Only the server's user may change what the directory holds: anyone else
// who can create, rename or delete files in it could plant a log record or
// a checkpoint, or take acknowledged state away. The checks are those ssh
// makes of ~/.ssh: the directory (a symbolic link to it is followed) must
// belong to the effective user and must not be writable by its group or by
// others. FAILED_PRECONDITION naming the path, the owner or the mode, and
// the fix.
absl::Status CheckOwnership(const std::string& path, const struct stat& st) {
  const uid_t uid = ::geteuid();
  if (st.st_uid != uid) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "data directory %s belongs to uid %d, not to uid %d that runs the "
        "server; only the server's user may write its state (chown it, or "
        "name a directory of the server's own)",
        path, st.st_uid, uid));
  }
  const mode_t writable = st.st_mode & (S_IWGRP | S_IWOTH);
  if (writable != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "data directory %s has mode %04o: it is writable by %s, who could "
        "plant or delete state files; only the server's user may write it "
        "(chmod go-w %s, or name a directory the server creates itself, "
        "mode 0700)",
        path, st.st_mode & 07777,
        writable == (S_IWGRP | S_IWOTH) ? "its group and by others"
        : writable == S_IWGRP           ? "its group"
                                        : "others",
        path));
  }
  return absl::OkStatus();
}

// The PID the holder wrote into the lock file, if any yet.
std::string HolderPid(int fd) {
  char buf[32];
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  return std::string(absl::StripAsciiWhitespace(
      absl::string_view(buf, static_cast<size_t>(n))));
}

}  // namespace

std::string WalFileName(uint64_t generation) {
  return absl::StrFormat("wal-%016d.log", generation);
}

std::string CheckpointFileName(uint64_t generation) {
  return absl::StrFormat("checkpoint-%016d.ckpt", generation);
}

std::string PoisonMarkerFileName(uint64_t generation) {
  return absl::StrFormat("wal-%016d.poisoned", generation);
}

absl::StatusOr<std::unique_ptr<DataDir>> DataDir::Open(
    const std::string& path) {
  if (path.empty()) {
    return absl::InvalidArgumentError("data directory path is empty");
  }
  if (absl::Status made = MakeDirectories(path); !made.ok()) return made;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return PathError(errno, absl::StrCat("cannot stat data directory ", path));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InternalError(
        absl::StrCat("data directory ", path, " is not a directory"));
  }
  if (absl::Status safe = CheckOwnership(path, st); !safe.ok()) return safe;
  if (::access(path.c_str(), W_OK | X_OK) != 0) {
    return PathError(errno,
                     absl::StrCat("data directory ", path, " is not writable"));
  }
  const std::string lock_path = JoinPath(path, kLockFileName);
  UniqueFd fd(OpenStateFile(lock_path, O_RDWR | O_CREAT));
  if (!fd.valid()) {
    const int err = errno;
    return PathError(err,
                     absl::StrCat("cannot open lock file ", lock_path, ": ",
                                  OpenErrorText(err)),
                     /*explained=*/true);
  }
  // flock belongs to the open file description: a second Open, even in this
  // process, gets its own and is refused while the first lives.
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EWOULDBLOCK) {
      const std::string pid = HolderPid(fd.get());
      return absl::FailedPreconditionError(absl::StrCat(
          "data directory ", path, " is in use by process ",
          pid.empty() ? "(unknown: its lock file names none yet)" : pid));
    }
    return PathError(err, absl::StrCat("cannot lock ", lock_path));
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd.get(), 0) != 0) {
    return PathError(errno, absl::StrCat("cannot write lock file ", lock_path));
  }
  if (const int err = WriteFully(FileIo::Real(), fd.get(), pid); err != 0) {
    return PathError(err, absl::StrCat("cannot write lock file ", lock_path));
  }
  return std::unique_ptr<DataDir>(new DataDir(path, fd.Release()));
}

DataDir::DataDir(std::string path, int lock_fd)
    : path_(std::move(path)), lock_fd_(lock_fd) {}

DataDir::~DataDir() {
  // Closing the only descriptor of the lock file releases the flock.
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

std::string DataDir::WalPath(uint64_t generation) const {
  return JoinPath(path_, WalFileName(generation));
}

std::string DataDir::CheckpointPath(uint64_t generation) const {
  return JoinPath(path_, CheckpointFileName(generation));
}

absl::StatusOr<DataDir::Listing> DataDir::List() {
  DIR* dir = ::opendir(path_.c_str());
  if (dir == nullptr) {
    return PathError(errno, absl::StrCat("cannot list data directory ", path_));
  }
  Listing listing;
  absl::Status status;
  while (true) {
    errno = 0;
    const dirent* entry = ::readdir(dir);
    if (entry == nullptr) {
      if (errno != 0) {
        status = PathError(errno,
                           absl::StrCat("cannot list data directory ", path_));
      }
      break;
    }
    const std::string_view name = entry->d_name;
    if (const auto g = ParseGeneration(name, kWalPrefix, kWalSuffix)) {
      listing.wals.push_back(*g);
    } else if (const auto c = ParseGeneration(name, kCheckpointPrefix,
                                              kCheckpointSuffix)) {
      listing.checkpoints.push_back(*c);
    } else if (const auto p =
                   ParseGeneration(name, kWalPrefix, kPoisonSuffix)) {
      listing.poisoned.push_back(*p);
    } else if (EndsWith(name, kTmpSuffix)) {
      // Only a crash leaves one behind; it never counts as state.
      const std::string file = JoinPath(path_, name);
      if (::unlink(file.c_str()) != 0 && errno != ENOENT) {
        status = PathError(errno,
                           absl::StrCat("cannot delete temporary file ", file));
        break;
      }
      spdlog::info("data dir: deleted temporary file {} left by a crash", file);
    }
  }
  ::closedir(dir);
  if (!status.ok()) return status;
  std::sort(listing.wals.begin(), listing.wals.end());
  std::sort(listing.checkpoints.begin(), listing.checkpoints.end());
  std::sort(listing.poisoned.begin(), listing.poisoned.end());
  return listing;
}

absl::Status DataDir::MarkCorrupt(const std::string& file) {
  const std::string from =
      file.find('/') == std::string::npos ? JoinPath(path_, file) : file;
  // Never over an earlier one: each is evidence of its own.
  std::string to = absl::StrCat(from, ".corrupt");
  for (int n = 1; ::access(to.c_str(), F_OK) == 0; ++n) {
    to = absl::StrCat(from, ".corrupt.", n);
  }
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return PathError(errno, absl::StrCat("cannot rename ", from, " to ", to));
  }
  return SyncDir();
}

absl::Status DataDir::Remove(const std::string& file) {
  const std::string path =
      file.find('/') == std::string::npos ? JoinPath(path_, file) : file;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return PathError(errno, absl::StrCat("cannot delete ", path));
  }
  return absl::OkStatus();
}

absl::Status DataDir::SyncDir() {
  if (const int err = SyncDirectory(FileIo::Real(), path_); err != 0) {
    return PathError(err, absl::StrCat("cannot sync data directory ", path_));
  }
  return absl::OkStatus();
}

}  // namespace kvindexer::durable
