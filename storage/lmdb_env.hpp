// lmdb_env: RAII for LMDB environments and transactions, and LMDB error codes as settee statuses.
// LMDB's contract (DESIGN.md section 4): one env per file per process, MDB_NOTLS so read txns can
// move between threads, a write txn begins and ends on one thread, short read txns.
#pragma once
#include <lmdb.h>

#include <string>
#include <string_view>
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

}  // namespace settee::lmdb
