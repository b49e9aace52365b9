// shard_copy: one copy of one shard range, wherever it lives. The coordinator (coordinator.hpp)
// is written once against this interface; local_copy serves this node's copy from its LMDB file
// and replica actor, remote_copy asks another node's over the typed RPC (remote_shards.hpp).
// Documents travel as data (trees and stored bodies), never as rendered HTTP answers.
// Thread-safety: a copy may be used from any thread except the RPC loop's; the calls block up to
// the copy's deadline, except update_docs, which answers through its callback.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "search/search_query.hpp"
#include "storage/shard_store.hpp"
#include "storage/time_seq.hpp"
#include "storage/view_store.hpp"

namespace settee {

// One copy of a range as its header describes it.
struct shard_summary {
  std::string uuid;
  uint64_t update_seq = 0;
  uint64_t doc_count = 0;
  uint64_t doc_del_count = 0;
  uint64_t external_size = 0;
  uint64_t file_size = 0;
  uint32_t revs_limit = 0;  // 0: the copy did not say (a release before 0.3)
  uint64_t purge_seq = 0;   // purge requests it applied (0 also from a release before 0.4)
};

// A copy's purge requests (storage/purge_log.hpp) after some purge seq, in order.
struct purge_page {
  std::vector<purge_info> infos;
  uint64_t purge_seq = 0;  // the copy's newest
  uint64_t oldest = 0;     // the oldest it still keeps (0: none)
  uint32_t limit = 1000;   // its purged_infos_limit
};

// A page of one copy's changes feed; `doc` is the rendered winning revision when asked for.
struct change_row {
  change_entry e;
  std::string doc;
  bool hidden = false;  // changes_read_options::page_filter did not want it (the position passes it)
};
struct changes_page {
  std::vector<change_row> rows;
  uint64_t pending = 0;     // a count's answer (limit 0); release 0.3 also set it on pages of rows
  uint64_t skipped_to = 0;  // not_before: the rows start after this seq (0: nothing skipped)
};
struct changes_request {
  uint64_t since = 0;    // ascending: after this seq; descending: before it (0 = from the end)
  uint32_t limit = 512;  // 0: no rows, only how many changes are left (changes_page::pending)
  bool descending = false;
  bool with_docs = false;
  bool conflicts = false;  // with_docs: add _conflicts
  // with_docs: attachments with their bytes (attachments=true, read from this copy's own blobs),
  // stubs with encoding and encoded_length (att_encoding_info=true).
  bool attachments = false, att_encoding_info = false;
  int64_t not_before = 0;  // ascending: first skip the changes committed before this time (0: none)
};

// Where a feed that had read another copy up to a seq continues on this one (spec 11.1).
struct resolved_since {
  std::string uuid;         // of the copy that answered
  uint64_t update_seq = 0;  // its update seq now
  uint64_t seq = 0;         // where to continue
  enum class how : uint8_t { exact, translated, rewound } resolution = how::exact;
};

// One copy's part of an _all_docs request: rows in id order within [start, end] (JSON keys as text,
// "" = unbounded), at most max_rows; or, by_keys, one row per key (found or not).
struct all_docs_request {
  std::string start, end;
  bool descending = false, inclusive_end = true, include_docs = false, conflicts = false;
  bool attachments = false, att_encoding_info = false;  // include_docs: as changes_request's
  uint64_t max_rows = UINT64_MAX;
  bool by_keys = false;
  std::vector<std::string> keys;
  bool with_deleted = false;  // a range's tombstones listed too (deleted, no doc): a partition's info
};
struct all_docs_row {
  std::string id;
  std::string rev;
  bool deleted = false;
  bool found = true;
  std::string doc;  // include_docs: the rendered winner ("" = null)
};
struct all_docs_page {
  std::vector<all_docs_row> rows;
  uint64_t before = 0;  // live documents before the start key (CouchDB's offset)
  uint64_t doc_count = 0;
};

// One copy's part of a view query (issue 31): the rows of `scan` (skip ignored) from the copy's
// index of design document `ddoc_id` at `rev` (its JSON in `ddoc`; `signature` names the index
// the coordinator expects: a copy that computes another refuses), brought up to date first unless
// `update` is false.
struct design_views;
struct view_copy_request {
  std::string ddoc_id, rev, ddoc, signature;
  // In-process only (never sent): the design document as the asker parsed it, valid during the
  // call; a copy on another node parses `ddoc` itself.
  const design_views* parsed = nullptr;
  view_scan scan;
  bool update = true;
  bool lazy = false;         // not updated first, but after the answer (update=lazy)
  bool count_before = true;  // count the rows before the scan's start in its direction
  bool count_range = false;  // count the rows in the scan's range (view_page::counted)
  // A built-in (view_reduce.hpp's builtin_reduce: sum or stats) reducing the range to one value
  // here (view_page::reduction; counted is set too).
  uint8_t reduce = 0;
  // Grouped: the range's rows grouped (group_level as view_request's: -1 exact) and each group
  // reduced here by `reduce` (a built-in, or js_reduce_code: the view's JavaScript function);
  // the page's rows are the groups (key the group's, value its reduction), at most scan.limit
  // groups. A group may take several consecutive rows (since 0.5, a JavaScript reduce's
  // partials): the asker re-reduces a group's values, as it does those of several copies. Each
  // row's `pos` is its group key's sort key (empty from 0.4, and for a partition).
  bool grouped = false;
  int64_t group_level = 0;
  bool describe = false;  // the page's uuid and sizes too (_info, update_seq)
  // A partitioned view's partition: the scan's bounds are within it (actors/view_index.hpp
  // partition_scan), total and before count its rows only. Empty: the whole view.
  std::string partition;
  static constexpr uint8_t js_reduce_code = 255;
};
struct view_page {
  std::vector<view_row> rows;
  uint64_t total = 0;   // the view's rows in this copy (CouchDB's total_rows, summed)
  uint64_t before = 0;  // count_before: rows before the start (CouchDB's offset, summed)
  // The index as the answer found it (for _design/d/_info): the copy's seq it has indexed, the
  // copy's update seq, whether an update is running; with describe, its file's size and the
  // bytes in use.
  uint64_t indexed_seq = 0, copy_seq = 0, disk_size = 0, active_size = 0;
  uint64_t purge_seq = 0;  // the copy's purge requests the index applied
  bool updating = false;
  bool compacting = false;  // a compaction of the index is queued or running
  std::string uuid;         // the copy's shard uuid
  std::string node;         // the node whose copy answered (set by the asker, not sent)
  uint64_t counted = 0;     // count_range or reduce: the rows in the range
  std::string reduction;    // reduce: the range's reduction (JSON), when it has rows
};

// One copy's part of a _find on a JSON index (issue 32): the index (its signature and definition:
// a copy that does not keep it yet starts to, and builds it in the background), the rows of its
// key ranges (positions, storage/json_index.hpp) after `after` in the query's direction, whose
// documents match `selector` (JSON), at most `limit` (0: none read, the index only made known).
// An index not built yet is answered from a scan of the copy's documents, in the same order.
struct mango_copy_request {
  std::string signature, definition, selector;
  std::vector<std::pair<std::string, std::string>> ranges;  // [low, high) positions, in order
  bool descending = false;
  std::string after;  // a position already answered ("" = none)
  uint64_t limit = 25;
  bool conflicts = false;
  bool covered = false;  // every row in the ranges matches: the selector is not evaluated
  // No rows: how many the ranges hold (mango_page::estimated), counting at most estimate_cap.
  bool estimate = false;
  static constexpr uint64_t estimate_cap = 10000;
};
struct mango_row {
  std::string pos, doc;  // the row's position in the index, the document rendered
};
struct mango_page {
  std::vector<mango_row> rows;
  uint64_t keys_examined = 0, docs_examined = 0;
  bool built = false;      // answered from the index (else from a scan)
  uint64_t estimated = 0;  // estimate: the rows in the ranges (capped); not built: unknown (UINT64_MAX)
};

// A copy's time-seq and its update seq (for the histogram).
struct time_seq_state {
  time_seq::tseq bins;
  uint64_t update_seq = 0;
};

// Which stored bodies a read brings: none (trees only), the leaves', or every one the copy still
// has (older revisions stay until compaction; only a read naming a revision asks for them).
enum class doc_bodies : uint8_t { none, leaves, all };

// A document as one copy holds it: its rev tree and the bodies asked for.
struct doc_copy {
  std::string id;
  bool found = false;
  doc_info info;                                       // found: seq and tree
  std::vector<std::pair<rev_id, std::string>> bodies;  // asked with bodies: (rev, stored JSON body)
  // The stored body of `rev`, or null.
  const std::string* body(const rev_id& rev) const {
    for (auto& [r, b] : bodies)
      if (r == rev) return &b;
    return nullptr;
  }
};

class shard_copy {
 public:
  virtual ~shard_copy() = default;
  // The node holding this copy, and whether it is this node.
  virtual const std::string& node() const = 0;
  virtual bool local() const = 0;
  // Whether its writes can make SHA-256 revisions (doc_update::hash; a release before 0.5 cannot).
  virtual bool hashes_sha256() const { return false; }

  virtual result<shard_summary> summary() = 0;
  virtual result<changes_page> changes(const changes_request& req) = 0;
  // Resolves a position (copy `uuid_prefix` at `seq`; empty prefix: seq 0) on this copy.
  virtual result<resolved_since> resolve_since(const std::string& uuid_prefix, uint64_t seq) = 0;
  virtual result<all_docs_page> all_docs(const all_docs_request& req) = 0;
  // With `reset`, empties the bins first (committed before the answer). errc::not_implemented from
  // a release without time-seq.
  virtual result<time_seq_state> time_seq(bool reset) = 0;

  // The same reads, started: a coordinator starts one on a copy of every range and waits for all
  // (coordinator::each_range). `done` runs exactly once, on any thread; another node's copy
  // returns at once and answers from the RPC thread (`done` must not block), this node's answers
  // on the caller's thread before returning (the defaults: the reads above).
  template <class T>
  using answer = std::function<void(result<T>)>;
  virtual void start_summary(answer<shard_summary> done) { done(summary()); }
  virtual void start_changes(const changes_request& req, answer<changes_page> done) { done(changes(req)); }
  virtual void start_resolve_since(const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) {
    done(resolve_since(uuid_prefix, seq));
  }
  virtual void start_all_docs(const all_docs_request& req, answer<all_docs_page> done) { done(all_docs(req)); }
  virtual void start_time_seq(bool reset, answer<time_seq_state> done) { done(time_seq(reset)); }
  // The copy's part of a view query (its view index, beside it: actors/index_readers.hpp).
  virtual void start_view(const view_copy_request&, answer<view_page> done) {
    done(status{errc::not_implemented, "node " + node() + " reads no views"});
  }
  // The copy's part of a _find on a JSON index.
  virtual void start_mango(const mango_copy_request&, answer<mango_page> done) {
    done(status{errc::not_implemented, "node " + node() + " reads no JSON indexes"});
  }
  // The copy's part of a full-text query (its search index, beside it: actors/index_readers.hpp).
  virtual void start_search(const search_copy_request&, answer<search_copy_page> done) {
    done(status{errc::not_implemented, "node " + node() + " has no full-text search"});
  }
  // One entry per id, in order (found or not), with the stored bodies `bodies` asks for.
  using docs_done = std::function<void(result<std::vector<doc_copy>>)>;
  virtual void open_docs(const std::vector<std::string>& ids, doc_bodies bodies, docs_done done) = 0;
  // _local documents: read (nullopt: missing), write (returns the new rev, 0 after a delete), list.
  virtual result<std::optional<local_doc>> open_local(const std::string& id) = 0;
  virtual result<uint64_t> write_local(const local_update& u) = 0;
  virtual result<std::vector<local_doc>> list_local() = 0;
  virtual status set_revs_limit(uint32_t limit) = 0;
  // Writes `docs` (each new_edits or not, as it says). `done` runs exactly once, on any thread:
  // one result per document once the copy committed, or the error (errc::unavailable when it
  // cannot be reached).
  using write_done = std::function<void(result<std::vector<doc_result>>)>;
  virtual void update_docs(std::vector<doc_update> docs, write_done done) = 0;
  // At most `length` stored bytes of an attachment's blob from `offset` (fewer at its end), by blob
  // key (storage/blob_store.hpp); errc::not_found when this copy does not hold it.
  virtual result<std::string> read_blob(const std::string& key, uint64_t offset, uint64_t length) = 0;
  // Stages a piece of a large blob (blob_store::stage), committed before the answer: true when the
  // copy holds the whole blob already (the sender stops). drop_staged forgets a staged blob.
  virtual result<bool> stage_blob(const std::string& key, uint64_t offset, const std::string& piece) = 0;
  virtual status drop_staged(const std::string& key) = 0;

  // Purges (issue 35): applies purge requests (uuid, id, revisions) on this copy, committed
  // before `done` runs (once, on any thread): per request, the leaves it removed here. A request
  // this copy applied already removes nothing. errc::not_implemented from a release without purge.
  using purge_done = std::function<void(result<std::vector<std::vector<rev_id>>>)>;
  virtual void purge_docs(std::vector<purge_info> reqs, purge_done done) {
    (void)reqs;
    done(status{errc::not_implemented, "node " + node() + " runs a release without purge"});
  }
  // At most `limit` of this copy's purge requests after `since`, with its purge seq and limit.
  virtual result<purge_page> purge_infos(uint64_t since, uint32_t limit) {
    (void)since;
    (void)limit;
    return status{errc::not_implemented, "node " + node() + " runs a release without purge"};
  }
  virtual status set_purged_infos_limit(uint32_t limit) {
    (void)limit;
    return {errc::not_implemented, "node " + node() + " runs a release without purge"};
  }
};

using copy_ptr = std::shared_ptr<shard_copy>;

}  // namespace settee
