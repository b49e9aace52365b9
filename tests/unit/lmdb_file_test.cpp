// The LMDB file skeleton (storage/lmdb_env.hpp): a file of another kind than a shard opens with
// tables of its own, keeps what was committed, and a new file whose opening fails is removed.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include "storage/lmdb_env.hpp"
#include "temp_dir.hpp"

namespace settee {

namespace {

// A file with two tables of its own (as a view index will have), one key written.
status open_index(const std::string& path, bool write, std::string& read_back) {
  MDB_env* env = nullptr;
  MDB_dbi by_key = 0, by_id = 0;
  lmdb::txn t;
  status st = lmdb::open_file(path, {64ull << 20, true}, {{"by_key", &by_key}, {"by_id", &by_id}}, env, t);
  if (st && write) st = lmdb::put(t.get(), by_key, "k", "v");
  std::string_view got;
  bool found = false;
  if (st) st = lmdb::get(t.get(), by_key, "k", got, found);
  if (st) read_back = found ? std::string(got) : "";
  if (st) st = t.commit();
  t.abort();
  if (env) lmdb::close_file(env);
  return st;
}

}  // namespace

TEST_CASE("lmdb::open_file opens a file of another kind with its own tables, durably") {
  temp_dir dir;
  const std::string path = dir.path + "/views/idx.lmdb";  // the directory is made on the way
  std::string got;
  REQUIRE(lmdb::open_or_remove(path, [&] { return open_index(path, true, got); }));
  CHECK(got == "v");
  CHECK(lmdb::file_exists(path));
  got.clear();
  REQUIRE(lmdb::open_or_remove(path, [&] { return open_index(path, false, got); }));
  CHECK(got == "v");  // reopened: what was committed is there
}

TEST_CASE("lmdb::open_or_remove removes a new file whose opening failed, and keeps an old one") {
  temp_dir dir;
  const std::string path = dir.path + "/idx.lmdb";
  std::string got;
  auto fail_after_open = [&] {
    status st = open_index(path, true, got);
    return st ? status{errc::internal, "the header was unreadable"} : st;
  };
  CHECK_FALSE(lmdb::open_or_remove(path, fail_after_open));
  CHECK_FALSE(lmdb::file_exists(path));
  CHECK_FALSE(lmdb::file_exists(path + "-lock"));
  REQUIRE(lmdb::open_or_remove(path, [&] { return open_index(path, true, got); }));
  CHECK_FALSE(lmdb::open_or_remove(path, fail_after_open));
  CHECK(lmdb::file_exists(path));  // it held data before: never removed for a failed open
}

// Blocks allocated to `path` (0 when it is missing).
long long allocated_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<long long>(st.st_blocks) * 512 : 0;
}

TEST_CASE("lmdb::close_file frees the lock file's blocks, which the next open allocates again") {
  temp_dir dir;
  const std::string path = dir.path + "/s.lmdb";
  for (int round = 0; round < 2; ++round) {
    MDB_env* env = nullptr;
    MDB_dbi dbi = 0;
    lmdb::txn t;
    REQUIRE(lmdb::open_file(path, {64ull << 20, true}, {{"t", &dbi}}, env, t));
    if (round == 0) REQUIRE(lmdb::put(t.get(), dbi, "k", "v"));
    std::string_view got;
    bool found = false;
    REQUIRE(lmdb::get(t.get(), dbi, "k", got, found));
    CHECK(found);  // reopened: what was committed is there
    REQUIRE(t.commit());
    const long long open_bytes = allocated_bytes(path + "-lock");
    CHECK(open_bytes >= 64 * 1024);  // 1,024 reader slots allocated while it is open
    lmdb::close_file(env);
    CHECK(lmdb::file_exists(path + "-lock"));
    CHECK(allocated_bytes(path + "-lock") < open_bytes);  // freed, where the file system can
  }
}

}  // namespace settee
