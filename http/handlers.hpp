// handlers: the CouchDB HTTP endpoints, grouped by area (one .cpp per area). Each takes the
// request context, does its own parameter validation and replies through ctx (never throws).
#pragma once
#include <functional>
#include <optional>
#include <string>

#include "actors/all_docs_reader.hpp"
#include "actors/db_catalog.hpp"
#include "actors/doc_render.hpp"
#include "actors/local_copy.hpp"
#include "actors/members.hpp"
#include "http/request.hpp"
#include "query/view_query.hpp"

namespace settee {

// server_handlers.cpp
void handle_root(ctx& c);
void handle_up(ctx& c);
void handle_all_dbs(ctx& c);
void handle_dbs_info(ctx& c);
void handle_uuids(ctx& c);
void handle_session(ctx& c);
void handle_node(ctx& c);
void handle_membership(ctx& c);
void handle_active_tasks(ctx& c);
void handle_settee_page(ctx& c);
void handle_utils_page(ctx& c);  // GET /_utils/: the data browser (http/page/utils.html)
void handle_db_updates(ctx& c);
// replicate_handlers.cpp: POST /_replicate, GET /_scheduler/{jobs,docs}[/...].
void handle_replicate(ctx& c);
void handle_scheduler(ctx& c);

// config_handlers.cpp: /_node/{node}/_config[/_reload|/section[/key]], this node's or another member's.
void handle_config(ctx& c);
// This node's answer to a _config request (also what it answers another member over RPC).
config_reply answer_config(node_services& node, const config_call& call);

// metrics_handlers.cpp: GET /_node/{node}/_prometheus, /_stats[/group[/metric]] and /_system.
void handle_node_metrics(ctx& c);
// This node's figures for GET /_node/<name>/_system (and nodeStatus over RPC).
node_status read_node_status(const node_services& node);

// reshard_handlers.cpp
void handle_reshard(ctx& c);

// db_handlers.cpp
void handle_db(ctx& c, const std::string& name);
// GET /db's answer for `db` (also each entry of /_dbs_info).
result<json> db_info_json(ctx& c, const db_meta& db);
void handle_security(ctx& c, const db_meta& db, const json& security);
void handle_shards(ctx& c, const db_meta& db);
void handle_ensure_full_commit(ctx& c, const db_meta& db);
// POST /db/_compact[/ddoc] and /db/_view_cleanup: 202 once every node holding a copy was asked.
void handle_compact(ctx& c, const db_meta& db);
void handle_view_cleanup(ctx& c, const db_meta& db);
// search_handlers.cpp: Nouveau's full-text search (issue 54).
// `partition`: the path's /db/_partition/<p>/... ("" for /db/_design/...).
void handle_nouveau(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                    const std::string& partition = "");
void handle_nouveau_info(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index);
void handle_search_cleanup(ctx& c, const db_meta& db);
void handle_nouveau_analyze(ctx& c);
void handle_search(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                   const std::string& partition = "");
void handle_search_info(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                        bool disk_size_only);
void handle_search_analyze(ctx& c);
// POST /db/_find and /db/_explain, GET /db/_index (Mango, on the `_all_docs` index: find_handlers.cpp).
// `partition` (a partitioned database's /_partition/<p>/_find): that partition's documents only.
void handle_find(ctx& c, const db_meta& db, const std::string& partition = "");
void handle_explain(ctx& c, const db_meta& db, const std::string& partition = "");
void handle_index(ctx& c, const db_meta& db);
// The index signatures the design documents of a listing (with their bodies) define: their views'
// and their JSON indexes' (what _view_cleanup and _index removals keep on the copies).
std::vector<std::string> kept_signatures(const db_meta& db, const all_docs_listing& design_docs);
// Runs `ask` on every node holding a copy of `db` (this one first); failures are logged as `what`.
void on_every_holder(ctx& c, const db_meta& db, const std::string& what,
                     const std::function<status(cluster_member&)>& ask);
void handle_revs_limit(ctx& c, const db_meta& db);
// The answer to a setting made on every copy (_revs_limit, _purged_infos_limit): 200 {"ok":true},
// 202 with the copies that could not take it under "unavailable", 503 when none could.
void reply_set_on_copies(ctx& c, const coordinator::copies_outcome& set);
// POST /db/_purge, GET /db/_purged_infos, GET|PUT /db/_purged_infos_limit (purge_handlers.cpp).
void handle_purges(ctx& c, const db_meta& db);
void handle_time_seq(ctx& c, const db_meta& db);
// A _revs_limit body (a JSON integer, 1 to 1000000).
result<uint32_t> parse_revs_limit(const std::string& body);

// all_docs_handlers.cpp: `what` is _all_docs, _design_docs or _local_docs.
void handle_all_docs(ctx& c, const db_meta& db, const std::string& what);
void handle_all_docs_queries(ctx& c, const db_meta& db, const std::string& what);  // POST .../queries
// GET|POST /db/_partition/<p>/_all_docs: the partition's documents, from its one range.
void handle_partition_all_docs(ctx& c, const db_meta& db, const std::string& partition);
// partition_handlers.cpp: /db/_partition/<p>[/...].
void handle_partition(ctx& c, const db_meta& db);
// A partition's name as couch_partition:validate_partition checks it (400 illegal_partition).
status validate_partition_name(const std::string& p);

// cluster_handlers.cpp
void handle_sync_shards(ctx& c, const db_meta& db);
// Pushes `_dbs` to every connected node right away (after a database is created or deleted).
void share_catalog(ctx& c);

// changes_handlers.cpp
void handle_changes(ctx& c, const db_meta& db);
// GET|POST /db/_changes/<shard id>: one shard's feed (spec 11.3); "_meta": handle_changes_meta.
void handle_shard_changes(ctx& c, const db_meta& db, const std::string& shard_id);
// GET /db/_changes/_meta: the shards, their ranges and lineage, and the token of now.
void handle_changes_meta(ctx& c, const db_meta& db);

// doc_handlers.cpp
void handle_doc(ctx& c, const db_meta& db, const std::string& id);
void handle_local_doc(ctx& c, const db_meta& db, const std::string& id);
// Whether the request's user may write document `id` with `body` (null for a deletion): design
// documents need a db admin; in `_users`, only an admin may set roles or touch another user's doc;
// in `_replicator` a user writes their own documents only (their name set as `owner`).
status authorize_doc_write(ctx& c, const db_meta& db, const std::string& id, json* body);
// What a document GET asks for (its query parameters and If-None-Match).
struct doc_get {
  render_options opts;
  bool latest = false;
  std::optional<rev_id> rev;  // ?rev=
  bool by_open_revs = false;  // ?open_revs= (all, or the list)
  bool open_revs_all = false;
  std::vector<rev_id> open_revs;
  std::string if_none_match;
};
// A JSON array of revisions; `refusal` when it is not an array, 400 "Invalid rev format" for a bad one.
result<std::vector<rev_id>> rev_list_of(const json& list, const status& refusal);
result<doc_get> parse_doc_get(const http_params& query, const std::string& if_none_match);
// The answer to a GET of document `d` (status, body, ETag), rendered here once; errors as values.
result<doc_read> answer_doc_get(const doc_copy& d, const doc_get& g);
// Replies with a rendered answer (or its error).
void reply_doc_read(ctx& c, const result<doc_read>& r);
// Release 0.2's readDoc from a 0.2 coordinator, answered from this node's copy with the code above
// (errors as the HTTP answer 0.2 expects: status and CouchDB error body).
result<doc_read> serve_legacy_read(local_copy& copy, const doc_request& req, size_t max_id_length);

// bulk_handlers.cpp
void handle_bulk_docs(ctx& c, const db_meta& db);
void handle_bulk_get(ctx& c, const db_meta& db);
void handle_revs_diff(ctx& c, const db_meta& db);
void handle_missing_revs(ctx& c, const db_meta& db);
// The ids a _bulk_get body asks for (those that are valid document ids), or the body's error.
result<std::vector<std::string>> bulk_get_ids(const json& body, size_t max_id_length);
// _bulk_get's answer for `entries` from `docs` (one per valid id, in order).
// The render options of one `_bulk_get` entry: `opts`, with the entry's own `atts_since`.
result<render_options> bulk_get_options(const json& entry, const render_options& opts);
std::string render_bulk_get(const json& entries, const std::vector<doc_copy>& docs, const render_options& opts,
                            bool latest, size_t max_id_length);
// _revs_diff: the ids a body asks about, and the answer from their documents (trees only).
std::vector<std::string> revs_diff_ids(const json& body);
result<json> answer_revs_diff(const json& body, const std::vector<doc_copy>& docs);

// Validation shared by several areas.
status validate_doc_id(const std::string& id, size_t max_length);
// In a partitioned database, `id` (not _design/ or _local/) must be `partition:docid`
// (couch_partition:validate_docid's errors).
status validate_partitioned_id(const db_meta& db, const std::string& id);
// The database's _security object ({} when unset).
const json& read_security(const db_meta& db);
// The clustered seq token of the position the range summaries describe (one per range).
std::string seq_token(const db_meta& db, const std::vector<coordinator::range_summary>& ranges);
// Server-generated document ids (CouchDB's "sequential" algorithm).
std::string next_uuid();

}  // namespace settee

namespace settee {

// Writes one document to w copies (the `w` query parameter, default n/2+1), once the database's
// validate_doc_update functions let it (their refusal is the error).
result<write_outcome> write_one(ctx& c, const db_meta& db, doc_update u);
// The options of a view-shaped read (_all_docs and its kin, views) as couch_mrview_http's
// parse_body_and_query takes them: a POST body's members, then the query string's.
result<view_query> parse_view_request(ctx& c);
// POST .../queries: `one` answers each query of the body's `queries` (the query string's options,
// then the query's own), as {"results": [...]} (chttpd_db:multi_all_docs_view and its kin).
void answer_queries(ctx& c, const std::function<result<std::string>(const view_query&)>& one);
// GET|POST /db/_design/{ddoc}/_view/{view}, and POST .../queries (http/view_handlers.cpp).
// `partition`: a partitioned database's partition (/db/_partition/<p>/_design/d/_view/v).
void handle_view(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& view_name,
                 const std::string& partition = "");
void handle_design_info(ctx& c, const db_meta& db, const std::string& ddoc_name);
void handle_view_queries(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& view_name);
// POST|PUT /db/_design/{ddoc}/_update/{name}[/{docid}]: the update handler's document written (its
// validate_doc_update functions run), its response sent (http/update_handlers.cpp).
void handle_update(ctx& c, const db_meta& db, const std::string& ddoc_id, const std::string& name,
                   const std::optional<std::string>& doc_id);
// validate_doc_update of the database's design documents on `docs` (actors/doc_validator), with
// this request's user and the database's _security: one status per document (ok or its refusal).
result<std::vector<status>> validate_writes(ctx& c, const db_meta& db, const std::vector<doc_update>& docs);
// A JSON document (from PUT, POST or _bulk_docs) as a storage update. `id` is the document id
// (already validated); the body keeps every field except the special ones.
// `follows`: the attachment parts of a multipart/related body by name (attachments::take_inline);
// new attachments are stored as `policy` says. A design document's JavaScript is compiled in a
// worker of `js` (null: one with functions is refused).
// `body`: the document's body already written (split_doc: `doc` holds its special members only).
result<doc_update> to_doc_update(const db_meta& db, json doc, const std::string& id, bool new_edits,
                                 std::map<std::string, std::string>* follows = nullptr,
                                 const attachments::policy& policy = attachments::policy{}, js_pool* js = nullptr,
                                 cluster_members* cluster = nullptr, std::optional<std::string> body = std::nullopt);
// How a written document is taken apart as it is parsed (node/json's split_doc): the special
// members to_doc_update reads in the DOM, `_attachments` whole, the rest straight to the body.
member_use document_member(std::string_view name);
// A split document that `db` and `id` need whole (authorize_doc_write reads the bodies of
// _users and _replicator documents, to_doc_update a design document's): rejoined.
void whole_where_needed(const db_meta& db, const std::string& id, split_doc& d);
// A local document write: `doc` is the body (nullptr: a DELETE), `rev` the one the request names
// ("" : the body's `_rev`, if any). `"_deleted":true` in the body deletes it.
result<local_update> to_local_update(const std::string& id, json* doc, std::string rev);
// Whether a write with attachments may go ahead: every node holding a copy of the database stores
// attachments (release 0.3, feature attachments-v1). A copy on an older node would keep a body
// naming bytes it does not have: a 501 then, never such a copy.
status attachments_here(ctx& c, const db_meta& db);
// Fetches into `out` the bytes rendering revisions `indices` of `d` with `opts` shows inline
// (attachments=true).
status fetch_inline_blobs(ctx& c, const db_meta& db, const doc_copy& d, const std::vector<int>& indices,
                          const render_options& opts, attachments::blob_bytes& out);
// GET/HEAD /db/{doc}/{attachment} (`att` may hold '/').
void handle_attachment(ctx& c, const db_meta& db, const std::string& doc_id, const std::string& att);
// 413 document_too_large (reason: the id) for a body over [couchdb] max_document_size.
status check_document_size(ctx& c, const doc_update& u);
// The id a document brings in its body (errors: not a string, invalid); "" when it has none.
result<std::string> body_doc_id(ctx& c, const json& doc);

}  // namespace settee
