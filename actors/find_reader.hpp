// find_reader: the shard copies' side of a _find on a JSON index (issue 32). A copy keeps the
// index's rows in its own file, written in the transaction of each document write
// (storage/json_index.hpp), so an index never lags its copy. A copy asked about an index it does
// not keep yet starts to keep it (write_op index_define) and builds it for the documents it holds
// already as a job of the node's runner (lane "indexer", an `indexer` row in _active_tasks with
// its progress; each step one transaction over 1,000 documents); until built, the copy answers
// from a scan of its documents, in the index's order. A copy answers the rows of the query's key
// ranges after the position it is given, whose documents match the selector, up to the limit.
// Thread-safety: every method may be called from any thread.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/jobs.hpp"
#include "actors/shard_copy.hpp"
#include "node/clock.hpp"
#include "query/mango_index.hpp"

namespace settee {

class change_notifier;

class find_reader {
 public:
  // `notifier` (may be null) tells when a commit on this node wrote a design document.
  find_reader(coordinator& coord, job_runner& jobs, std::shared_ptr<const mango_keys> keys,
              change_notifier* notifier = nullptr, std::chrono::milliseconds recheck = std::chrono::seconds(1));

  // The JSON indexes of `db`'s design documents as `load` reads them, kept until a commit on this
  // node writes a design document, or for at most `recheck` (one written through another node).
  using index_list = std::shared_ptr<const std::vector<query_index>>;
  result<index_list> indexes(const db_meta& db, const std::function<result<std::vector<query_index>>()>& load);

  // One copy of each range answering `req`; `after[r]` (when given) is range r's position to go on
  // after. The pages in the order of db.ranges.
  // `only` (a partition's query): that range alone is asked, the others answer empty pages.
  result<std::vector<mango_page>> pages(const db_meta& db, const mango_copy_request& req,
                                        const std::vector<std::string>& after,
                                        std::optional<size_t> only = std::nullopt);
  // This node's copy `shard` (range `range` of `db`) answering `req`, for this node's coordinator or
  // another node's (index_readers::mango_rows, through local_copy::start_mango); `done` runs once.
  void copy_rows(const db_meta& db, size_t range, const shard_handle& shard, const mango_copy_request& req,
                 shard_copy::answer<mango_page> done);
  // This node's copies of `db` stop keeping the indexes whose signatures are not in `keep` (their
  // rows go); how many were dropped.
  size_t cleanup(const db_meta& db, const std::set<std::string>& keep);

  static constexpr size_t docs_per_step = 1000;

 private:
  // This node's copy `shard` (named `copy_name`) answering `req`.
  result<mango_page> answer(const std::string& copy_name, const shard_handle& shard, const mango_copy_request& req);
  // The copy keeps index `req.signature` from now on (an index_define commit); as it keeps it.
  result<json_index_def> define(const shard_handle& shard, const mango_copy_request& req);
  // Queues the build of `def` on the copy unless it is built or queued.
  void start_build(const std::string& copy_name, const shard_handle& shard, const json_index_def& def);

  coordinator& coord_;
  job_runner& jobs_;
  std::shared_ptr<const mango_keys> keys_;
  change_notifier* notifier_;
  std::chrono::milliseconds recheck_;
  struct cached {
    index_list list;
    uint64_t design_version = 0;
    mono::time_point loaded{};
  };
  std::mutex mu_;
  std::map<std::string, cached> cache_;  // by db_meta::key (a database's incarnation)
};

}  // namespace settee
