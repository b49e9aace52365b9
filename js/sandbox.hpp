// sandbox: what confines a settee-js worker once its engine is ready (docs/security.md,
// "JavaScript"). Called after every thread of the worker exists: the filter covers them all.
#pragma once

#include <string>

namespace settee::js {

// No new privileges, no core dumps, first in line for the kernel's OOM killer, at most
// `address_space_bytes` of address space (0: unchanged), and a seccomp filter: memory management,
// the threads' own synchronisation, time, reading the request pipe (fd 0), writing the answer pipe
// (fd 1) and stderr. Every other system call (open, socket, connect, execve, fork, kill, ...)
// fails with EPERM. Empty on success, else what failed.
std::string confine(size_t address_space_bytes);

}  // namespace settee::js
