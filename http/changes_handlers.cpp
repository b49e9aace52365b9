// /db/_changes: normal, longpoll, continuous (and live), eventsource. A response is a stream the
// HTTP front pumps (http/message.hpp); between pumps a live feed waits on commit notifications
// (change_notifier) or its next heartbeat, holding no thread.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>

#include "actors/change_notifier.hpp"
#include "http/changes_feed.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"

namespace settee {

namespace {

using steady = std::chrono::steady_clock;

enum class feed_kind { normal, longpoll, continuous, eventsource };

// Longer waits are cut to this (~24.8 days): a time point that far ahead cannot overflow the clock.
constexpr int64_t max_wait_ms = INT32_MAX;

struct changes_query {
  feed_kind feed = feed_kind::normal;
  std::string since = "0";
  int64_t limit = -1;
  int64_t heartbeat_ms = 0;  // 0: no heartbeat
  int64_t timeout_ms = 60000;
  bool heartbeat_seq = false;
  changes_options opts;
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
    q.feed = feed_kind::normal;
  else if (feed == "longpoll")
    q.feed = feed_kind::longpoll;
  else if (feed == "continuous" || feed == "live")
    q.feed = feed_kind::continuous;
  else if (feed == "eventsource")
    q.feed = feed_kind::eventsource;
  else
    return status{errc::bad_request, "Supported `feed` types: normal, continuous, live, longpoll, eventsource"};

  if (c.has("since")) q.since = c.param("since");
  if (q.feed == feed_kind::eventsource) {
    if (c.req.has_header("Last-Event-ID"))
      q.since = c.req.get_header_value("Last-Event-ID");
    else if (c.has("last-event-id"))
      q.since = c.param("last-event-id");
  }
  if (c.has("limit")) {
    auto l = non_negative(c, "limit", "The limit parameter should be a non-negative integer",
                          "The limit value should be a non-negative integer");
    if (!l) return l.error();
    q.limit = *l;
  }
  if (c.has("timeout")) {
    auto t = non_negative(c, "timeout", "The timeout value should be a non-negative integer (in milliseconds).",
                          "The timeout value should be a non-negative integer (in milliseconds).");
    if (!t) return t.error();
    q.timeout_ms = std::min<int64_t>(*t, max_wait_ms);
  }
  if (c.has("heartbeat")) {
    std::string h = c.param("heartbeat");
    if (h == "true") {
      q.heartbeat_ms = 60000;
    } else if (h != "false") {
      char* end = nullptr;
      long long n = h.empty() ? 0 : std::strtoll(h.c_str(), &end, 10);
      if (h.empty() || *end != '\0') {
        return status{errc::bad_request,
                      "Invalid heartbeat value. Expecting a positive integer value (in milliseconds)."};
      }
      if (n <= 0)
        return status{errc::bad_request, "The heartbeat value should be a positive integer (in milliseconds)."};
      q.heartbeat_ms = std::min<long long>(n, max_wait_ms);
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
  if (auto e = first_error(descending, include_docs, conflicts, heartbeat_seq)) return *e;
  q.opts.descending = *descending;
  if (c.has("time_precision")) {
    std::string p = c.param("time_precision");
    if (p != "exact" && p != "bin") return status{errc::bad_request, "`time_precision` must be `exact` or `bin`"};
    q.opts.time_exact = p == "exact";
  }
  q.opts.include_docs = *include_docs;
  q.opts.conflicts = *conflicts;
  q.heartbeat_seq = *heartbeat_seq;
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
      return status{errc::not_implemented, "views are not supported yet"};
    } else if (!f.empty() && f[0] == '_') {
      return status{errc::bad_request, "unknown builtin filter name"};
    } else if (f.find('/') == std::string::npos) {
      return status{errc::bad_request, "`filter` must be of the form `designname/filtername`"};
    } else {
      return status{errc::not_implemented, "JavaScript filters are not supported"};
    }
  }
  return q;
}

// One _changes response, pumped by the HTTP front (http/message.hpp): each pump writes what is
// ready and then says what to wait for (a commit, the next heartbeat, the timeout); it never blocks.
class changes_stream final : public response_stream {
 public:
  changes_stream(node_services& node, const db_meta& db, changes_query query)
      : node_(node), key_(db.key()), q_(std::move(query)), feed_(node.coord, db, q_.opts, node.node_name) {}
  ~changes_stream() override {
    if (live()) node_.live_feeds.fetch_sub(1);
  }
  changes_feed& feed() { return feed_; }
  const changes_query& query() const { return q_; }
  bool live() const { return q_.feed != feed_kind::normal; }

  pump_result pump(std::string& out) override {
    if (!started_) {
      started_ = true;
      auto now = steady::now();
      longpoll_deadline_ = now + std::chrono::milliseconds(q_.timeout_ms);
      reset_timers(now);
      if (live()) node_.live_feeds.fetch_add(1);
    }
    return q_.feed == feed_kind::normal || q_.feed == feed_kind::longpoll ? pump_batch(out) : pump_live(out);
  }

 private:
  static constexpr size_t chunk_bytes = 64 * 1024;

  bool limit_reached() const { return q_.limit >= 0 && static_cast<int64_t>(feed_.rows_emitted()) >= q_.limit; }
  std::string last_seq_fields() {
    return "\"last_seq\":" + quote(feed_.token()) + ",\"pending\":" + std::to_string(feed_.pending());
  }
  void reset_timers(steady::time_point now) {
    idle_deadline_ = now + std::chrono::milliseconds(q_.timeout_ms);
    next_heartbeat_ = now + std::chrono::milliseconds(q_.heartbeat_ms);
  }
  // Another node's commits do not reach our notifier: a feed over remote copies looks again soon. A
  // local one looks every 10 s as well (a deletion learnt from a peer's catalog ends it).
  std::chrono::milliseconds poll_slice() const {
    return feed_.has_remote() ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  }
  pump_result wait_for(uint64_t seen, steady::time_point until) {
    pump_result r;
    r.then = pump_result::next::wait;
    r.wake_key = key_;
    r.seen = seen;
    r.wake_at = std::min(until, steady::now() + poll_slice());
    return r;
  }
  static pump_result done() { return {pump_result::next::done, {}, 0, {}}; }
  static pump_result abort() { return {pump_result::next::abort, {}, 0, {}}; }
  static pump_result more() { return {pump_result::next::more, {}, 0, {}}; }

  // normal and longpoll: {"results":[\n row,\r\n row \n],\n"last_seq":..,"pending":..}\n
  pump_result pump_batch(std::string& out) {
    if (!header_sent_) {
      if (q_.feed == feed_kind::longpoll && !limit_reached() && q_.limit != 0) {
        uint64_t seen = node_.notifier->version(key_);
        if (!feed_.next(row_)) {
          if (!feed_.error()) return abort();
          if (steady::now() < longpoll_deadline_ && feed_.alive()) return wait_for(seen, longpoll_deadline_);
        } else {
          have_row_ = true;
        }
      }
      header_sent_ = true;
      out = "{\"results\":[\n";
      if (have_row_) {
        out += row_;
        first_row_ = false;
      }
    }
    while (out.size() < chunk_bytes) {
      if (limit_reached() || !feed_.next(row_)) {
        if (!feed_.error()) return abort();
        out += "\n],\n" + last_seq_fields();
        if (std::string res = feed_.since_resolution(); !res.empty()) out += ",\"since_resolution\":" + res;
        out += "}\n";
        return done();
      }
      if (!first_row_) out += ",\r\n";
      first_row_ = false;
      out += row_;
    }
    return more();
  }

  // continuous: one row per line, heartbeat "\n", final {"last_seq":..,"pending":..}
  // eventsource: "data: <row>\nid: <seq>\n\n", heartbeat "event: heartbeat\ndata: \n\n", no final event
  pump_result pump_live(std::string& out) {
    bool es = q_.feed == feed_kind::eventsource;
    uint64_t seen = node_.notifier->version(key_);
    while (out.size() < chunk_bytes && !limit_reached() && feed_.next(row_)) {
      if (es) {
        out += "data: " + row_ + "\nid: " + quote(feed_.token()) + "\n\n";
      } else {
        out += row_ + "\n";
      }
    }
    if (!feed_.error()) return abort();
    auto now = steady::now();
    if (!out.empty()) reset_timers(now);
    if (limit_reached() || !feed_.alive()) {  // the limit, or the database was deleted: end the feed
      if (!es) out += "{" + last_seq_fields() + "}\n";
      return done();
    }
    if (!out.empty()) return more();
    if (q_.heartbeat_ms > 0 && now >= next_heartbeat_) {
      next_heartbeat_ = now + std::chrono::milliseconds(q_.heartbeat_ms);
      if (es)
        out = "event: heartbeat\ndata: \n\n";
      else if (q_.heartbeat_seq)
        out = "{\"seq\":" + quote(feed_.token()) + ",\"changes\":[],\"id\":null}\n";
      else
        out = "\n";
      return more();
    }
    if (q_.heartbeat_ms == 0 && now >= idle_deadline_) {
      if (!es) out = "{" + last_seq_fields() + "}\n";
      return done();
    }
    return wait_for(seen, q_.heartbeat_ms > 0 ? next_heartbeat_ : idle_deadline_);
  }

  node_services& node_;
  std::string key_;
  changes_query q_;
  changes_feed feed_;
  std::string row_;
  bool started_ = false;
  bool header_sent_ = false;
  bool have_row_ = false;
  bool first_row_ = true;
  steady::time_point longpoll_deadline_;
  steady::time_point idle_deadline_;  // timeout: no change for this long ends the feed
  steady::time_point next_heartbeat_;
};

}  // namespace

void handle_changes(ctx& c, const db_meta& db) {
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
  auto s = std::make_shared<changes_stream>(c.node, db, std::move(*q));
  if (auto st = s->feed().start(s->query().since); !st) return c.error(st);

  c.res.status = 200;
  c.res.set_header("Cache-Control", "must-revalidate");
  if (std::string res = s->feed().since_resolution(); !res.empty()) c.res.set_header("X-Settee-Since-Resolution", res);
  if (s->query().feed == feed_kind::eventsource) {
    c.res.set_header("Cache-Control", "no-cache");
    c.res.set_stream(s, "text/event-stream");
    return;
  }
  if (s->query().feed == feed_kind::normal) {
    std::string etag = "\"" + crypto::md5_hex(c.req.target + "|" + s->feed().state_tag()) + "\"";
    c.res.set_header("ETag", etag);
    if (c.req.get_header_value("If-None-Match") == etag) {
      c.res.status = 304;
      return;
    }
  }
  c.res.set_stream(s, "application/json");
}

}  // namespace settee
