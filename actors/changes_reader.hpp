// changes_reader: one _changes request's position over the shard ranges of a database, and the
// changes it reads. Each range is read in seq order (its by_seq index) from one copy; ranges are
// interleaved by commit time, so changes come out in the order they were committed, to the
// second. After each change, token() is the clustered token of the position right after it, so
// resuming from any change's token (or the last) misses nothing and repeats nothing. Every range's
// start and every refill of the ranges that ran dry are asked of their copies all at once
// (coordinator::each_range). Changes are data; http/ renders them.
// Not thread-safe: one reader belongs to one request.
#pragma once
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "actors/clustered_seq.hpp"
#include "actors/coordinator.hpp"

namespace settee {

struct changes_read_options {
  bool descending = false;
  bool with_docs = false;  // each change carries its rendered winning revision (change_row::doc)
  bool conflicts = false;  // with_docs: add _conflicts
  bool attachments = false, att_encoding_info = false;  // with_docs: attachments' bytes / encoding
  // Changes read from a range at a time (a request for fewer rows than that reads fewer).
  uint32_t page_rows = 512;
  // Which changes the request wants (none: all); it may narrow the row's leaf revisions to those it
  // wants (a selector over every leaf). An error stops the reader there (error()).
  std::function<result<bool>(change_row&)> filter;
  // The same for a whole page of a range's changes at once (a JavaScript filter: one exchange with
  // a worker per page): one flag per row.
  std::function<result<std::vector<bool>>(std::vector<change_row>&)> page_filter;
  // since=<time>: skip each range's leading changes committed before the time (false: whole bins,
  // CouchDB's time_precision=bin).
  bool time_exact = true;
  // Set: the feed of this one shard (its range index; spec 11.3): read from the shard's first copy
  // in the map's order that answers (so every node reads the same numbering), positions and seqs
  // are that copy's plain integers.
  std::optional<size_t> shard;
  // Set: the feed of this closed (split) shard (spec 11.3): its changes after `since` up to its
  // end_seq, read from the open shards that descend from it on its first copy's node (they
  // continue that copy's numbering), in seq order; it ends with shard_closed and the children.
  std::optional<shard_info> closed;
};

class changes_reader {
 public:
  changes_reader(coordinator& coord, const db_meta& db, changes_read_options opts);

  // Positions the reader at `since` ("0", "now", a time or a token). Errors: malformed (400), shards.
  status start(const std::string& since);
  // After start(): the feed ends at `until` (a settee extension): a time (the changes committed up
  // to and in that second, exact to the second), "now" (each range's update seq at start()), a
  // token (each range's position in it, resolved onto the copy this reader reads), or for one
  // shard's feed a seq of the shard. Errors (400): malformed, a descending feed, a token whose
  // position on a range cannot be placed exactly on the copy read.
  status set_until(const std::string& until);
  // True once every range passed `until`: nothing more will come. `now_s` is the node's time: a
  // range that is caught up has passed a time bound once that second is over.
  bool finished(int64_t now_s) const;
  // A bound of seqs as the token that names it ("" unless every range has one): "now" fixed.
  std::string until_token() const;
  // The time bound, if `until` is a time.
  std::optional<int64_t> until_time() const { return until_time_; }
  // The next change the filter wants, or false when there is nothing new right now (or error() is
  // set), or when it passed over `skip_budget` changes the filter did not want (then paused() is
  // true: call again, after letting the server see to its clients, so that a filter that matches
  // nothing never holds a worker for a whole database, nor after its client left).
  // A range read to its end is read again only after a call that returned false.
  bool next(change_row& row);
  bool paused() const { return paused_; }
  static constexpr size_t skip_budget = 2000;
  // What stopped the reader: a change or document that could not be read (logged with its shard
  // and key), or the filter's error. It never skips past it: the response must end as failed.
  const status& error() const { return error_; }
  // The token of the current position (last_seq), and as JSON (a string; a number for one shard).
  std::string token() const;
  std::string token_json() const;
  // Changes remaining after the current position, summed over ranges.
  uint64_t pending() const;
  // Identifies the state the reader started from (each range's uuid and update seq): two requests
  // with the same parameters and the same tag return the same changes.
  std::string state_tag() const;
  // False once the database was deleted (or re-created): a live feed should end.
  bool alive() const;
  // {"<range>":"exact"|"translated"|"rewound",...} when `since` named copies this node could not
  // continue exactly; "" when every range continues exactly (or since was 0/now).
  std::string since_resolution() const;
  // When the reader has read its shard to the end of a split: ',"shard_closed":true,"children":[..]'
  // (spec 11.3), for the closing object; "" otherwise (or for the whole database's feed).
  std::string closed_ending() const;
  // True when some range is read from another node's copy (live feeds then poll it: its commits
  // do not reach this node's notifier).
  bool has_remote() const;

 private:
  // One range, read in pages from one of its copies (this node's when it holds one). A page holds
  // no snapshot once read: a reader that waits pins nothing in the file.
  struct shard_pos {
    shard_range range;
    mutable copy_ptr copy;        // null while parked
    mutable bool parked = false;  // this node's copy let go while the feed waits (park)
    std::string uuid_prefix;
    uint64_t seq = 0;                   // last change consumed; descending: 0 until the first row is read
    uint64_t top = 0;                   // update_seq when the reader started
    std::deque<change_row> buffer;      // the rest of the last page
    bool read_to_end = false;           // the last page reached the end (descending: the start)
    bool dry = false;                   // read to its end since next() last returned false
    std::optional<int64_t> not_before;  // since=<time>, exact: skip leading changes older than this
    std::optional<uint64_t> bound;      // a closed shard's feed: nothing after its end_seq
    std::optional<uint64_t> until;      // set_until: nothing after this seq
    bool passed_until = false;          // its next change is past `until` (or the time bound)
  };
  // Lets go of this node's copies when next() found nothing (a live feed waits): a waiting feed
  // holds no shard file open, so the registry may close it (max_dbs_open), and a thousand users'
  // idle feeds pin no thousand files (each an LMDB map of map_size_mb of address space: ~2,000 fill
  // it). unpark() takes them again from the registry (reopening a closed file) before a read; a
  // copy that cannot be opened answers its error to that read.
  void park();
  void unpark() const;
  // Whether change `e` of range `p` lies past the request's `until`.
  bool past_until(const shard_pos& p, const change_entry& e) const;
  // A closed shard's feed has read every change up to its end_seq.
  bool closed_finished() const;
  // start() of a closed shard's feed at `seq` of its first copy.
  status start_closed_at(uint64_t seq);
  // start() from a token's entries (none: since=0; `now`: at each range's end).
  status start_at_token(const std::vector<seq_entry>& from, bool now);
  // Reads the next page of every range in `which`, all at once.
  void refill(const std::vector<size_t>& which);
  // The request of range i's next page; false when it has nothing more to read.
  bool next_page(size_t i, changes_request& req) const;
  // Takes range i's page; false when it adds nothing to the buffer.
  bool take_page(size_t i, const changes_request& req, result<changes_page>& page);
  // The ranges the reader reads (every one, or opts_.shard).
  std::vector<size_t> ranges() const;
  std::string preferred_copy(size_t range, const seq_entry* given) const;
  // Resolves (prefix, seq) of each range in `asks` on one of its copies, all ranges at once,
  // preferring `prefer`'s node: sets each shard_pos's copy, uuid prefix and top.
  struct resolve_ask {
    std::string prefer, prefix;
    uint64_t seq = 0;
  };
  result<std::vector<resolved_since>> resolve_all(const std::vector<resolve_ask>& asks);
  // The token entry of a closed ancestor of open range `i` whose position carries over to it
  // (the copy the split made on the node whose copy the token names, wherever it moved since; the
  // catalog's lineage names that copy's uuid), with `node` where that copy is now; if any.
  std::optional<seq_entry> ancestor_position(const std::vector<seq_entry>& from, size_t i) const;
  // The uuid prefixes of the copies the copy `e` names was split from: its parent's copy on the
  // node it was made on, that copy's parent's, ... (nearest first), as long as each child's uuid
  // is the one its parent's split derived (split_child_uuid): a token of another incarnation with
  // the same ranges gets none.
  std::vector<std::string> ancestor_prefixes(const seq_entry& e) const;
  // Where a range resolved to `r` on p.copy for token entry `e` continues when `r` rewound: a
  // copy made by a split holds the checkpoints its parent copy had (copied at the split) and
  // continues its numbering, so a position on another copy translates through those of the
  // copies `e`'s copy descends from until the children's own first internal replication.
  void translate_through_ancestors(const shard_pos& p, const seq_entry& e, resolved_since& r) const;
  // start() of a one-shard feed at a plain seq of its first copy ("0", "now" and times as usual).
  status start_shard_at(uint64_t seq);
  // since=<time>: each range resumes at its copy's time-seq answer for `t`.
  status start_at_time(int64_t t);
  void make_token_builder();

  coordinator& coord_;
  db_meta db_;
  changes_read_options opts_;
  std::vector<shard_pos> shards_;
  std::unique_ptr<seq_token_builder> tokens_;
  std::vector<std::pair<std::string, resolved_since::how>> resolutions_;
  uint64_t closed_seq_ = 0;            // a closed shard's feed: its position (rows come in seq order)
  std::optional<int64_t> until_time_;  // set_until with a time
  bool paused_ = false;
  status error_;
};

}  // namespace settee
