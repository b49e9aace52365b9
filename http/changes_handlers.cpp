// /db/_changes: normal, longpoll, continuous (and live), eventsource. A response is a stream the
// HTTP front pumps (wire/message.hpp); between pumps a live feed waits on commit notifications
// (change_notifier) or its next heartbeat, holding no thread.
#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>

#include "actors/change_notifier.hpp"
#include "actors/clustered_seq.hpp"
#include "actors/doc_render.hpp"
#include "actors/js_pool.hpp"
#include "http/changes_feed.hpp"
#include "http/design_function.hpp"
#include "http/feed_stream.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "storage/time_seq.hpp"

namespace settee {

namespace {

struct changes_query {
  feed_params feed;
  std::string since = "0";
  std::string until;  // "": no bound (changes_reader::set_until)
  changes_options opts;
  // A filter in a design document (`ddoc/name`, or `_view` with `view=ddoc/name`): CouchDB answers
  // 404 when the document or the member is missing, before anything else.
  std::string ddoc_id;
  std::vector<std::string> member_path;
};

result<int64_t> non_negative(ctx& c, const char* name, const char* not_int, const char* negative) {
  std::string v = c.param(name);
  char* end = nullptr;
  errno = 0;
  long long n = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || errno != 0 || *end != '\0') return status{errc::query_parse_error, not_int};
  if (n < 0) return status{errc::query_parse_error, negative};
  return static_cast<int64_t>(n);
}

result<changes_query> parse_changes(ctx& c, const json* body) {
  changes_query q;
  std::string feed = c.has("feed") ? c.param("feed") : "normal";
  if (feed == "normal")
    q.feed.feed = feed_kind::normal;
  else if (feed == "longpoll")
    q.feed.feed = feed_kind::longpoll;
  else if (feed == "continuous" || feed == "live")
    q.feed.feed = feed_kind::continuous;
  else if (feed == "eventsource")
    q.feed.feed = feed_kind::eventsource;
  else
    return status{errc::bad_request, "Supported `feed` types: normal, continuous, live, longpoll, eventsource"};

  if (c.has("since")) q.since = c.param("since");
  if (c.has("until")) {
    q.until = c.param("until");
    if (q.until.empty()) return status{errc::bad_request, "`until` must be a seq, a token, now or a time"};
  }
  if (q.feed.feed == feed_kind::eventsource) {
    if (c.req.has_header("Last-Event-ID"))
      q.since = c.req.get_header_value("Last-Event-ID");
    else if (c.has("last-event-id"))
      q.since = c.param("last-event-id");
  }
  if (c.has("limit")) {
    auto l = non_negative(c, "limit", "The limit parameter should be a non-negative integer",
                          "The limit value should be a non-negative integer");
    if (!l) return l.error();
    q.feed.limit = *l;
    q.opts.limit_for_interval = *l;
    q.opts.page_rows = static_cast<uint32_t>(std::clamp<int64_t>(*l, 1, q.opts.page_rows));  // no more per range
  }
  if (c.has("timeout")) {
    auto t = non_negative(c, "timeout", "The timeout value should be a non-negative integer (in milliseconds).",
                          "The timeout value should be a non-negative integer (in milliseconds).");
    if (!t) return t.error();
    q.feed.timeout_ms = std::min<int64_t>(*t, max_feed_wait_ms);
  }
  if (c.has("heartbeat")) {
    std::string h = c.param("heartbeat");
    if (h == "true") {
      q.feed.heartbeat_ms = 60000;
    } else if (h != "false") {
      char* end = nullptr;
      long long n = h.empty() ? 0 : std::strtoll(h.c_str(), &end, 10);
      if (h.empty() || *end != '\0') {
        return status{errc::bad_request,
                      "Invalid heartbeat value. Expecting a positive integer value (in milliseconds)."};
      }
      if (n <= 0)
        return status{errc::bad_request, "The heartbeat value should be a positive integer (in milliseconds)."};
      q.feed.heartbeat_ms = std::min<long long>(n, max_feed_wait_ms);
    }
  }
  if (c.has("seq_interval")) {
    std::string v = c.param("seq_interval");
    char* end = nullptr;
    long long n = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0) return status{errc::bad_request, "invalid_seq_interval"};
    q.opts.seq_interval = n;
  }
  auto descending = c.bool_param("descending", false);
  auto include_docs = c.bool_param("include_docs", false);
  auto conflicts = c.bool_param("conflicts", false);
  auto heartbeat_seq = c.bool_param("heartbeat_seq", false);
  auto atts = c.bool_param("attachments", false);
  auto encoding_info = c.bool_param("att_encoding_info", false);
  if (auto e = first_error(descending, include_docs, conflicts, heartbeat_seq, atts, encoding_info)) return *e;
  q.opts.attachments = *atts;
  q.opts.att_encoding_info = *encoding_info;
  q.opts.descending = *descending;
  if (c.has("time_precision")) {
    std::string p = c.param("time_precision");
    if (p != "exact" && p != "bin") return status{errc::bad_request, "`time_precision` must be `exact` or `bin`"};
    q.opts.time_exact = p == "exact";
  }
  q.opts.include_docs = *include_docs;
  q.opts.conflicts = *conflicts;
  q.feed.heartbeat_seq = *heartbeat_seq;
  std::string style = c.has("style") ? c.param("style") : "main_only";
  if (style != "main_only" && style != "all_docs") {
    return status{errc::bad_request, "Supported `style` values: main_only, all_docs"};
  }
  q.opts.all_docs = style == "all_docs";

  if (c.has("filter")) {
    std::string f = c.param("filter");
    if (f == "_doc_ids") {
      json ids;
      if (body && body->contains("doc_ids")) {
        ids = (*body)["doc_ids"];
      } else if (c.has("doc_ids")) {
        auto parsed = parse_client_json(c.param("doc_ids"),
                                        {errc::bad_request, "`doc_ids` filter parameter is not a list of doc ids."});
        if (!parsed) return parsed.error();
        ids = std::move(*parsed);
      }
      if (!ids.is_array()) return status{errc::bad_request, "`doc_ids` filter parameter is not a list of doc ids."};
      for (auto& id : ids) {
        if (!id.is_string()) return status{errc::bad_request, "`doc_ids` filter parameter is not a list of doc ids."};
        q.opts.doc_ids.insert(id.get<std::string>());
      }
      q.opts.filter_kind = changes_options::filter::doc_ids;
    } else if (f == "_design") {
      q.opts.filter_kind = changes_options::filter::design;
    } else if (f == "_selector") {
      if (c.method() != "POST" || !body || !body->contains("selector")) {
        return status{errc::bad_request, "Selector must be specified in POST payload"};
      }
      auto sel = mango_selector::compile((*body)["selector"]);
      if (!sel) return sel.error();
      q.opts.selector = std::make_shared<const mango_selector>(std::move(*sel));
      q.opts.filter_kind = changes_options::filter::selector;
    } else if (f == "_view") {
      std::string v = c.param("view");
      auto slash = v.find('/');
      if (slash == std::string::npos || slash == 0 || slash + 1 == v.size()) {
        return status{errc::bad_request, "`view` filter parameter is not provided."};
      }
      q.ddoc_id = "_design/" + v.substr(0, slash);
      q.member_path = {"views", v.substr(slash + 1)};

    } else if (!f.empty() && f[0] == '_') {
      return status{errc::bad_request, "unknown builtin filter name"};
    } else if (auto slash = f.find('/'); slash == std::string::npos || slash == 0 || slash + 1 == f.size()) {
      return status{errc::bad_request, "`filter` must be of the form `designname/filtername`"};
    } else {
      q.ddoc_id = "_design/" + f.substr(0, slash);
      q.member_path = {"filters", f.substr(slash + 1)};
    }
  }
  return q;
}

// A filter call that threw fails the request, as couch_query_servers:filter_docs lets the query
// server's error through: 500 render_error naming the filter and what it threw (CouchDB: 500 with
// the error as an Erlang tuple for a reason).
status filter_failure(const std::string& where, const std::string& error) {
  return {errc::render_error, "filter " + where + " threw: " + error};
}

using filter_ask = std::function<result<js_reply>(const std::vector<const change_row*>&)>;

// Whether the filter wants each of `docs`: asked a page at once; a page the worker could not finish
// (its deadline, its memory) is asked again one document at a time, as filter_docs does.
result<std::vector<bool>> filter_flags(const filter_ask& ask, const std::string& where,
                                       const std::vector<const change_row*>& docs) {
  auto flags = [](const js_reply& reply, size_t n) -> std::optional<std::vector<bool>> {
    if (!reply.ok() || !reply.value.is_array() || reply.value.size() != n) return std::nullopt;
    std::vector<bool> out;
    for (const auto& v : reply.value) out.push_back(v.is_boolean() && v.get<bool>());
    return out;
  };
  if (docs.empty()) return std::vector<bool>{};
  auto r = ask(docs);
  if (!r) return r.error();
  if (!r->errors.empty()) return filter_failure(where, r->errors[0]);
  if (r->what == js_reply::kind::fault && r->name == "compilation_error")  // stored, never compiled
    return status{errc::compilation_error, r->reason};
  if (auto page = flags(*r, docs.size())) return *page;
  log::warning("filter " + where + " failed on a page of " + std::to_string(docs.size()) + " changes (" + r->name +
               ": " + r->reason + "); asking one document at a time");
  std::vector<bool> out;
  for (const auto* doc : docs) {
    auto one = ask({doc});
    if (!one) return one.error();
    if (!one->errors.empty()) return filter_failure(where, one->errors[0]);
    auto f = flags(*one, 1);
    out.push_back(f && f->front());
  }
  return out;
}

// The design document filter `q` names (404 as CouchDB: couch_changes' `missing`, then `missing
// json key: <key>`), run over pages of changes in a JavaScript worker: a call that throws fails the
// request (filter_failure); a page the worker could not finish (its deadline, its memory) is asked
// again one document at a time, as filter_docs does when the query server died of its memory.
status javascript_filter(ctx& c, const db_meta& db, changes_query& q) {
  auto fn = open_design_function(c, db, q.ddoc_id, q.member_path);
  if (!fn) return fn.error();
  js_pool* js = c.node.js;
  const bool view = q.member_path.front() == "views";
  json path = view ? json::array({"views", q.member_path[1], "map"}) : json::array({"filters", q.member_path[1]});
  json req = js_request_object(c, db);
  // A POST's JSON body reaches the filter parsed (chttpd_db keeps the body it read as req_body).
  if (c.req.method == "POST")
    if (auto body = parse_json(c.req.body); body && body->is_object()) req["body"] = std::move(*body);
  const std::string tail = view ? "]" : "," + req.dump() + "]";
  const std::string where = db.name + "/" + q.ddoc_id + " " + path.dump();
  filter_ask ask = [js, key = fn->key, ddoc = fn->ddoc, path, tail,
                    where](const std::vector<const change_row*>& rows) -> result<js_reply> {
    std::string docs = "[[";
    for (size_t i = 0; i < rows.size(); ++i) {
      const change_entry& e = rows[i]->e;
      docs += i ? "," : "";
      docs += rows[i]->doc.empty() ? render_doc(e.id, e.rev, true, "{}", "") : rows[i]->doc;
    }
    auto r = js->run(key, ddoc, path, docs + "]" + tail);
    if (r)
      for (const auto& line : r->log) log::info("filter " + where + " logged: " + line);
    if (r && !r->errors.empty())
      log::warning("filter " + where + " failed on " + std::to_string(r->errors.size()) +
                   " document(s): " + r->errors[0]);
    return r;
  };
  q.opts.filter_kind = changes_options::filter::javascript;
  q.opts.page_filter = [ask, where, all_docs = q.opts.all_docs, coord = &c.node.coord,
                        db](std::vector<change_row>& rows) -> result<std::vector<bool>> {
    // What the filter is asked: each row's winner; with style=all_docs every leaf of a conflicted
    // document (couch_changes:filter's open_revs), the row keeping the leaves it wants.
    std::deque<change_row> leaves;
    std::vector<const change_row*> asked;
    std::vector<size_t> owner;  // the row of each document asked
    for (size_t i = 0; i < rows.size(); ++i) {
      if (!all_docs || rows[i].e.leaf_revs.size() < 2) {
        asked.push_back(&rows[i]);
        owner.push_back(i);
        continue;
      }
      auto docs = leaf_docs(*coord, db, rows[i]);
      if (!docs) return docs.error();
      for (auto& [rev, text] : *docs) {
        leaves.push_back(change_row{rows[i].e, std::move(text)});
        leaves.back().e.rev = rev;
        asked.push_back(&leaves.back());
        owner.push_back(i);
      }
    }
    auto wanted = filter_flags(ask, where, asked);
    if (!wanted) return wanted.error();
    std::vector<bool> out(rows.size(), false);
    std::vector<std::vector<std::string>> kept(rows.size());
    for (size_t k = 0; k < asked.size(); ++k) {
      if (!(*wanted)[k]) continue;
      out[owner[k]] = true;
      kept[owner[k]].push_back(asked[k]->e.rev);
    }
    for (size_t i = 0; i < rows.size(); ++i)
      if (all_docs && rows[i].e.leaf_revs.size() > 1) rows[i].e.leaf_revs = std::move(kept[i]);
    return out;
  };
  return {};
}

// A database's _changes as a feed_source. A split or move under a live feed: once the feed has read
// its old shards to their end, it goes on over the new map from its own token (children continue
// their parents' numbering, a moved copy keeps its own, so nothing is repeated or missed).
class changes_source final : public feed_source {
 public:
  changes_source(node_services& node, const db_meta& db, const changes_options& opts, std::string until)
      : node_(node),
        db_(db),
        opts_(opts),
        until_(std::move(until)),
        feed_(std::make_unique<changes_feed>(node.coord, db, opts)) {}
  changes_feed& feed() { return *feed_; }
  // Starts the feed at `since`, bounded by the request's `until` if it has one.
  status start(const std::string& since) {
    if (auto st = feed_->start(since); !st) return st;
    if (until_.empty()) return {};
    if (auto st = feed_->set_until(until_); !st) return st;
    if (until_ == "now") until_ = feed_->until_token();  // the bound stays where it was at the start
    return {};
  }
  // Reads ahead to the first row, so that an error before it (a selector past its bounds, a filter
  // that throws) is answered as an HTTP error rather than as a 200 cut short.
  const status& prime() {
    primed_ = next(primed_row_);
    return error();
  }
  bool next(std::string& row) override {
    if (primed_) {
      primed_ = false;
      row = std::move(primed_row_);
      return true;
    }
    if (feed_->next(row)) return true;
    return !feed_->paused() && reshaped() && feed_->next(row);
  }
  bool paused() const override { return feed_->paused(); }
  const status& error() const override { return feed_->error(); }
  std::string token() const override { return feed_->token(); }
  std::string token_json() const override { return feed_->token_json(); }
  std::string end_fields() const override {
    return ",\"pending\":" + std::to_string(feed_->pending()) + feed_->closed_ending();
  }
  std::string since_resolution() const override { return feed_->since_resolution(); }
  uint64_t rows_emitted() const override { return earlier_rows_ + feed_->rows_emitted() - (primed_ ? 1 : 0); }
  bool alive() const override { return feed_->alive(); }
  bool has_remote() const override { return feed_->has_remote(); }
  bool finished() const override { return !primed_ && feed_->finished(node_.clk.now_s()); }
  std::optional<int64_t> finishes_at_ms() const override {
    auto t = feed_->until_time();
    return t ? std::optional<int64_t>((*t + 1) * 1000) : std::nullopt;
  }

 private:
  // True when the shard map changed since the feed started and the feed now reads the new one.
  bool reshaped() {
    if (!feed_->error() || opts_.closed || opts_.descending) return false;
    auto now = node_.coord.catalog().find(db_.name);
    if (!now || now->created != db_.created || (now->shard_paths == db_.shard_paths && now->nodes == db_.nodes))
      return false;
    changes_options opts = opts_;
    if (opts_.shard) {  // one shard's feed follows its shard when a copy moved (a split ends it)
      const std::string id = db_.shard_id(*opts_.shard);
      opts.shard.reset();
      for (size_t i = 0; i < now->ranges.size(); ++i)
        if (now->shard_id(i) == id) opts.shard = i;
      if (!opts.shard || now->nodes[*opts.shard] == db_.nodes[*opts_.shard]) return false;
    }
    auto next = std::make_unique<changes_feed>(node_.coord, *now, opts);
    status st = next->start(feed_->token());
    if (st && !until_.empty()) st = next->set_until(until_);
    if (!st) {
      log::warning("changes feed of " + db_.name + " could not follow the new shard map: " + st.reason);
      return false;
    }
    earlier_rows_ += feed_->rows_emitted();
    db_ = std::move(*now);
    opts_ = std::move(opts);
    feed_ = std::move(next);
    return true;
  }

  node_services& node_;
  db_meta db_;
  changes_options opts_;
  std::string until_;
  std::unique_ptr<changes_feed> feed_;
  uint64_t earlier_rows_ = 0;
  bool primed_ = false;
  std::string primed_row_;
};

// A _changes request of the whole database, (`shard`) of one open shard or (`closed`) of a split one.
void serve_changes(ctx& c, const db_meta& db, std::optional<size_t> shard, std::optional<shard_info> closed = {}) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  std::optional<json> body;
  if (c.method() == "POST") {
    if (auto st = c.require_json_content(); !st) return c.error(st);
  }
  if (c.method() == "POST" && !c.req.body.empty()) {
    status refusal{errc::bad_request, "Request body must be a JSON object"};
    auto parsed = parse_client_json(c.req.body, refusal);
    if (!parsed) return c.error(parsed.error());
    if (!parsed->is_object()) return c.error(refusal);
    body = std::move(*parsed);
  }
  auto q = parse_changes(c, body ? &*body : nullptr);
  if (!q) return c.error(q.error());
  if (!q->ddoc_id.empty()) {
    if (auto st = javascript_filter(c, db, *q); !st) return c.error(st);
  }
  q->opts.shard = shard;
  q->opts.closed = std::move(closed);
  auto source = std::make_shared<changes_source>(c.node, db, q->opts, q->until);
  changes_feed& feed = source->feed();
  if (auto st = source->start(q->since); !st) return c.error(st);
  std::string state = feed.state_tag();
  if (q->opts.filter_kind == changes_options::filter::selector ||
      q->opts.filter_kind == changes_options::filter::javascript) {
    if (const status& st = source->prime(); !st) return c.error(st);
  }
  reply_feed(c, db.key(), q->feed, std::move(source), state);
}

}  // namespace

void handle_changes(ctx& c, const db_meta& db) {
  serve_changes(c, db, std::nullopt);
}

void handle_shard_changes(ctx& c, const db_meta& db, const std::string& shard_id) {
  if (shard_id == "_meta") return handle_changes_meta(c, db);
  for (size_t i = 0; i < db.ranges.size(); ++i) {
    if (db.shard_id(i) == shard_id) return serve_changes(c, db, i);
  }
  if (db.entry) {
    if (auto at = db.entry->find(shard_id); at && !db.entry->shards[*at].open)
      return serve_changes(c, db, std::nullopt, db.entry->shards[*at]);
  }
  c.error(errc::not_found,
          "Database " + db.name + " has no shard " + shard_id + " (GET /" + db.name + "/_changes/_meta lists them)");
}

namespace {

// One shard of GET /db/_changes/_meta: its lineage, seqs of the copy shard feeds read (the first).
json shard_row(const shard_info& s) {
  auto seq_of = [&](const std::map<std::string, uint64_t>& seqs) -> json {
    if (s.nodes.empty()) return seqs.empty() ? json(0) : json(seqs.begin()->second);
    auto it = seqs.find(s.nodes[0]);
    return it == seqs.end() ? json(0) : json(it->second);
  };
  return json{{"id", s.id()},
              {"range", s.range.name()},
              {"state", s.open ? "open" : "closed"},
              {"parents", s.parents},
              {"children", s.children},
              {"start_seq", seq_of(s.start_seq)},
              {"end_seq", s.open ? json(nullptr) : seq_of(s.end_seq)}};
}

// The copy whose seq numbering a shard feed of `s` reads: its first.
std::string numbering_node(const shard_info& s, const std::string& self) {
  return s.nodes.empty() ? self : s.nodes.front();
}

// Where one shard's feed of open shard `index` starts to give what came at or after time `since`.
result<uint64_t> shard_seq_at(ctx& c, const db_meta& db, size_t index, const std::string& since) {
  changes_options opts;
  opts.shard = index;
  changes_feed at(c.node.coord, db, opts);
  if (auto st = at.start(since); !st) return st;
  uint64_t seq = 0;
  std::string token = at.token();
  std::from_chars(token.data(), token.data() + token.size(), seq);
  return seq;
}

// The shards live at `since` (spec 11.3: the topology at that point), each with `since`: the seq
// its own feed starts from to give what came after that point. A token names, per range, a copy
// and a seq (a seq of another copy than the one shard feeds read cannot be carried over: 0 and
// "since_resolution":"rewound" then); a time is resolved through each shard's time-seq (a closed
// shard's through its first open descendant, which holds its history).
result<json> shards_at(ctx& c, const db_meta& db, const std::string& since, json& rows_out) {
  const catalog_entry& e = *db.entry;
  std::map<std::string, std::pair<uint64_t, bool>> at;  // shard id -> (since, exact)
  if (auto t = time_seq::parse_time(since)) {
    for (size_t i : e.live_at(std::max(*t, e.created))) {  // before the database: its first shards
      const shard_info& s = e.shards[i];
      // This shard, or (closed since) its first descendant that is open now.
      std::optional<size_t> open;
      for (size_t k = 0; k < db.ranges.size() && !open; ++k) {
        if (db.shard_id(k) == s.id() ||
            (!s.open && s.range.begin <= db.ranges[k].begin && db.ranges[k].end <= s.range.end))
          open = k;
      }
      if (!open) continue;
      auto seq = shard_seq_at(c, db, *open, since);
      if (!seq) return seq.error();
      uint64_t v = *seq;
      if (!s.open) {
        auto end = s.end_seq.find(numbering_node(s, c.node.node_name));
        if (end != s.end_seq.end()) v = std::min(v, end->second);
      }
      at[s.id()] = {v, true};
    }
  } else {
    std::vector<seq_entry> entries;
    if (since == "0") {  // the beginning: the first shards, from their start
      for (const shard_info& s : e.shards)
        if (s.parents.empty()) at[s.id()] = {0, true};
    } else if (since == "now") {
      changes_feed feed(c.node.coord, db, {});
      if (auto st = feed.start(since); !st) return st;
      auto decoded = decode_seq(feed.token());
      if (!decoded) return decoded.error();
      entries = std::move(*decoded);
    } else {
      auto decoded = decode_seq(since);
      if (!decoded) return decoded.error();
      entries = std::move(*decoded);
    }
    for (const seq_entry& en : entries) {
      for (const shard_info& s : e.shards) {
        if (!(s.range == en.range)) continue;
        const std::string first = numbering_node(s, c.node.node_name);
        auto moved = s.moved.find(en.node);
        const bool same = en.node == first || (moved != s.moved.end() && moved->second == first);
        at[s.id()] = {same ? en.seq : 0, same};
      }
    }
  }
  for (const shard_info& s : e.shards) {
    auto it = at.find(s.id());
    if (it == at.end()) continue;
    json row = shard_row(s);
    row["since"] = it->second.first;
    if (!it->second.second) row["since_resolution"] = "rewound";
    rows_out.push_back(std::move(row));
  }
  return json();
}

}  // namespace

void handle_changes_meta(ctx& c, const db_meta& db) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  // A `since` must be a position this database can resume from.
  if (c.has("since")) {
    changes_feed at(c.node.coord, db, {});
    if (auto st = at.start(c.param("since")); !st) return c.error(st);
    json shards = json::array();
    if (auto st = shards_at(c, db, c.param("since"), shards); !st) return c.error(st.error());
    return c.reply(200, json{{"shards", std::move(shards)}, {"since", at.token()}});
  }
  changes_feed now(c.node.coord, db, {});
  if (auto st = now.start("now"); !st) return c.error(st);
  // Every shard there has been, with lineage; seqs are those of the copy shard feeds read (the
  // first in the shard's node order).
  json shards = json::array();
  for (const shard_info& s : db.entry->shards) shards.push_back(shard_row(s));
  c.reply(200, json{{"shards", std::move(shards)}, {"since", now.token()}});
}

}  // namespace settee
