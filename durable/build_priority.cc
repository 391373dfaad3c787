#include "durable/build_priority.h"

#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvindexer::durable {

bool RunsBelowNormal(pid_t tid) {
  const int policy = ::sched_getscheduler(tid);
  if (policy == SCHED_IDLE) return true;
  errno = 0;
  const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
  return errno == 0 && nice > 0;
}

absl::Status RaiseToNormal(pid_t tid) {
  sched_param param{};
  param.sched_priority = 0;
  if (::sched_getscheduler(tid) != SCHED_OTHER &&
      ::sched_setscheduler(tid, SCHED_OTHER, &param) != 0) {
    const int error = errno;
    return error == EPERM ? absl::PermissionDeniedError(absl::StrCat(
                                "leaving SCHED_IDLE needs CAP_SYS_NICE: ",
                                std::strerror(error)))
                          : absl::InternalError(absl::StrCat(
                                "sched_setscheduler: ", std::strerror(error)));
  }
  // Linux: the nice value of PRIO_PROCESS `tid` is that thread's.
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), 0) != 0) {
    const int error = errno;
    return error == EACCES || error == EPERM
               ? absl::PermissionDeniedError(
                     absl::StrCat("lowering a nice value needs CAP_SYS_NICE: ",
                                  std::strerror(error)))
               : absl::InternalError(
                     absl::StrCat("setpriority: ", std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace kvindexer::durable
