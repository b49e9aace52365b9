#include "js/sandbox.hpp"

#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace settee::js {

namespace {

std::string limit_process(size_t address_space_bytes) {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return std::string("no_new_privs: ") + std::strerror(errno);
  rlimit none{0, 0};
  ::setrlimit(RLIMIT_CORE, &none);
  if (address_space_bytes) {
    rlimit as{address_space_bytes, address_space_bytes};
    if (::setrlimit(RLIMIT_AS, &as) != 0) return std::string("RLIMIT_AS: ") + std::strerror(errno);
  }
  // A worker that grows is killed before the node (a kernel OOM picks the highest score).
  if (int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); fd >= 0) {
    (void)!::write(fd, "1000", 4);
    ::close(fd);
  }
  return {};
}

std::string install_filter() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
  if (!ctx) return "seccomp_init failed";
  int rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);  // every thread of the process
  const int allowed[] = {
      SCMP_SYS(read),
      SCMP_SYS(pread64),
      SCMP_SYS(write),
      SCMP_SYS(writev),
      SCMP_SYS(close),
      SCMP_SYS(fstat),
      SCMP_SYS(newfstatat),
      SCMP_SYS(lseek),
      SCMP_SYS(mmap),
      SCMP_SYS(munmap),
      SCMP_SYS(mremap),
      SCMP_SYS(mprotect),
      SCMP_SYS(madvise),
      SCMP_SYS(brk),
      SCMP_SYS(mincore),
      SCMP_SYS(futex),
      SCMP_SYS(set_robust_list),
      SCMP_SYS(rseq),
      SCMP_SYS(membarrier),
      SCMP_SYS(sched_yield),
      SCMP_SYS(sched_getaffinity),
      SCMP_SYS(clock_gettime),
      SCMP_SYS(clock_getres),
      SCMP_SYS(clock_nanosleep),
      SCMP_SYS(nanosleep),
      SCMP_SYS(gettimeofday),
      SCMP_SYS(getpid),
      SCMP_SYS(gettid),
      SCMP_SYS(getrandom),
      SCMP_SYS(getrusage),
      SCMP_SYS(sysinfo),
      SCMP_SYS(rt_sigreturn),
      SCMP_SYS(rt_sigprocmask),
      SCMP_SYS(rt_sigaction),
      SCMP_SYS(sigaltstack),
      SCMP_SYS(prctl),
      SCMP_SYS(restart_syscall),
      SCMP_SYS(exit),
      SCMP_SYS(exit_group),
  };
  for (int sc : allowed)
    if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sc, 0);
  // Threads (the engine's helpers start lazily), never a new process: clone only with
  // CLONE_THREAD; clone3 answers ENOSYS so glibc falls back to clone.
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD));
  if (rc == 0) rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  // A signal only to itself (abort()).
  if (rc == 0)
    rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                          SCMP_A0(SCMP_CMP_EQ, static_cast<scmp_datum_t>(::getpid())));
  if (rc == 0) rc = seccomp_load(ctx);
  seccomp_release(ctx);
  return rc == 0 ? std::string() : std::string("seccomp: ") + std::strerror(-rc);
}

}  // namespace

std::string confine(size_t address_space_bytes) {
  std::string err = limit_process(address_space_bytes);
  return err.empty() ? install_filter() : err;
}

}  // namespace settee::js
