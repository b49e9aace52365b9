// files: replace_file is atomic and keeps what the operator set on an existing file (issue 53
// item 9: the first start turned /etc/settee/local.ini from root:settee 0660 into settee:settee 0640).
#include "node/files.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace settee {
namespace {

struct stat_of {
  struct stat st {};
  explicit stat_of(const std::string& path) { REQUIRE(::stat(path.c_str(), &st) == 0); }
};

TEST_CASE("replace_file: an existing file keeps its mode whatever the umask, and its owner") {
  const std::string dir = std::filesystem::temp_directory_path() / ("settee-files-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/local.ini";
  const mode_t old_mask = ::umask(027);
  REQUIRE(replace_file(path, "[a]\nb = 1\n", 0660));
  CHECK((stat_of(path).st.st_mode & 07777) == 0660);  // a new file: the mode asked, not the umask's
  REQUIRE(::chmod(path.c_str(), 0664) == 0);
  REQUIRE(replace_file(path, "[a]\nb = 2\n", 0600));
  CHECK((stat_of(path).st.st_mode & 07777) == 0664);  // existing: its own mode
  CHECK(read_file(path) == "[a]\nb = 2\n");
  if (::geteuid() == 0) {  // an owner this process is not: kept
    REQUIRE(::chown(path.c_str(), 12345, 12346) == 0);
    REQUIRE(replace_file(path, "[a]\nb = 3\n"));
    CHECK(stat_of(path).st.st_uid == 12345);
    CHECK(stat_of(path).st.st_gid == 12346);
    CHECK(read_file(path) == "[a]\nb = 3\n");
  }
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  ::umask(old_mask);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace settee
