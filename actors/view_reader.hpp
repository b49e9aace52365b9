// view_reader: a view query of a database on this node (issue 31, map-only slice). Each range is
// answered from this node's copy: its index (one file per copy and signature, under
// <data>/.shard_views/) brought up to date first unless the query says update=false, then read
// from the range's position; the ranges' rows are merged in collation order (then by document id)
// and skip/limit applied to the whole. A range this node holds no copy of is asked of another
// node's copy (shard_copy::start_view, the node protocol's viewRows), which answers through
// copy_rows on that node. Index updates run as view_build jobs (actors/view_jobs.hpp): a query whose
// copies' indexes are behind joins its database's build and is answered as each index gets there.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "actors/coordinator.hpp"
#include "actors/index_cache.hpp"
#include "actors/jobs.hpp"
#include "actors/js_pool.hpp"
#include "actors/js_reduce.hpp"
#include "actors/task_list.hpp"
#include "actors/view_index.hpp"
#include "actors/view_jobs.hpp"
#include "actors/view_reduce.hpp"
#include "node/work_pool.hpp"
#include "storage/view_store.hpp"

namespace settee {

struct view_request {
  uint32_t view = 0;  // its place among design_views::names
  view_bound low, high;
  bool descending = false;
  uint64_t skip = 0, limit = std::numeric_limits<uint64_t>::max();
  bool update = true;  // false: answer from the index as it is (update=false, stale=ok)
  bool lazy = false;   // with update false: bring the index up to date after the answer
  // Reduced (`reduce`: by `builtin`, or with none by the view's JavaScript function): the rows of
  // the range grouped, one reduced row per group; skip and limit count groups. group_level: exact = every distinct key
  // (group=true), 0 = one group with the key null, N = array keys cut to their first N elements. `keys`: the rows of
  // each key, in this order (reversed when descending); low and high are then unused, and `offset` counts as CouchDB's
  // (couch_mrview:map_fold, fabric_view_map): per range the rows before the first key that has rows there (else before
  // the last key), summed, plus skip, at most total_rows.
  std::optional<std::vector<json>> keys;
  bool reduce = false;
  builtin_reduce builtin = builtin_reduce::none;
  // A partitioned view's partition (/db/_partition/<p>/_design/d/_view/v): only its range is
  // asked, and only its rows read there. Empty: a global query.
  std::string partition;
  static constexpr int64_t exact = -1;
  int64_t group_level = 0;
};

struct view_answer {
  uint64_t total_rows = 0;
  uint64_t offset = 0;  // rows before the first one answered, in the query's direction
  std::vector<view_row> rows;
};

// A design document's index over the database's copies (_design/d/_info), one copy per range.
struct view_info {
  uint64_t indexed_seq = 0;  // the copies' seqs indexed, summed
  uint64_t purge_seq = 0;    // the copies' purge requests applied, summed
  uint64_t pending = 0;      // changes of the copies not indexed yet, summed
  uint64_t disk_size = 0, active_size = 0;
  bool updating = false;    // an update runs on some copy
  bool compacting = false;  // a compaction of some copy's index is queued or running
};

class view_reader {
 public:
  // Builds and compactions run as jobs of `jobs` (lanes view_build::lane and compactor::lane).
  view_reader(coordinator& coord, js_pool& js, job_runner& jobs, std::string dir, js_reduce_options reduce = {});

  result<view_answer> query(const db_meta& db, const design_views& dv, const view_request& q);
  // Where index updates show as CouchDB's `indexer` rows of _active_tasks (this node's name on
  // them). Set once, before queries arrive; unset: updates are not listed.
  void set_tasks(task_list& tasks, const clock& clk, std::string node) {
    tasks_ = task_place{&tasks, &clk, std::move(node)};
  }
  // [query_server_config] reduce_limit changed while the node runs.
  void set_reduce_limit(reduce_limit limit) { reduce_limit_ = limit; }
  // The indexes' seqs now, as a _changes token (CouchDB's update_seq=true): the seq each range's
  // answering copy has indexed.
  result<std::string> update_seq(const db_meta& db, const design_views& dv);
  // The index of `dv` as it is now (not updated).
  result<view_info> info(const db_meta& db, const design_views& dv);
  // _view_cleanup on this node's copies of `db`: removes the index files of every signature not
  // in `keep` (the design documents' current ones); how many were removed.
  size_t cleanup(const db_meta& db, const std::vector<std::string>& keep);
  // POST /db/_compact/ddoc on this node's copies of `db`: a view_compaction job queued for each
  // index file of `dv` that exists (a copy whose index is compacting already is not queued twice).
  void compact(const db_meta& db, const design_views& dv);
  // A shard copy of this node is gone (its database deleted, the copy moved away, a split's parent
  // retired): its index files go too. `copy` is its name under the data directory (shard_name).
  void forget_copy(const std::string& copy);
  // This node's copy `shard` (range `range` of `db`) answering its part of a view query, for this
  // node's coordinator or another node's (index_readers::view_rows, through local_copy::start_view);
  // `done` runs once, on any thread.
  void copy_rows(const db_meta& db, size_t range, const shard_handle& shard, const view_copy_request& req,
                 shard_copy::answer<view_page> done);

 private:
  // The ranges' rows of `q` merged in its order, `skip` and `limit` applied as given.
  // `each` (when given): per range asked, the rows before the range's start and whether it had rows.
  struct range_start {
    uint64_t before = 0;
    bool rows = false;
  };
  result<view_answer> merged(const db_meta& db, const design_views& dv, const view_request& q, uint64_t skip,
                             uint64_t limit, std::vector<range_start>* each = nullptr);
  // One copy of each range answering `q`'s range (skip aside) as `ask` says (its scan.limit, what
  // to count, reduce or describe); the design document, range, direction and update come from `q`.
  result<std::vector<view_page>> pages_of(const db_meta& db, const design_views& dv, const view_request& q,
                                          view_copy_request ask);
  // Every range's index as it is, described (for _info and update_seq).
  result<std::vector<view_page>> described(const db_meta& db, const design_views& dv);
  // A grouped reduce (not _approx_count_distinct): each copy's groups reduced there, combined here.
  result<view_answer> grouped(const db_meta& db, const design_views& dv, const view_request& q);
  // The groups of `rows` (in order) reduced; skip and limit count groups.
  result<std::vector<view_row>> reduced(const design_views& dv, const std::vector<view_row>& rows,
                                        const view_request& q);
  // A copy's groups (copy_groups': rows, counts and partials) reduced by `req`'s reduce, keyed by
  // their first row's key in the query's direction (cut to the group level); a JavaScript
  // reduce's group as several rows (its partials and its rows' reduction) for the asker's rereduce.
  result<std::vector<view_row>> reduce_groups(const design_views& dv, std::vector<view_group>& groups,
                                              const view_copy_request& req);
  result<view_answer> by_keys(const db_meta& db, const design_views& dv, const view_request& q);
  struct open_index {
    std::string path;
    std::mutex mu;  // one updater (or compaction) at a time; scans run beside it
    // Shared by whoever reads `store`, exclusive to replace it (a compaction's swap, under mu).
    std::shared_mutex swap;
    std::atomic<bool> lazy{false};  // an update=lazy update is queued or running
    std::atomic<bool> updating{false};
    std::atomic<bool> compacting{false};  // a compaction is queued or running
    std::unique_ptr<view_store> store;    // null after a compaction that could not reopen it
  };
  static constexpr size_t max_open = 64;  // index files kept open; more are closed when idle
  result<std::shared_ptr<open_index>> index_of(const db_meta& db, size_t range, const design_views& dv,
                                               const shard_store& shard);
  // Brings `index` up to `target` of `store` at least (one updater at a time), stopping early
  // when `stop()` says so.
  status update(open_index& index, const shard_store& store, const design_views& dv, const std::string& copy,
                uint64_t target, const std::function<bool()>& stop);
  // Hands `index` (of copy `copy` of db's range) to its database's build job, joined or started;
  // `done` (null: nobody waits) runs once it is up to date or failed.
  void build(const db_meta& db, const design_views& dv, const std::shared_ptr<open_index>& index,
             const shard_handle& shard, const std::string& copy, std::function<void(status)> done);
  // Replaces `index`'s file with a compacted copy (the view_compaction job's work).
  status compact_index(open_index& index, const view_meta& want);
  // `req` answered from `index` (a copy at `copy_seq`): its rows, or its groups reduced.
  result<view_page> answer_copy(open_index& index, const view_copy_request& req, uint64_t copy_seq,
                                const design_views& dv);
  // This node's copy `shard` of range `range` answering `req`: on this thread when its index is
  // up to date (or update=false), else on the reader's threads once updated.
  void start_local(const db_meta& db, size_t range, const shard_handle& shard, const design_views& dv,
                   const view_copy_request& req, shard_copy::answer<view_page> done);

  coordinator& coord_;
  js_pool& js_;
  job_runner& jobs_;
  std::string dir_;
  js_reduce_options reduce_;
  std::atomic<reduce_limit> reduce_limit_;
  js_reduce_options reduce_options() const {  // reduce_ with the limit now
    js_reduce_options o = reduce_;
    o.limit = reduce_limit_;
    return o;
  }
  task_place tasks_;
  work_pool pool_;                          // index updates, as many at once as cores (and workers)
  index_cache<open_index> open_{max_open};  // by index path
  build_jobs builds_;                       // by database and signature
};

}  // namespace settee
