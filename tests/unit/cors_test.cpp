#include <doctest/doctest.h>

#include "wire/cors.hpp"

using namespace settee;

namespace {

cors_policy policy(const std::string& ini) {
  auto c = config::parse("[chttpd]\nenable_cors = true\n" + ini);
  REQUIRE(c);
  auto p = cors_policy::read(*c);
  REQUIRE(p);
  return *p;
}

http_request preflight(const std::string& origin, const std::string& method, const std::string& headers = "") {
  http_request r;
  r.method = "OPTIONS";
  r.target = "/db/doc";
  r.headers = {{"Origin", origin}, {"Access-Control-Request-Method", method}};
  if (!headers.empty()) r.headers.push_back({"Access-Control-Request-Headers", headers});
  return r;
}

std::string header(const cors_policy::headers& h, const std::string& name) {
  for (auto& [n, v] : h)
    if (n == name) return v;
  return "<none>";
}

}  // namespace

TEST_CASE("cors: a preflight from a listed origin is answered as chttpd_cors answers it") {
  auto p = policy("[cors]\norigins = http://a.example:8000, https://b.example\ncredentials = true\n");
  auto h = p.preflight(preflight("http://a.example:8000", "PUT", "Content-Type, Authorization"));
  REQUIRE(h);
  CHECK(header(*h, "Access-Control-Allow-Origin") == "http://a.example:8000");
  CHECK(header(*h, "Access-Control-Max-Age") == "600");
  CHECK(header(*h, "Access-Control-Allow-Methods") == "CONNECT, COPY, DELETE, GET, HEAD, OPTIONS, POST, PUT, TRACE");
  CHECK(header(*h, "Access-Control-Allow-Credentials") == "true");
  CHECK(header(*h, "Access-Control-Allow-Headers") == "Content-Type, Authorization");  // as asked
  CHECK(header(*h, "Vary") == "Origin");
  // Not a preflight this policy allows: the handlers answer (and add nothing).
  CHECK_FALSE(p.preflight(preflight("http://c.example", "PUT")));
  CHECK_FALSE(p.preflight(preflight("http://A.example:8000", "PUT")));  // origins compare exactly
  CHECK_FALSE(p.preflight(preflight("http://a.example:8000", "put")));  // so do methods
  CHECK_FALSE(p.preflight(preflight("http://a.example:8000", "PUT", "x-not-allowed")));
  http_request no_method = preflight("http://a.example:8000", "PUT");
  no_method.headers.pop_back();
  CHECK_FALSE(p.preflight(no_method));
  http_request get = preflight("http://a.example:8000", "PUT");
  get.method = "GET";
  CHECK_FALSE(p.preflight(get));
}

TEST_CASE("cors: answers carry the origin, credentials and CouchDB's exposed headers; refused origins nothing") {
  auto p = policy("[cors]\norigins = *\ncredentials = true\n");
  http_request req;
  req.method = "GET";
  req.headers = {{"Origin", "https://app.example"}};
  http_response res;
  res.set_header("Cache-Control", "must-revalidate");
  res.set_header("Content-Type", "application/json");
  res.set_header("ETag", "\"1-a\"");
  p.decorate(req, res);
  // Never "*" (a browser refuses it with credentials): the origin itself.
  CHECK(res.get_header_value("Access-Control-Allow-Origin") == "https://app.example");
  CHECK(res.get_header_value("Access-Control-Allow-Credentials") == "true");
  CHECK(res.get_header_value("Access-Control-Expose-Headers") ==
        "content-type, cache-control, accept-ranges, etag, server, x-couch-request-id, x-couch-update-newrev, "
        "x-couchdb-body-time");
  CHECK(res.get_header_value("Vary") == "Origin");

  for (const char* bad : {"https://app.example/path", "app.example", "https://a b", "javascript:alert(1)",
                          "https://x.example?q", "https://u:p@x.example", ""}) {
    CAPTURE(bad);
    http_request r;
    r.method = "GET";
    r.headers = {{"Origin", bad}};
    http_response refused;
    p.decorate(r, refused);
    CHECK(refused.get_header_value("Access-Control-Allow-Origin").empty());
    CHECK(refused.get_header_value("Vary") == "Origin");
  }
  auto listed = policy("[cors]\norigins = https://app.example\n");
  http_request other;
  other.method = "GET";
  other.headers = {{"Origin", "https://evil.example"}};
  http_response refused;
  listed.decorate(other, refused);
  CHECK(refused.get_header_value("Access-Control-Allow-Origin").empty());
  CHECK(refused.get_header_value("Access-Control-Expose-Headers").empty());
  http_response ok;
  listed.decorate(req, ok);
  CHECK(ok.get_header_value("Access-Control-Allow-Origin") == "https://app.example");
  CHECK(ok.get_header_value("Access-Control-Allow-Credentials").empty());  // credentials off by default
}

TEST_CASE("cors: off unless enabled; methods, headers, exposed headers and max_age from [cors]") {
  auto off = cors_policy::read(*config::parse("[cors]\norigins = *\n"));
  REQUIRE(off);
  CHECK_FALSE(off->enabled());
  CHECK_FALSE(off->preflight(preflight("http://a.example", "GET")));
  http_request req;
  req.headers = {{"Origin", "http://a.example"}};
  http_response res;
  off->decorate(req, res);
  CHECK(res.headers.empty());

  auto p = policy(
      "[cors]\norigins = http://a.example\nmethods = GET, PUT\nheaders = accept, X-Custom\nexposed_headers = "
      "X-Mine\nmax_age = 42\n");
  CHECK_FALSE(p.preflight(preflight("http://a.example", "DELETE")));
  CHECK_FALSE(p.preflight(preflight("http://a.example", "GET", "authorization")));
  auto h = p.preflight(preflight("http://a.example", "GET", "x-custom,Accept"));
  REQUIRE(h);
  CHECK(header(*h, "Access-Control-Allow-Methods") == "GET, PUT");
  CHECK(header(*h, "Access-Control-Max-Age") == "42");
  p.decorate(req, res);
  CHECK(res.get_header_value("Access-Control-Expose-Headers") == "content-type, x-mine");
}

TEST_CASE("cors: a configuration that is not an origin list is refused, naming the key") {
  for (const char* ini : {"[cors]\norigins = http://a.example/app\n", "[cors]\norigins = a.example\n",
                          "[cors]\norigins = http://a.example, ftp\n", "[cors]\nmax_age = soon\n"}) {
    CAPTURE(ini);
    auto p = cors_policy::read(*config::parse(std::string(ini)));
    REQUIRE_FALSE(p);
    CHECK(p.error().code == errc::bad_request);
    CHECK(p.error().reason.rfind("[cors] ", 0) == 0);
  }
  CHECK(cors_policy::read(*config::parse("[cors]\norigins = null, http://[::1]:5984, *\n")));
}
