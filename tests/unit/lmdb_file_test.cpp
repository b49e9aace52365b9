// The LMDB file skeleton (storage/lmdb_env.hpp): a file of another kind than a shard opens with
// tables of its own, keeps what was committed, and a new file whose opening fails is removed.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>
#include <algorithm>

#include "storage/lmdb_env.hpp"
#include "storage/write_ahead.hpp"
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

TEST_CASE("lmdb::write_ahead's target: none below 1 MiB, then an eighth of the file in 64 KiB, 128 KiB to 1 MiB") {
  CHECK(lmdb::write_ahead::target(0) == 0);
  CHECK(lmdb::write_ahead::target((1 << 20) - 1) == 0);
  CHECK(lmdb::write_ahead::target(1 << 20) == 128 << 10);
  CHECK(lmdb::write_ahead::target(4ull << 20) == 512 << 10);
  CHECK(lmdb::write_ahead::target((4ull << 20) + 8) == (512 << 10) + (64 << 10));
  CHECK(lmdb::write_ahead::target(1ull << 30) == 1 << 20);
}

// The size of `path`'s file, and whether its bytes from `from` to its end are all zero.
uint64_t file_bytes(const std::string& path, uint64_t from, bool& zeros_past) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  const int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  std::string buf(1 << 16, '\0');
  zeros_past = true;
  for (uint64_t at = from; at < static_cast<uint64_t>(st.st_size);) {
    const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(at));
    REQUIRE(n > 0);
    zeros_past = zeros_past && std::all_of(buf.begin(), buf.begin() + n, [](char c) { return c == 0; });
    at += static_cast<uint64_t>(n);
  }
  ::close(fd);
  return static_cast<uint64_t>(st.st_size);
}

// A new LMDB file of one table, open, for write_ahead's tests.
struct one_table_file {
  temp_dir dir;
  const std::string path = dir.path + "/s.lmdb";
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
  explicit one_table_file(uint64_t map_size) {
    lmdb::txn t;
    REQUIRE(lmdb::open_file(path, {map_size, true}, {{"t", &dbi}}, env, t));
    REQUIRE(t.commit());
  }
  ~one_table_file() {
    if (env) lmdb::close_file(env);
  }
  // Where its used pages end.
  uint64_t used() const {
    MDB_envinfo info{};
    MDB_stat st{};
    REQUIRE(mdb_env_info(env, &info) == 0);
    REQUIRE(mdb_env_stat(env, &st) == 0);
    return (static_cast<uint64_t>(info.me_last_pgno) + 1) * st.ms_psize;
  }
};

TEST_CASE("lmdb::write_ahead keeps zeros ahead of a growing file's used pages, which LMDB then writes over") {
  one_table_file f(64ull << 20);
  MDB_env*& env = f.env;
  const std::string& path = f.path;
  MDB_dbi& dbi = f.dbi;
  lmdb::write_ahead ahead;
  auto used = [&] { return f.used(); };
  const std::string value(2000, 'v');
  bool small_seen = false, ahead_seen = false;
  for (int i = 0; i < 3000; ++i) {
    lmdb::txn t;
    REQUIRE(t.begin(env, false));
    REQUIRE(lmdb::put(t.get(), dbi, "k" + std::to_string(100000 + i), value + std::to_string(i)));
    REQUIRE(t.commit());
    ahead.after_commit(env);
    const uint64_t u = used();
    bool zeros = false;
    const uint64_t size = file_bytes(path, u, zeros);
    CHECK(zeros);  // past the used pages: nothing but the zeros written ahead
    CHECK(ahead.end() == size);
    if (u < (1 << 20)) {
      small_seen = true;
      CHECK(size == u);  // a small file keeps none
    } else {
      ahead_seen = true;
      CHECK(size - u >= lmdb::write_ahead::target(u) / 2);
      CHECK(size - u <= lmdb::write_ahead::target(u));
    }
  }
  CHECK(small_seen);
  CHECK(ahead_seen);
  lmdb::close_file(env);
  env = nullptr;
  lmdb::txn t;  // reopened: every value is there, the zeros past them ignored
  REQUIRE(lmdb::open_file(path, {64ull << 20, true}, {{"t", &dbi}}, env, t));
  for (int i = 0; i < 3000; ++i) {
    std::string_view got;
    bool found = false;
    REQUIRE(lmdb::get(t.get(), dbi, "k" + std::to_string(100000 + i), got, found));
    REQUIRE(found);
    CHECK(got == value + std::to_string(i));
  }
  t.abort();  // the file closes with `f`
}

TEST_CASE("lmdb::write_ahead leaves a file that large commits grow to extend itself") {
  one_table_file f(256ull << 20);
  MDB_env* env = f.env;
  lmdb::write_ahead ahead;
  const std::string value(2000, 'v');
  for (int c = 0; c < 40; ++c) {  // 100 values a commit, as a _bulk_docs writes them: ~250 KB each
    lmdb::txn t;
    REQUIRE(t.begin(env, false));
    for (int i = 0; i < 100; ++i) REQUIRE(lmdb::put(t.get(), f.dbi, "k" + std::to_string(100000 + c * 100 + i), value));
    REQUIRE(t.commit());
    ahead.after_commit(env);
  }
  const uint64_t used = f.used();
  bool zeros = false;
  CHECK(used > (4 << 20));
  CHECK(file_bytes(f.path, used, zeros) == used);  // nothing written ahead
}

}  // namespace settee
