// endpoint: one side of a replication as `_replicate` and `_replicator` documents name it: a URL
// string, an object {"url", "headers", "auth": {"basic": {"username", "password"}}}, or (a settee
// extension: CouchDB 3 refuses them) the name of a database on this node. Credentials may come in
// the URL, in an `Authorization: Basic` header or in auth.basic; they are kept apart from the URL so
// that listings never show them. Pure.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

class net_policy;

// What this node allows itself when it reads from an endpoint (docs/architecture.md section 50):
// every answer is bounded, whatever the endpoint sends. The node sets them from its settings.
struct remote_rules {
  uint64_t max_response_bytes = 64u << 20;  // [chttpd] max_http_request_size: any answer held in memory
  uint64_t max_row_bytes = 8000000;         // [couchdb] max_document_size: a feed's row, a checkpoint
  // A multipart answer spooled to disk, per revision asked for: [couchdb] max_attachment_size plus
  // max_document_size.
  uint64_t max_spool_bytes = (1ull << 30) + 8000000;
  uint64_t max_inflate_ratio = 100;  // [replicator] max_inflate_ratio: decoded bytes per byte received
  // A request's whole time: this many connection timeouts, plus a second per MiB received.
  int64_t deadline_timeouts = 10;
  bool verify_certificates = false;  // [replicator] verify_ssl_certificates (CouchDB's default: false)
  std::string ca_file;               // [replicator] ssl_trusted_certificates_file ("" the system's)
  // Where restricted endpoints may connect ([replicator] denied_networks, allowed_hosts); null: anywhere.
  std::shared_ptr<const net_policy> policy;
};

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
  // The node's rules for reading from it (never null once parsed: defaults until the node sets them).
  std::shared_ptr<const remote_rules> rules = std::make_shared<const remote_rules>();
  // Owned by a user who is not a server admin: connections go only where rules->policy allows.
  bool restricted = false;

  // "http://host:port/db/" without credentials (what listings and errors show).
  std::string url() const;
  // The request path of `rest` below the database: "/db/_changes?..." for "_changes?...".
  std::string path_of(const std::string& rest) const { return path + rest; }
  // `text` (an endpoint's error, a log line) with this endpoint's secrets masked: its password,
  // user:password, their Basic base64 and the values of its headers.
  std::string redact(std::string text) const;
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
