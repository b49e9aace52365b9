// view_store: one view index file (issue 31): for one shard copy and one design-document
// signature, the rows its views emitted, in CouchDB's collation order, and what each document
// emitted (a new revision replaces its rows). Storage takes no JSON (DESIGN.md): a row's key
// arrives as its collation sort key (node/collation) beside the key's and the value's JSON text,
// which are kept as given.
//
// Tables (storage/FORMAT.md "View index"): `meta` (signature, shard uuid, collator version, views,
// indexed seq, rows per view); `rows`, by a row's position: view (2 bytes), sort key, doc id
// (escaped: no 0x00), 0x00, emit order (4 bytes), which sorts as CouchDB orders a view (key, then
// doc id in bytes) and is free of prefixes. A position longer than an LMDB key (max_key) is kept
// in the bucket of the positions sharing its first max_key bytes, sorted within: scans stay in
// order whatever the keys' length. `ids`: a document's row positions (by storage/doc_key).
// Every apply() is one fsynced transaction: an index is never ahead of what it says it indexed.
// Not thread-safe for writers (one indexer per file); scans may run beside a writer.
#pragma once

#include <lmdb.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/error.hpp"
#include "storage/lmdb_env.hpp"

namespace settee {

struct view_row_in {
  std::string sort_key;  // collation::sort_key(key)
  std::string key_json, value_json;
};

// What one document emitted now, per view (in the design document's order); no rows at all: the
// document is gone from the index (deleted, or it emits nothing).
struct view_doc {
  std::string id;
  std::vector<std::vector<view_row_in>> views;
};

struct view_row {
  std::string id, key_json, value_json;
  // Its position in the index (view, key's sort key, id, emit order: FORMAT.md), whose byte order
  // is the view's order; empty on a row made by a reduce.
  std::string pos = {};
};

struct view_meta {
  std::string signature;   // the design document's views, hashed (the file's name too)
  std::string shard_uuid;  // the shard copy indexed
  std::string collator;    // collation::collator_version() the sort keys were made with
  uint32_t views = 0;
  uint64_t seq = 0;        // every change of the copy up to this seq is indexed
  uint64_t purge_seq = 0;  // every purge request of the copy up to this one is applied (issue 35)
};

// One end of a range in a view: the rows at the position of `sort_key` (with `doc_id`: from that
// document on, or up to it), included or not. Unset: the view's first or last row.
struct view_bound {
  bool set = false;
  std::string sort_key;
  std::optional<std::string> doc_id;
  bool inclusive = true;
};

struct view_scan {
  uint32_t view = 0;
  view_bound low, high;  // low <= rows <= high in collation order, whatever the direction
  bool descending = false;
  uint64_t skip = 0, limit = std::numeric_limits<uint64_t>::max();
};

// A view's reduce kept per counting block (a partial reduction, as JSON text the caller makes:
// storage reads none): kept beside the block's count, dropped when the block's rows change, made
// again by settle().
class block_reducer {
 public:
  virtual ~block_reducer() = default;
  // Whether view `view` keeps partials.
  virtual bool keeps(uint32_t view) const = 0;
  // The partial of each block's rows (in order) of view `view`; "" keeps none (its rows are read
  // instead). Many blocks at once: a JavaScript reduce takes them in one exchange.
  virtual std::vector<std::string> reduce(uint32_t view, const std::vector<std::vector<view_row>>& blocks) const = 0;
};

// One group of a grouped reduce (view_store::reduce_groups): its rows read, and what stands for the
// rows of its whole blocks left unread.
struct view_group {
  std::string id;                     // the bytes of its rows' sort keys that name it (group_length's)
  std::string first_key;              // the key JSON of its first row, in the view's order
  std::string last_key;               // and of its last
  uint64_t counted = 0;               // rows of whole blocks left unread (block_use::counts)
  std::vector<std::string> partials;  // the partials of whole blocks left unread (block_use::partials)
  std::vector<view_row> rows;         // the rest, in order
};

// What a grouped reduce takes for a counting block wholly inside one group: its rows, its count
// (a _count) or its stored partial (a _sum or _stats: its rows while it has none).
enum class block_use { rows, counts, partials };

class view_store {
 public:
  // Opens (creates) the index at `path`. A file made for another signature, shard copy, collator or
  // number of views is emptied first (its seq back to 0): the caller indexes from the start.
  static result<std::unique_ptr<view_store>> open(const std::string& path, const view_meta& expected);
  ~view_store();
  view_store(const view_store&) = delete;
  view_store& operator=(const view_store&) = delete;

  view_meta meta() const;                                                // may be read beside the writer
  uint64_t seq() const { return seq_.load(std::memory_order_acquire); }  // meta().seq, without copies
  // Replaces the rows of each document of `docs` with what it emits now, and records `seq` as
  // indexed: one transaction, fsynced. With `reducer`, the blocks changed since the last settle
  // get their partials in the same transaction (pass it on the last batch of an update).
  // With `purge_seq`, records it as the copy's purge requests applied (the same transaction).
  status apply(const std::vector<view_doc>& docs, uint64_t seq, const block_reducer* reducer = nullptr,
               std::optional<uint64_t> purge_seq = std::nullopt);
  uint64_t purge_seq() const { return purge_seq_.load(std::memory_order_acquire); }
  // Empties the index (seq 0: it is built again from the start), recording `purge_seq` as applied.
  status clear(uint64_t purge_seq);
  // The partials of the blocks changed since the last settle, made (nothing to do: no write).
  status settle(const block_reducer& reducer);
  // The range of `s` (direction, skip and limit aside) as the partials of the blocks wholly
  // inside it and the rows of the others (in order): what reduces it without reading every row.
  status reduce_range(const view_scan& s, std::vector<std::string>& partials, std::vector<view_row>& rows) const;
  // The range of `s` (direction, skip and limit aside) cut into groups, in the view's order: each
  // row's group is the first group_length(sort key) bytes of its sort key (npos: a malformed key).
  // A block wholly inside one group (its start and its last row in the group and in range) is
  // taken as `use` says; the rows of the others are read. At most `max_groups` groups, the first
  // ones. Costs the range's blocks plus, per group edge, a seek, and a block's rows when no block
  // edge falls on it (blocks are cut at key changes where they can: split_block).
  // With `fold`, the rows read of a group in one block are reduced by it into one more partial
  // (kept as rows when it makes none).
  status reduce_groups(const view_scan& s, const std::function<size_t(std::string_view)>& group_length, block_use use,
                       uint64_t max_groups, std::vector<view_group>& out, const block_reducer* fold = nullptr) const;
  // The rows of `s`, after `skip`, at most `limit`; `total`: the view's rows (CouchDB's total_rows).
  result<std::vector<view_row>> scan(const view_scan& s, uint64_t* total = nullptr) const;
  // How many rows `s` holds (skip and limit aside), without reading them out.
  result<uint64_t> count(const view_scan& s) const;

  // The file's size, and the bytes of its pages in use (CouchDB's sizes.disk and sizes.active).
  uint64_t disk_size() const;
  uint64_t active_size() const;

  // A compacted copy of the index, as committed now, written to the new file `to` (fsynced): what
  // replaces this file once the owner closed it (POST /db/_compact/ddoc).
  status compact_to(const std::string& to) const { return lmdb::compact_copy(env_, to); }

  static constexpr size_t max_key = 480;  // an LMDB key holds at most 511 bytes

 private:
  view_store() = default;
  status reset(MDB_txn* t, const view_meta& m);
  // A file whose partials were made by an older rule (meta `partials`): every block marked dirty,
  // to be reduced by the next settle.
  status mark_all_dirty_once(MDB_txn* t);
  // The rows in positions [low, high) in `s`'s direction, after its skip, up to its limit, into
  // `out`; with `counted` set, only counted (skip and limit aside).
  status walk(MDB_txn* t, const std::string& low, const std::string& high, const view_scan& s, uint64_t* counted,
              std::vector<view_row>& out) const;
  // Rows of `view` at positions before `pos`: the counting blocks before it, then at most one
  // block's rows.
  result<uint64_t> rank(MDB_txn* t, uint32_t view, const std::string& pos) const;
  status settle_in(MDB_txn* t, const block_reducer& reducer);
  // A reduce_groups walk: how it groups, what it takes of whole blocks, its range's positions
  // [low, high) and its view's end; the group and partial of the block last looked at.
  struct group_walk {
    const std::function<size_t(std::string_view)>& group_length;
    block_use use;
    std::string low, high, end;
    const block_reducer* fold = nullptr;
    uint32_t view = 0;
    std::string id = {}, partial = {};
    std::vector<view_row> run = {};  // rows of the last group read in this block, to be folded
  };
  // Puts w.run into out's last group: folded into a partial, else as rows.
  static void fold_run(group_walk& w, std::vector<view_group>& out);
  // Whether the block [from, next) lies wholly inside one group of `w`'s range and can be taken
  // whole (with block_use::partials: it has its partial); its group and partial into `w`.
  // The rows at positions [low, high) put in their groups of `w` after out's last (counted with
  // block_use::counts); `full` set when a group beyond max_groups begins.
  status group_rows(MDB_txn* t, group_walk& w, const std::string& low, const std::string& high, uint64_t max_groups,
                    std::vector<view_group>& out, bool& full) const;
  // `last_key`: the key JSON of the block's last row when the group ends in it (else empty).
  status whole_group_block(MDB_txn* t, group_walk& w, const std::string& from, const std::string& next, bool& whole,
                           std::string& last_key) const;

  std::string path_;
  MDB_env* env_ = nullptr;
  MDB_dbi meta_ = 0, rows_ = 0, ids_ = 0, blocks_ = 0, partials_ = 0, dirty_ = 0;
  view_meta meta_cache_;          // as opened (its seq is seq_)
  std::atomic<uint64_t> seq_{0};  // scans and meta() read it beside the writer
  std::atomic<uint64_t> purge_seq_{0};
};

}  // namespace settee
