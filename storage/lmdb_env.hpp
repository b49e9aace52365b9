// lmdb_env: RAII for LMDB environments and transactions, LMDB error codes as settee statuses, and
// the skeleton every settee LMDB file shares (open_file: the shard store's files; view indexes next).
// LMDB's contract (DESIGN.md section 4): one env per file per process, MDB_NOTLS so read txns can
// move between threads, a write txn begins and ends on one thread, short read txns.
#pragma once
#include <lmdb.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "node/error.hpp"

namespace settee::lmdb {

// Maps an LMDB return code to a status (MDB_MAP_FULL, ENOSPC and EDQUOT -> storage_full, others ->
// internal).
status to_status(int rc, const char* what);

inline MDB_val val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}
inline std::string_view view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

// One key of one table. get: found=false (and ok) when the key is absent, including a key LMDB
// could not hold (empty, or over 511 bytes: never stored). del: an absent key is not an error.
status get(MDB_txn* t, MDB_dbi dbi, std::string_view key, std::string_view& out, bool& found);
status put(MDB_txn* t, MDB_dbi dbi, std::string_view key, std::string_view value, unsigned flags = 0);
status del(MDB_txn* t, MDB_dbi dbi, std::string_view key);
// Deletes the named table and its records, if the file has one (a table an older build kept).
status drop_table(MDB_txn* t, const char* name);

// Lets the kernel take back the pages of these LMDB files that this process has mapped (their
// read-only shared maps; the lock files are left alone). Nothing is lost: a later read maps the
// page again from the page cache (a minor fault). For files nobody has used for a while, so that an
// idle node's RSS does not keep every page it ever read.
void release_maps(const std::vector<std::string>& paths);

// Owns a transaction; aborts it on destruction unless committed.
class txn {
 public:
  txn() = default;
  txn(const txn&) = delete;
  txn& operator=(const txn&) = delete;
  txn(txn&& o) noexcept : t_(o.t_) { o.t_ = nullptr; }
  txn& operator=(txn&& o) noexcept;
  ~txn() { abort(); }

  status begin(MDB_env* env, bool read_only);
  status commit();
  void abort();
  MDB_txn* get() const { return t_; }

 private:
  MDB_txn* t_ = nullptr;
};

struct file_options {
  uint64_t map_size_bytes = 64ull << 30;  // virtual; the file is sparse
  // false: commits are not fsynced (MDB_NOSYNC), for derived data its owner can rebuild.
  bool sync = true;
  // false: a commit fsyncs its data but not the meta page, which the next commit's fsync carries
  // (MDB_NOMETASYNC): one fsync a commit instead of two; a machine crash may undo the last
  // commit, never break the file. For derived data that records what it covers in each commit.
  bool meta_sync = true;
};

// Opens the LMDB file at `path` (a data file and `<path>-lock`), creating it when missing: the lock
// file's blocks allocated first (LMDB writes it through a mapping: a full disk later would be a
// SIGBUS, here it is storage_full), MDB_NOSUBDIR | MDB_NOTLS (read transactions move between
// threads), 1024 reader slots, 16 tables at most. Then begins the write transaction `t` and opens
// (creates) `tables` in it, left open for the caller to read or write its own records and commit.
// `env` is set as soon as it exists: the caller closes it (close_file), on failure too.
status open_file(const std::string& path, const file_options& opts,
                 std::initializer_list<std::pair<const char*, MDB_dbi*>> tables, MDB_env*& env, txn& t);
// Closes an env open_file opened and frees its lock file's blocks (the file stays, empty of data):
// it holds only the reader table of an open env (one process opens a data directory: settee.lock),
// 68 KB a file that would otherwise stay allocated for every closed shard and index (100,000
// databases of q=2: 13 GB).
void close_file(MDB_env* env);
// A compacted copy of `env` (its pages in use only, free ones left out: mdb_env_copy2 with
// MDB_CP_COMPACT, from one read transaction) written to the new file `to`, fsynced. A file left at
// `to` by an earlier attempt is replaced. Writers may go on meanwhile; the copy holds what was
// committed when it began.
status compact_copy(MDB_env* env, const std::string& to);
// Deletes a file open_file made (data and lock file).
void remove_file(const std::string& path);

status make_parent_dirs(const std::string& path);
bool file_exists(const std::string& path);
// Runs `open` (which opens the file at `path` and reads or writes it), after creating the
// directories above it. When the file did not exist and `open` fails, the half-made file is removed
// again: to the next attempt it would be "not an LMDB file", and pages past its end a SIGBUS.
template <class Open>
auto open_or_remove(const std::string& path, Open open) -> decltype(open()) {
  if (auto st = make_parent_dirs(path); !st) return st;
  const bool fresh = !file_exists(path);
  auto opened = open();
  if (!opened && fresh) remove_file(path);
  return opened;
}

}  // namespace settee::lmdb
