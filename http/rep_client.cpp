#include "http/rep_client.hpp"

#include <httplib.h>

#include <thread>

namespace settee {

rep_client::rep_client(const rep_endpoint& e, std::chrono::milliseconds timeout, int retries,
                       const std::atomic<bool>* cancel)
    : e_(e), retries_(retries), cancel_(cancel) {
  http_ = std::make_unique<httplib::Client>(e.scheme + "://" + e.host + ":" + std::to_string(e.port));
  http_->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);  // a request's headers and body go in two writes: no delayed-ACK wait
  http_->set_decompress(true);
  http_->enable_server_certificate_verification(false);
  if (e.has_credentials) http_->set_basic_auth(e.user, e.password);
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", "settee-replicator/" SETTEE_VERSION}};
  for (auto& [k, v] : e.headers) headers.emplace(k, v);
  http_->set_default_headers(std::move(headers));
}

rep_client::~rep_client() = default;

void rep_client::abort() {
  http_->stop();
}

namespace {
http_reply to_reply(httplib::Result& r) {
  if (!r) return {0, httplib::to_string(r.error())};
  return {r->status, std::move(r->body)};
}
}  // namespace

httplib::Headers rep_client::session_headers(httplib::Headers h) const {
  if (e_.session) h.emplace("Cookie", e_.session());
  return h;
}

http_reply rep_client::retrying(const std::function<http_reply()>& attempt) {
  std::chrono::milliseconds wait{250};
  for (int tries = 0;; ++tries) {
    ++requests_;
    http_reply out = attempt();
    bool transient = out.status == 0 || out.status >= 500 || out.status == 429;
    if (!transient || tries >= retries_ || (cancel_ && cancel_->load())) return out;
    // Sleep in short slices so that a cancel does not wait for the whole backoff.
    for (auto left = wait; left.count() > 0 && !(cancel_ && cancel_->load()); left -= std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
    wait = std::min(wait * 2, std::chrono::milliseconds(10000));
  }
}

http_reply rep_client::send(const char* method, const std::string& rest, const std::string* body) {
  const std::string path = e_.path_of(rest);
  const std::string m = method;
  return retrying([&] {
    const httplib::Headers h = session_headers();
    httplib::Result r = m == "GET"   ? http_->Get(path, h)
                        : m == "PUT" ? http_->Put(path, h, body ? *body : std::string(), "application/json")
                                     : http_->Post(path, h, body ? *body : std::string(), "application/json");
    return to_reply(r);
  });
}

spooled_reply rep_client::get_spooled(const std::string& rest, const std::string& accept, const std::string& dir) {
  const std::string path = e_.path_of(rest);
  spooled_reply out;
  out.head = retrying([&] {
    auto spool = body_spool::create(dir);
    if (!spool) return http_reply{507, spool.error().reason};
    out.spool = std::move(*spool);
    status written;
    auto r = http_->Get(
        path, session_headers({{"Accept", accept}}),
        [&](const httplib::Response& res) {
          out.content_type = res.get_header_value("Content-Type");
          return true;
        },
        [&](const char* data, size_t n) {
          written = out.spool->append(data, n);
          return static_cast<bool>(written) && !(cancel_ && cancel_->load());
        });
    if (!written) return http_reply{507, written.reason};
    http_reply head = to_reply(r);
    if (head.status != 0 && !head.ok() && head.body.empty()) {  // the error's text went to the spool
      if (auto st = out.spool->read(0, 64u << 10, head.body); !st) head.body.clear();
    }
    return head;
  });
  if (!out.head.ok()) out.spool.reset();
  return out;
}

http_reply rep_client::put_spooled(const std::string& rest, const std::string& content_type, const body_spool& spool,
                                   uint64_t offset, uint64_t length) {
  const std::string path = e_.path_of(rest);
  std::string piece;
  return retrying([&] {
    auto r = http_->Put(
        path, session_headers(), static_cast<size_t>(length),
        [&](size_t at, size_t n, httplib::DataSink& sink) {
          if (!spool.read(offset + at, std::min<size_t>(n, 1u << 20), piece) || piece.empty()) return false;
          return sink.write(piece.data(), piece.size());
        },
        content_type);
    return to_reply(r);
  });
}

http_reply rep_client::get(const std::string& rest) {
  return send("GET", rest, nullptr);
}
http_reply rep_client::post(const std::string& rest, const std::string& body) {
  return send("POST", rest, &body);
}
http_reply rep_client::put(const std::string& rest, const std::string& body) {
  return send("PUT", rest, &body);
}

namespace {
result<json> parsed(const http_reply& r, const rep_endpoint& e) {
  if (!r.ok()) return reply_error(r, e);
  json j = parse_reply(r.body);
  if (j.is_discarded()) return status{errc::internal, "invalid JSON from " + e.url()};
  return j;
}
}  // namespace

result<json> rep_client::get_json(const std::string& rest) {
  return parsed(get(rest), e_);
}
result<json> rep_client::post_json(const std::string& rest, const json& body) {
  return parsed(post(rest, request_text(body)), e_);
}

std::string string_at(const json& obj, const char* key) {
  const json& v = member(obj, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

std::string request_text(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_reply(const std::string& body) {
  auto j = parse_json(body, max_json_depth() + 8, nullptr);
  return j ? std::move(*j) : json(json::value_t::discarded);
}

status reply_error(const http_reply& r, const rep_endpoint& e) {
  if (r.status == 401 || r.status == 403)
    return {errc::unauthorized, "unauthorized to access or create database " + e.url()};
  if (r.status == 404) return {errc::db_not_found, "could not open " + e.url()};
  if (r.status == 0) return {errc::db_not_found, "could not open " + e.url() + ": " + r.body};
  json j = parse_reply(r.body);
  std::string reason = j.is_object() && j.contains("reason") && j["reason"].is_string()
                           ? j["reason"].get<std::string>()
                           : "HTTP " + std::to_string(r.status) + " from " + e.url();
  return {errc::internal, reason};
}

}  // namespace settee
