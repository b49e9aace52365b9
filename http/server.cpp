#include "http/server.hpp"

#include <arpa/inet.h>
#include <http_parser.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>
#include <unordered_map>

#include "actors/change_notifier.hpp"
#include "actors/shard_registry.hpp"
#include "http/router.hpp"
#include "node/clock.hpp"
#include "node/heap.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "node/scoped_count.hpp"
#include "wire/body_spool.hpp"
#include "wire/json_util.hpp"
#include "wire/multipart.hpp"

namespace settee {

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(mono::now().time_since_epoch()).count();
}

constexpr uint64_t listen_tag = 0;
constexpr uint64_t wake_tag = 1;  // the eventfd announcing ready streams (and stop)
constexpr size_t max_target_bytes = 64 * 1024;
constexpr size_t max_unparsed_input = 1 << 20;   // pipelined bytes held while a request is answered
constexpr size_t stream_write_budget = 1 << 20;  // bytes one turn pumps before letting others run
constexpr size_t large_body_bytes = 64 << 10;    // a body this large is sent without copying it

std::string error_body(const status& st) {
  return error_json(st).dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// A header as it may go on the wire (no line breaks: a document id can hold any character).
void append_header(std::string& out, const std::string& name, const std::string& value) {
  out += name;
  out += ": ";
  for (char ch : value) out.push_back(ch == '\r' || ch == '\n' ? ' ' : ch);
  out += "\r\n";
}

void append_chunk(std::string& out, const std::string& data) {
  char size[24];
  int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  out.append(size, static_cast<size_t>(n));
  out += data;
  out += "\r\n";
}

}  // namespace

// One client connection. Only the thread holding `mu` touches it: epoll reports its events one at
// a time (EPOLLONESHOT), and a stream's wake-ups take `mu` too.
struct http_conn {
  http_conn(int fd, uint64_t id, const http_options& opts) : fd(fd), id(id), opts(opts) {
    http_parser_init(&parser, HTTP_REQUEST);
    parser.data = this;
  }
  ~http_conn() { ::close(fd); }

  const int fd;
  const uint64_t id;
  std::string peer;  // "ip:port" of the client
  std::shared_ptr<auth_memo> memo = std::make_shared<auth_memo>();
  const http_options& opts;
  size_t max_body = 0;  // of the request being read
  std::mutex mu;
  bool closed = false;
  http_parser parser{};
  std::string in;        // received, not parsed yet
  std::string out;       // to send, from out_sent on
  std::string out_body;  // a large body, sent after `out` as it is (no copy into `out`)
  size_t out_sent = 0;   // of `out`, then of `out_body`
  bool pending() const { return !out.empty() || !out_body.empty(); }
  bool close_after_out = false;
  // The request being parsed.
  std::unique_ptr<http_request> req;
  bool header_value_last = false;
  bool in_message = false;
  bool headers_done = false;
  bool message_done = false;
  bool send_continue = false;     // Expect: 100-continue, not answered yet
  std::optional<status> refused;  // set: answer this and close instead of reading on
  int64_t header_deadline = 0;
  int64_t body_deadline = INT64_MAX;  // the whole body must have arrived by then
  // A streamed response in progress.
  std::shared_ptr<response_stream> stream;
  pump_result next;
  bool chunked = true;
  bool stream_keep_alive = true;  // serve the next request once the stream ends
  bool waiting = false;           // the stream waits for a commit or a time
  uint64_t wait_gen = 0;          // which wait a wake-up belongs to
  std::string watch_key;
  uint64_t watch_id = 0;
  std::atomic<int64_t> deadline{0};  // steady ms; the timer thread shuts the socket down after it
};

namespace {

http_conn& conn_of(http_parser* p) {
  return *static_cast<http_conn*>(p->data);
}

// Stops reading the request: the front answers `why` and closes the connection.
int refuse_request(http_parser* p, status why) {
  conn_of(p).refused = std::move(why);
  http_parser_pause(p, 1);
  return 0;
}

// How long a whole body may take: [chttpd] body_timeout, plus a second per MiB its Content-Length
// declares (a 1 GiB attachment sent at 1 MiB/s still arrives).
int64_t body_allowance_ms(const http_options& opts, uint64_t declared) {
  return int64_t{opts.body_timeout_s} * 1000 + static_cast<int64_t>(declared >> 20) * 1000;
}

status too_large() {
  return {errc::too_large, "the request entity is too large"};
}

// CouchDB's request log line: host, peer, user (undefined: anonymous), method, target, status, "ok",
// milliseconds (a streamed answer: until its headers).
void access_line(const http_request& req, const http_response& res, double seconds, log::level at) {
  std::string host = req.get_header_value("Host");
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.0f", seconds * 1000);
  log::write(at, log::printable((host.empty() ? "-" : host) + " " + req.peer + " " +
                                (res.user.empty() ? "undefined" : res.user) + " " + req.method + " " + req.target +
                                " " + std::to_string(res.status) + " ok " + ms));
}

int on_message_begin(http_parser* p) {
  auto& c = conn_of(p);
  c.req = std::make_unique<http_request>();
  c.req->peer = c.peer;
  c.req->memo = c.memo;
  c.header_value_last = false;
  c.in_message = true;
  c.headers_done = false;
  return 0;
}

int on_url(http_parser* p, const char* at, size_t len) {
  auto& c = conn_of(p);
  c.req->target.append(at, len);
  if (c.req->target.size() <= max_target_bytes) return 0;
  c.refused = status{errc::uri_too_long, "the request line is too long (at most 64 KB; POST long keys in a body)"};
  return 1;
}

int on_header_field(http_parser* p, const char* at, size_t len) {
  auto& c = conn_of(p);
  if (c.header_value_last || c.req->headers.empty()) c.req->headers.emplace_back();
  c.header_value_last = false;
  c.req->headers.back().first.append(at, len);
  return 0;
}

int on_header_value(http_parser* p, const char* at, size_t len) {
  auto& c = conn_of(p);
  if (c.req->headers.empty()) return 1;
  c.header_value_last = true;
  c.req->headers.back().second.append(at, len);
  return 0;
}

// RFC 9110/9112 framing that http_parser (built lenient) lets through, and that a proxy in front
// could read otherwise (request smuggling): a header name must be a token (no space before the
// colon), HTTP/1.1 needs exactly one Host (HTTP/1.0 at most one), and the only transfer coding a
// request may have is exactly `chunked`.
std::optional<status> framing_error(const http_parser* p, const http_request& req) {
  static const auto is_tchar = [](unsigned char ch) {
    return std::isalnum(ch) || std::strchr("!#$%&'*+-.^_`|~", ch) != nullptr;
  };
  size_t hosts = 0, codings = 0;
  for (auto& [name, value] : req.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(),
                                     [](char ch) { return ch != '\0' && is_tchar(static_cast<unsigned char>(ch)); }))
      return status{errc::bad_request, "malformed request: invalid header name '" + name + "'"};
    if (strcasecmp(name.c_str(), "Host") == 0) ++hosts;
    if (strcasecmp(name.c_str(), "Transfer-Encoding") == 0) {
      ++codings;
      std::string_view v = value;
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      if (v.size() != 7 || strncasecmp(v.data(), "chunked", 7) != 0)
        return status{errc::bad_request, "malformed request: Transfer-Encoding '" + value + "' (only chunked)"};
    }
  }
  if (codings > 1) return status{errc::bad_request, "malformed request: more than one Transfer-Encoding"};
  if (hosts > 1) return status{errc::bad_request, "malformed request: more than one Host header"};
  if (hosts == 0 && p->http_major == 1 && p->http_minor >= 1)
    return status{errc::bad_request, "malformed request: HTTP/1.1 needs a Host header"};
  return std::nullopt;
}

int on_headers_complete(http_parser* p) {
  auto& c = conn_of(p);
  c.headers_done = true;
  if (auto bad = framing_error(p, *c.req)) return refuse_request(p, std::move(*bad));
  c.req->method = http_method_str(static_cast<http_method>(p->method));
  if (auto q = c.req->target.find('?'); q != std::string::npos)
    parse_query(std::string_view(c.req->target).substr(q + 1), c.req->params);
  bool has_length = (p->flags & F_CONTENTLENGTH) != 0;
  c.max_body = c.opts.max_request_bytes;
  bool large = (p->flags & F_CHUNKED) != 0 || (has_length && p->content_length > c.opts.spool_from_bytes);
  if (large && streams_body(*c.req)) {
    // An attachment, or a multipart document: its attachments and its (bounded) JSON.
    const bool document = multipart::media_type_of(c.req->get_header_value("Content-Type")) == "multipart/related";
    c.max_body = c.opts.max_attachment_bytes + (document ? c.opts.max_request_bytes : 0);
    if (!has_length || p->content_length <= c.max_body) {
      auto spool = body_spool::create(c.opts.spool_dir);
      if (!spool) return refuse_request(p, spool.error());
      c.req->spool = std::move(*spool);
    }
  }
  if (has_length && p->content_length > c.max_body) return refuse_request(p, too_large());
  if (has_length && p->content_length > 0 && !c.req->spool) c.req->body.reserve(p->content_length);
  // 100 Continue only where a body is to come (a request without one is answered at once).
  const bool body_follows = (p->flags & F_CHUNKED) != 0 || (has_length && p->content_length > 0);
  c.send_continue = strcasecmp(c.req->get_header_value("Expect").c_str(), "100-continue") == 0 && body_follows;
  c.body_deadline = body_follows ? now_ms() + body_allowance_ms(c.opts, has_length ? p->content_length : 0) : INT64_MAX;
  return 0;
}

int on_body(http_parser* p, const char* at, size_t len) {
  auto& c = conn_of(p);
  size_t received;
  if (c.req->spool) {
    if (auto st = c.req->spool->append(at, len); !st) return refuse_request(p, st);
    received = c.req->spool->size();
  } else {
    c.req->body.append(at, len);
    received = c.req->body.size();
  }
  return received <= c.max_body ? 0 : refuse_request(p, too_large());
}

int on_message_complete(http_parser* p) {
  auto& c = conn_of(p);
  c.message_done = true;
  c.in_message = false;
  http_parser_pause(p, 1);  // one request at a time: pipelined ones are answered in order
  return 0;
}

}  // namespace

struct http_server::impl {
  impl(node_services& node, const http_options& opts) : node(node), opts(opts) {
    http_parser_settings_init(&settings);
    settings.on_message_begin = on_message_begin;
    settings.on_url = on_url;
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
  }

  node_services& node;
  const http_options& opts;
  http_parser_settings settings{};
  int ep = -1;
  int listen_fd = -1;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};

  // Workers: `core_workers` always, up to opts.threads while requests keep them busy. A worker that
  // takes an event and leaves no other waiting starts one more; a worker beyond the core that waits
  // opts.idle_release_s for an event leaves, a core one empties its malloc cache (node/heap.hpp). A
  // thread that leaves gives back its stack and glibc's cache of freed chunks (up to 7 per size
  // class per thread: with 128 threads that was 8 MB that no trim could return, ~60% of a fresh
  // node's memory, after 2,000 databases came and went).
  static constexpr size_t core_workers = 8;
  std::mutex workers_mu;
  std::condition_variable workers_cv;
  size_t workers = 0;                       // alive
  std::atomic<size_t> idle{0};              // waiting in epoll_wait
  std::atomic<bool> shrunk{false};          // workers left or emptied their caches: trim
  std::atomic<int64_t> last_request_ms{0};  // when the last request began (steady ms)
  void spawn_worker() {
    {
      std::lock_guard<std::mutex> lock(workers_mu);
      if (stopping.load() || workers >= std::max<size_t>(1, opts.threads)) return;
      ++workers;
    }
    std::thread([this] { worker(); }).detach();
  }

  std::mutex conns_mu;
  std::unordered_map<uint64_t, std::shared_ptr<http_conn>> conns;
  uint64_t next_id = 2;

  // Streams ready to pump again: (connection, wait generation); one eventfd count each.
  std::mutex ready_mu;
  std::deque<std::pair<uint64_t, uint64_t>> ready;

  // Streams waiting for a time (heartbeats, timeouts), for the timer thread.
  struct timed {
    int64_t at;
    uint64_t id, gen;
    bool operator>(const timed& o) const { return at > o.at; }
  };
  std::mutex timer_mu;
  std::condition_variable timer_cv;
  std::priority_queue<timed, std::vector<timed>, std::greater<timed>> timers;

  log::rate_limited accept_failures;
  size_t peak_conns = 0;  // timer thread only

  std::shared_ptr<http_conn> find(uint64_t id) {
    std::lock_guard<std::mutex> lock(conns_mu);
    auto it = conns.find(id);
    return it == conns.end() ? nullptr : it->second;
  }

  void signal(uint64_t count = 1) { [[maybe_unused]] ssize_t n = ::write(wake_fd, &count, sizeof count); }

  // Puts a waiting stream on the ready queue (from any thread); a worker pumps it.
  void make_ready(uint64_t id, uint64_t gen) {
    {
      std::lock_guard<std::mutex> lock(ready_mu);
      ready.emplace_back(id, gen);
    }
    signal();
  }

  void arm(http_conn& c, uint32_t events, int64_t deadline_at) {
    c.deadline.store(deadline_at);
    epoll_event ev{};
    ev.events = events | EPOLLONESHOT | EPOLLRDHUP;
    ev.data.u64 = c.id;
    if (::epoll_ctl(ep, EPOLL_CTL_MOD, c.fd, &ev) != 0) close(c);
  }

  void close(http_conn& c) {
    if (c.closed) return;
    c.closed = true;
    ::epoll_ctl(ep, EPOLL_CTL_DEL, c.fd, nullptr);
    unwatch(c);
    c.stream.reset();
    std::lock_guard<std::mutex> lock(conns_mu);
    conns.erase(c.id);  // the caller's reference keeps `c` until it lets go
  }

  void unwatch(http_conn& c) {
    if (c.watch_id && node.notifier) node.notifier->unwatch(c.watch_key, c.watch_id);
    c.watch_id = 0;
  }

  // Sends what is pending. False: the socket is full (armed for EPOLLOUT) or the connection closed.
  bool flush(http_conn& c) {
    const size_t total = c.out.size() + c.out_body.size();
    while (c.out_sent < total) {
      iovec iov[2];
      size_t parts = 0;
      if (c.out_sent < c.out.size()) iov[parts++] = {c.out.data() + c.out_sent, c.out.size() - c.out_sent};
      size_t body_sent = c.out_sent > c.out.size() ? c.out_sent - c.out.size() : 0;
      if (body_sent < c.out_body.size()) iov[parts++] = {c.out_body.data() + body_sent, c.out_body.size() - body_sent};
      msghdr m{};
      m.msg_iov = iov;
      m.msg_iovlen = parts;
      ssize_t n = ::sendmsg(c.fd, &m, MSG_NOSIGNAL);
      if (n > 0) {
        c.out_sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        arm(c, EPOLLOUT, now_ms() + opts.io_timeout_s * 1000);
        return false;
      }
      close(c);
      return false;
    }
    c.out.clear();
    c.out_body.clear();
    c.out_body.shrink_to_fit();
    c.out_sent = 0;
    if (c.close_after_out) {
      ::shutdown(c.fd, SHUT_WR);
      close(c);
      return false;
    }
    return true;
  }

  // Appends what the socket has to `in`. False: nothing now (eof: the client is gone).
  bool read_some(http_conn& c, bool& eof) {
    char buf[16 * 1024];  // on the stack: a per-thread heap buffer would stay resident in 128 threads
    for (;;) {
      ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
      if (n > 0) {
        c.in.append(buf, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && errno == EINTR) continue;
      eof = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
      return false;
    }
  }

  // The status line, headers and (unless streamed) body of `res`, appended to `out`.
  void render(http_conn& c, http_response& res, bool head, bool keep_alive, bool http10) {
    std::string& o = c.out;
    o += http10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    o += std::to_string(res.status);
    o += ' ';
    o += status_text(res.status);
    o += "\r\n";
    for (auto& [name, value] : res.headers) append_header(o, name, value);
    bool streamed = res.stream && !head;
    bool sized = res.stream && res.stream_length >= 0;
    c.chunked = streamed && !http10 && !sized;
    // An HTTP/1.0 client learns where a streamed body ends from the connection closing; one that
    // asked to keep the connection is told it stays open (HTTP/1.0 closes unless told: ab -k).
    const bool closing = !keep_alive || (streamed && http10 && !sized);
    if (closing)
      o += "Connection: close\r\n";
    else if (http10)
      o += "Connection: keep-alive\r\n";
    bool no_body = res.status == 204 || res.status == 304;
    if (c.chunked) {
      o += "Transfer-Encoding: chunked\r\n";
    } else if (sized) {
      o += "Content-Length: " + std::to_string(res.stream_length) + "\r\n";
    } else if (!res.stream && !no_body) {
      o += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
    } else if (res.status == 304) {
      o += "Content-Length: 0\r\n";  // as CouchDB (mochiweb) sends it
    }
    o += "\r\n";
    if (!head && !res.stream && !no_body) {
      if (res.body.size() >= large_body_bytes)
        c.out_body = std::move(res.body);  // an attachment: sent from where it is
      else
        o += res.body;
    }
    if (streamed) {
      c.stream = std::move(res.stream);
      c.next = pump_result{};
      c.waiting = false;
      c.stream_keep_alive = keep_alive && (!http10 || sized);
    } else if (!keep_alive) {
      c.close_after_out = true;
    }
  }

  // Answers a request the front will not hand to the router, and closes the connection. It is
  // counted and logged as any answer (its access-log line when [log] access is on), and said in a
  // warning line at most every 10 s (strangers can send many).
  void refuse(http_conn& c, const status& st) {
    http_response res;
    res.status = http_status_of(st.code);
    res.set_header("Server", "settee/" SETTEE_VERSION);
    res.set_header("Cache-Control", "must-revalidate");
    res.set_content(error_body(st), "application/json");
    http_request seen;  // what access_line reads of it (not its body)
    if (c.req) {
      seen.method = c.req->method;
      seen.target = c.req->target;
      seen.headers = c.req->headers;
    }
    seen.peer = c.peer;
    if (seen.method.empty()) seen.method = http_method_str(static_cast<http_method>(c.parser.method));
    note_request(seen, res, 0.0);
    refusals.warning("refused a request from " + c.peer + " (" + std::to_string(res.status) + "): " + st.reason);
    render(c, res, false, false, false);
  }
  log::rate_limited refusals;

  // Counts a request in the node's metrics and writes its access-log line ([log] access).
  void note_request(const http_request& req, const http_response& res, double seconds) {
    auto& m = metrics::node();
    m.requests_by_method.add(req.method);
    m.requests_by_status.add_status(res.status);
    m.request_seconds.observe(seconds);
    const bool access_log = !opts.metrics_only && node.access_log.load(std::memory_order_relaxed);
    if (access_log || log::enabled(log::level::debug))
      access_line(req, res, seconds, access_log ? log::level::info : log::level::debug);
  }

  void serve(http_conn& c);
  bool pump(http_conn& c);
  void on_ready(uint64_t id, uint64_t gen);
  void on_event(http_conn& c, uint32_t events);
  void accept_all();
  void worker();
  void timer_loop();
};

void http_server::impl::serve(http_conn& c) {
  for (;;) {
    if (c.closed) return;
    if (c.pending() && !flush(c)) return;  // armed for EPOLLOUT, or closed
    if (c.stream) {
      if (!pump(c)) return;
      continue;
    }
    if (!c.in.empty()) {
      size_t used = http_parser_execute(&c.parser, &settings, c.in.data(), c.in.size());
      c.in.erase(0, used);
      if (c.in.empty() && c.in.capacity() > (256u << 10)) c.in.shrink_to_fit();
      auto err = HTTP_PARSER_ERRNO(&c.parser);
      if (err == HPE_PAUSED) http_parser_pause(&c.parser, 0);
      if (c.refused) {
        refuse(c, *c.refused);
        continue;
      }
      if (err != HPE_OK && err != HPE_PAUSED) {
        refuse(c, {errc::bad_request, std::string("malformed request: ") + http_errno_description(err)});
        continue;
      }
      if (c.in_message && !c.headers_done && c.header_deadline == 0)
        c.header_deadline = now_ms() + opts.header_timeout_s * 1000;
      if (c.send_continue && c.headers_done && !c.message_done) {
        c.send_continue = false;
        c.out += "HTTP/1.1 100 Continue\r\n\r\n";
        continue;
      }
      if (c.message_done) {
        c.message_done = false;
        c.send_continue = false;
        c.header_deadline = 0;
        c.body_deadline = INT64_MAX;
        c.deadline.store(0);  // no timeout while the handler runs
        if (int64_t t = now_ms(); t - last_request_ms.load(std::memory_order_relaxed) >= 100)
          last_request_ms.store(t, std::memory_order_relaxed);  // to 0.1 s: workers rarely share the line
        bool keep_alive = http_should_keep_alive(&c.parser) != 0;
        bool http10 = c.parser.http_major == 1 && c.parser.http_minor == 0;
        std::unique_ptr<http_request> req = std::move(c.req);
        std::shared_ptr<http_response> res;
        const auto started = mono::now();
        const scoped_count<int64_t> running(metrics::node().requests_running);
        try {
          res = opts.metrics_only ? handle_metrics_request(node, *req) : handle_request(node, *req);
        } catch (...) {
          res = std::make_shared<http_response>();
          res->status = 500;
          res->set_content(error_body(status{errc::unknown_error, "the request failed"}), "application/json");
        }
        note_request(*req, *res, std::chrono::duration<double>(mono::now() - started).count());
        render(c, *res, req->method == "HEAD", keep_alive, http10);
        continue;
      }
    }
    bool eof = false;
    if (read_some(c, eof)) continue;
    if (eof) {
      close(c);
      return;
    }
    int64_t deadline = !c.in_message     ? now_ms() + opts.keep_alive_timeout_s * 1000
                       : !c.headers_done ? c.header_deadline
                                         : std::min(now_ms() + opts.io_timeout_s * 1000, c.body_deadline);
    arm(c, EPOLLIN, deadline);
    return;
  }
}

namespace {

// True when the client closed its side or the connection broke (a pipelined byte is not leaving).
bool client_left(const http_conn& c) {
  char byte;
  ssize_t n = ::recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

}  // namespace

// Runs the stream until it ends (true: serve the next request), waits, or the socket is full.
bool http_server::impl::pump(http_conn& c) {
  size_t budget = stream_write_budget;
  for (;;) {
    if (c.next.then == pump_result::next::abort) {
      c.stream.reset();
      c.close_after_out = true;  // what was produced goes out, then the body stops short
      flush(c);
      return false;
    }
    if (c.pending() && !flush(c)) return false;
    if (c.next.then == pump_result::next::done) {
      if (c.chunked) c.out += "0\r\n\r\n";
      c.stream.reset();
      if (!c.stream_keep_alive) c.close_after_out = true;
      return true;
    }
    if (c.next.then == pump_result::next::wait || budget == 0) {
      // Sleep until the key moves, the time comes, or (budget spent) at once, behind other work.
      c.waiting = true;
      uint64_t gen = ++c.wait_gen;
      if (budget == 0) {
        c.next.then = pump_result::next::more;
        make_ready(c.id, gen);
        return false;
      }
      if (!c.next.wake_key.empty() && node.notifier) {
        c.watch_key = c.next.wake_key;
        uint64_t id = c.id;
        c.watch_id = node.notifier->watch(c.watch_key, c.next.seen, [this, id, gen] { make_ready(id, gen); });
      }
      int64_t at = std::chrono::duration_cast<std::chrono::milliseconds>(c.next.wake_at.time_since_epoch()).count();
      {
        std::lock_guard<std::mutex> lock(timer_mu);
        bool earliest = timers.empty() || at < timers.top().at;
        timers.push({at, c.id, gen});
        if (earliest) timer_cv.notify_one();
      }
      arm(c, EPOLLIN, 0);  // a client that leaves ends the feed
      return false;
    }
    std::string text;
    try {
      c.next = c.stream->pump(text);
    } catch (const std::exception& e) {
      log::error(std::string("a streamed response failed: ") + e.what());
      c.next = pump_result{pump_result::next::done, {}, 0, {}};
    }
    if (text.empty()) {
      // A stream that produced nothing but wants more (a filter passing over many changes) gives
      // the worker back between turns, and ends when its client has left: it never scans on for
      // nobody.
      if (c.next.then != pump_result::next::more) continue;
      if (client_left(c)) {
        c.next.then = pump_result::next::abort;
        continue;
      }
      budget = 0;
      continue;
    }
    budget -= std::min(budget, text.size());
    if (c.chunked)
      append_chunk(c.out, text);
    else
      c.out += text;
  }
}

void http_server::impl::on_ready(uint64_t id, uint64_t gen) {
  auto conn = find(id);
  if (!conn) return;
  http_conn& c = *conn;
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.closed || !c.stream || !c.waiting || gen != c.wait_gen) return;  // a stale wake-up
  c.waiting = false;
  unwatch(c);
  c.next.then = pump_result::next::more;
  if (pump(c)) serve(c);
}

void http_server::impl::on_event(http_conn& c, uint32_t events) {
  std::lock_guard<std::mutex> lock(c.mu);
  if (c.closed) return;
  if (c.stream && c.waiting) {
    // Input while a feed waits: a client that went away ends it; anything else is kept for later.
    bool eof = false;
    while (read_some(c, eof)) {
      if (c.in.size() > max_unparsed_input) eof = true;
    }
    if (eof || (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) {
      close(c);
      return;
    }
    arm(c, EPOLLIN, 0);
    return;
  }
  serve(c);
}

void http_server::impl::accept_all() {
  for (int i = 0; i < 256; ++i) {
    sockaddr_in from{};
    socklen_t from_len = sizeof from;
    int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &from_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        // Out of file descriptors or memory: keep the connections we have, try again shortly.
        accept_failures.warning(std::string("cannot accept a connection: ") + std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      break;
    }
    std::shared_ptr<http_conn> c;
    {
      std::lock_guard<std::mutex> lock(conns_mu);
      c = std::make_shared<http_conn>(fd, next_id++, opts);
      conns.emplace(c->id, c);
    }
    {
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &from.sin_addr, ip, sizeof ip);
      c->peer = std::string(ip) + ":" + std::to_string(ntohs(from.sin_port));
    }
    c->deadline.store(now_ms() + opts.header_timeout_s * 1000);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT | EPOLLRDHUP;
    ev.data.u64 = c->id;
    if (::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
      std::lock_guard<std::mutex> lock(c->mu);
      close(*c);
    }
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = listen_tag;
  ::epoll_ctl(ep, EPOLL_CTL_MOD, listen_fd, &ev);
}

void http_server::impl::worker() {
  bool cache_released = false;  // since this worker last had an event
  while (!stopping.load()) {
    epoll_event ev{};
    idle.fetch_add(1);
    int n = ::epoll_wait(ep, &ev, 1, opts.idle_release_s * 1000);
    size_t waiting = idle.fetch_sub(1) - 1;
    if (n == 0) {  // idle: leave unless this is one of the core workers
      {
        std::lock_guard<std::mutex> lock(workers_mu);
        if (workers > core_workers) {
          --workers;
          shrunk.store(true);
          workers_cv.notify_all();
          return;
        }
      }
      if (!cache_released) {  // a core worker stays: give back what its malloc cache holds instead
        release_thread_cache();
        cache_released = true;
        shrunk.store(true);
      }
      continue;
    }
    cache_released = false;
    if (n < 0) continue;
    if (waiting == 0) spawn_worker();  // nobody waits for the next event: one more, up to the most
    if (ev.data.u64 == listen_tag) {
      accept_all();
    } else if (ev.data.u64 == wake_tag) {
      uint64_t token = 0;
      if (::read(wake_fd, &token, sizeof token) != sizeof token) continue;  // another thread took it
      std::pair<uint64_t, uint64_t> item;
      {
        std::lock_guard<std::mutex> lock(ready_mu);
        if (ready.empty()) continue;  // a stop() token
        item = ready.front();
        ready.pop_front();
      }
      on_ready(item.first, item.second);
    } else if (auto c = find(ev.data.u64)) {
      on_event(*c, ev.events);
    }
  }
  std::lock_guard<std::mutex> lock(workers_mu);
  --workers;
  workers_cv.notify_all();
}

// Wakes waiting streams at their time, and once a second shuts down connections past their
// deadline (slow headers, idle keep-alive, stalled bodies and writes): the socket's pending event
// then reaches a worker, which closes it.
void http_server::impl::timer_loop() {
  std::pair<int64_t, int64_t> idle_spell{-1, -1};  // the last request and shard use when on_idle last ran
  int64_t next_sweep = now_ms() + 1000;
  int64_t next_trim = now_ms() + 60000;
  std::unique_lock<std::mutex> lock(timer_mu);
  while (!stopping.load()) {
    int64_t now = now_ms();
    size_t due = 0;
    while (!timers.empty() && timers.top().at <= now) {
      auto t = timers.top();
      timers.pop();
      std::lock_guard<std::mutex> rl(ready_mu);
      ready.emplace_back(t.id, t.gen);
      ++due;
    }
    if (due) signal(due);
    if (now >= next_sweep) {
      next_sweep = now + 1000;
      lock.unlock();
      size_t open = 0;
      {
        std::lock_guard<std::mutex> cl(conns_mu);
        open = conns.size();
        for (auto& [id, c] : conns) {
          int64_t d = c->deadline.load();
          if (d > 0 && d <= now) ::shutdown(c->fd, SHUT_RDWR);
        }
      }
      // After a crowd of clients left, give their memory back (glibc keeps freed memory in each
      // thread's arena): 19,800 closed connections left 132 MB resident, 58 MB after a trim.
      peak_conns = std::max(peak_conns, open);
      if (peak_conns >= 1000 && open < peak_conns / 2) {
        ::malloc_trim(0);
        peak_conns = open;
      }
      const int64_t idle_ms = int64_t{opts.idle_release_s} * 1000;
      if (node.shards) node.shards->release_idle_maps(idle_ms);  // shards nobody used lately
      // Idle: no request here and no shard used (a peer's calls, internal replication) for idle_ms;
      // once per idle spell.
      const int64_t last = last_request_ms.load(std::memory_order_relaxed);
      const int64_t used = node.shards ? node.shards->last_acquired_ms() : 0;
      const bool quiet = !node.shards || node.clk.now_ms() - used >= idle_ms;
      if (now - last >= idle_ms && quiet && std::make_pair(last, used) != idle_spell) {
        idle_spell = {last, used};
        if (node.on_idle) node.on_idle();
        shrunk.store(true);
      }
      if (shrunk.exchange(false) || now >= next_trim) {  // workers left (their caches went back), or a minute passed
        ::malloc_trim(0);
        next_trim = now + 60000;
      }
      lock.lock();
      continue;
    }
    int64_t until = std::min(next_sweep, timers.empty() ? next_sweep : timers.top().at);
    timer_cv.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(1, until - now)));
  }
}

http_server::http_server(node_services& node, http_options opts)
    : node_(node), opts_(std::move(opts)), impl_(std::make_unique<impl>(node_, opts_)) {
  impl_->ep = ::epoll_create1(EPOLL_CLOEXEC);
  impl_->wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC | EFD_SEMAPHORE);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = wake_tag;
  ::epoll_ctl(impl_->ep, EPOLL_CTL_ADD, impl_->wake_fd, &ev);
}

http_server::~http_server() {
  {
    std::lock_guard<std::mutex> lock(impl_->conns_mu);
    impl_->conns.clear();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(impl_->wake_fd);
  ::close(impl_->ep);
}

status http_server::bind() {
  // The reason with the address: "Address already in use" (another process has the port),
  // "Permission denied" (a port below 1024), "Cannot assign requested address" (not this host's).
  auto fail = [&](const char* call) {
    return status{errc::internal, "cannot listen on " + opts_.bind + ":" + std::to_string(opts_.port) + ": " + call +
                                      ": " + std::strerror(errno)};
  };
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(opts_.port));
  if (::inet_pton(AF_INET, opts_.bind.c_str(), &addr.sin_addr) != 1) {
    return {errc::internal, "[chttpd] bind_address must be an IPv4 address, not '" + opts_.bind + "'"};
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail("socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // accepted sockets inherit it
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (!bound || ::listen(fd, 4096) != 0) {
    status st = fail(bound ? "listen" : "bind");
    ::close(fd);
    return st;
  }
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  impl_->listen_fd = fd;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = listen_tag;
  ::epoll_ctl(impl_->ep, EPOLL_CTL_ADD, fd, &ev);
  return {};
}

void http_server::run() {
  for (size_t i = 0; i < std::min(impl::core_workers, std::max<size_t>(1, opts_.threads)); ++i) impl_->spawn_worker();
  impl_->timer_loop();  // returns on stop()
  {
    std::unique_lock<std::mutex> lock(impl_->workers_mu);
    impl_->workers_cv.wait(lock, [&] { return impl_->workers == 0; });
  }
  // Every connection left (live feeds above all) closes now: their feeds let go of the shards they
  // read, so the node's shutdown that follows does not wait for them.
  std::vector<std::shared_ptr<http_conn>> left;
  {
    std::lock_guard<std::mutex> lock(impl_->conns_mu);
    for (auto& [id, c] : impl_->conns) left.push_back(c);
  }
  for (auto& c : left) impl_->close(*c);
}

void http_server::stop() {
  impl_->stopping.store(true);
  impl_->signal(opts_.threads + 1);
  std::lock_guard<std::mutex> lock(impl_->timer_mu);
  impl_->timer_cv.notify_all();
}

}  // namespace settee
