#include "durable/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace kvindexer::durable {

std::string ErrnoText(int err) { return std::system_category().message(err); }

std::string JoinPath(const std::string& dir, std::string_view name) {
  std::string path = dir;
  if (path.empty() || path.back() != '/') path.push_back('/');
  path.append(name);
  return path;
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

int WriteFully(FileIo& io, int fd, std::string_view data) {
  const char* p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = io.Write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // A regular file never takes zero bytes of a non-empty write; looping
    // on it could spin forever.
    if (n == 0) return EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

int SyncDirectory(FileIo& io, const std::string& dir) {
  const UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return errno;
  while (io.Fsync(fd.get()) != 0) {
    if (errno != EINTR) return errno;
  }
  return 0;
}

int OpenStateFile(const std::string& path, int flags, mode_t mode) {
  // O_NONBLOCK only for the open itself: a FIFO must not block it. On a
  // regular file it changes nothing, and it is cleared below.
  UniqueFd fd(
      ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode));
  if (!fd.valid()) return -1;
  int err = 0;
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    err = errno;
  } else if (!S_ISREG(st.st_mode)) {
    err = EINVAL;
  } else {
    const int status_flags = ::fcntl(fd.get(), F_GETFL);
    if (status_flags < 0 ||
        ::fcntl(fd.get(), F_SETFL, status_flags & ~O_NONBLOCK) != 0) {
      err = errno;
    }
  }
  if (err != 0) {
    fd.Reset();
    errno = err;
    return -1;
  }
  return fd.Release();
}

std::string OpenErrorText(int err) {
  switch (err) {
    case ELOOP:
      return "it is a symbolic link, and state files are opened without "
             "following links (O_NOFOLLOW): remove the link";
    case EINVAL:
      return "it is not a regular file";
    default:
      return ErrnoText(err);
  }
}

absl::Status ReplaceFileDurably(FileIo& io, const std::string& path,
                                std::string_view bytes) {
  const std::string tmp = absl::StrCat(path, ".tmp");
  auto failed = [&](const char* step, const std::string& why) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat(step, ": ", why));
  };
  {
    const UniqueFd fd(OpenStateFile(tmp, O_WRONLY | O_CREAT | O_TRUNC));
    if (!fd.valid()) return failed("open", OpenErrorText(errno));
    if (const int err = WriteFully(io, fd.get(), bytes); err != 0) {
      return failed("write", ErrnoText(err));
    }
    while (io.Fsync(fd.get()) != 0) {
      if (errno != EINTR) return failed("fsync", ErrnoText(errno));
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    return failed("rename", ErrnoText(errno));
  }
  if (const int err = SyncDirectory(io, DirectoryOf(path)); err != 0) {
    return absl::InternalError(
        absl::StrCat("sync directory: ", ErrnoText(err)));
  }
  return absl::OkStatus();
}

absl::StatusOr<FileForReading> OpenForReading(const std::string& path) {
  FileForReading file;
  file.fd = UniqueFd(OpenStateFile(path, O_RDONLY));
  if (!file.fd.valid()) {
    const int err = errno;
    const std::string message =
        absl::StrCat("cannot open ", path, ": ", OpenErrorText(err));
    return err == ENOENT ? absl::NotFoundError(message)
                         : absl::InternalError(message);
  }
  struct stat st;
  if (::fstat(file.fd.get(), &st) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot stat ", path, ": ", ErrnoText(errno)));
  }
  file.size = static_cast<uint64_t>(st.st_size);
  return file;
}

absl::Status ReadWholeFile(const std::string& path, std::string* out) {
  out->clear();
  absl::StatusOr<FileForReading> file = OpenForReading(path);
  if (!file.ok()) return file.status();
  const UniqueFd& fd = file->fd;
  out->resize(static_cast<size_t>(file->size));
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t n = ::read(fd.get(), out->data() + done, out->size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(
          absl::StrCat("cannot read ", path, ": ", ErrnoText(errno)));
    }
    if (n == 0) break;  // the file shrank since fstat
    done += static_cast<size_t>(n);
  }
  out->resize(done);
  return absl::OkStatus();
}

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace kvindexer::durable
