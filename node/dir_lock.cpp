#include "node/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "node/files.hpp"

namespace settee {

result<dir_lock> dir_lock::acquire(const std::string& dir) {
  const std::string path = dir + "/settee.lock";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return status{errc::internal, "cannot open " + path + ": " + std::strerror(errno)};
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err != EWOULDBLOCK) return status{errc::internal, "cannot lock " + path + ": " + std::strerror(err)};
    std::string pid = read_file(path).value_or("");
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return status{errc::conflict, "data directory " + dir + " is in use by another settee process" +
                                      (pid.empty() ? std::string() : " (pid " + pid + ")") +
                                      ": stop it first, or start this one with another --data-dir"};
  }
  // The holder's pid, for the message a second process gives (advisory: the lock is the flock).
  const std::string text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const int err = errno;
    ::close(fd);
    return status{errc::internal, "cannot write " + path + ": " + std::strerror(err)};
  }
  return dir_lock(fd);
}

dir_lock::dir_lock(dir_lock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

dir_lock& dir_lock::operator=(dir_lock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

dir_lock::~dir_lock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace settee
