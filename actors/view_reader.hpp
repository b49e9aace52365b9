// view_reader: a view query of a database on this node (issue 31, map-only slice). Each range is
// answered from this node's copy: its index (one file per copy and signature, under
// <data>/.shard_views/) brought up to date first unless the query says update=false, then read
// from the range's position; the ranges' rows are merged in collation order (then by document id)
// and skip/limit applied to the whole. A range this node holds no copy of is asked of another
// node's copy (shard_copy::start_view, the node protocol's viewRows), which answers through
// copy_rows on that node.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "actors/coordinator.hpp"
#include "actors/js_pool.hpp"
#include "actors/js_reduce.hpp"
#include "actors/task_list.hpp"
#include "actors/view_index.hpp"
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
  // each key, in this order (reversed when descending); low and high are then unused and `offset` is null, as CouchDB's
  // multi-key answers.
  std::optional<std::vector<json>> keys;
  bool reduce = false;
  builtin_reduce builtin = builtin_reduce::none;
  static constexpr int64_t exact = -1;
  int64_t group_level = 0;
};

struct view_answer {
  uint64_t total_rows = 0;
  uint64_t offset = 0;     // rows before the first one answered, in the query's direction
  bool no_offset = false;  // a multi-key answer: CouchDB's offset is null
  std::vector<view_row> rows;
};

// A design document's index over the database's copies (_design/d/_info), one copy per range.
struct view_info {
  uint64_t indexed_seq = 0;  // the copies' seqs indexed, summed
  uint64_t pending = 0;      // changes of the copies not indexed yet, summed
  uint64_t disk_size = 0, active_size = 0;
  bool updating = false;  // an update runs on some copy
};

class view_reader {
 public:
  view_reader(coordinator& coord, js_pool& js, std::string dir, js_reduce_options reduce = {});

  result<view_answer> query(const db_meta& db, const design_views& dv, const view_request& q);
  // Where index updates show as CouchDB's `indexer` rows of _active_tasks (this node's name on
  // them). Set once, before queries arrive; unset: updates are not listed.
  void set_tasks(task_list& tasks, const clock& clk, std::string node) { tasks_ = {&tasks, &clk, std::move(node)}; }
  // The indexes' seqs now, as a _changes token (CouchDB's update_seq=true): the seq each range's
  // answering copy has indexed.
  result<std::string> update_seq(const db_meta& db, const design_views& dv);
  // The index of `dv` as it is now (not updated).
  result<view_info> info(const db_meta& db, const design_views& dv);
  // _view_cleanup on this node's copies of `db`: removes the index files of every signature not
  // in `keep` (the design documents' current ones); how many were removed.
  size_t cleanup(const db_meta& db, const std::vector<std::string>& keep);
  // A shard copy of this node is gone (its database deleted, the copy moved away, a split's parent
  // retired): its index files go too. `copy` is its name under the data directory (shard_name).
  void forget_copy(const std::string& copy);
  // This node's copy of range `range` (its name) of database `db` answering its part of a view
  // query for another node (the RPC server's view_rows); `done` runs once, on any thread.
  void copy_rows(const std::string& db, const std::string& range, const view_copy_request& req,
                 shard_copy::answer<view_page> done);

 private:
  // The ranges' rows of `q` merged in its order, `skip` and `limit` applied as given.
  result<view_answer> merged(const db_meta& db, const design_views& dv, const view_request& q, uint64_t skip,
                             uint64_t limit);
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
  result<view_answer> by_keys(const db_meta& db, const design_views& dv, const view_request& q);
  struct open_index {
    std::mutex mu;                  // one updater at a time; scans run beside it
    std::atomic<bool> lazy{false};  // an update=lazy update is queued or running
    std::atomic<bool> updating{false};
    std::unique_ptr<view_store> store;
    uint64_t used = 0;  // when last handed out (a counter), for closing the least recently used
  };
  static constexpr size_t max_open = 64;  // index files kept open; more are closed when idle
  result<std::shared_ptr<open_index>> index_of(const db_meta& db, size_t range, const design_views& dv,
                                               const shard_store& shard);
  // Brings `index` up to date with `store` (one updater at a time).
  status update(open_index& index, const shard_store& store, const design_views& dv, const std::string& copy);
  // `req` answered from `index` (a copy at `copy_seq`): its rows, or its groups reduced.
  result<view_page> answer_copy(open_index& index, const view_copy_request& req, uint64_t copy_seq,
                                const design_views& dv);
  // This node's copy `shard` of range `range` answering `req`: on this thread when its index is
  // up to date (or update=false), else on the reader's threads once updated.
  void start_local(const db_meta& db, size_t range, const shard_handle& shard, const design_views& dv,
                   const view_copy_request& req, shard_copy::answer<view_page> done);

  coordinator& coord_;
  js_pool& js_;
  std::string dir_;
  js_reduce_options reduce_;
  struct {
    task_list* list = nullptr;
    const clock* clk = nullptr;
    std::string node;
  } tasks_;
  work_pool pool_;  // index updates, as many at once as cores (and workers)
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<open_index>> open_;  // by index path
  uint64_t uses_ = 0;
};

}  // namespace settee
