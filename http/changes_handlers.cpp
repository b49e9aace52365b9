// /db/_changes: normal, longpoll, continuous (and live), eventsource. Live feeds wait on commit
// notifications (change_notifier), never poll; each wakes at least once a second to notice a client
// that went away or a server shutting down.
#include <algorithm>
#include <atomic>
#include <chrono>

#include "actors/change_notifier.hpp"
#include "http/changes_feed.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"

namespace settee {

namespace {

using steady = std::chrono::steady_clock;

enum class feed_kind { normal, longpoll, continuous, eventsource };

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
    q.timeout_ms = *t;
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
      q.heartbeat_ms = n;
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

// The state one streaming response carries between calls of its content provider.
struct stream {
  stream(node_services& node, const db_meta& db, changes_query query)
      : node(node), key(db.key()), q(std::move(query)), feed(node.coord, db, q.opts, node.node_name) {}
  ~stream() {
    if (counted) node.live_feeds.fetch_sub(1);
  }

  node_services& node;
  std::string key;
  changes_query q;
  changes_feed feed;
  bool counted = false;
  bool started = false;
  bool first_row = true;
  steady::time_point idle_deadline;  // timeout: no change for this long ends the feed
  steady::time_point next_heartbeat;

  // How long to sleep between looks: another node's commits do not reach our notifier, so a feed
  // over remote copies looks again soon.
  std::chrono::milliseconds poll_slice() const {
    return feed.has_remote() ? std::chrono::milliseconds(100) : std::chrono::milliseconds(1000);
  }
  bool limit_reached() const { return q.limit >= 0 && static_cast<int64_t>(feed.rows_emitted()) >= q.limit; }
  std::string last_seq_fields() {
    return "\"last_seq\":" + quote(feed.token()) + ",\"pending\":" + std::to_string(feed.pending());
  }
  void reset_timers() {
    auto now = steady::now();
    idle_deadline = now + std::chrono::milliseconds(q.timeout_ms);
    next_heartbeat = now + std::chrono::milliseconds(q.heartbeat_ms);
  }
  // Waits for a commit, the next heartbeat, the idle timeout or one second, whichever is first.
  // Returns false when nothing changed.
  bool wait(uint64_t seen) {
    auto until = steady::now() + poll_slice();
    if (q.heartbeat_ms > 0)
      until = std::min(until, next_heartbeat);
    else
      until = std::min(until, idle_deadline);
    return node.notifier->wait(key, seen, until) != seen;
  }
};

constexpr size_t chunk_bytes = 64 * 1024;

// normal and longpoll: {"results":[\n row,\r\n row \n],\n"last_seq":..,"pending":..}\n
bool provide_batch(stream& s, httplib::DataSink& sink) {
  std::string out;
  if (!s.started) {
    s.started = true;
    out = "{\"results\":[\n";
    if (s.q.feed == feed_kind::longpoll) {
      auto deadline = steady::now() + std::chrono::milliseconds(s.q.timeout_ms);
      std::string row;
      for (;;) {
        uint64_t seen = s.node.notifier->version(s.key);
        if (s.limit_reached() || s.q.limit == 0) break;
        if (s.feed.next(row)) {
          out += row;
          s.first_row = false;
          break;
        }
        if (steady::now() >= deadline || !sink.is_writable() || !s.feed.alive()) break;
        s.feed.release_snapshots();
        s.node.notifier->wait(s.key, seen, std::min(deadline, steady::now() + s.poll_slice()));
      }
    }
  }
  std::string row;
  bool more = true;
  while (out.size() < chunk_bytes) {
    if (s.limit_reached() || !s.feed.next(row)) {
      more = false;
      break;
    }
    if (!s.first_row) out += ",\r\n";
    s.first_row = false;
    out += row;
    if (s.q.feed == feed_kind::longpoll) {
      continue;  // longpoll returns what is there once woken
    }
  }
  if (!more) {
    out += "\n],\n" + s.last_seq_fields();
    if (std::string res = s.feed.since_resolution(); !res.empty()) out += ",\"since_resolution\":" + res;
    out += "}\n";
    if (!sink.write(out.data(), out.size())) return false;
    sink.done();
    return true;
  }
  return sink.write(out.data(), out.size());
}

// continuous: one row per line, heartbeat "\n", final {"last_seq":..,"pending":..}
// eventsource: "data: <row>\nid: <seq>\n\n", heartbeat "event: heartbeat\ndata: \n\n", no final event
bool provide_live(stream& s, httplib::DataSink& sink) {
  bool es = s.q.feed == feed_kind::eventsource;
  if (!s.started) {
    s.started = true;
    s.reset_timers();
  }
  uint64_t seen = s.node.notifier->version(s.key);
  std::string out, row;
  while (out.size() < chunk_bytes && !s.limit_reached() && s.feed.next(row)) {
    if (es) {
      out += "data: " + row + "\nid: " + quote(s.feed.token()) + "\n\n";
    } else {
      out += row + "\n";
    }
  }
  if (!out.empty()) s.reset_timers();
  if (s.limit_reached()) {
    if (!es) out += "{" + s.last_seq_fields() + "}\n";
    if (!out.empty() && !sink.write(out.data(), out.size())) return false;
    sink.done();
    return true;
  }
  if (!out.empty()) return sink.write(out.data(), out.size());
  if (!sink.is_writable()) return false;  // the client went away: free the thread
  if (!s.feed.alive()) {                  // the database was deleted: end the feed
    if (!es) {
      std::string last = "{" + s.last_seq_fields() + "}\n";
      sink.write(last.data(), last.size());
    }
    sink.done();
    return true;
  }
  s.feed.release_snapshots();
  if (s.wait(seen)) return true;  // new commits: read them on the next call
  auto now = steady::now();
  if (s.q.heartbeat_ms > 0 && now >= s.next_heartbeat) {
    s.next_heartbeat = now + std::chrono::milliseconds(s.q.heartbeat_ms);
    std::string beat;
    if (es)
      beat = "event: heartbeat\ndata: \n\n";
    else if (s.q.heartbeat_seq)
      beat = "{\"seq\":" + quote(s.feed.token()) + ",\"changes\":[],\"id\":null}\n";
    else
      beat = "\n";
    return sink.write(beat.data(), beat.size());
  }
  if (s.q.heartbeat_ms == 0 && now >= s.idle_deadline) {
    if (!es) {
      std::string last = "{" + s.last_seq_fields() + "}\n";
      if (!sink.write(last.data(), last.size())) return false;
    }
    sink.done();
  }
  return true;
}

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
  auto s = std::make_shared<stream>(c.node, db, std::move(*q));
  if (auto st = s->feed.start(s->q.since); !st) return c.error(st);

  bool live = s->q.feed != feed_kind::normal;
  if (live) {
    // Every live feed holds an HTTP worker thread; keep some for everything else.
    if (c.node.live_feeds.fetch_add(1) >= c.node.max_live_feeds) {
      c.node.live_feeds.fetch_sub(1);
      return c.error(errc::unavailable, "too many open feeds; raise [chttpd] server_threads");
    }
    s->counted = true;
  }
  c.res.status = 200;
  c.res.set_header("Cache-Control", "must-revalidate");
  if (std::string res = s->feed.since_resolution(); !res.empty()) c.res.set_header("X-Settee-Since-Resolution", res);
  if (s->q.feed == feed_kind::eventsource) {
    c.res.set_header("Cache-Control", "no-cache");
    c.res.set_chunked_content_provider("text/event-stream",
                                       [s](size_t, httplib::DataSink& sink) { return provide_live(*s, sink); });
  } else if (s->q.feed == feed_kind::continuous) {
    c.res.set_chunked_content_provider("application/json",
                                       [s](size_t, httplib::DataSink& sink) { return provide_live(*s, sink); });
  } else {
    if (s->q.feed == feed_kind::normal) {
      std::string etag = "\"" + crypto::md5_hex(c.req.target + "|" + s->feed.state_tag()) + "\"";
      c.res.set_header("ETag", etag);
      if (c.req.get_header_value("If-None-Match") == etag) {
        c.res.status = 304;
        return;
      }
    }
    c.res.set_chunked_content_provider("application/json",
                                       [s](size_t, httplib::DataSink& sink) { return provide_batch(*s, sink); });
  }
}

}  // namespace settee
