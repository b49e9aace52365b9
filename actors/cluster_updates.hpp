// cluster_updates: the whole cluster's `_db_updates` as one node serves it (docs/architecture.md
// section 28): this node's catalog events (every node's catalog holds every database's lifecycle)
// and update log, and every other member's update log (remote_shards::db_updates), merged by commit
// time. A member that cannot answer (down, or of a release without dbUpdates) is listed in
// unavailable(); its position is kept, so its rows come once it answers again. The same database
// may get an `updated` row from each node holding a copy: at least once, never lost.
// Not thread-safe: one request's.
#pragma once
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "actors/node_updates.hpp"
#include "actors/remote_shards.hpp"

namespace settee {

class cluster_updates {
 public:
  // `peers`: the other members; `remote` may be null (a single node).
  cluster_updates(node_updates local, remote_shards* remote, std::vector<std::string> peers,
                  std::chrono::milliseconds timeout);

  void start_now(int64_t now);  // `now`: the clock's time
  void start_at_time(int64_t time);
  // From a decoded token (actors/db_updates_seq.hpp). errc::bad_request when it is not one of this
  // cluster's: it names no member, or it names only this node with files this node never had.
  status start(const std::vector<node_updates_pos>& from);

  // The next row without taking it (null: none now, or error()); pop() takes it (call it only
  // right after a peek() that showed a row).
  const db_update_row* peek();
  void pop();
  // Every member's position after the last row taken (this node's first).
  std::vector<node_updates_pos> positions() const;
  // Members whose rows could not be read.
  std::vector<std::string> unavailable() const;
  // Names of members whose position had to be carried over to another file (some rows may repeat).
  std::vector<std::string> translated() const;
  const status& error() const { return local_.error(); }
  bool has_remote() const { return !remotes_.empty(); }
  node_updates& local() { return local_; }

 private:
  struct peer_part {
    std::string node;
    std::string uuid;  // "" until the first answer: the log as it is
    uint64_t seq = 0;
    std::deque<std::pair<uint64_t, db_update_row>> rows;
    bool more = true;     // the last page was full
    bool serves = true;   // it announced dbUpdates
    bool failed = false;  // its last call failed (down): its position stays
    bool translated = false;
  };
  bool refill(peer_part& r, uint64_t after_override = 0, bool use_override = false);
  // The part whose head comes first: -1 this node, else an index into remotes_; -2 none.
  int first();

  node_updates local_;
  remote_shards* remote_;
  std::vector<peer_part> remotes_;
  std::chrono::milliseconds timeout_;
  int64_t not_before_ = 0;
  int current_ = -2;  // the part peek() showed (first())
};

}  // namespace settee
