#include "node/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace settee {

status replace_file(const std::string& path, std::string_view text, int mode) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return {errc::internal, "cannot write " + tmp + ": " + std::strerror(errno)};
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return {errc::internal, "cannot write " + path + ": " + std::strerror(errno)};
  }
  auto slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return {errc::internal, "cannot open " + dir + ": " + std::strerror(errno)};
  ok = ::fsync(dfd) == 0;
  ::close(dfd);
  if (!ok) return {errc::internal, "cannot sync " + dir + ": " + std::strerror(errno)};
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
