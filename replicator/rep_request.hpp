// rep_request: a replication as `POST /_replicate` or a `_replicator` document describes it,
// validated the way couch_replicator_utils:make_options does (same reasons), and its id as
// couch_replicator_ids computes version 4: MD5 over the server uuid, both endpoints (credentials
// reduced to the user name, the scheme and default ports left out) and the filter, as the hex of
// term_to_binary of that Erlang list; "+continuous" and "+create_target" extend it. Pure.
//
//   auto r = parse_rep_request(body, ctx);  // 400 bad_request with CouchDB's reason
//   r->id();  // "c0ffee...+continuous"
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "replicator/rep_endpoint.hpp"

namespace settee {

// What a request can take from the node it is posted to.
struct rep_context {
  std::string server_uuid;                                     // the node's [couchdb] uuid
  std::string self_url;                                        // "http://127.0.0.1:5984": where local names point
  std::vector<std::pair<std::string, std::string>> self_auth;  // the requester's credentials
  std::function<std::string()> self_session;                   // or their session (rep_endpoint::session)
  std::shared_ptr<const remote_rules> rules;                   // the node's (null: the defaults)
  bool restricted = false;  // owned by a user who is not a server admin (rep_endpoint::restricted)
};

struct rep_request {
  rep_endpoint source, target;
  bool continuous = false, create_target = false, cancel = false;
  json create_target_params = json::object();
  std::optional<std::vector<std::string>> doc_ids;  // sorted, unique (couch_replicator_utils)
  std::optional<json> selector;
  std::string filter;                  // "ddoc/name" or "_view"; "" none
  json query_params = json::object();  // the filter's
  std::optional<json> since_seq;       // a seq (any JSON) or "YYYY-MM-DDTHH:MM:SSZ"
  bool use_checkpoints = true;
  bool winning_revs_only = false;
  bool use_bulk_get = true;
  int64_t checkpoint_interval_ms = 30000;
  int64_t worker_processes = 4, worker_batch_size = 500, http_connections = 20;
  int64_t connection_timeout_ms = 30000, retries_per_request = 5;
  std::string cancel_id;    // `replication_id` / `_local_id` / `id` given (cancel by id)
  std::string base_id;      // 32 hex (set by parse_rep_request)
  std::string filter_code;  // a user filter's source (part of the id), set by the caller

  // base_id plus "+continuous" and "+create_target" as they apply.
  std::string id() const;
  // The request's settings for listings: endpoints without credentials.
  json describe() const;
};

// `body` must be a JSON object. A user filter's code (fetched from the source) enters the id: the
// caller fetches it and calls compute_base_id again (`filter_code`).
result<rep_request> parse_rep_request(const json& body, const rep_context& ctx);
// MD5 hex of term_to_binary([uuid, v4(source), v4(target) | filter parts]).
std::string compute_base_id(const rep_request& r, const std::string& server_uuid);

}  // namespace settee
