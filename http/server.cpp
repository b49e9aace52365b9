#include "http/server.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <exception>

#include "http/auth.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"

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

}  // namespace

http_server::http_server(node_services& node, http_options opts)
    : node_(node), opts_(std::move(opts)), server_(std::make_unique<httplib::Server>()) {
  auto& s = *server_;
  size_t threads = opts_.threads;
  s.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.set_tcp_nodelay(true);
  s.set_keep_alive_timeout(opts_.keep_alive_timeout_s);
  s.set_keep_alive_max_count(opts_.keep_alive_max_requests);
  s.set_payload_max_length(opts_.max_request_bytes);
  s.set_read_timeout(60, 0);
  s.set_write_timeout(60, 0);
  s.set_socket_options([this](int fd) {
    listen_fd_ = fd;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  });
  auto handler = [this](const httplib::Request& req, httplib::Response& res) { dispatch(req, res); };
  s.Get(".*", handler);
  s.Put(".*", handler);
  s.Post(".*", handler);
  s.Delete(".*", handler);
  s.Patch(".*", handler);
  s.Options(".*", handler);
  // httplib would wait for the connection to close to read a PUT/POST body that has neither a
  // Content-Length nor chunked encoding; CouchDB treats it as empty (`curl -X PUT /db`), so do we.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    bool has_body_method = req.method == "PUT" || req.method == "POST" || req.method == "PATCH";
    if (has_body_method && !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      dispatch(req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors produced by httplib itself (413, 400 on malformed requests, ...) get CouchDB's shape.
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    const char* error = res.status == 413 ? "too_large" : res.status == 404 ? "not_found" : "bad_request";
    const char* reason = res.status == 413   ? "the request entity is too large"
                         : res.status == 414 ? "the request line is too long (at most 8 KB; POST long keys in a body)"
                         : res.status == 404 ? "missing"
                                             : "malformed request";
    res.set_content(json{{"error", error}, {"reason", reason}}.dump() + "\n", "application/json");
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string reason = "unknown error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      reason = e.what();
    } catch (...) {
    }
    log::error("request failed with an exception: " + reason);
    res.status = 500;
    res.set_content(json{{"error", "unknown_error"}, {"reason", reason}}.dump() + "\n", "application/json");
  });
}

http_server::~http_server() = default;

void http_server::dispatch(const httplib::Request& req, httplib::Response& res) {
  // cpp-httplib cuts any response to a request's `Range` header, whatever its status (a PUT that
  // committed answered 200 with a 2-byte body). settee serves no ranges yet (attachments will): the
  // Request is httplib's own non-const object, handed to us by const reference.
  const_cast<httplib::Request&>(req).ranges.clear();
  ctx c{req, res, node_, split_path(req.target), {}};
  res.set_header("Server", "settee/" SETTEE_VERSION);
  settee::dispatch(c);
}

status http_server::bind() {
  if (!server_->bind_to_port(opts_.bind.c_str(), opts_.port)) {
    return {errc::internal, "cannot listen on " + opts_.bind + ":" + std::to_string(opts_.port)};
  }
  ::listen(listen_fd_, 1024);  // httplib hard-codes a backlog of 5; Linux lets us raise it
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) port_ = ntohs(addr.sin_port);
  return {};
}

void http_server::run() {
  server_->listen_after_bind();
}

void http_server::stop() {
  server_->stop();
}

}  // namespace settee
