// node_updates: one node's part of `_db_updates` (docs/architecture.md section 28): the database
// events of its catalog file (`created`, `deleted`; storage/db_events.hpp) and the rows of its
// update log (`updated`; actors/update_log.hpp), read from a position in commit-time order
// (catalog events first within a second). Reads in pages; holds no snapshot between calls, so a
// feed that waits pins nothing.
// Not thread-safe: one reader belongs to one request.
#pragma once
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "actors/shard_registry.hpp"

namespace settee {

// A catalog event the consumer has passed. Every node's catalog holds the same lifecycle events,
// but each in its own order and at its own times, so a position in one catalog cannot be named
// exactly in another: a feed resumed on another node starts a window early there and passes over
// the events it finds in this list instead of sending them again (exactly once across nodes).
struct seen_event {
  uint64_t id = 0;       // event_id()
  int64_t time_s = 0;    // commit time in the catalog it was passed in
  bool matched = false;  // not in tokens: it already matched an event of the catalog being read
};
// A stable identity for a lifecycle event: database, incarnation and type (the same on every node).
uint64_t event_id(const std::string& db, uint64_t instance, db_event_type type);

// Where the consumer left another node's catalog: coming back, it goes on from there (or from the
// window, if later) instead of from the window alone.
struct catalog_mark {
  std::string node;
  std::string dbs_uuid;
  uint64_t dbs_seq = 0;
  uint32_t dbs_index = 0;
};

// A position in one node's part of the feed (actors/db_updates_seq.hpp encodes a list of them).
struct node_updates_pos {
  std::string node;
  std::string dbs_uuid;  // uuid prefix of the node's `_dbs` file
  uint64_t dbs_seq = 0;  // catalog events at (dbs_seq, dbs_index) and after are unread
  uint32_t dbs_index = 0;
  int64_t dbs_time = 0;  // commit time of the last catalog event passed, or when the feed started
  // The catalog events passed within seen_window_s of dbs_time (a token holds the newest max_seen).
  std::vector<seen_event> seen;
  // The other catalogs this feed read before, newest last (at most max_marks).
  std::vector<catalog_mark> marks;
  std::string log_uuid;  // uuid prefix of the node's update log
  uint64_t log_seq = 0;  // update log changes after log_seq are unread
};

struct db_update_row {
  std::string db;
  const char* type = "updated";  // "created" | "updated" | "deleted"
  uint64_t instance = 0;
  int64_t time_s = 0;
};

// A page of one node's update log: rows after a seq, each with its own seq.
struct log_page {
  std::string uuid;  // the log's uuid prefix
  uint64_t top = 0;  // its update seq when read
  std::vector<std::pair<uint64_t, db_update_row>> rows;
};
// Up to `limit` rows of `log` after `after` (from its start when `uuid` is another log's; "": any).
result<log_page> read_update_log(const shard_handle& log, const std::string& uuid, uint64_t after, size_t limit);

class node_updates {
 public:
  // A feed resumed on another catalog starts this long before the last event passed there: a copy
  // learns the events at most this much earlier than another (replication lag).
  static constexpr int64_t seen_window_s = 300;
  // A token carries at most this many events passed (the newest): past that many in the window,
  // the oldest may come again on another node.
  static constexpr size_t max_seen = 64;
  static constexpr size_t max_marks = 16;

  // `dbs` is the node's catalog file, `log` its update log; `node` its name.
  node_updates(shard_handle dbs, shard_handle log, std::string node);

  // Where to read from. `from` names this node's files to go on exactly; else the part whose file
  // differs starts over (translated() says so): the update log from its start, the catalog from
  // seen_window_s before `from.dbs_time` or from this catalog's mark in `from.marks` if later,
  // passing over the events in `from.seen`.
  void start(const node_updates_pos& from);
  // After every row committed so far; `now` is the clock's time (Unix seconds).
  void start_now(int64_t now);
  // The first rows committed at or after `time` (Unix seconds), exactly.
  void start_at_time(int64_t time);

  // The next row, without taking it: null when there is none now (or error() is set).
  const db_update_row* peek();
  // Takes the row peek() showed.
  void pop();
  // peek() and pop().
  bool next(db_update_row& row);
  // The position after the last row returned (with the newest max_seen of the events passed).
  node_updates_pos pos() const;
  const status& error() const { return error_; }
  bool translated() const { return translated_; }

 private:
  struct logged {
    uint64_t seq = 0;
    db_update_row row;
  };
  bool refill_events();
  bool refill_log();
  bool event_first() const;
  // True when the catalog event at the head was passed on another catalog (marks its entry).
  bool seen_elsewhere(const db_event& e);
  // Takes the catalog event at the head; `remember`: add it to pos_.seen.
  void pop_event(bool remember);
  void remember(const db_event& e);
  // Drops from pos_.seen what fell out of the window, then the oldest past max_seen of those not
  // awaiting a match here.
  void forget_old();

  shard_handle dbs_, log_;
  node_updates_pos pos_;
  std::deque<db_event> events_;
  std::deque<logged> logged_;
  db_update_row head_;                         // what peek() shows of a catalog event
  bool events_more_ = true, log_more_ = true;  // the last page of each was full
  int64_t events_from_ = 0;                    // catalog events committed earlier are passed over
  int64_t log_from_ = 0;                       // since=<time>: update log rows committed earlier too
  bool translated_ = false;
  size_t from_token_ = 0;  // pos_.seen[0, from_token_) came with a token from another catalog
  status error_;
};

}  // namespace settee
