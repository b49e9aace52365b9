// endpoint: one side of a replication as `_replicate` and `_replicator` documents name it: a URL
// string, an object {"url", "headers", "auth": {"basic": {"username", "password"}}}, or (a settee
// extension: CouchDB 3 refuses them) the name of a database on this node. Credentials may come in
// the URL, in an `Authorization: Basic` header or in auth.basic; they are kept apart from the URL so
// that listings never show them. Pure.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

struct rep_endpoint {
  std::string scheme;  // "http" or "https"
  std::string host;
  int port = 0;      // as given, or the scheme's default
  std::string path;  // the database's path, ending in '/': "/db/", "/prefix/a%2Fb/"
  std::string user, password;
  bool has_credentials = false;
  std::vector<std::pair<std::string, std::string>> headers;  // as given, Authorization: Basic apart
  std::string local_name;                                    // set: a database of this node
  // Set for a local endpoint of a requester signed in with a cookie: a fresh `Cookie` header value
  // for each request (a session cookie expires; the replication may run for days).
  std::function<std::string()> session;

  // "http://host:port/db/" without credentials (what listings and errors show).
  std::string url() const;
  // The request path of `rest` below the database: "/db/_changes?..." for "_changes?...".
  std::string path_of(const std::string& rest) const { return path + rest; }
};

// Parses a `source`/`target` value. `self_url` ("http://127.0.0.1:5984") is where a local name
// points; `self_auth` the Authorization (or Cookie) header a local endpoint carries (the
// requester's). Errors are 400 bad_request with CouchDB's reasons.
result<rep_endpoint> parse_endpoint(const json& spec, const std::string& self_url,
                                    const std::vector<std::pair<std::string, std::string>>& self_auth);

// `url` with any user:password@ removed.
std::string strip_url_credentials(const std::string& url);
// A `source`/`target` value as another user may see it (couch_replicator_docs:strip_credentials):
// a URL without user:password@, an object without `headers` and `auth` and with its `url` so.
json strip_endpoint_credentials(const json& spec);

}  // namespace settee
