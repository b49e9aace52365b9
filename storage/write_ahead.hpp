// write_ahead: zeros kept written ahead of a durable LMDB file's last used page (docs/architecture.md
// section 53).
#pragma once

#include <cstdint>

struct MDB_env;  // LMDB stays out of the headers above storage/

namespace settee::lmdb {

// A commit whose pages land past the end of the file makes ext4 journal the new blocks and the
// file's size, and the commit's sync then waits for that journal commit too; pages written over
// blocks that hold zeros already do not: a one-document commit of a shard 272 us instead of 345
// (bench/fsync_floor.cpp, shard_1 against a file with zeros ahead). LMDB reads only up to its last
// used page, so the zeros are invisible to it and to a crash. Worth it for small commits only: the
// zeros are written once more over, and a commit of a megabyte pays its journal commit once for a
// thousand documents (a _bulk_docs was 0.86x with zeros ahead of it).
// One per file, used by its writer only (not thread-safe).
class write_ahead {
 public:
  // Bytes a file whose pages in use end at `used` keeps written ahead: none below 1 MiB (most
  // databases of a database-per-user node never reach it), then an eighth of it, from 128 KiB to
  // 1 MiB (so that writing them holds the writer ~1 ms at most), in whole 64 KiB.
  static uint64_t target(uint64_t used);
  // Commits that grow the file by this much or more on average (the last ~8, weighted) are left
  // to extend it themselves.
  static constexpr uint64_t small_growth = 32 << 10;
  // After a commit of `env` (nothing for a file opened MDB_NOSYNC): when its commits are small and less than half of
  // target() is left past its used pages, writes zeros to target() past them and syncs them. A failure (a full disk) is
  // not the commit's: it is tried again once the file has grown past what was asked.
  void after_commit(MDB_env* env);
  // The file's size as last known here (0 before the first after_commit()).
  uint64_t end() const { return end_; }

 private:
  uint64_t end_ = 0;
  uint64_t failed_at_ = 0;  // the used size when extending last failed
  uint64_t last_used_ = 0;  // at the last call
  uint64_t growth_ = 0;     // bytes a commit added to the used pages, on average
  unsigned page_ = 0;       // 0: not known yet
  bool durable_ = false;    // its commits are synced (not MDB_NOSYNC)
};

}  // namespace settee::lmdb
