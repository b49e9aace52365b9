// index_readers: what answers a copy's reads of its secondary indexes (views, JSON indexes,
// full-text indexes). The
// indexes live beside the copy (view files next to its file, JSON index rows in its own
// transactions) and are kept by actors/view_reader and actors/find_reader, not by local_copy, which
// asks them through this interface. So this node's copies and other nodes' answer the same calls
// (shard_copy::start_view, start_mango), the coordinator's merges never ask where a copy lives,
// and a fake copy in a unit test drives them.
#pragma once
#include <cstddef>

#include "actors/shard_copy.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

struct db_meta;

class index_readers {
 public:
  virtual ~index_readers() = default;
  // Copy `shard` (range `range` of `db`) answering a view request; `done` runs once, on any thread.
  virtual void view_rows(const db_meta& db, size_t range, const shard_handle& shard, const view_copy_request& req,
                         shard_copy::answer<view_page> done) = 0;
  // The same for a _find on a JSON index.
  virtual void mango_rows(const db_meta& db, size_t range, const shard_handle& shard, const mango_copy_request& req,
                          shard_copy::answer<mango_page> done) = 0;
  // The same for a full-text query (issue 54); a node without search answers not_implemented.
  virtual void search_rows(const db_meta& db, size_t range, const shard_handle& shard, const search_copy_request& req,
                           shard_copy::answer<search_copy_page> done) {
    (void)db, (void)range, (void)shard, (void)req;
    done(status{errc::not_implemented, "this node has no full-text search"});
  }
};

}  // namespace settee
