// update_log: this node's record of which databases were written, the `updated` rows of
// `_db_updates` (docs/architecture.md section 28; spec/http_api.md 11.4).
//
// The record is a shard file of its own, `<data>/_db_updates.lmdb`, never replicated: one document
// per database name, {"instance":N,"seqs":{"<range>":seq,...}}, the update seqs of this node's copies
// when they were last reported. Its by-seq index is the feed: a database written again moves to
// the end (coalesced, as `_changes` shows a document once), and its seq is the feed position.
//
// Every commit to a database's shard marks the database (change_notifier's observer: one lock and
// one set insert per commit). A flusher (a job of the node's runner, lane "update_log", woken by
// the first mark) records the marked databases a few milliseconds later, in one commit (fsync)
// for all of them, and at most every `min_interval`. After a crash the
// marks are gone, but at start the flusher compares every local copy's update seq with the one
// recorded and records the databases that are ahead: a write acknowledged just before a kill -9
// still gets its row.
//
// Since every row can be found again that way, the record's commits are not fsynced (store_options::
// file_role::derived): a kill -9 loses nothing (the page cache has it), and the writers' own fsyncs do not
// wait behind the record's. A machine crash may lose or tear the record, so `<data>/_db_updates.boot`
// says which boot last opened it and whether it was stopped cleanly (synced); a record left
// unclean by another boot is dropped at open and rebuilt under a new uuid, which the feed reads
// from its start (every database of this node once more: at least once, never a gap).
// Thread-safety: mark() and flush() from any thread; start()/stop() from one.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>

#include "actors/db_catalog.hpp"
#include "actors/jobs.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

struct update_log_options {
  std::chrono::milliseconds gather{5};         // after the first mark, wait this long for more
  std::chrono::milliseconds min_interval{40};  // between two records (a burst gives a few rows)
  std::chrono::milliseconds timeout{60000};    // for the record's own commit
  std::string boot_id;                         // this boot's id; empty: the kernel's (tests inject one)
};

class update_log {
 public:
  update_log(shard_registry& shards, db_catalog& catalog, const clock& clk, std::string data_dir,
             update_log_options opts = {});
  ~update_log();  // stop()
  update_log(const update_log&) = delete;
  update_log& operator=(const update_log&) = delete;

  // The record's commits are announced under db_catalog::notify_key() (with `_dbs`'s own): live
  // `_db_updates` feeds watch that one key.
  static std::string file_in(const std::string& data_dir) { return data_dir + "/_db_updates.lmdb"; }

  static std::string boot_file_in(const std::string& data_dir) { return data_dir + "/_db_updates.boot"; }

  // Keeps the record, or drops it when a machine crash may have torn it (see above). Before
  // anything reads the record; an error means the boot file cannot be written. After a clean stop
  // the record is known complete and start() skips comparing every local copy with it.
  status open();
  // Starts the flusher in `runner`; it first looks for copies written after their last record (a crash).
  void start(job_runner& runner);
  // Stops the flusher and records what is marked; after open() and start(), syncs the record and
  // notes the clean stop. Call it once no commit can come any more (after the shards closed).
  // Idempotent.
  void stop();

  static constexpr const char* lane = "update_log";
  // A commit to a copy of the database incarnation `key` ("<name>.<suffix>", change_notifier's
  // key). Other keys (the catalog's, the record's own) are ignored.
  void mark(const std::string& key);
  // Waits until everything marked before the call is recorded (or the log stopped).
  void flush();
  // The record itself (for the feed).
  result<shard_handle> record() { return shards_.acquire(path_, clk_.now_s(), db_catalog::notify_key()); }

 private:
  class flusher;
  // The flusher's step: records the marked databases when their time came (see above).
  job_next flush_step();
  void recover();
  // Records `keys`; false when the commit failed (they are marked again).
  bool write(const std::set<std::string>& keys);
  // The record's new documents for `keys` (those not covered yet); false when `snap` failed.
  bool collect(const shard_store::snapshot& snap, const std::set<std::string>& keys, std::vector<doc_update>& out);

  shard_registry& shards_;
  db_catalog& catalog_;
  const clock& clk_;
  std::string path_;
  std::string boot_path_;
  update_log_options opts_;
  bool opened_ = false;
  bool started_ = false;
  bool up_to_date_ = false;  // the last stop was clean: recovery has nothing to find
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> marked_;
  std::set<std::string> later_;  // flusher thread only: marks to take again at the next record
  uint64_t marks_ = 0;           // mark() calls that added a key
  uint64_t recorded_ = 0;        // marks_ when the last batch was taken and written
  bool stopping_ = false;
  bool recovered_ = false;
  // The flusher's own (its steps run one at a time).
  bool recovery_ran_ = false;
  uint64_t found_ = 0;           // marks_ after recovery: recovered_ once they are recorded
  mono::time_point last_;        // the last record
  mono::time_point first_mark_;  // the first mark after the last record (under mu_)
  job_runner* runner_ = nullptr;
  static constexpr const char* job_id = "update_log";
};

}  // namespace settee
