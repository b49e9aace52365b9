// handlers: the CouchDB HTTP endpoints, grouped by area (one .cpp per area). Each takes the
// request context, does its own parameter validation and replies through ctx (never throws).
#pragma once
#include <string>

#include "actors/db_catalog.hpp"
#include "http/request.hpp"

namespace settee {

// server_handlers.cpp
void handle_root(ctx& c);
void handle_up(ctx& c);
void handle_all_dbs(ctx& c);
void handle_uuids(ctx& c);
void handle_session(ctx& c);
void handle_node(ctx& c);
void handle_membership(ctx& c);

// db_handlers.cpp
void handle_db(ctx& c, const std::string& name);
void handle_all_docs(ctx& c, const db_meta& db);
void handle_security(ctx& c, const db_meta& db, const json& security);
void handle_shards(ctx& c, const db_meta& db);
void handle_ensure_full_commit(ctx& c, const db_meta& db);
void handle_revs_limit(ctx& c, const db_meta& db);
void handle_local_docs(ctx& c, const db_meta& db);
void handle_time_seq(ctx& c, const db_meta& db);
// A per-range request for another node's coordinator ("revs_limit", "local_docs"): this node's
// copy of `range` answers.
result<doc_read> serve_range_request(node_services& node, const db_meta& db, size_t range, const doc_request& req);

// cluster_handlers.cpp
void handle_sync_shards(ctx& c, const db_meta& db);
// Pushes `_dbs` to every connected node right away (after a database is created or deleted).
void share_catalog(ctx& c);

// changes_handlers.cpp
void handle_changes(ctx& c, const db_meta& db);

// doc_handlers.cpp
void handle_doc(ctx& c, const db_meta& db, const std::string& id);
void handle_local_doc(ctx& c, const db_meta& db, const std::string& id);
// Whether the request's user may write document `id` with `body` (null for a deletion): design
// documents need a db admin; in `_users`, only an admin may set roles or touch another user's doc.
status authorize_doc_write(ctx& c, const db_meta& db, const std::string& id, const json* body);
// A document GET for another node's coordinator (this node holds the document's range).
result<doc_read> serve_doc_request(node_services& node, const std::string& db, const doc_request& req);
// Hands a document-level request to the first node holding `range` that answers.
result<doc_read> ask_copies(ctx& c, const db_meta& db, size_t range, const doc_request& req);
// Replies with what another node answered.
void reply_forwarded(ctx& c, const result<doc_read>& r);

// bulk_handlers.cpp
void handle_bulk_docs(ctx& c, const db_meta& db);
void handle_bulk_get(ctx& c, const db_meta& db);
void handle_revs_diff(ctx& c, const db_meta& db);

// Validation shared by several areas.
status validate_db_name(const std::string& name);
status validate_doc_id(const std::string& id, size_t max_length);
// The database's _security object ({} when unset).
json read_security(ctx& c, const db_meta& db);
// The clustered seq token of the position the range summaries describe (one per range).
std::string seq_token(const db_meta& db, const std::vector<coordinator::range_summary>& ranges);
// This copy's part of an _all_docs request (the RPC server's side of a remote range).
result<all_docs_page> read_all_docs_page(const shard_handle& shard, const all_docs_request& req);
// Server-generated document ids (CouchDB's "sequential" algorithm).
std::string next_uuid();

}  // namespace settee

namespace settee {

// A JSON document (from PUT, POST or _bulk_docs) as a storage update. `id` is the document id
// (already validated); the body keeps every field except the special ones.
result<doc_update> to_doc_update(const db_meta& db, json doc, const std::string& id, bool new_edits);
// The id a document brings in its body (errors: not a string, invalid); "" when it has none.
result<std::string> body_doc_id(ctx& c, const json& doc);

}  // namespace settee
