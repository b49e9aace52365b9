#include "http/router.hpp"

#include <exception>

#include "http/auth.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "wire/cors.hpp"
#include "wire/json_util.hpp"
#include "wire/multipart.hpp"

namespace settee {

namespace {

// Path segments `from` on, joined by '/' (an attachment's name may hold it).
std::string join_from(const std::vector<std::string>& p, size_t from) {
  std::string out;
  for (size_t i = from; i < p.size(); ++i) out += (i > from ? "/" : "") + p[i];
  return out;
}

bool is_system_db(const std::string& name) {
  return name == "_users" || name == "_replicator" || name == "_global_changes";
}

// CouchDB endpoints settee does not serve yet: 501 naming the feature, so that a client can tell
// "not built" from "you made a mistake" (docs/api.md "Not yet implemented").
struct not_built {
  const char* segment;
  const char* feature;
};
constexpr not_built server_not_built[] = {
    {"_cluster_setup", "_cluster_setup (a cluster forms from [cluster] seeds: docs/operations.md)"},
    {"_reload_query_servers", "query servers"},
};

// Deprecated in CouchDB 3.0 and not to come: 501 saying so, and what to do instead.
constexpr not_built design_deprecated[] = {
    {"_show", "show functions"},
    {"_list", "list functions"},
    {"_rewrite", "rewrite functions"},
};

template <size_t N>
const char* feature_of(const not_built (&table)[N], const std::string& segment) {
  for (const not_built& e : table)
    if (segment == e.segment) return e.feature;
  return nullptr;
}

void reply_not_built(ctx& c, const char* feature) {
  c.error(errc::not_implemented, std::string(feature) + " is not supported by settee yet");
}

// Handlers for a path below /db/..., after the database was found and access was checked.
void dispatch_db(ctx& c, const db_meta& db, const json& security) {
  auto& p = c.path;
  const std::string& what = p[1];
  if (what == "_temp_view" && p.size() == 2)  // as CouchDB 2 and later
    return c.error(errc::gone, "Temporary views are not supported in CouchDB");
  const bool listing = what == "_all_docs" || what == "_design_docs" || what == "_local_docs";
  if (listing && p.size() == 3 && p[2] == "queries") return handle_all_docs_queries(c, db, what);
  if (listing && p.size() == 2) return handle_all_docs(c, db, what);
  if (what == "_partition") return handle_partition(c, db);
  if (what == "_bulk_docs" && p.size() == 2) return handle_bulk_docs(c, db);
  if (what == "_bulk_get" && p.size() == 2) return handle_bulk_get(c, db);
  if (what == "_revs_diff" && p.size() == 2) return handle_revs_diff(c, db);
  if (what == "_missing_revs" && p.size() == 2) return handle_missing_revs(c, db);
  if (what == "_security" && p.size() == 2) return handle_security(c, db, security);
  if (what == "_shards" && p.size() <= 3) return handle_shards(c, db);
  if (what == "_ensure_full_commit" && p.size() == 2) return handle_ensure_full_commit(c, db);
  if (what == "_revs_limit" && p.size() == 2) return handle_revs_limit(c, db);
  if ((what == "_purge" || what == "_purged_infos" || what == "_purged_infos_limit") && p.size() == 2)
    return handle_purges(c, db);
  if (what == "_compact" && p.size() <= 3) return handle_compact(c, db);
  if (what == "_view_cleanup" && p.size() == 2) return handle_view_cleanup(c, db);
  if ((what == "_nouveau_cleanup" || what == "_search_cleanup") && p.size() == 2) return handle_search_cleanup(c, db);
  if (what == "_find" && p.size() == 2) return handle_find(c, db);
  if (what == "_explain" && p.size() == 2) return handle_explain(c, db);
  if (what == "_index") return handle_index(c, db);
  if (what == "_sync_shards" && p.size() == 2) return handle_sync_shards(c, db);
  if (what == "_changes" && p.size() == 2) return handle_changes(c, db);
  if (what == "_changes" && p.size() == 3) return handle_shard_changes(c, db, p[2]);
  if (what == "_time_seq" && p.size() == 2) return handle_time_seq(c, db);
  // As chttpd_db: /db/_local/<id>, nothing shorter or longer.
  if ((what == "_local" || what == "_local/") && p.size() == 2)
    return c.error(errc::bad_request, "Invalid _local document id.");
  if (what == "_local" && p.size() == 3) return handle_local_doc(c, db, "_local/" + p[2]);
  if (what == "_local") return c.error(errc::bad_request, "_local documents do not accept attachments.");
  if (what.rfind("_local/", 0) == 0 && p.size() == 2) return handle_local_doc(c, db, what);
  if (what == "_design" && p.size() == 2) return handle_doc(c, db, "_design/");  // illegal, says why
  if (what == "_design" && p.size() >= 3) {
    if (const char* feature = p.size() > 3 ? feature_of(design_deprecated, p[3]) : nullptr)
      return c.error(errc::not_implemented, std::string(feature) +
                                                " are deprecated since CouchDB 3.0 and settee does not run them: "
                                                "render documents in the client, or route with a proxy");
    if (p.size() == 4 && p[3] == "_info") return handle_design_info(c, db, p[2]);
    if (p.size() == 5 && p[3] == "_view") return handle_view(c, db, p[2], p[4]);
    if (p.size() == 5 && p[3] == "_nouveau") return handle_nouveau(c, db, p[2], p[4]);
    if (p.size() == 5 && p[3] == "_nouveau_info") return handle_nouveau_info(c, db, p[2], p[4]);
    if (p.size() == 5 && p[3] == "_search") return handle_search(c, db, p[2], p[4]);
    if (p.size() == 5 && (p[3] == "_search_info" || p[3] == "_search_disk_size"))
      return handle_search_info(c, db, p[2], p[4], p[3] == "_search_disk_size");
    if (p.size() == 6 && p[3] == "_view" && p[5] == "queries") return handle_view_queries(c, db, p[2], p[4]);
    if (p.size() > 3 && p[3] == "_update") {  // chttpd_show:handle_doc_update_req
      if (p.size() == 4) return c.error(errc::update_error, "Invalid path.");
      return handle_update(c, db, "_design/" + p[2], p[4],
                           p.size() > 5 ? std::optional(join_from(p, 5)) : std::nullopt);
    }
    if (p.size() > 3) return handle_attachment(c, db, "_design/" + p[2], join_from(p, 3));
    return handle_doc(c, db, "_design/" + p[2]);
  }
  if (p.size() > 2) {
    return handle_attachment(c, db, what, join_from(p, 2));
  }
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
    if (first == "_settee") return handle_settee_page(c);
    if (first == "_utils") return handle_utils_page(c);  // where CouchDB users look for Fauxton
    if (first == "_nouveau_analyze" && p.size() == 1) return handle_nouveau_analyze(c);  // any user, as CouchDB
    if (first == "_search_analyze" && p.size() == 1) return handle_search_analyze(c);
    // CouchDB's `_metrics` role reads this node's statistics without being an admin.
    if (first == "_node" && p.size() >= 3 && (p[2] == "_stats" || p[2] == "_system" || p[2] == "_prometheus") &&
        c.user.has_role("_metrics"))
      return handle_node(c);
    if (auto st = authenticator::require_server_admin(c.user); !st) return c.error(st);
    if (first == "_all_dbs" && p.size() == 1) return handle_all_dbs(c);
    if (first == "_dbs_info" && p.size() == 1) return handle_dbs_info(c);
    if (first == "_node") return handle_node(c);
    if (first == "_membership" && p.size() == 1) return handle_membership(c);
    if (first == "_active_tasks" && p.size() == 1) return handle_active_tasks(c);
    if (first == "_db_updates" && p.size() == 1) return handle_db_updates(c);
    if (first == "_reshard") return handle_reshard(c);
    if (first == "_replicate" && p.size() == 1) return handle_replicate(c);
    if (first == "_scheduler") return handle_scheduler(c);
    if (const char* feature = feature_of(server_not_built, first)) return reply_not_built(c, feature);
    if (first == "_all_dbs" || first == "_up" || first == "_uuids") return c.error(errc::not_found, "missing");
    if (p.size() == 1 && c.method() == "PUT") return handle_db(c, first);  // refuses the name
    return c.error(errc::db_not_found, "Database does not exist.");
  }
  // A name is validated where a database is created; any other request for an invalid name is
  // about a database that does not exist (404), as CouchDB answers.
  // System databases are never open to anonymous users, whatever their _security says (a data dir
  // from before release 0.3 has `_replicator` with an empty one).
  if (is_system_db(first) && !c.user.name)
    return c.error(errc::unauthorized, "You are not authorized to access this db.");
  if (p.size() == 1) return handle_db(c, first);
  auto db = c.node.coord.catalog().lookup(first);
  if (!db) return c.error(db.error());
  const json& security = read_security(*db);
  c.security = &security;
  // A user reads and updates their own `_users` document (not its roles: doc_handlers checks);
  // everything else in `_users` is for server admins.
  bool own_user_doc = first == "_users" && p.size() == 2 && c.user.name && p[1] == "org.couchdb.user:" + *c.user.name &&
                      (c.method() == "GET" || c.method() == "PUT");
  // In `_replicator` a user who is not a server admin reads and writes single replication
  // documents, their own only (doc_handlers checks `owner`); the rest is for server admins.
  bool replicator_doc = first == "_replicator" && p.size() == 2 && !p[1].empty() && p[1][0] != '_' &&
                        (c.method() == "GET" || c.method() == "HEAD" || c.method() == "PUT" || c.method() == "DELETE");
  bool server_admin_only =
      (first == "_users" && !own_user_doc) || (first == "_replicator" && !replicator_doc) || p[1] == "_sync_shards";
  bool db_admin_only =
      ((p[1] == "_security" || p[1] == "_revs_limit" || p[1] == "_time_seq" || p[1] == "_purged_infos_limit") &&
       c.method() != "GET") ||
      p[1] == "_compact" || p[1] == "_view_cleanup" || p[1] == "_purge" || p[1] == "_purged_infos";
  status allowed = server_admin_only ? authenticator::require_server_admin(c.user)
                   : db_admin_only   ? authenticator::require_db_admin(c.user, security)
                                     : authenticator::require_member(c.user, security);
  if (!allowed) return c.error(allowed);
  dispatch_db(c, *db, security);
}

}  // namespace

bool streams_body(const http_request& req) {
  std::vector<std::string> p = split_path(req.target.substr(0, req.target.find('?')));
  if (req.method != "PUT" || p.size() < 2 || p[0].empty() || (p[0][0] == '_' && !is_system_db(p[0]))) return false;
  const bool design = p[1] == "_design";
  if (!design && (p[1].empty() || p[1][0] == '_')) return false;
  const size_t doc_segments = design ? 3 : 2;
  if (p.size() == doc_segments)  // a document: only as multipart/related
    return multipart::media_type_of(req.get_header_value("Content-Type")) == "multipart/related";
  return p.size() > doc_segments && !p[doc_segments].empty() && p[doc_segments][0] != '_';
}

namespace {

// The metrics listener's whole API: this node's Prometheus text, for anyone who can reach the port.
void dispatch_metrics(ctx& c) {
  const auto& p = c.path;
  if (p.size() == 3 && p[0] == "_node" && p[2] == "_prometheus") return handle_node(c);
  c.error(errc::not_found, "missing");
}

// The CORS policy of the node's configuration now, read again only when it changed.
std::shared_ptr<const cors_policy> cors_of(const live_config& cfg) {
  thread_local uint64_t version = UINT64_MAX;
  thread_local std::shared_ptr<const cors_policy> policy;
  const uint64_t now = cfg.version();
  if (now != version || !policy) {
    auto p = cors_policy::read(*cfg.current());  // checked when it was set: an error means none
    policy = std::make_shared<const cors_policy>(p ? std::move(*p) : cors_policy{});
    version = now;
  }
  return policy;
}

std::shared_ptr<http_response> answer(node_services& node, const http_request& req, void (*dispatch)(ctx&)) {
  auto res = std::make_shared<http_response>();
  res->set_header("Server", "settee/" SETTEE_VERSION);
  const auto cors = dispatch == dispatch_metrics ? nullptr : cors_of(node.cfg);
  if (cors && cors->enabled()) {
    if (auto allowed = cors->preflight(req)) {  // before authentication, as chttpd
      res->status = 204;
      for (auto& [name, value] : *allowed) res->set_header(name, std::move(value));
      return res;
    }
  }
  struct add_cors {  // however the request ended
    const cors_policy* policy;
    const http_request& req;
    http_response& res;
    ~add_cors() {
      if (policy) policy->decorate(req, res);
    }
  } cors_headers{cors.get(), req, *res};
  try {
    ctx c{req, *res, node, split_path(req.target), {}};
    struct note_user {  // whoever the request turned out to be, however it ended
      ctx& c;
      ~note_user() {
        c.res.user = c.user.name.value_or("");
        // As couch_httpd_auth: a cookie past a tenth of its life is renewed, unless the handler set one.
        if (c.user.renew_cookie && c.user.name && c.res.get_header_value("Set-Cookie").empty())
          c.res.set_header("Set-Cookie", c.node.auth.session_cookie(*c.user.name));
      }
    } note{c};
    if (!valid_percent_encoding(req.target)) {  // chttpd: a path or query mochiweb cannot unquote
      c.error(errc::bad_request, "invalid_url_encoding");
      return res;
    }
    dispatch(c);
  } catch (const std::exception& e) {
    log::error(std::string("request failed with an exception: ") + e.what());
    res->stream.reset();
    res->status = 500;
    res->set_header("Cache-Control", "must-revalidate");
    res->set_content(error_json(status{errc::unknown_error, e.what()}).dump() + "\n", "application/json");
  }
  return res;
}

}  // namespace

std::shared_ptr<http_response> handle_request(node_services& node, const http_request& req) {
  return answer(node, req, dispatch);
}

std::shared_ptr<http_response> handle_metrics_request(node_services& node, const http_request& req) {
  return answer(node, req, dispatch_metrics);
}

}  // namespace settee
