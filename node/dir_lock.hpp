// dir_lock: one process per data directory. A node holds an exclusive flock on DIR/settee.lock for
// its whole life (the kernel lets go when the process ends, however it ends); a second node started
// on the same directory is refused with the first one's pid instead of opening the same LMDB files.
#pragma once
#include <string>

#include "node/error.hpp"

namespace settee {

class dir_lock {
 public:
  // Takes the lock of directory `dir` (which must exist): errc::conflict naming the process that
  // holds it, or the system's error.
  static result<dir_lock> acquire(const std::string& dir);

  dir_lock(dir_lock&& other) noexcept;
  dir_lock& operator=(dir_lock&& other) noexcept;
  dir_lock(const dir_lock&) = delete;
  dir_lock& operator=(const dir_lock&) = delete;
  ~dir_lock();

 private:
  explicit dir_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace settee
