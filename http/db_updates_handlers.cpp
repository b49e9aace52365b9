// GET /_db_updates (spec/http_api.md 7 and 11.4; docs/architecture.md section 28): every database's
// `created`, `updated` and `deleted` rows, from this node's catalog events and update log, as a
// normal, longpoll, continuous or eventsource feed (http/feed_stream.hpp).
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "actors/cluster_updates.hpp"
#include "actors/db_catalog.hpp"
#include "actors/db_updates_seq.hpp"
#include "actors/node_updates.hpp"
#include "actors/update_log.hpp"
#include "http/feed_stream.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"
#include "storage/time_seq.hpp"

namespace settee {

namespace {

struct db_updates_query {
  feed_params feed;
  std::string since = "0";
  std::string until;  // "": no bound
  bool descending = false;
};

// CouchDB's global_changes_httpd: a limit, heartbeat or timeout that is not a non-negative integer.
result<int64_t> non_negative(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  long long n = v.empty() ? -1 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0' || n < 0) return status{errc::bad_request, "invalid_integer"};
  return static_cast<int64_t>(n);
}

result<db_updates_query> parse_db_updates(ctx& c) {
  db_updates_query q;
  std::string feed = c.has("feed") ? c.param("feed") : "normal";
  if (feed == "normal")
    q.feed.feed = feed_kind::normal;
  else if (feed == "longpoll")
    q.feed.feed = feed_kind::longpoll;
  else if (feed == "continuous")
    q.feed.feed = feed_kind::continuous;
  else if (feed == "eventsource")
    q.feed.feed = feed_kind::eventsource;
  else
    return status{errc::bad_request, "Supported `feed` types: normal, continuous, longpoll, eventsource"};
  if (c.has("since")) q.since = c.param("since");
  if (c.has("until")) q.until = c.param("until");
  if (q.feed.feed == feed_kind::eventsource && c.req.has_header("Last-Event-ID"))
    q.since = c.req.get_header_value("Last-Event-ID");
  if (c.has("limit")) {
    auto l = non_negative(c.param("limit"));
    if (!l) return l.error();
    q.feed.limit = *l;
  }
  if (c.has("timeout")) {
    auto t = non_negative(c.param("timeout"));
    if (!t) return t.error();
    q.feed.timeout_ms = std::min<int64_t>(*t, max_feed_wait_ms);
  }
  if (c.has("heartbeat")) {
    std::string h = c.param("heartbeat");
    if (h == "true") {
      q.feed.heartbeat_ms = 60000;
    } else if (h != "false") {
      auto n = non_negative(h);
      if (!n) return n.error();
      q.feed.heartbeat_ms = std::min<int64_t>(*n, max_feed_wait_ms);  // 0: none
    }
  }
  auto descending = c.bool_param("descending", false);
  auto heartbeat_seq = c.bool_param("heartbeat_seq", false);
  if (auto e = first_error(descending, heartbeat_seq)) return *e;
  q.descending = *descending;
  q.feed.heartbeat_seq = *heartbeat_seq;
  if (q.descending && q.feed.feed != feed_kind::normal) {
    return status{errc::bad_request, "`descending=true` is only for feed=normal"};
  }
  return q;
}

bool shaped_like_time(const std::string& s) {
  return s.size() == 20 && s[4] == '-' && s[10] == 'T' && s[19] == 'Z';
}

// The cluster's rows (actors/cluster_updates.hpp), each carrying the token of the position after it.
class db_updates_source final : public feed_source {
 public:
  db_updates_source(cluster_updates parts, const clock& clk) : parts_(std::move(parts)), clk_(clk) {}

  // Positions the feed at `since` ("0", "now", a time or a token).
  status start(const std::string& since) {
    if (since == "0" || since == "\"0\"") return {};
    if (since == "now") {
      parts_.start_now(clk_.now_s());
      return {};
    }
    if (shaped_like_time(since)) {
      auto t = time_seq::parse_time(since);
      if (!t) return {errc::bad_request, "invalid_time_format"};
      parts_.start_at_time(*t);
      return {};
    }
    auto from = decode_db_updates_seq(since);
    if (!from) return from.error();
    return parts_.start(*from);
  }
  // Ends the feed after the rows committed up to `until` (a settee extension): a time or `now`
  // (this second), exact to the second; or a token of this feed: each node's rows up to the
  // position the token names for it (the rows of a node it does not name are past it).
  status set_until(const std::string& until) {
    if (until == "now") {
      until_s_ = clk_.now_s();
      return {};
    }
    if (shaped_like_time(until)) {
      auto t = time_seq::parse_time(until);
      if (!t) return {errc::bad_request, "invalid_time_format"};
      until_s_ = *t;
      return {};
    }
    auto bound = decode_db_updates_seq(until);
    if (!bound)
      return {errc::bad_request, "`until` of _db_updates must be a time (YYYY-MM-DDTHH:MM:SSZ), now or a token"};
    bound_ = std::move(*bound);
    token_bound_ = true;
    return {};
  }
  bool finished() const override {
    if (token_bound_) return every_node_reached();
    return until_s_ && (passed_ || clk_.now_s() > *until_s_);
  }
  std::optional<int64_t> finishes_at_ms() const override {
    return until_s_ ? std::optional<int64_t>((*until_s_ + 1) * 1000) : std::nullopt;
  }
  // Reads every row from the start and serves them newest first, up to `limit`.
  void newest_first(int64_t limit) {
    db_update_row r;
    while (take(r)) descending_.emplace_back(r, token());
    if (!parts_.error()) return;
    std::reverse(descending_.begin(), descending_.end());
    if (limit >= 0 && descending_.size() > static_cast<size_t>(limit)) descending_.resize(limit);
    reverse_ = true;
  }

  bool next(std::string& row) override {
    db_update_row r;
    std::string seq;
    if (reverse_) {
      if (next_reverse_ >= descending_.size()) return false;
      r = descending_[next_reverse_].first;
      seq = descending_[next_reverse_++].second;
    } else if (!take(r)) {
      return false;
    } else {
      seq = token();
    }
    ++emitted_;
    row = json{{"db_name", r.db}, {"type", r.type}, {"seq", seq}, {"instance", std::to_string(r.instance)}}.dump();
    return true;
  }
  const status& error() const override { return parts_.error(); }
  std::string token() const override {
    std::vector<node_updates_pos> at = parts_.positions();
    for (node_updates_pos& p : at) {
      if (auto f = dbs_held_.find(p.node); f != dbs_held_.end()) take_dbs_part(f->second, p);
      if (auto f = log_held_.find(p.node); f != log_held_.end()) take_log_part(f->second, p);
    }
    return encode_db_updates_seq(at);
  }
  // Members whose rows could not be read (a node down, or of a release without _db_updates).
  std::string end_fields() const override {
    auto gone = parts_.unavailable();
    return gone.empty() ? "" : ",\"unavailable\":" + json(gone).dump();
  }
  std::string since_resolution() const override {
    json out = json::object();
    for (const auto& node : parts_.translated()) out[node] = "translated";
    return out.empty() ? "" : out.dump();
  }
  uint64_t rows_emitted() const override { return emitted_; }
  bool has_remote() const override { return parts_.has_remote(); }

 private:
  bool take(db_update_row& r) {
    for (;;) {
      if (passed_) return false;
      const db_update_row* row = parts_.peek();
      if (!row) return false;
      if (until_s_ && row->time_s > *until_s_) {  // rows come in commit-time order: the rest are later
        passed_ = true;
        return false;
      }
      r = *row;
      if (!token_bound_) {
        parts_.pop();
        return true;
      }
      // A token bound: the row is within it when its node's position after it is not past the
      // node's position in the token. A node's catalog events and its update log each come in
      // their own order, so once one of them is past, every later one is: it is passed over (the
      // other part, and other nodes' rows, may still be within).
      const std::vector<node_updates_pos> before = parts_.positions();
      parts_.pop();
      const std::vector<node_updates_pos> after = parts_.positions();
      for (size_t k = 0; k < after.size() && k < before.size(); ++k) {
        const bool dbs_moved = !same_dbs(before[k], after[k]), log_moved = !same_log(before[k], after[k]);
        if (!dbs_moved && !log_moved) continue;
        const bool past = (dbs_moved && dbs_past(after[k])) || (log_moved && log_past(after[k]));
        if (!past) return true;
        // The feed's position stays where the bound is (emplace keeps the first one held):
        // since=last_seq reads on from this row.
        if (dbs_moved) dbs_held_.emplace(after[k].node, before[k]);
        if (log_moved) log_held_.emplace(after[k].node, before[k]);
        break;
      }
    }
  }

  // A position's catalog-events part, and its update-log part, copied into `to`.
  static void take_dbs_part(const node_updates_pos& from, node_updates_pos& to) {
    to.dbs_uuid = from.dbs_uuid;
    to.dbs_seq = from.dbs_seq;
    to.dbs_index = from.dbs_index;
    to.dbs_time = from.dbs_time;
    to.seen = from.seen;
    to.marks = from.marks;
  }
  static void take_log_part(const node_updates_pos& from, node_updates_pos& to) {
    to.log_uuid = from.log_uuid;
    to.log_seq = from.log_seq;
  }
  static bool same_dbs(const node_updates_pos& a, const node_updates_pos& b) {
    return a.dbs_uuid == b.dbs_uuid && a.dbs_seq == b.dbs_seq && a.dbs_index == b.dbs_index;
  }
  static bool same_log(const node_updates_pos& a, const node_updates_pos& b) {
    return a.log_uuid == b.log_uuid && a.log_seq == b.log_seq;
  }
  const node_updates_pos* bound_of(const std::string& node) const {
    for (const node_updates_pos& b : bound_)
      if (b.node == node) return &b;
    return nullptr;
  }
  // Whether `p` (a node's position) is past the token's for that node, in its catalog events or in
  // its update log: a node the token does not name, or a file it does not know, is past it.
  bool dbs_past(const node_updates_pos& p) const {
    const node_updates_pos* b = bound_of(p.node);
    if (!b || (!p.dbs_uuid.empty() && p.dbs_uuid != b->dbs_uuid)) return true;
    return std::make_pair(p.dbs_seq, p.dbs_index) > std::make_pair(b->dbs_seq, b->dbs_index);
  }
  bool log_past(const node_updates_pos& p) const {
    const node_updates_pos* b = bound_of(p.node);
    if (!b || (!p.log_uuid.empty() && p.log_uuid != b->log_uuid)) return true;
    return p.log_seq > b->log_seq;
  }
  // Every node the token names has read both parts up to its position there (or past it).
  bool every_node_reached() const {
    const std::vector<node_updates_pos> now = parts_.positions();
    for (const node_updates_pos& b : bound_) {
      if (b.node.empty() || b.node[0] == '~') continue;  // "~seen", "~check": not members
      auto at = std::find_if(now.begin(), now.end(), [&](const node_updates_pos& p) { return p.node == b.node; });
      if (at == now.end()) continue;  // no longer a member: nothing of it to wait for
      const bool dbs = dbs_held_.count(b.node) ||
                       std::make_pair(at->dbs_seq, at->dbs_index) >= std::make_pair(b.dbs_seq, b.dbs_index);
      const bool log = log_held_.count(b.node) || at->log_seq >= b.log_seq;
      if (!dbs || !log) return false;
    }
    return true;
  }

  cluster_updates parts_;
  const clock& clk_;
  std::vector<std::pair<db_update_row, std::string>> descending_;
  size_t next_reverse_ = 0;
  bool reverse_ = false;
  uint64_t emitted_ = 0;
  std::optional<int64_t> until_s_;
  bool passed_ = false;                  // the next row is past until_s_
  std::vector<node_updates_pos> bound_;  // a token bound: each node's last position within it
  bool token_bound_ = false;
  // Nodes whose catalog events / update log passed the bound: their position at it (the feed's
  // token keeps that part, so since=last_seq reads on from the first row past it).
  std::map<std::string, node_updates_pos> dbs_held_, log_held_;
};

}  // namespace

void handle_db_updates(ctx& c) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  auto q = parse_db_updates(c);
  if (!q) return c.error(q.error());
  auto& catalog = c.node.coord.catalog();
  auto dbs = catalog.catalog_file();
  if (!dbs) return c.error(dbs.error());
  if (!c.node.updates) return c.error(errc::internal, "the update log is not running");
  auto log = c.node.updates->record();
  if (!log) return c.error(log.error());
  std::vector<std::string> peers;
  for (auto& m : c.node.cluster->all())
    if (m != c.node.node_name) peers.push_back(m);
  auto source = std::make_shared<db_updates_source>(
      cluster_updates(node_updates(*dbs, *log, c.node.node_name), c.node.remote, peers, c.node.push_timeout),
      c.node.clk);
  if (auto st = source->start(q->since); !st) return c.error(st);
  if (!q->until.empty())
    if (auto st = source->set_until(q->until); !st) return c.error(st);
  if (q->descending) source->newest_first(q->feed.limit);

  // The normal feed's ETag: the files' current positions, not the token the feed started from.
  // Other nodes' logs are not known without asking them: in a cluster every answer is new.
  node_updates_pos end;
  end.node = c.node.node_name;
  end.dbs_seq = (*dbs).store->header().update_seq;
  end.log_seq = (*log).store->header().update_seq;
  std::string state = encode_db_updates_seq({end}) + (peers.empty() ? "" : crypto::random_hex(8));
  reply_feed(c, db_catalog::notify_key(), q->feed, std::move(source), state);
}

}  // namespace settee
