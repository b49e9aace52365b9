// changes_feed: the rows of one _changes request as JSON text, over a changes_reader (the
// coordinator's reader of the ranges: actors/changes_reader.hpp): the request's filter (doc_ids,
// _design, _selector) and its row shape (style, include_docs, seq_interval).
// Not thread-safe: one feed belongs to one request.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "actors/changes_reader.hpp"
#include "query/mango_selector.hpp"

namespace settee {

struct changes_options {
  bool descending = false;
  bool all_docs = false;  // style=all_docs
  bool include_docs = false;
  bool conflicts = false;
  bool attachments = false, att_encoding_info = false;  // include_docs: attachments' bytes / encoding
  int64_t seq_interval = 0;                             // > 0: only every Nth row carries a real seq
  // The request's limit, as fabric_view_changes counts rows down from it for seq_interval (CouchDB's
  // default #changes_args.limit when none is given).
  int64_t limit_for_interval = 1000000000000000;
  enum class filter { none, doc_ids, design, selector, javascript } filter_kind = filter::none;
  // filter::javascript: a design document's filter (or view's map) over a page of changes at once
  // (with all_docs, over every leaf: it narrows a row's leaf revisions to those it wants).
  std::function<result<std::vector<bool>>(std::vector<change_row>&)> page_filter;
  std::set<std::string> doc_ids;
  std::shared_ptr<const mango_selector> selector;  // filter::selector: the winner (all_docs: each leaf)
  uint32_t page_rows = 512;                        // changes_read_options::page_rows
  bool time_exact = true;                          // changes_read_options::time_exact
  std::optional<size_t> shard;                     // changes_read_options::shard
  std::optional<shard_info> closed;                // changes_read_options::closed
};

// The documents of `row`'s leaf revisions as stored now, each as (rev, JSON text): what a filter over
// every leaf (style=all_docs, couch_changes:filter's open_revs) is given. A leaf gone since the row
// was read (the document changed again) is left out: its later change stands for it.
result<std::vector<std::pair<std::string, std::string>>> leaf_docs(coordinator& coord, const db_meta& db,
                                                                   const change_row& row);

class changes_feed {
 public:
  changes_feed(coordinator& coord, const db_meta& db, changes_options opts);

  status start(const std::string& since) { return reader_.start(since); }
  status set_until(const std::string& until) { return reader_.set_until(until); }
  bool finished(int64_t now_s) const { return reader_.finished(now_s); }
  std::optional<int64_t> until_time() const { return reader_.until_time(); }
  std::string until_token() const { return reader_.until_token(); }
  // The next row as JSON text; otherwise as changes_reader::next.
  bool next(std::string& row);
  bool paused() const { return reader_.paused(); }
  const status& error() const { return reader_.error(); }
  std::string token() const { return reader_.token(); }
  std::string token_json() const { return reader_.token_json(); }
  uint64_t pending() const { return reader_.pending(); }
  uint64_t rows_emitted() const { return emitted_; }
  std::string state_tag() const { return reader_.state_tag(); }
  bool alive() const { return reader_.alive(); }
  std::string since_resolution() const { return reader_.since_resolution(); }
  std::string closed_ending() const { return reader_.closed_ending(); }
  bool has_remote() const { return reader_.has_remote(); }

 private:
  std::string render(const change_row& r);

  changes_options opts_;
  changes_reader reader_;
  uint64_t emitted_ = 0;
};

}  // namespace settee
