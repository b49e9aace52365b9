// rep_client: HTTP requests to one replication endpoint (cpp-httplib; http and https, where
// certificates are verified only with [replicator] verify_ssl_certificates, as CouchDB), with the
// endpoint's credentials and headers on every request and a kept-alive connection. Transport
// errors, 5xx and 429 are retried (retries_per_request times, 250 ms doubling up to 10 s); other
// statuses are the caller's.
// Every answer is bounded by the endpoint's remote_rules (docs/architecture.md section 50): its
// body is decoded and counted as it arrives (replicator/reply_body.hpp: a size limit, gzip bombs
// refused), every request has a deadline in total besides the connection timeout between bytes
// (a slow sender is cut), GET redirects are followed only on the same origin, and a restricted
// endpoint is reached only at an address its policy allows, resolved once (replicator/net_policy.hpp).
// What settee refused or cut is the reply's `local_error`, never retried. Not thread-safe: one
// client per thread.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "node/error.hpp"
#include "node/json.hpp"
#include "replicator/rep_endpoint.hpp"
#include "replicator/rep_request.hpp"
#include "wire/body_spool.hpp"

#include <httplib.h>

namespace settee {

struct http_reply {
  int status = 0;    // 0: no answer (the transport failed after every retry)
  std::string body;  // the answer's, or the transport error's text
  // Set when settee refused or cut the exchange (the address, a limit, the deadline): the job's
  // reason, whatever `status` says.
  settee::status local_error;
  bool ok() const { return local_error && status >= 200 && status < 300; }
};

// An answer kept in a file (a multipart answer with attachments, of any size).
struct spooled_reply {
  http_reply head;                    // status; body only for an answer that is not 2xx
  std::string content_type;           // the answer's Content-Type
  std::unique_ptr<body_spool> spool;  // a 2xx answer's body
};

class rep_client {
 public:
  // `cancel` (may be null) stops the retries early.
  rep_client(const rep_endpoint& e, std::chrono::milliseconds timeout, int retries,
             const std::atomic<bool>* cancel = nullptr);
  ~rep_client();
  rep_client(const rep_client&) = delete;
  rep_client& operator=(const rep_client&) = delete;

  // What a body receiver says: more bytes wanted, or enough (reading stops without an error).
  using sink = std::function<bool(std::string_view)>;

  // `rest` is below the database ("_changes?since=0"; "" for the database itself). Answers up to
  // rules.max_response_bytes (`max_bytes` when given: a checkpoint's, rules.max_row_bytes).
  http_reply get(const std::string& rest, uint64_t max_bytes = 0);
  http_reply post(const std::string& rest, const std::string& body);
  http_reply put(const std::string& rest, const std::string& body);
  // A GET (or POST with `body`) whose decoded answer goes to `to` as it arrives, up to
  // `max_bytes` (`limit_name` names the setting in the error); `restart` is called before each
  // attempt (a retry sends the answer again from its start). The reply's body is empty for 2xx.
  http_reply stream(const std::string& rest, const std::string* body, uint64_t max_bytes, const char* limit_name,
                    const std::function<void()>& restart, const sink& to);
  // The parsed JSON body of a 2xx answer; otherwise an error naming the endpoint and the status.
  result<json> get_json(const std::string& rest);
  // A GET with `Accept: accept` whose body goes to a spool file in `dir` as it arrives (at most
  // `max_bytes`; the file is removed with the reply).
  spooled_reply get_spooled(const std::string& rest, const std::string& accept, const std::string& dir,
                            uint64_t max_bytes);
  // A PUT whose body is bytes [offset, offset + length) of `spool`, read as they are sent.
  http_reply put_spooled(const std::string& rest, const std::string& content_type, const body_spool& spool,
                         uint64_t offset, uint64_t length);
  result<json> post_json(const std::string& rest, const json& body);

  // Closes the connection of a request under way on another thread (it fails at once), or the
  // idle kept-alive one (the next request opens another).
  void abort();

  const rep_endpoint& endpoint() const { return e_; }
  // Requests sent (retries included), for the task row.
  uint64_t requests() const { return requests_; }

 private:
  struct upload;  // a body read from a spool as it is sent
  // One exchange: `method` on `path`, the answer's body through a reply_body into `to` (2xx) or
  // kept as the error's text (up to 64 KiB); registered with the deadline watch meanwhile.
  http_reply exchange(const char* method, const std::string& path, httplib::Headers extra, const std::string* body,
                      const upload* up, uint64_t max_bytes, const char* limit_name, const sink& to);
  // Why a request the deadline watch cut failed.
  status deadline_error(const char* method) const;
  // exchange() with retries, and GET redirects followed on the same origin.
  http_reply request(const char* method, const std::string& rest, httplib::Headers extra, const std::string* body,
                     const upload* up, uint64_t max_bytes, const char* limit_name, const std::function<void()>& restart,
                     const sink& to);
  // Runs `attempt` until it gives an answer that is not transient, retries are spent or the
  // request is cancelled.
  http_reply retrying(const std::function<http_reply()>& attempt);
  // request() with the answer's body kept (up to `max_bytes`; 0: rules.max_response_bytes).
  http_reply buffered(const char* method, const std::string& rest, const std::string* body, const upload* up,
                      uint64_t max_bytes);
  // `h` and, for a local endpoint of a signed-in requester, a fresh session cookie.
  httplib::Headers session_headers(httplib::Headers h = {}) const;

  rep_endpoint e_;
  std::chrono::milliseconds timeout_;
  status refused_;                       // the policy's answer for a restricted endpoint: every request fails with it
  std::string location_, content_type_;  // the last answer's Location and Content-Type
  int retries_;
  const std::atomic<bool>* cancel_;
  std::unique_ptr<httplib::Client> http_;
  uint64_t requests_ = 0;
};

// An endpoint's JSON answer, parsed with a nesting bound (a few levels above [couchdb]
// max_json_depth, for the envelopes around documents): anything else, a discarded value.
json parse_reply(const std::string& body);

// Member `key` of `obj` when it is a string, else "" (answers from endpoints are not trusted).
std::string string_at(const json& obj, const char* key);
// `j` as request text (invalid UTF-8 replaced, never thrown on).
std::string request_text(const json& j);

// The error a failed answer means, as couch_replicator_api_wrap names them: 401/403 -> unauthorized,
// 404 -> db_not_found ("could not open <url>"), else the body's error/reason.
status reply_error(const http_reply& r, const rep_endpoint& e);

// A user filter's ("ddoc/name") code read from `r`'s source into r.filter_code, and r.base_id
// computed again with it, as couch_replicator_ids does (the code is part of the id). Nothing for
// the built-in filters; errc::not_found naming the design document or filter that is missing. The
// read is retried `retries` times and waits at most `timeout` each time.
status fetch_filter_code(rep_request& r, const std::string& server_uuid, int retries,
                         std::chrono::milliseconds timeout);

}  // namespace settee
