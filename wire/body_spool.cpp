#include "wire/body_spool.hpp"
#include "node/check.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace settee {

result<std::unique_ptr<body_spool>> body_spool::create(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {  // a file system without O_TMPFILE
    std::string path = dir + "/.upload-XXXXXX";
    fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd >= 0) ::unlink(path.c_str());
  }
  if (fd < 0) return status{errc::internal, "cannot create a spool file in " + dir + ": " + std::strerror(errno)};
  return std::unique_ptr<body_spool>(new body_spool(fd, dir));
}

body_spool::~body_spool() {
  ::close(fd_);
}

status body_spool::append(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::pwrite(fd_, data, n, static_cast<off_t>(size_));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (errno == ENOSPC || errno == EDQUOT) return {errc::storage_full, "No space left on device"};
      return {errc::internal, "cannot write a spool file in " + dir_ + ": " + std::strerror(errno)};
    }
    SETTEE_CHECK(static_cast<size_t>(w) <= n);  // size_ counts the bytes the file holds
    data += w;
    n -= static_cast<size_t>(w);
    size_ += static_cast<uint64_t>(w);
  }
  return {};
}

status body_spool::read(uint64_t offset, size_t n, std::string& out) const {
  out.resize(offset >= size_ ? 0 : static_cast<size_t>(std::min<uint64_t>(n, size_ - offset)));
  size_t got = 0;
  while (got < out.size()) {
    ssize_t r = ::pread(fd_, out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return {errc::internal, "cannot read a spool file in " + dir_ + ": " + std::strerror(errno)};
    got += static_cast<size_t>(r);
  }
  return {};
}

}  // namespace settee
