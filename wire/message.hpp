// message: an HTTP request as the handlers see it and the response they build, independent of the
// server that parsed it (http/server.cpp) or the code that made it up (a peer's forwarded request).
// A response is either a body rendered at once or a response_stream the server pumps over time
// (live _changes feeds), so that no connection, idle or listening, holds a thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace settee {

class body_spool;
using http_params = std::multimap<std::string, std::string>;

// What the last Basic-authenticated request on a connection proved (filled by http/auth.cpp), so
// that the connection's next requests with the same Authorization header skip the password check.
struct auth_memo {
  std::mutex mu;
  std::string authorization;  // the header value it proved
  std::string name, stored;   // the user, and the stored hash the password matched
  int64_t expires_s = 0;
  // An AuthSession cookie it proved: its user, the stored hash and the secret it was made with, its time.
  std::string cookie, cookie_name, cookie_stored, cookie_secret;
  int64_t cookie_issued = 0;
};

struct http_request {
  std::string method;                                        // "GET", "HEAD", "PUT", ... as sent
  std::string target;                                        // path and query, as sent
  std::vector<std::pair<std::string, std::string>> headers;  // names as sent
  http_params params;                                        // decoded query parameters
  std::string body;
  std::shared_ptr<body_spool> spool;  // set: the body is in this file instead (a large attachment)
  std::string peer;                   // the client's address, for the access log
  std::shared_ptr<auth_memo> memo;    // the connection's (null: a request made up in-process)

  bool has_header(const char* name) const;
  // The first value of a header (names compare case-insensitively); "" when absent.
  std::string get_header_value(const char* name) const;
  bool has_param(const char* name) const { return params.count(name) > 0; }
  std::string get_param_value(const char* name) const;
};

// What a stream wants after a pump: call again now, wait for `wake_key` to move past `seen` (or
// for `wake_at`, whichever is first), end the response, or abort it (the body stops short, the
// connection closes: a client sees a failed response, never a complete-looking partial one).
struct pump_result {
  enum class next { more, wait, done, abort } then = next::more;
  std::string wake_key;  // change_notifier key ("" = only the deadline)
  uint64_t seen = 0;
  std::chrono::steady_clock::time_point wake_at{};
};

// A response body produced over time. pump() runs on a worker thread, one call at a time; it
// appends what is ready to `out` and never blocks waiting for new data.
class response_stream {
 public:
  virtual ~response_stream() = default;
  virtual pump_result pump(std::string& out) = 0;
};

struct http_response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::shared_ptr<response_stream> stream;  // set: the body is pumped from it, chunked
  int64_t stream_length = -1;               // >= 0: the stream's length, sent as Content-Length
  std::string user;                         // who made the request ("" anonymous), for the access log

  // Replaces a header of the same name (case-insensitive).
  void set_header(const std::string& name, std::string value);
  std::string get_header_value(const char* name) const;
  void set_content(std::string text, const char* content_type);
  void set_stream(std::shared_ptr<response_stream> s, const char* content_type);
};

// Decodes a query string (a=1&b=x%20y; '+' is a space) into `out`.
void parse_query(std::string_view query, http_params& out);
// The same parameters in the order the query string gives them.
std::vector<std::pair<std::string, std::string>> parse_query_list(std::string_view query);
// Percent-encodes every byte but letters, digits and `_ . - :`, as CouchDB's couch_util:url_encode
// (for a Location header: `/` in an id or a name is %2F, a control character never goes raw).
std::string percent_encode(std::string_view s);
// Percent-decoding ('+' stays '+' unless `plus_is_space`).
std::string percent_decode(std::string_view s, bool plus_is_space = false);
// Whether every '%' in `s` starts a %XX escape.
bool valid_percent_encoding(std::string_view s);
// The reason phrase of a status code, as CouchDB sends it.
const char* status_text(int status);

}  // namespace settee
