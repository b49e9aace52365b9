// The LMDB file skeleton (storage/lmdb_env.hpp): a file of another kind than a shard opens with
// tables of its own, keeps what was committed, and a new file whose opening fails is removed.
#include <doctest/doctest.h>

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
  if (env) mdb_env_close(env);
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
  CHECK(lmdb::file_exists(path + "-lock"));
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

}  // namespace settee
