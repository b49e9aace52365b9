#include "replicator/rep_client.hpp"

#include <httplib.h>

#include <condition_variable>
#include <map>
#include <thread>

#include "node/clock.hpp"
#include "replicator/net_policy.hpp"
#include "replicator/reply_body.hpp"
#include "wire/message.hpp"

namespace settee {
namespace {

constexpr size_t max_error_text = 64u << 10;

// What went wrong with an exchange, in words an operator reads in a log line or a scheduler row
// (cpp-httplib's names are its enum's: "Connection", "Read").
std::string error_text(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::ConnectionTimeout:
      return "connecting timed out";
    case httplib::Error::Read:
      return "the connection closed before the whole answer came";
    case httplib::Error::Write:
      return "the connection closed while the request was sent";
    case httplib::Error::SSLConnection:
      return "the TLS handshake failed";
    case httplib::Error::SSLServerVerification:
      return "the server's TLS certificate could not be verified";
    case httplib::Error::Canceled:
      return "the exchange was cancelled";
    case httplib::Error::Compression:
      return "the answer could not be decompressed";
    default:
      return "the exchange failed (" + httplib::to_string(e) + ")";
  }
}
constexpr int max_redirects = 10;

// Ends requests that outlive their deadline: one thread for every client of the node, looking
// ten times a second; a request past its time has its connection shut (it fails at once). A
// sender of one byte a second, or of headers without end, meets it; the timeout between bytes
// alone would never fire.
class deadline_watch {
 public:
  struct entry {
    httplib::Client* client;
    mono::time_point start;
    mono::duration base;                    // the whole time, before the allowance for bytes
    const std::atomic<uint64_t>* received;  // bytes moved so far, both ways: a second more per MiB
    std::atomic<bool>* fired;
  };
  static deadline_watch& get() {
    static deadline_watch* w = new deadline_watch;  // lives as long as the process (no join at exit)
    return *w;
  }
  uint64_t add(entry e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    live_[++next_] = e;
    cv_.notify_one();
    return next_;
  }
  void remove(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    live_.erase(id);
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return !live_.empty(); });  // an idle node's watch sleeps
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      const mono::time_point now = mono::now();
      for (auto& [id, e] : live_) {
        const auto allowance = std::chrono::seconds(e.received->load() >> 20);
        if (!e.fired->load() && now - e.start > e.base + allowance) {
          e.fired->store(true);
          e.client->stop();  // under mu_: remove() waits, so the client outlives this call
        }
      }
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  std::map<uint64_t, entry> live_;
  uint64_t next_ = 0;
};

std::optional<uint64_t> content_length(const httplib::Response& res) {
  if (!res.has_header("Content-Length") || res.has_header("Transfer-Encoding")) return std::nullopt;
  const std::string v = res.get_header_value("Content-Length");
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoull(v);
}

bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

}  // namespace

struct rep_client::upload {
  uint64_t length;
  std::string content_type;
  httplib::ContentProvider provider;
};

rep_client::rep_client(const rep_endpoint& e, std::chrono::milliseconds timeout, int retries,
                       const std::atomic<bool>* cancel)
    : e_(e), timeout_(timeout), retries_(retries), cancel_(cancel) {
  http_ = std::make_unique<httplib::Client>(e.scheme + "://" + e.host + ":" + std::to_string(e.port));
  http_->set_connection_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_read_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_write_timeout(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  http_->set_keep_alive(true);
  http_->set_tcp_nodelay(true);  // a request's headers and body go in two writes: no delayed-ACK wait
  http_->set_decompress(false);  // reply_body decodes, within its bounds
  http_->set_follow_location(false);
  http_->enable_server_certificate_verification(e.rules->verify_certificates);
  if (e.rules->verify_certificates && !e.rules->ca_file.empty()) http_->set_ca_cert_path(e.rules->ca_file.c_str());
  if (e.has_credentials) http_->set_basic_auth(e.user, e.password);
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", "settee-replicator/" SETTEE_VERSION}};
  for (auto& [k, v] : e.headers) headers.emplace(k, v);
  http_->set_default_headers(std::move(headers));
  if (e.restricted && e.rules->policy && e.local_name.empty()) {
    auto addr = e.rules->policy->resolve(e.host, e.port);
    if (!addr) {
      refused_ = addr.error();
    } else {  // connect to the address that was checked, not to a second lookup's
      std::string bare = e.host.size() > 2 && e.host.front() == '[' ? e.host.substr(1, e.host.size() - 2) : e.host;
      http_->set_hostname_addr_map({{bare, *addr}});
    }
  }
}

rep_client::~rep_client() = default;

void rep_client::abort() {
  http_->stop();
}

httplib::Headers rep_client::session_headers(httplib::Headers h) const {
  if (e_.session) h.emplace("Cookie", e_.session());
  return h;
}

http_reply rep_client::retrying(const std::function<http_reply()>& attempt) {
  std::chrono::milliseconds wait{250};
  for (int tries = 0;; ++tries) {
    ++requests_;
    http_reply out = attempt();
    bool transient = out.local_error && (out.status == 0 || out.status >= 500 || out.status == 429);
    if (!transient || tries >= retries_ || (cancel_ && cancel_->load())) return out;
    // Sleep in short slices so that a cancel does not wait for the whole backoff.
    for (auto left = wait; left.count() > 0 && !(cancel_ && cancel_->load()); left -= std::chrono::milliseconds(50))
      std::this_thread::sleep_for(std::min(left, std::chrono::milliseconds(50)));
    wait = std::min(wait * 2, std::chrono::milliseconds(10000));
  }
}

http_reply rep_client::exchange(const char* method, const std::string& path, httplib::Headers extra,
                                const std::string* body, const upload* up, uint64_t max_bytes, const char* limit_name,
                                const sink& to) {
  http_reply out;
  if (!refused_) {
    out.local_error = refused_;
    return out;
  }
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = session_headers(std::move(extra));
  if (body) {
    req.body = *body;
    req.headers.emplace("Content-Type", "application/json");
  }
  std::atomic<uint64_t> received{0};
  if (up) {
    req.content_length_ = up->length;
    req.content_provider_ = [&received, &up](size_t at, size_t n, httplib::DataSink& sink) {
      received += std::min<size_t>(n, 1u << 20);  // an upload's bytes count for its deadline too
      return up->provider(at, n, sink);
    };
    req.headers.emplace("Content-Type", up->content_type);
  }
  std::optional<reply_body> decoded;
  location_.clear();
  content_type_.clear();
  req.response_handler = [&](const httplib::Response& res) {
    out.status = res.status;
    content_type_ = res.get_header_value("Content-Type");
    if (res.status < 200 || res.status >= 300) {
      location_ = res.get_header_value("Location");
      return true;  // the error's text is kept below
    }
    decoded.emplace(max_bytes, e_.rules->max_inflate_ratio, limit_name, to);
    return static_cast<bool>(decoded->begin(res.get_header_value("Content-Encoding"), content_length(res)));
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received += n;
    if (!decoded) {  // an error's text: the first 64 KiB, then no more is read
      out.body.append(data, std::min(n, max_error_text - out.body.size()));
      return out.body.size() < max_error_text;
    }
    return decoded->feed(data, n);
  };
  std::atomic<bool> fired{false};
  const uint64_t watch = deadline_watch::get().add(
      {http_.get(), mono::now(), std::chrono::duration_cast<mono::duration>(timeout_ * e_.rules->deadline_timeouts),
       &received, &fired});
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  const bool sent = http_->send(req, res, err);
  deadline_watch::get().remove(watch);
  if (decoded) {
    if (decoded->sink_done()) return out;  // the receiver had what it wanted
    if (auto st = sent ? decoded->finish() : decoded->error(); !st) {
      out.local_error = st;
      http_->stop();  // what is left of the answer is not read
      return out;
    }
  }
  if (fired) {
    out.local_error = deadline_error(method);
    return out;
  }
  if (!sent && out.status >= 200 && out.status < 300) out.status = 0;  // cut during the body
  if (!sent && out.status == 0) out.body = error_text(err);
  return out;
}

status rep_client::deadline_error(const char* method) const {
  return {errc::internal, std::string("the answer to ") + method + " " + e_.url() + " took longer than its deadline (" +
                              std::to_string(timeout_.count() * e_.rules->deadline_timeouts) +
                              " ms, and a second per MiB moved)"};
}

http_reply rep_client::request(const char* method, const std::string& rest, httplib::Headers extra,
                               const std::string* body, const upload* up, uint64_t max_bytes, const char* limit_name,
                               const std::function<void()>& restart, const sink& to) {
  std::string path = e_.path_of(rest);
  for (int redirects = 0;; ++redirects) {
    http_reply out = retrying([&] {
      if (restart) restart();
      return exchange(method, path, extra, body, up, max_bytes, limit_name, to);
    });
    if (!out.local_error || !is_redirect(out.status) || std::string(method) != "GET") return out;
    // CouchDB's replicator follows GET redirects; settee only on the same origin (credentials and
    // the address checks stay with the endpoint that was asked for).
    std::string next = location_;
    const std::string origin = e_.scheme + "://" + e_.host + ":" + std::to_string(e_.port);
    const bool default_port = (e_.scheme == "http" && e_.port == 80) || (e_.scheme == "https" && e_.port == 443);
    if (next.rfind(origin + "/", 0) == 0) {
      next = next.substr(origin.size());
    } else if (default_port && next.rfind(e_.scheme + "://" + e_.host + "/", 0) == 0) {
      next = next.substr(e_.scheme.size() + 3 + e_.host.size());
    } else if (next.empty() || next[0] != '/' || next.rfind("//", 0) == 0) {
      out.local_error = status{errc::internal, e_.url() + " redirected to " + strip_url_credentials(next) +
                                                   ", another origin: not followed"};
      return out;
    }
    if (redirects >= max_redirects) {
      out.local_error = status{
          errc::internal, e_.url() + " redirected more than " + std::to_string(max_redirects) + " times: not followed"};
      return out;
    }
    path = next;
  }
}

http_reply rep_client::buffered(const char* method, const std::string& rest, const std::string* body, const upload* up,
                                uint64_t max_bytes) {
  std::string text;
  const bool small = max_bytes != 0 && max_bytes <= e_.rules->max_row_bytes;
  http_reply out = request(
      method, rest, {}, body, up, max_bytes ? max_bytes : e_.rules->max_response_bytes,
      small ? "[couchdb] max_document_size" : "[chttpd] max_http_request_size", [&] { text.clear(); },
      [&](std::string_view piece) {
        text.append(piece);
        return true;
      });
  if (out.ok()) out.body = std::move(text);
  return out;
}

http_reply rep_client::stream(const std::string& rest, const std::string* body, uint64_t max_bytes,
                              const char* limit_name, const std::function<void()>& restart, const sink& to) {
  return request(body ? "POST" : "GET", rest, {}, body, nullptr, max_bytes, limit_name, restart, to);
}

spooled_reply rep_client::get_spooled(const std::string& rest, const std::string& accept, const std::string& dir,
                                      uint64_t max_bytes) {
  spooled_reply out;
  status written;
  out.head = request(
      "GET", rest, {{"Accept", accept}}, nullptr, nullptr, max_bytes,
      "[couchdb] max_attachment_size and max_document_size",
      [&] {
        written = {};
        auto spool = body_spool::create(dir);
        if (!spool) {
          written = spool.error();
          out.spool.reset();
        } else {
          out.spool = std::move(*spool);
        }
      },
      [&](std::string_view piece) {
        if (written) written = out.spool->append(piece.data(), piece.size());
        return static_cast<bool>(written) && !(cancel_ && cancel_->load());
      });
  if (!written) out.head.local_error = written;
  if (out.head.ok()) out.content_type = content_type_;
  if (!out.head.ok()) out.spool.reset();  // its file goes with it
  return out;
}

http_reply rep_client::put_spooled(const std::string& rest, const std::string& content_type, const body_spool& spool,
                                   uint64_t offset, uint64_t length) {
  std::string piece;
  upload up{length, content_type, [&](size_t at, size_t n, httplib::DataSink& sink) {
              if (!spool.read(offset + at, std::min<size_t>(n, 1u << 20), piece) || piece.empty()) return false;
              return sink.write(piece.data(), piece.size());
            }};
  return buffered("PUT", rest, nullptr, &up, e_.rules->max_row_bytes);
}

http_reply rep_client::get(const std::string& rest, uint64_t max_bytes) {
  return buffered("GET", rest, nullptr, nullptr, max_bytes);
}
http_reply rep_client::post(const std::string& rest, const std::string& body) {
  return buffered("POST", rest, &body, nullptr, 0);
}
http_reply rep_client::put(const std::string& rest, const std::string& body) {
  return buffered("PUT", rest, &body, nullptr, 0);
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
  if (!r.local_error) return {r.local_error.code, e.redact(r.local_error.reason)};
  if (r.status == 401 || r.status == 403)
    return {errc::unauthorized, "unauthorized to access or create database " + e.url()};
  if (r.status == 404) return {errc::db_not_found, "could not open " + e.url()};
  if (r.status == 0) return {errc::db_not_found, "could not open " + e.url() + ": " + r.body};
  json j = parse_reply(r.body);
  std::string reason = j.is_object() && j.contains("reason") && j["reason"].is_string()
                           ? j["reason"].get<std::string>()
                           : "HTTP " + std::to_string(r.status) + " from " + e.url();
  return {errc::internal, e.redact(reason)};
}

status fetch_filter_code(rep_request& r, const std::string& server_uuid, int retries,
                         std::chrono::milliseconds timeout) {
  if (r.filter.empty() || (r.filter[0] == '_' && r.filter.find('/') == std::string::npos)) return {};  // built in
  const size_t slash = r.filter.find('/');
  const std::string ddoc = r.filter.substr(0, slash), name = r.filter.substr(slash + 1);
  rep_client source(r.source, timeout, retries);
  auto doc = source.get_json("_design/" + percent_encode(ddoc));
  if (!doc)
    return {errc::not_found, "Couldn't open document `_design/" + ddoc + "` from source database `" + r.source.url() +
                                 "`: " + doc.error().reason};
  const json& code = member(member(*doc, "filters"), name.c_str());
  if (!code.is_string())
    return {errc::not_found, "Couldn't find filter `" + name + "` in design document `_design/" + ddoc + "`"};
  r.filter_code = code.get<std::string>();
  r.base_id = compute_base_id(r, server_uuid);
  return {};
}

}  // namespace settee
