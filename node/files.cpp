#include "node/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace settee {

namespace {

// Rewrites `path` where it is (truncate, write, fsync): its owner, group and mode stay. For a file
// another user owns (the operator's, root:settee 0660) that a rename would give to this process.
status rewrite_in_place(const std::string& path, std::string_view text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) return {errc::internal, "cannot write " + path + ": " + std::strerror(errno)};
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return {errc::internal, "cannot write " + path + ": " + std::strerror(err)};
  return {};
}

}  // namespace

status replace_file(const std::string& path, std::string_view text, int mode) {
  struct stat was {};
  const bool exists = ::stat(path.c_str(), &was) == 0;
  const mode_t keep = exists ? (was.st_mode & 07777) : static_cast<mode_t>(mode);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, keep);
  if (fd < 0) return {errc::internal, "cannot write " + tmp + ": " + std::strerror(errno)};
  // The mode as it was (not as the umask leaves it), and the owner and group as they were: when
  // this process may not give the file back to its owner, it is rewritten in place instead.
  bool owned =
      !exists || (was.st_uid == ::geteuid() && was.st_gid == ::getegid()) || ::fchown(fd, was.st_uid, was.st_gid) == 0;
  if (!owned) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return rewrite_in_place(path, text);
  }
  bool ok = ::fchmod(fd, keep) == 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  ::close(fd);
  if (!ok) return {errc::internal, "cannot write " + path + ": " + std::strerror(errno)};
  return rename_durably(tmp, path);
}

status rename_durably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    return {errc::internal, "cannot rename " + from + " to " + to + ": " + std::strerror(errno)};
  auto slash = to.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : to.substr(0, slash);
  return sync_file(dir);
}

status sync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {errc::internal, "cannot open " + path + ": " + std::strerror(errno)};
  const bool ok = ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) return {errc::internal, "cannot sync " + path + ": " + std::strerror(err)};
  return {};
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return std::nullopt;
  return ss.str();
}

}  // namespace settee
