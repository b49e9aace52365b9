// request: what every handler gets (the request, the node's services, the authenticated user) and
// the one place where replies and errors are rendered as CouchDB does.
#pragma once
#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "node/clock.hpp"
#include "node/error.hpp"
#include "node/live_config.hpp"
#include "storage/attachments.hpp"
#include "wire/json_util.hpp"
#include "wire/message.hpp"

namespace settee {

class authenticator;
class change_notifier;
class remote_shards;
class update_log;
class task_list;
class compactor;
class resharder;
class cluster_members;
class shard_registry;
class js_pool;
class replications;
class replicator_docs;
class doc_validator;
class view_reader;
class search_reader;
class find_reader;

// Limits and identity the handlers need; built once at start-up, read-only afterwards.
struct node_services {
  live_config& cfg;  // read its current() snapshot; changed by /_node/{node}/_config
  const clock& clk;
  coordinator& coord;
  authenticator& auth;
  std::string node_name;
  std::string server_uuid;
  // Limits a config change updates while requests read them (live_config watchers).
  std::atomic<uint32_t> default_q{2};
  std::atomic<size_t> max_document_id_length{SIZE_MAX};  // [couchdb] max_document_id_length ("infinity")
  std::atomic<size_t> max_document_size{8000000};        // [couchdb] max_document_size: of a body, attachments apart
  // [couchdb] max_attachment_size (a larger one is 413), [attachments] compressible_types and
  // compression_level: how new attachments are stored.
  attachments::policy attachment_policy{};
  std::string spool_dir = ".";  // where large uploads are decoded and encoded (the data directory)
  std::string data_dir = ".";
  int64_t started_s = 0;                 // clk.now_s() when the node started (uptime)
  size_t max_request_bytes = 64u << 20;  // [chttpd] max_http_request_size
  std::atomic<size_t> uuids_max_count{1000};
  std::atomic<size_t> bulk_docs_max{100000};
  change_notifier* notifier = nullptr;
  remote_shards* remote = nullptr;  // other nodes' copies and update logs; null on a single node
  // [cluster] push_timeout_ms and catalog_push_timeout_ms (node/settings.hpp).
  std::chrono::milliseconds push_timeout{30000}, catalog_push_timeout{5000};
  update_log* updates = nullptr;  // this node's `updated` rows of _db_updates
  task_list* tasks = nullptr;     // GET /_active_tasks
  compactor* compaction = nullptr;
  resharder* reshard = nullptr;         // /_reshard
  cluster_members* cluster = nullptr;   // every member, this node included, by name (actors/members.hpp)
  shard_registry* shards = nullptr;     // the HTTP front's timer gives idle shards' pages back
  js_pool* js = nullptr;                // JavaScript: design documents' functions (actors/js_pool.hpp)
  doc_validator* validator = nullptr;   // validate_doc_update on every write coordinated here
  view_reader* views = nullptr;         // view queries (actors/view_reader.hpp)
  search_reader* search = nullptr;      // full-text queries (actors/search_reader.hpp)
  find_reader* mango = nullptr;         // _find on JSON indexes (actors/find_reader.hpp)
  replications* replicator = nullptr;   // POST /_replicate, /_scheduler (replicator/replications.hpp)
  replicator_docs* rep_docs = nullptr;  // documents of _replicator, /_scheduler/docs
  std::string self_url{};               // "http://127.0.0.1:5984": where local replication endpoints point
  // Run by the HTTP front's timer thread once per idle spell (no request and no shard used, by a
  // peer's call or internal replication, for [node] idle_release_s), before it trims the heap:
  // gives back what other threads cache (the actor scheduler's malloc caches).
  std::function<void()> on_idle = nullptr;
  // Whether a change of [section] key takes effect at once (else at the next start): the node's
  // watchers of `cfg` apply those.
  std::function<bool(const std::string& section, const std::string& key)> applies_live = nullptr;
  std::atomic<bool> access_log{false};  // [log] access: one line per request
  // The _security object of new databases ([couchdb] default_security): admin-only, as CouchDB 3.
  std::string new_db_security = admin_only_security;
  static constexpr const char* admin_only_security =
      R"({"members":{"roles":["_admin"]},"admins":{"roles":["_admin"]}})";
  std::atomic<size_t> live_feeds{0};  // longpoll/continuous/eventsource feeds open now
};

struct user_ctx {
  std::optional<std::string> name;
  std::vector<std::string> roles;
  std::string authenticated_by;  // "cookie", "default" (basic), "jwt", "proxy" or "" (anonymous)
  bool renew_cookie = false;     // by a cookie a tenth of [chttpd_auth] timeout old: send a fresh one
  bool is_admin() const;
  bool has_role(const char* role) const;
};

// A boolean query parameter: "true"/"false", else 400 "Invalid boolean parameter".
result<bool> bool_param(const http_params& query, const char* name, bool def);

struct ctx {
  const http_request& req;
  http_response& res;
  node_services& node;
  std::vector<std::string> path;  // percent-decoded path segments
  user_ctx user;
  std::string method_ = req.method == "HEAD" ? "GET" : req.method;
  const json* security = nullptr;  // the database's _security object, below /db/...

  // HEAD is answered as GET (the server drops the body).
  const std::string& method() const { return method_; }
  bool has(const char* name) const { return req.has_param(name); }
  std::string param(const char* name) const { return req.get_param_value(name); }
  // A boolean query parameter: "true"/"false", else 400 "Invalid boolean parameter".
  result<bool> bool_param(const char* name, bool def) const;
  // The `w` (or `r`) parameter: copies that must answer; 0 when absent (the database default).
  result<size_t> write_quorum() const { return quorum_param("w"); }
  result<size_t> read_quorum() const { return quorum_param("r"); }
  result<size_t> quorum_param(const char* name) const;
  // The query parameters in the order the request gave them.
  std::vector<std::pair<std::string, std::string>> query_in_order() const;
  // An integer query parameter; 400 query_parse_error when it is not one.
  result<int64_t> int_param(const char* name, int64_t def) const;
  // The body as a JSON object (400 with CouchDB's reasons when it is not).
  result<json> json_body(size_t wrapping = 0) const;
  // A body that must be a JSON object sent as application/json: 415 without that type, 400
  // "invalid UTF-8 JSON" or "Request body must be a JSON object".
  result<json> json_object_body(size_t wrapping = 0) const;
  // The body as node/json's parse_docs_body takes it apart (Content-Type checked as above).
  result<settee::docs_body> split_docs_body(std::string_view array, member_picker pick, size_t wrapping) const;
  // 415 bad_content_type unless the request says its body is application/json (as CouchDB's
  // validate_ctype; it also keeps cross-site HTML forms, which cannot send that type, out).
  status require_json_content() const;

  // "<scheme>://<host><path>" as CouchDB's absolute_uri: the host from X-Forwarded-Host, else Host;
  // https when X-Forwarded-Ssl is "on" or X-Forwarded-Proto "https". `path` is already encoded.
  std::string absolute_uri(const std::string& path) const;
  // Location: the absolute URI of /<db>[/<id>[/<attachment>]], each part percent-encoded.
  void set_location(const std::vector<std::string>& parts);

  void reply(int status, const json& body);
  void reply_raw(int status, std::string body, const char* content_type = "application/json");
  void error(const status& st);
  void error(errc code, const std::string& reason) { error(status{code, reason}); }
  void method_not_allowed(const char* methods);
};

// The first error among several results (nullptr when all are ok), for validating parameters.
template <class... R>
const status* first_error(const R&... rs) {
  const status* out = nullptr;
  ((out = out ? out : (rs ? nullptr : &rs.error())), ...);
  return out;
}

// Splits a raw request target's path into percent-decoded segments.
std::vector<std::string> split_path(const std::string& target);

}  // namespace settee
