#include "http/server.hpp"

// g++ 12 reports KJ's ExceptionOr<T> (a promise's result slot) as maybe-uninitialized for class
// types T; a false positive in KJ's headers, not in this file.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kj/async-io.h>
#include <kj/compat/http.h>
#include <exception>
#include <mutex>

#include "actors/change_notifier.hpp"
#include "http/auth.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "node/work_pool.hpp"

namespace settee {

namespace {

bool is_system_db(const std::string& name) {
  return name == "_users" || name == "_replicator" || name == "_global_changes";
}

// Handlers for a path below /db/..., after the database was found and access was checked.
void dispatch_db(ctx& c, const db_meta& db, const json& security) {
  auto& p = c.path;
  const std::string& what = p[1];
  if (what == "_all_docs" && p.size() == 2) return handle_all_docs(c, db);
  if (what == "_bulk_docs" && p.size() == 2) return handle_bulk_docs(c, db);
  if (what == "_bulk_get" && p.size() == 2) return handle_bulk_get(c, db);
  if (what == "_revs_diff" && p.size() == 2) return handle_revs_diff(c, db);
  if (what == "_security" && p.size() == 2) return handle_security(c, db, security);
  if (what == "_shards" && p.size() <= 3) return handle_shards(c, db);
  if (what == "_ensure_full_commit" && p.size() == 2) return handle_ensure_full_commit(c, db);
  if (what == "_revs_limit" && p.size() == 2) return handle_revs_limit(c, db);
  if (what == "_local_docs" && p.size() == 2) return handle_local_docs(c, db);
  if (what == "_sync_shards" && p.size() == 2) return handle_sync_shards(c, db);
  if (what == "_changes" && p.size() == 2) return handle_changes(c, db);
  if (what == "_time_seq" && p.size() == 2) return handle_time_seq(c, db);
  if (what == "_local" && p.size() >= 3) {
    std::string id = "_local/" + p[2];
    for (size_t i = 3; i < p.size(); ++i) id += "/" + p[i];
    return handle_local_doc(c, db, id);
  }
  if (what == "_design" && p.size() == 2) return handle_doc(c, db, "_design/");  // illegal, says why
  if (what == "_design" && p.size() >= 3) {
    if (p.size() > 3) return c.error(errc::not_implemented, "attachments and views are not supported yet");
    return handle_doc(c, db, "_design/" + p[2]);
  }
  if (p.size() > 2) return c.error(errc::not_implemented, "attachments are not supported yet");
  handle_doc(c, db, what);
}

void dispatch(ctx& c) {
  auto u = c.node.auth.authenticate(c.req);
  if (!u) return c.error(u.error());
  c.user = std::move(*u);
  auto& p = c.path;
  if (p.empty()) return handle_root(c);
  const std::string& first = p[0];
  if (first[0] == '_' && !is_system_db(first)) {
    if (first == "_up" && p.size() == 1) return handle_up(c);
    if (first == "_uuids" && p.size() == 1) return handle_uuids(c);
    if (first == "_session" && p.size() == 1) return handle_session(c);
    if (auto st = authenticator::require_server_admin(c.user); !st) return c.error(st);
    if (first == "_all_dbs" && p.size() == 1) return handle_all_dbs(c);
    if (first == "_node") return handle_node(c);
    if (first == "_membership" && p.size() == 1) return handle_membership(c);
    if (first == "_all_dbs" || first == "_up" || first == "_uuids") return c.error(errc::not_found, "missing");
    return c.error(validate_db_name(first));
  }
  if (auto st = validate_db_name(first); !st) return c.error(st);
  // System databases are never open to anonymous users, whatever their _security says (a data dir
  // from before release 0.3 has `_replicator` with an empty one).
  if (is_system_db(first) && !c.user.name)
    return c.error(errc::unauthorized, "You are not authorized to access this db.");
  if (p.size() == 1) return handle_db(c, first);
  auto db = c.node.coord.catalog().lookup(first);
  if (!db) return c.error(db.error());
  json security = read_security(c, *db);
  c.security = &security;
  // A user reads and updates their own `_users` document (not its roles: doc_handlers checks);
  // everything else in `_users` is for server admins.
  bool own_user_doc = first == "_users" && p.size() == 2 && c.user.name && p[1] == "org.couchdb.user:" + *c.user.name &&
                      (c.method() == "GET" || c.method() == "PUT");
  bool server_admin_only = (first == "_users" && !own_user_doc) || p[1] == "_sync_shards";
  bool db_admin_only = (p[1] == "_security" || p[1] == "_revs_limit" || p[1] == "_time_seq") && c.method() != "GET";
  status allowed = server_admin_only ? authenticator::require_server_admin(c.user)
                   : db_admin_only   ? authenticator::require_db_admin(c.user, security)
                                     : authenticator::require_member(c.user, security);
  if (!allowed) return c.error(allowed);
  dispatch_db(c, *db, security);
}

// Runs one request's handler (on a worker thread).
std::shared_ptr<http_response> run_handler(node_services& node, const http_request& req) {
  auto res = std::make_shared<http_response>();
  res->set_header("Server", "settee/" SETTEE_VERSION);
  try {
    ctx c{req, *res, node, split_path(req.target), {}};
    dispatch(c);
  } catch (const std::exception& e) {
    log::error(std::string("request failed with an exception: ") + e.what());
    res->stream.reset();
    res->status = 500;
    res->set_content(json{{"error", "unknown_error"}, {"reason", e.what()}}.dump() + "\n", "application/json");
  }
  return res;
}

std::string error_body(const char* error, const std::string& reason) {
  return json{{"error", error}, {"reason", reason}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// A header value as it may go on the wire (no line breaks: a document id can hold any character).
std::string header_safe(const std::string& v) {
  std::string out = v;
  for (char& ch : out)
    if (ch == '\r' || ch == '\n') ch = ' ';
  return out;
}

template <class T>
using xthread_fulfiller = std::shared_ptr<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>;

}  // namespace

// Everything that lives on the event-loop thread, plus the pool the handlers run on.
struct http_server::impl final : kj::HttpServerErrorHandler, kj::TaskSet::ErrorHandler {
  impl(node_services& node, const http_options& opts) : node(node), opts(opts), pool(opts.threads) {}

  node_services& node;
  const http_options& opts;
  work_pool pool;
  std::mutex stop_mu;
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_fulfiller;  // set while run() runs
  bool stop_requested = false;
  // Event-loop state, set by run().
  kj::Timer* timer = nullptr;
  kj::HttpHeaderTable* table = nullptr;

  // The one hand-over between threads: `job` runs on the pool, its result comes back as a promise
  // on the event loop (a dropped promise makes the fulfilment a no-op).
  template <class T, class F>
  kj::Promise<T> on_pool(F job) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<T>();
    auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<T>>>(kj::mv(paf.fulfiller));
    pool.submit([f, job = std::move(job)]() mutable { (*f)->fulfill(job()); });
    return kj::mv(paf.promise);
  }

  // KJ headers over `headers`; the values (without line breaks) live in `values` until sent.
  kj::HttpHeaders wire_headers(const std::vector<std::pair<std::string, std::string>>& headers,
                               std::vector<std::string>& values) {
    kj::HttpHeaders h(*table);
    values.reserve(headers.size());  // no reallocation: h points into the strings
    for (auto& [name, value] : headers) {
      values.push_back(header_safe(value));
      h.add(kj::StringPtr(name.c_str()), kj::StringPtr(values.back().c_str()));
    }
    return h;
  }

  kj::Promise<void> send_body(kj::HttpService::Response& response, int status, std::string body,
                              const std::vector<std::pair<std::string, std::string>>& headers) {
    std::vector<std::string> values;
    kj::HttpHeaders h = wire_headers(headers, values);
    bool no_body = status == 204 || status == 304;
    auto out = response.send(status, status_text(status), h, no_body ? uint64_t(0) : uint64_t(body.size()));
    if (no_body || body.empty()) return kj::READY_NOW;
    auto text = kj::heap<std::string>(std::move(body));
    auto wrote = out->write(text->data(), text->size());
    return timer->timeoutAfter(opts.io_timeout_s * kj::SECONDS, kj::mv(wrote)).attach(kj::mv(out), kj::mv(text));
  }

  kj::Promise<void> send_error(kj::HttpService::Response& response, int status, const char* error,
                               const std::string& reason) {
    return send_body(response, status, error_body(error, reason),
                     {{"Server", "settee/" SETTEE_VERSION},
                      {"Content-Type", "application/json"},
                      {"Cache-Control", "must-revalidate"}});
  }

  // A streamed response: pump on the pool, write, and between pumps wait as the stream asks.
  struct live_response {
    kj::Own<kj::AsyncOutputStream> out;
    std::shared_ptr<response_stream> stream;
    std::string chunk;
  };
  struct pumped {
    std::string text;
    pump_result next;
  };

  kj::Promise<void> pump(live_response& live) {
    return on_pool<pumped>([s = live.stream] {
             pumped p;
             try {
               p.next = s->pump(p.text);
             } catch (const std::exception& e) {
               log::error(std::string("a streamed response failed: ") + e.what());
               p.next.then = pump_result::next::done;
             }
             return p;
           })
        .then([this, &live](pumped p) -> kj::Promise<void> {
          live.chunk = std::move(p.text);
          kj::Promise<void> wrote = kj::READY_NOW;
          if (!live.chunk.empty())
            wrote = timer->timeoutAfter(opts.io_timeout_s * kj::SECONDS,
                                        live.out->write(live.chunk.data(), live.chunk.size()));
          return wrote.then([this, &live, next = std::move(p.next)]() mutable -> kj::Promise<void> {
            switch (next.then) {
              case pump_result::next::done:
                return kj::READY_NOW;
              case pump_result::next::more:
                return pump(live);
              case pump_result::next::wait:
                break;
            }
            return wait(next).then([this, &live] { return pump(live); });
          });
        });
  }

  // Resolves when `r.wake_key` moves past `r.seen` or at `r.wake_at`.
  kj::Promise<void> wait(const pump_result& r) {
    auto now = std::chrono::steady_clock::now();
    auto delay = r.wake_at > now ? std::chrono::duration_cast<std::chrono::milliseconds>(r.wake_at - now).count() : 0;
    auto timeout = timer->afterDelay(delay * kj::MILLISECONDS);
    if (r.wake_key.empty() || !node.notifier) return timeout;
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
    change_notifier* notifier = node.notifier;
    uint64_t id = notifier->watch(r.wake_key, r.seen, [f] { (*f)->fulfill(); });
    auto unwatch = kj::defer([notifier, key = r.wake_key, id] { notifier->unwatch(key, id); });
    return paf.promise.exclusiveJoin(kj::mv(timeout)).attach(kj::mv(unwatch));
  }

  kj::Promise<void> respond(kj::HttpService::Response& response, const http_request& req,
                            std::shared_ptr<http_response> res) {
    if (!res->stream) return send_body(response, res->status, std::move(res->body), res->headers);
    std::vector<std::string> values;
    kj::HttpHeaders h = wire_headers(res->headers, values);
    if (req.method == "HEAD") {
      response.send(res->status, status_text(res->status), h, uint64_t(0));
      return kj::READY_NOW;
    }
    auto live = kj::heap<live_response>();
    live->out = response.send(res->status, status_text(res->status), h);
    live->stream = std::move(res->stream);
    auto& ref = *live;
    return pump(ref).attach(kj::mv(live));
  }

  // --- kj::HttpServerErrorHandler: framing errors are CouchDB-style 400s, answered at once.
  kj::Promise<void> handleClientProtocolError(kj::HttpHeaders::ProtocolError e,
                                              kj::HttpService::Response& response) override {
    return send_error(response, 400, "bad_request", std::string("malformed request: ") + e.description.cStr());
  }
  kj::Promise<void> handleApplicationError(kj::Exception e, kj::Maybe<kj::HttpService::Response&> response) override {
    if (e.getType() == kj::Exception::Type::DISCONNECTED) return kj::READY_NOW;
    if (e.getType() == kj::Exception::Type::OVERLOADED) return kj::READY_NOW;  // a timeout: just close
    std::string what = e.getDescription().cStr();
    KJ_IF_MAYBE (r, response) {
      // KJ refuses bad framing (conflicting Content-Length, a bad Transfer-Encoding) by throwing
      // before the request reaches us: the client's fault, a 400.
      if (what.find("Content-Length") != std::string::npos || what.find("Transfer-Encoding") != std::string::npos)
        return send_error(*r, 400, "bad_request", "malformed request: " + what);
    }
    log::error(std::string("HTTP request failed: ") + e.getDescription().cStr());
    KJ_IF_MAYBE (r, response) {
      return send_error(*r, 500, "unknown_error", e.getDescription().cStr());
    }
    return kj::READY_NOW;
  }
  kj::Promise<void> handleNoResponse(kj::HttpService::Response& response) override {
    return send_error(response, 500, "unknown_error", "no response");
  }
  // --- kj::TaskSet::ErrorHandler: a connection ended with an error (the client went away).
  void taskFailed(kj::Exception&&) override {}
};

namespace {

enum class body_read { ok, too_large, malformed, timed_out };

// One connection's service: reads a request's body, hands the request to the pool, writes the
// answer. Keeps the connection for `Expect: 100-continue` (KJ 0.9 does not answer it).
class connection_service final : public kj::HttpService {
 public:
  connection_service(http_server::impl& srv, kj::AsyncIoStream& conn) : srv_(srv), conn_(conn) {}

  kj::Promise<void> request(kj::HttpMethod method, kj::StringPtr url, const kj::HttpHeaders& headers,
                            kj::AsyncInputStream& body, Response& response) override {
    auto req = std::make_shared<http_request>();
    req->method = kj::str(method).cStr();
    req->target = url.cStr();
    headers.forEach(
        [&](kj::StringPtr name, kj::StringPtr value) { req->headers.emplace_back(name.cStr(), value.cStr()); });
    if (auto q = req->target.find('?'); q != std::string::npos)
      parse_query(std::string_view(req->target).substr(q + 1), req->params);
    size_t max = srv_.opts.max_request_bytes;
    std::string length = req->get_header_value("Content-Length");
    if (!length.empty() && length.find_first_not_of("0123456789") != std::string::npos)
      return srv_.send_error(response, 400, "bad_request", "malformed request: invalid Content-Length");
    uint64_t expected = 0;
    KJ_IF_MAYBE (len, body.tryGetLength()) {
      expected = *len;
      if (expected > max) return srv_.send_error(response, 413, "too_large", "the request entity is too large");
      if (expected == 0) return handle(req, response);
      req->body.reserve(expected);
    }
    kj::Promise<void> go_on = kj::READY_NOW;
    std::string expect = req->get_header_value("Expect");
    if (strcasecmp(expect.c_str(), "100-continue") == 0) {
      static const char interim[] = "HTTP/1.1 100 Continue\r\n\r\n";
      go_on = conn_.write(interim, sizeof interim - 1);
    }
    return go_on.then([this, req, &body, max] { return read_body(body, *req, max); })
        .then([this, req, &response](body_read r) -> kj::Promise<void> {
          switch (r) {
            case body_read::ok:
              return handle(req, response);
            case body_read::too_large:
              return srv_.send_error(response, 413, "too_large", "the request entity is too large");
            case body_read::timed_out:
              return srv_.send_error(response, 408, "request_timeout", "the request body stalled");
            case body_read::malformed:
              break;
          }
          return srv_.send_error(response, 400, "bad_request", "malformed request body");
        });
  }

 private:
  kj::Promise<body_read> read_body(kj::AsyncInputStream& in, http_request& req, size_t max) {
    size_t have = req.body.size();
    size_t want = std::min<size_t>(64 * 1024, max + 1 - have);  // one byte past the limit tells
    req.body.resize(have + want);
    auto read = srv_.timer->timeoutAfter(srv_.opts.io_timeout_s * kj::SECONDS, in.tryRead(&req.body[have], 1, want));
    return read.then(
        [this, &in, &req, have, max](size_t n) -> kj::Promise<body_read> {
          req.body.resize(have + n);
          if (n == 0) return body_read::ok;
          if (req.body.size() > max) return body_read::too_large;
          return read_body(in, req, max);
        },
        [](kj::Exception&& e) -> kj::Promise<body_read> {
          if (e.getType() == kj::Exception::Type::DISCONNECTED) return kj::mv(e);
          return e.getType() == kj::Exception::Type::OVERLOADED ? body_read::timed_out : body_read::malformed;
        });
  }

  kj::Promise<void> handle(std::shared_ptr<http_request> req, Response& response) {
    node_services& node = srv_.node;
    return srv_.on_pool<std::shared_ptr<http_response>>([&node, req] { return run_handler(node, *req); })
        .then([this, req, &response](std::shared_ptr<http_response> res) {
          return srv_.respond(response, *req, std::move(res));
        });
  }

  http_server::impl& srv_;
  kj::AsyncIoStream& conn_;
};

kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener, kj::HttpServer& server, kj::TaskSet& tasks,
                              kj::Timer& timer) {
  return listener.accept().then(
      [&](kj::Own<kj::AsyncIoStream> conn) {
        tasks.add(server.listenHttp(kj::mv(conn)));
        return accept_loop(listener, server, tasks, timer);
      },
      [&](kj::Exception&& e) {
        // Out of file descriptors (or memory): keep the connections we have, try again shortly.
        static log::rate_limited accept_failures;
        accept_failures.warning(std::string("cannot accept a connection: ") + e.getDescription().cStr());
        return timer.afterDelay(100 * kj::MILLISECONDS).then([&] {
          return accept_loop(listener, server, tasks, timer);
        });
      });
}

}  // namespace

http_server::http_server(node_services& node, http_options opts)
    : node_(node), opts_(std::move(opts)), impl_(std::make_unique<impl>(node_, opts_)) {}

http_server::~http_server() {
  impl_->pool.stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

status http_server::bind() {
  status fail{errc::internal, "cannot listen on " + opts_.bind + ":" + std::to_string(opts_.port)};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(opts_.port));
  if (::inet_pton(AF_INET, opts_.bind.c_str(), &addr.sin_addr) != 1) {
    return {errc::internal, "[chttpd] bind_address must be an IPv4 address, not '" + opts_.bind + "'"};
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return fail;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // accepted sockets inherit it
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 4096) != 0) {
    ::close(fd);
    return fail;
  }
  socklen_t len = sizeof addr;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port_ = ntohs(addr.sin_port);
  listen_fd_ = fd;
  return {};
}

void http_server::run() {
  auto io = kj::setupAsyncIo();
  kj::HttpHeaderTable table;
  impl_->timer = &io.provider->getTimer();
  impl_->table = &table;
  kj::HttpServerSettings settings;
  settings.headerTimeout = opts_.header_timeout_s * kj::SECONDS;
  settings.pipelineTimeout = opts_.keep_alive_timeout_s * kj::SECONDS;
  settings.errorHandler = *impl_;
  kj::HttpServer server(
      *impl_->timer, table,
      [this](kj::AsyncIoStream& conn) -> kj::Own<kj::HttpService> {
        return kj::heap<connection_service>(*impl_, conn);
      },
      settings);
  auto listener = io.lowLevelProvider->wrapListenSocketFd(listen_fd_, kj::LowLevelAsyncIoProvider::TAKE_OWNERSHIP);
  listen_fd_ = -1;
  kj::TaskSet connections(*impl_);
  auto stop = kj::newPromiseAndCrossThreadFulfiller<void>();
  {
    std::lock_guard<std::mutex> lock(impl_->stop_mu);
    if (impl_->stop_requested) stop.fulfiller->fulfill();
    impl_->stop_fulfiller = kj::mv(stop.fulfiller);
  }
  stop.promise.exclusiveJoin(accept_loop(*listener, server, connections, *impl_->timer)).wait(io.waitScope);
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  impl_->stop_fulfiller = nullptr;
}

void http_server::stop() {
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  impl_->stop_requested = true;
  if (impl_->stop_fulfiller && impl_->stop_fulfiller->isWaiting()) impl_->stop_fulfiller->fulfill();
}

}  // namespace settee
