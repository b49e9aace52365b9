#include "storage/lmdb_env.hpp"

namespace settee::lmdb {

status to_status(int rc, const char* what) {
  if (rc == MDB_SUCCESS) return {};
  if (rc == MDB_MAP_FULL) {
    return {errc::storage_full, std::string(what) + ": the shard file reached its map size ([couchdb] map_size_mb)"};
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

status txn::commit() {
  int rc = mdb_txn_commit(t_);  // frees the txn whatever the outcome
  t_ = nullptr;
  return to_status(rc, "mdb_txn_commit");
}

void txn::abort() {
  if (t_) mdb_txn_abort(t_);
  t_ = nullptr;
}

}  // namespace settee::lmdb
