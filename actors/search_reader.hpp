// search_reader: full-text queries of a database on this node (issue 54). Each range is answered
// by one copy's index (one Lucene++ directory per copy and index signature, beside the copy's
// view indexes under <data>/.shard_views/<copy>/<signature>.search), brought up to date first
// unless the query says update=false; updates run as view_build jobs of the indexer lane (one job
// per database and index, its copies at once from one snapshot), listed in _active_tasks as
// search_indexer rows. A range this node holds no copy of is asked of another node's copy
// (shard_copy::start_search, the node protocol's searchCopy), answered through copy_search there.
//
// A query over several ranges runs in two phases: every copy's term statistics for it, summed,
// then every copy's hits scored from the sums, merged by order (storage/text_index.hpp): so a
// query answers the same hits, scores and pages whatever q the database has. When this node holds
// a copy of every range (one node, or n = the node count), those copies are searched as one index
// instead, in one phase: the same answer for half the work.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/index_cache.hpp"
#include "actors/jobs.hpp"
#include "actors/js_pool.hpp"
#include "actors/search_index.hpp"
#include "actors/task_list.hpp"
#include "actors/view_jobs.hpp"
#include "node/work_pool.hpp"
#include "search/search_query.hpp"

namespace settee {

// A design document's search index, as a query names it.
struct search_design {
  std::string ddoc_id, rev, ddoc_json;
  search_index_def def;
};

// The index over the database's copies (_nouveau_info), one copy per range, summed.
struct search_info {
  uint64_t update_seq = 0, purge_seq = 0, num_docs = 0, disk_size = 0, pending = 0;
  bool updating = false;
};

class search_reader {
 public:
  search_reader(coordinator& coord, js_pool& js, job_runner& jobs, std::string dir);

  // Where index updates show as search_indexer rows of _active_tasks. Set once, before queries.
  void set_tasks(task_list& tasks, const clock& clk, std::string node) {
    tasks_ = task_place{&tasks, &clk, std::move(node)};
  }

  // `q` over the database's copies (a partition's range only when `partition` is set).
  result<text_page> query(const db_meta& db, const search_design& sd, const text_query& q, bool update,
                          const std::string& partition = "");
  // The index as it is now (not updated).
  result<search_info> info(const db_meta& db, const search_design& sd);
  // _nouveau_cleanup/_search_cleanup on this node's copies of `db`: the index directories of every
  // signature not in `keep` go; how many.
  size_t cleanup(const db_meta& db, const std::vector<std::string>& keep);
  // A copy of this node is gone: its indexes are closed (view_reader::forget_copy removes the
  // directory they live in).
  void forget_copy(const std::string& copy);
  // This node's copy `shard` (range `range` of `db`) answering its part of a query, for this
  // node's coordinator or another node's; `done` runs once, on any thread.
  void copy_search(const db_meta& db, size_t range, const shard_handle& shard, const search_copy_request& req,
                   shard_copy::answer<search_copy_page> done);

 private:
  struct open_index {
    std::string path;
    std::mutex mu;  // one updater at a time; searches run beside it
    std::atomic<bool> updating{false};
    std::unique_ptr<text_index> index;
  };
  static constexpr size_t max_open = 64;  // index directories kept open; more are closed when idle
  result<std::shared_ptr<open_index>> index_of(const db_meta& db, size_t range, const search_index_def& def);
  // `q` with every range's copy on this node: the copies searched as one index, in one phase
  // (text_index::search of several); nullopt when a range is held only elsewhere, or its copy
  // here failed and it has others (the two phases then answer, or say why).
  std::optional<result<text_page>> query_here(const db_meta& db, search_copy_request req, const text_query& q);
  result<std::vector<search_copy_page>> pages_of(const db_meta& db, const search_copy_request& req,
                                                 const std::string& partition);
  status update(open_index& index, const shard_store& store, const search_target& t, const std::string& copy,
                uint64_t target, const std::function<bool()>& stop);
  void build(const db_meta& db, const search_target& t, const std::shared_ptr<open_index>& index,
             const shard_handle& shard, const std::string& copy, std::function<void(status)> done);
  void start_local(const db_meta& db, size_t range, const shard_handle& shard, const search_design& sd,
                   const search_copy_request& req, shard_copy::answer<search_copy_page> done);

  coordinator& coord_;
  js_pool& js_;
  std::string dir_;
  task_place tasks_;
  work_pool pool_;                          // index updates, as many at once as cores (and workers)
  index_cache<open_index> open_{max_open};  // by directory
  build_jobs builds_;                       // by database and signature
};

}  // namespace settee
