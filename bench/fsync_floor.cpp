// The floor under every durable write (issue 56 point 1): what one sync costs on this disk, and so
// how many durable commits per second one shard can make, measured below HTTP.
//
//   settee_fsync_floor [--rounds R] [--commits K] [--dir DIR] [--only CASE]
//
// Each round runs every case in turn (rotating who goes first, so all see the same disk weather):
//   fdatasync     pwrite 4 KiB at the next offset of a preallocated file, then fdatasync
//   fdatasync_1m  pwrite 1 MiB (256 pages, what 1,000 documents of 1 KB fill) then fdatasync: the
//                 disk's bandwidth, the floor of a bulk write (docs/s counts 1,000 documents a sync)
//   o_dsync       the same 4 KiB write through an O_DSYNC descriptor (how LMDB writes its meta page)
//   lmdb          one 1 KB value put and committed in a bare LMDB file with settee's flags (data pages
//                 then the meta page: two device syncs)
//   lmdb_prewritten  the same with zeros written ahead of the file's end (storage/write_ahead)
//   lmdb_6        a commit touching six trees, as a shard's commit of one new document does (~13
//                 scattered pages: the disk's cost a page, against `lmdb`'s ~3)
//   lmdb_6_new    the same with no page reused (a reader pinned): the ~13 pages written together
//   shard_1       shard_store::commit of one new 1 KB document (rev tree, by-seq, header, time-seq),
//                 in a shard of 2,000 documents already (so with zeros written ahead, as an active one)
//   shard_32      one commit of 32 new 1 KB documents (a group commit of 32 writers): docs/s
//   shard_1000    one commit of 1,000 new 1 KB documents (a _bulk_docs request): docs/s
// Prints each round, then the median per case (operations/s and µs per operation).
#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_args.hpp"
#include "storage/shard_store.hpp"

using namespace settee;
using steady = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string body_of(uint64_t n) {  // ~1 KB of JSON, different for every document
  std::string b = R"({"type":"reading","n":)" + std::to_string(n) + R"(,"text":")";
  while (b.size() < 1000) b += "lorem ipsum dolor sit amet " + std::to_string(n % 97) + " ";
  return b + "\"}";
}

struct raw_file {  // a preallocated file written 4 KiB at a time, wrapping around
  int fd = -1;
  off_t at = 0;
  static constexpr off_t size = 64 << 20;
  raw_file(const std::string& path, int extra_flags) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | extra_flags, 0644);
    if (fd < 0 || ::posix_fallocate(fd, 0, size) != 0) std::perror(path.c_str()), std::exit(1);
    ::fsync(fd);
  }
  ~raw_file() { ::close(fd); }
  bool write_pages(int pages, bool sync) {
    static std::vector<char> buf(256 * 4096, 1);
    size_t bytes = static_cast<size_t>(pages) * 4096;
    if (at + static_cast<off_t>(bytes) > size) at = 0;
    if (::pwrite(fd, buf.data(), bytes, at) != static_cast<ssize_t>(bytes)) return false;
    at += bytes;
    return !sync || ::fdatasync(fd) == 0;
  }
};

// LMDB with the flags settee's shard files use. One table: a 1 KB value under the next key. More
// (`tables`): as a shard's commit of one new document touches its trees, the 1 KB value in the
// first under a scattered key (a document id), ~40 bytes in each other, the second under the next
// key (as by-seq), the rest under the scattered key. `warm` commits first, then `prewrite` bytes of
// zeros past the end. `pinned`: a read transaction held from the start, so that LMDB reuses no page
// (every commit's pages are new ones at the end of the file, written together; the file grows).
struct bare_lmdb {
  MDB_env* env = nullptr;
  std::vector<MDB_dbi> dbis;
  MDB_txn* pin = nullptr;
  uint64_t next = 0;
  explicit bare_lmdb(const std::string& path, off_t prewrite = 0, int tables = 1, int warm = 0, bool pinned = false) {
    mdb_env_create(&env);
    mdb_env_set_mapsize(env, 4ull << 30);
    mdb_env_set_maxdbs(env, 8);
    if (mdb_env_open(env, path.c_str(), MDB_NOSUBDIR | MDB_NOTLS, 0644) != 0) std::exit(1);
    MDB_txn* t;
    mdb_txn_begin(env, nullptr, 0, &t);
    dbis.resize(static_cast<size_t>(tables));
    if (tables == 1) {
      mdb_dbi_open(t, nullptr, 0, &dbis[0]);
    } else {
      for (int i = 0; i < tables; ++i) mdb_dbi_open(t, ("t" + std::to_string(i)).c_str(), MDB_CREATE, &dbis[i]);
    }
    mdb_txn_commit(t);
    if (pinned) mdb_txn_begin(env, nullptr, MDB_RDONLY, &pin);
    for (int i = 0; i < warm; ++i)
      if (!commit_one()) std::exit(1);
    if (prewrite > 0) {  // zeros written (and synced) past the end: later pages land on allocated blocks
      int fd = ::open(path.c_str(), O_RDWR);
      off_t end = ::lseek(fd, 0, SEEK_END);
      std::vector<char> zeros(1 << 20, 0);
      for (off_t at = end; at < end + prewrite; at += zeros.size()) {
        if (::pwrite(fd, zeros.data(), zeros.size(), at) < 0) std::exit(1);
      }
      ::fsync(fd);
      ::close(fd);
    }
  }
  ~bare_lmdb() {
    if (pin) mdb_txn_abort(pin);
    mdb_env_close(env);
  }
  bool commit_one() {
    MDB_txn* t;
    if (mdb_txn_begin(env, nullptr, 0, &t) != 0) return false;
    const uint64_t n = next++;
    char seq[24], id[24];
    int sn = std::snprintf(seq, sizeof seq, "doc-%016llu", static_cast<unsigned long long>(n));
    int in = std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(n * 0x9E3779B97F4A7C15ull));
    std::string body = body_of(n), small(40, 's');
    for (size_t i = 0; i < dbis.size(); ++i) {
      const bool by_seq = dbis.size() == 1 || i == 1;
      MDB_val k{static_cast<size_t>(by_seq ? sn : in), by_seq ? seq : id};
      MDB_val d = i == 0 ? MDB_val{body.size(), body.data()} : MDB_val{small.size(), small.data()};
      if (mdb_put(t, dbis[i], &k, &d, 0) != 0) return mdb_txn_abort(t), false;
    }
    return mdb_txn_commit(t) == 0;
  }
};

struct shard {
  std::shared_ptr<shard_store> s;
  uint64_t next = 0;
  int64_t now = 1800000000;
  bool commit(int docs) {
    write_op op;
    for (int i = 0; i < docs; ++i) {
      doc_update u;
      u.id = "doc-" + std::to_string(next);
      u.body = body_of(next++);
      op.docs.push_back(std::move(u));
    }
    if (!s->commit({&op}, ++now) || !op.st) return false;
    return std::all_of(op.results.begin(), op.results.end(), [](const doc_result& r) { return bool(r.st); });
  }
};

struct kase {
  const char* name;
  int docs_per_op;  // documents an operation writes (1 but for the group and bulk commits)
  int ops;          // operations a round makes (fewer for the bulk commit: each writes 1,000)
  std::function<bool()> op;
  std::vector<double> per_s;  // operations per second, one per round
};

}  // namespace

int main(int argc, char** argv) {
  bench::bench_args args;
  args.rounds = 9;
  args.commits = 300;
  if (!args.parse(argc, argv, {"--only"},
                  "usage: settee_fsync_floor [--rounds R] [--commits K] [--dir DIR] [--only CASE]",
                  "settee-fsync-floor"))
    return 2;
  const int rounds = args.rounds, commits = args.commits;
  const std::string& dir = args.dir;
  const std::string only = args.own.count("--only") ? args.own["--only"] : "";
  raw_file plain(dir + "/plain", 0), dsync(dir + "/dsync", O_DSYNC);
  bare_lmdb lmdb(dir + "/bare.mdb"), lmdb_pre(dir + "/pre.mdb", 256 << 20);
  // Six trees a commit, in a file of 3,000 commits with zeros ahead (as an active shard's), reusing
  // freed pages as LMDB does, or with none reused (the pages of a commit written together).
  const off_t grown = static_cast<off_t>(rounds) * commits * 14 * 4096 + (16 << 20);
  bare_lmdb lmdb6(dir + "/six.mdb", 64 << 20, 6, 3000), lmdb6_new(dir + "/six_new.mdb", grown, 6, 3000, true);
  auto open_shard = [&](const char* name) {
    store_options o;
    o.map_size_bytes = 4ull << 30;
    auto s = shard_store::open(dir + "/" + name, o);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.error().reason.c_str()), std::exit(1);
    return shard{*s};
  };
  shard one = open_shard("one.db"), group = open_shard("group.db"), bulk = open_shard("bulk.db");
  // An active shard's file first (2,000 documents): past its first MiB, a store keeps zeros written
  // ahead of its pages while its commits are small (storage/write_ahead), as a busy shard does.
  for (shard* s : {&one, &group})
    for (int i = 0; i < 2; ++i)
      if (!s->commit(1000)) return std::fprintf(stderr, "warm-up failed\n"), 1;
  std::vector<kase> cases = {
      {"fdatasync", 1, commits, [&] { return plain.write_pages(1, true); }, {}},
      {"fdatasync_1m", 1000, std::max(1, commits / 30), [&] { return plain.write_pages(256, true); }, {}},
      {"o_dsync", 1, commits, [&] { return dsync.write_pages(1, false); }, {}},
      {"lmdb", 1, commits, [&] { return lmdb.commit_one(); }, {}},
      {"lmdb_prewritten", 1, commits, [&] { return lmdb_pre.commit_one(); }, {}},
      {"lmdb_6", 1, commits, [&] { return lmdb6.commit_one(); }, {}},
      {"lmdb_6_new", 1, commits, [&] { return lmdb6_new.commit_one(); }, {}},
      {"shard_1", 1, commits, [&] { return one.commit(1); }, {}},
      {"shard_32", 32, std::max(1, commits / 4), [&] { return group.commit(32); }, {}},
      {"shard_1000", 1000, std::max(1, commits / 30), [&] { return bulk.commit(1000); }, {}},
  };
  if (!only.empty()) {
    cases.erase(std::remove_if(cases.begin(), cases.end(), [&](const kase& c) { return c.name != only; }), cases.end());
  }
  std::printf("settee fsync floor: %d rounds, in %s\n", rounds, dir.c_str());
  for (int r = 0; r < rounds; ++r) {
    std::printf("  round %d:", r + 1);
    for (size_t i = 0; i < cases.size(); ++i) {
      kase& c = cases[(i + r) % cases.size()];
      auto t0 = steady::now();
      for (int n = 0; n < c.ops; ++n) {
        if (!c.op()) return std::fprintf(stderr, "%s failed\n", c.name), 1;
      }
      c.per_s.push_back(c.ops / std::chrono::duration<double>(steady::now() - t0).count());
      std::printf(" %s=%.0f", c.name, c.per_s.back());
    }
    std::printf("\n");
  }
  for (auto& c : cases) {
    double m = median(c.per_s);
    std::printf("%-12s median %8.0f ops/s  %8.1f us/op  %9.0f docs/s\n", c.name, m, 1e6 / m, m * c.docs_per_op);
  }
  return 0;
}
