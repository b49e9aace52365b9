#include "storage/write_ahead.hpp"

#include <lmdb.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

namespace settee::lmdb {

uint64_t write_ahead::target(uint64_t used) {
  constexpr uint64_t start = 1ull << 20, least = 128ull << 10, most = 1ull << 20, unit = 64ull << 10;
  if (used < start) return 0;
  const uint64_t t = std::clamp(used / 8, least, most);
  return (t + unit - 1) / unit * unit;
}

void write_ahead::after_commit(MDB_env* env) {
  MDB_envinfo info{};
  if (page_ == 0) {
    MDB_stat st{};
    unsigned flags = 0;
    if (mdb_env_stat(env, &st) != 0 || mdb_env_get_flags(env, &flags) != 0) return;
    page_ = st.ms_psize;
    durable_ = (flags & MDB_NOSYNC) == 0;
  }
  if (!durable_) return;  // a derived file's commits are not synced: no sync to spare them
  int fd = -1;
  if (mdb_env_info(env, &info) != 0 || mdb_env_get_fd(env, &fd) != 0) return;
  const uint64_t used = (static_cast<uint64_t>(info.me_last_pgno) + 1) * page_;
  if (end_ == 0 || used > end_) {  // first call, or LMDB wrote past what is known
    struct stat st {};
    if (::fstat(fd, &st) != 0) return;
    end_ = std::max<uint64_t>(static_cast<uint64_t>(st.st_size), used);
  }
  if (last_used_ != 0) growth_ = growth_ - growth_ / 8 + (used - last_used_) / 8;  // LMDB files never shrink
  last_used_ = used;
  const uint64_t want = target(used);
  if (want == 0 || growth_ >= small_growth || end_ - used >= want / 2 || (failed_at_ != 0 && used <= failed_at_ + want))
    return;
  static const std::vector<char> zeros(1 << 20, 0);
  const uint64_t to = used + want;
  for (uint64_t at = end_; at < to;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(zeros.size(), to - at));
    const ssize_t w = ::pwrite(fd, zeros.data(), n, static_cast<off_t>(at));
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      failed_at_ = used;
      return;
    }
    at += static_cast<uint64_t>(w);
    end_ = at;
  }
  if (::fdatasync(fd) != 0) {
    failed_at_ = used;
    return;
  }
  failed_at_ = 0;
}

}  // namespace settee::lmdb
