#include "storage/lmdb_env.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#include "node/files.hpp"

namespace settee::lmdb {

status to_status(int rc, const char* what) {
  if (rc == MDB_SUCCESS) return {};
  if (rc == MDB_MAP_FULL) {
    return {errc::storage_full, std::string(what) + ": the shard file reached its map size ([couchdb] map_size_mb)"};
  }
  if (rc == ENOSPC || rc == EDQUOT) {
    return {errc::storage_full, std::string(what) + ": no space left on the device"};
  }
  return {errc::internal, std::string(what) + ": " + mdb_strerror(rc)};
}

txn& txn::operator=(txn&& o) noexcept {
  if (this != &o) {
    abort();
    t_ = o.t_;
    o.t_ = nullptr;
  }
  return *this;
}

status txn::begin(MDB_env* env, bool read_only) {
  abort();
  return to_status(mdb_txn_begin(env, nullptr, read_only ? MDB_RDONLY : 0, &t_), "mdb_txn_begin");
}

namespace {

// LMDB answers a short write (the file system filled up in the middle of it) with EIO. When the
// file system of `env` is (nearly) full, that is what happened: say so.
bool out_of_space(MDB_env* env) {
  const char* path = nullptr;
  struct statvfs fs {};
  if (mdb_env_get_path(env, &path) != 0 || !path || ::statvfs(path, &fs) != 0) return false;
  constexpr unsigned long long nearly_full_bytes = 4ull << 20;
  return static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < nearly_full_bytes;
}

}  // namespace

status txn::commit() {
  MDB_env* env = mdb_txn_env(t_);
  int rc = mdb_txn_commit(t_);  // frees the txn whatever the outcome
  t_ = nullptr;
  if (rc == EIO && out_of_space(env)) rc = ENOSPC;
  return to_status(rc, "mdb_txn_commit");
}

void txn::abort() {
  if (t_) mdb_txn_abort(t_);
  t_ = nullptr;
}

status get(MDB_txn* t, MDB_dbi dbi, std::string_view key, std::string_view& out, bool& found) {
  MDB_val k = val(key), v;
  int rc = mdb_get(t, dbi, &k, &v);
  found = rc == MDB_SUCCESS;
  // _revs_diff and _bulk_get look up ids that were not validated as a write's would be.
  if (rc == MDB_NOTFOUND || rc == MDB_BAD_VALSIZE) return {};
  if (found) out = view(v);
  return to_status(rc, "mdb_get");
}

status put(MDB_txn* t, MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags) {
  MDB_val k = val(key), v = val(value);
  return to_status(mdb_put(t, dbi, &k, &v, flags), "mdb_put");
}

status del(MDB_txn* t, MDB_dbi dbi, std::string_view key) {
  MDB_val k = val(key);
  int rc = mdb_del(t, dbi, &k, nullptr);
  return rc == MDB_NOTFOUND ? status{} : to_status(rc, "mdb_del");
}

status drop_table(MDB_txn* t, const char* name) {
  MDB_dbi dbi = 0;
  int rc = mdb_dbi_open(t, name, 0, &dbi);
  if (rc == MDB_NOTFOUND) return {};
  if (rc != 0) return to_status(rc, "mdb_dbi_open");
  return to_status(mdb_drop(t, dbi, 1), "mdb_drop");
}

void release_maps(const std::vector<std::string>& paths) {
  if (paths.empty()) return;
  std::vector<std::string> sorted;  // as the kernel names them: absolute, links resolved
  for (const std::string& p : paths) {
    if (char* real = ::realpath(p.c_str(), nullptr)) {
      sorted.emplace_back(real);
      std::free(real);
    }
  }
  std::sort(sorted.begin(), sorted.end());
  FILE* maps = std::fopen("/proc/self/maps", "re");
  if (!maps) return;
  char line[4096 + 128];
  while (std::fgets(line, sizeof line, maps)) {
    uintptr_t from = 0, to = 0;
    char perms[8] = {};
    int path_at = 0;
    // "from-to perms offset dev inode   path"
    if (std::sscanf(line, "%" SCNxPTR "-%" SCNxPTR " %7s %*s %*s %*s %n", &from, &to, perms, &path_at) < 3 ||
        path_at == 0) {
      continue;
    }
    std::string path(line + path_at);
    if (!path.empty() && path.back() == '\n') path.pop_back();
    // LMDB maps a data file read-only and shared (without MDB_WRITEMAP): dropping its pages from
    // this process loses nothing.
    if (std::strcmp(perms, "r--s") != 0 || !std::binary_search(sorted.begin(), sorted.end(), path)) continue;
    ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  }
  std::fclose(maps);
}

namespace {

// 64 bytes per reader slot (LMDB pads each to a cache line) for max_readers slots, plus room for
// its header; a larger file only means more slots.
constexpr int max_readers = 1024;
constexpr off_t lock_file_bytes = 64 * (max_readers + 64);

status allocate_lock_file(const std::string& path) {
  std::string lock = path + "-lock";
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return {errc::internal, "cannot open " + lock + ": " + std::strerror(errno)};
  int rc = ::posix_fallocate(fd, 0, lock_file_bytes);
  ::close(fd);
  if (rc == ENOSPC || rc == EDQUOT) {
    return {errc::storage_full, "cannot create " + lock + ": no space left on the device"};
  }
  if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL) {
    return {errc::internal, "cannot allocate " + lock + ": " + std::strerror(rc)};
  }
  return {};
}

}  // namespace

status open_file(const std::string& path, const file_options& opts,
                 std::initializer_list<std::pair<const char*, MDB_dbi*>> tables, MDB_env*& env, txn& t) {
  if (auto st = allocate_lock_file(path); !st) return st;
  if (int rc = mdb_env_create(&env); rc != 0) return to_status(rc, "mdb_env_create");
  mdb_env_set_maxdbs(env, 16);
  mdb_env_set_mapsize(env, opts.map_size_bytes);
  mdb_env_set_maxreaders(env, max_readers);
  const unsigned sync_flag = (opts.sync ? 0 : MDB_NOSYNC) | (opts.meta_sync ? 0 : MDB_NOMETASYNC);
  if (int rc = mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_NOTLS | sync_flag, 0644); rc != 0) {
    return to_status(rc, ("cannot open " + path).c_str());
  }
  if (auto st = t.begin(env, false); !st) return st;
  for (auto& [name, dbi] : tables) {
    if (int rc = mdb_dbi_open(t.get(), name, MDB_CREATE, dbi); rc != 0) return to_status(rc, "mdb_dbi_open");
  }
  return {};
}

void close_file(MDB_env* env) {
  const char* p = nullptr;
  std::string lock = mdb_env_get_path(env, &p) == 0 && p ? std::string(p) + "-lock" : "";
  mdb_env_close(env);
  if (lock.empty()) return;
  // Its blocks freed, the file kept: deleting it cost more (ext4 then searches past recently
  // deleted inodes to make the next one: cold opens 2-4x slower), and the next open allocates
  // the blocks again (allocate_lock_file).
  int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return;
  ::fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, lock_file_bytes);
  ::close(fd);
}

status compact_copy(MDB_env* env, const std::string& to) {
  ::unlink(to.c_str());
  if (int rc = mdb_env_copy2(env, to.c_str(), MDB_CP_COMPACT); rc != 0) {
    ::unlink(to.c_str());
    return to_status(rc, "compacted copy");
  }
  return sync_file(to);
}

void remove_file(const std::string& path) {
  ::unlink(path.c_str());
  ::unlink((path + "-lock").c_str());
}

status make_parent_dirs(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string dir = path.substr(0, slash);
  std::string cur;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!cur.empty() && ::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) {
        return {errc::internal, "cannot create directory " + cur + ": " + std::strerror(errno)};
      }
    }
    if (i < dir.size()) cur.push_back(dir[i]);
  }
  return {};
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace settee::lmdb
