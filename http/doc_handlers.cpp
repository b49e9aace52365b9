// Document endpoints: /db/{docid} (GET, PUT, DELETE; POST /db lands here too) and /db/_local/{id}.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "http/auth.hpp"
#include "http/doc_render.hpp"
#include "http/handlers.hpp"

namespace settee {

namespace {

constexpr size_t max_rev_hash_length = 100;  // keeps (id, rev) inside LMDB's 511-byte key limit

const char* ignored_specials[] = {"_conflicts", "_deleted_conflicts", "_local_seq", "_revs_info"};

bool valid_rev(std::string_view text, rev_id& out) {
  return parse_rev(text, out) && out.hash.size() <= max_rev_hash_length;
}

status bad_rev() {
  return {errc::bad_request, "Invalid rev format"};
}

}  // namespace

status validate_doc_id(const std::string& id, size_t max_length) {
  if (id.empty()) return {errc::illegal_docid, "Document id must not be empty"};
  if (!valid_utf8(id)) return {errc::illegal_docid, "Document id must be valid UTF-8"};
  if (id.size() > max_length) return {errc::illegal_docid, "Document id is too long"};
  if (id[0] == '_') {
    if (id == "_design/") return {errc::illegal_docid, "Illegal document id `_design/`"};
    if (id.rfind("_design/", 0) != 0)
      return {errc::illegal_docid, "Only reserved document ids may start with underscore."};
  }
  return {};
}

result<std::string> body_doc_id(ctx& c, const json& doc) {
  if (!doc.contains("_id")) return std::string();
  if (!doc["_id"].is_string()) return status{errc::illegal_docid, "Document id must be a string"};
  std::string id = doc["_id"].get<std::string>();
  if (auto st = validate_doc_id(id, c.node.max_document_id_length); !st) return st;
  return id;
}

result<doc_update> to_doc_update(const db_meta& db, json doc, const std::string& id, bool new_edits) {
  if (!doc.is_object()) return status{errc::bad_request, "Document must be a JSON object"};
  doc_update u;
  u.id = id;
  u.new_edits = new_edits;
  std::optional<rev_id> rev;
  if (doc.contains("_rev") && !doc["_rev"].is_null()) {
    rev_id r;
    if (!doc["_rev"].is_string() || !valid_rev(doc["_rev"].get<std::string>(), r)) return bad_rev();
    rev = r;
  }
  if (doc.contains("_deleted")) {
    if (!doc["_deleted"].is_boolean()) return status{errc::bad_request, "`_deleted` must be a boolean"};
    u.deleted = doc["_deleted"].get<bool>();
  }
  std::vector<rev_id> history;
  if (doc.contains("_revisions")) {
    const json& r = doc["_revisions"];
    if (!r.is_object() || !member(r, "start").is_number_unsigned() || !member(r, "ids").is_array() ||
        member(r, "ids").empty()) {
      return status{errc::bad_request, "`_revisions` must be {\"start\": <int>, \"ids\": [<rev ids>]}"};
    }
    uint64_t start = r["start"].get<uint64_t>();
    if (start < r["ids"].size()) return bad_rev();
    for (size_t i = 0; i < r["ids"].size(); ++i) {
      const json& h = r["ids"][i];
      if (!h.is_string() || h.get_ref<const std::string&>().empty() ||
          h.get_ref<const std::string&>().size() > max_rev_hash_length) {
        return bad_rev();
      }
      history.push_back({start - i, h.get<std::string>()});
    }
    if (rev && *rev != history.front()) return bad_rev();
  }
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    if (k.empty() || k[0] != '_' || k == "_id" || k == "_rev" || k == "_deleted" || k == "_revisions" ||
        k == "_attachments" ||
        std::find(std::begin(ignored_specials), std::end(ignored_specials), k) != std::end(ignored_specials)) {
      continue;
    }
    return status{errc::doc_validation, "Bad special document member: " + k};
  }
  for (const char* k : {"_id", "_rev", "_deleted", "_revisions"}) doc.erase(k);
  for (const char* k : ignored_specials) doc.erase(k);
  if (db.name == "_users") authenticator::hash_user_password(doc);
  u.body = doc.dump();
  if (new_edits) {
    if (rev) u.revs.push_back(*rev);
  } else {
    if (!history.empty())
      u.revs = std::move(history);
    else if (rev)
      u.revs.push_back(*rev);
    else
      return status{errc::bad_request, "Document rev must be specified when new_edits is false"};
  }
  return u;
}

namespace {

void reply_etag(ctx& c, const std::string& rev) {
  c.res.set_header("ETag", "\"" + rev + "\"");
}

// The rev a request names: ?rev=, else If-Match.
std::string requested_rev(ctx& c) {
  if (c.has("rev")) return c.param("rev");
  std::string m = c.req.get_header_value("If-Match");
  if (m.size() >= 2 && m.front() == '"' && m.back() == '"') m = m.substr(1, m.size() - 2);
  return m;
}

void get_open_revs(ctx& c, const shard_store::snapshot& snap, const doc_info* d, const render_options& opts,
                   bool latest) {
  std::string spec = c.param("open_revs");
  std::vector<int> indices;
  std::vector<std::string> missing;
  if (spec == "all") {
    if (!d) return c.error(errc::not_found, "missing");
    indices = d->tree.sorted_leaves();
  } else {
    status refusal{errc::bad_request, "`open_revs` must be `all` or a JSON array of revisions"};
    auto revs = parse_client_json(spec, refusal);
    if (!revs) return c.error(revs.error());
    if (!revs->is_array()) return c.error(refusal);
    for (auto& r : *revs) {
      rev_id rid;
      if (!r.is_string() || !valid_rev(r.get<std::string>(), rid)) return c.error(bad_rev());
      int i = d ? d->tree.find(rid) : -1;
      if (i < 0) {
        missing.push_back(rid.str());
      } else if (latest && !d->tree.is_leaf(i)) {
        for (int leaf : d->tree.leaves()) {
          auto path = d->tree.path_to(leaf);
          if (std::find(path.begin(), path.end(), i) != path.end()) indices.push_back(leaf);
        }
      } else {
        indices.push_back(i);
      }
    }
  }
  std::string out = "[";
  for (int i : indices) {
    auto doc = render_rev(snap, *d, i, opts);
    out += out.size() > 1 ? "," : "";
    out += doc ? "{\"ok\":" + *doc + "}" : "{\"missing\":" + quote(d->tree.rev(i).str()) + "}";
  }
  for (auto& m : missing) out += (out.size() > 1 ? "," : "") + std::string("{\"missing\":") + quote(m) + "}";
  c.reply_raw(200, out + "]\n");
}

void forward_doc_read(ctx& c, const db_meta& db, size_t range, const std::string& id) {
  doc_request req;
  req.id = id;
  for (auto& [k, v] : c.req.params) req.params.emplace_back(k, v);
  req.if_none_match = c.req.get_header_value("If-None-Match");
  reply_forwarded(c, ask_copies(c, db, range, req));
}

// The leaves of one document as r copies know them, merged (CouchDB's read quorum). Copies that
// lack a leaf another has are repaired: every merged leaf is written to every copy as a
// new_edits=false merge (idempotent where it is already known). Returns the winning revision, or
// nullopt when the document exists on none of the copies that answered.
struct quorum_read {
  std::optional<rev_id> winner;
  bool winner_deleted = false;
  bool repaired = false;
  std::string from;  // a node whose copy has the winner
};

result<quorum_read> read_quorum_doc(ctx& c, const db_meta& db, size_t range, const std::string& id, size_t r) {
  doc_request req;
  req.id = id;
  req.params = {{"open_revs", "all"}, {"revs", "true"}};
  std::vector<std::string> nodes = c.node.coord.copies(db, range);
  std::stable_partition(nodes.begin(), nodes.end(), [&](const std::string& n) { return n == c.node.node_name; });
  struct leaf {
    json doc;
    bool deleted = false;
    std::set<std::string> holders;
  };
  std::map<std::string, leaf> leaves;  // rev -> what we know
  std::set<std::string> ancestors;
  std::vector<std::string> answered;
  for (const std::string& node : nodes) {
    if (answered.size() >= r) break;
    auto a = node == c.node.node_name ? serve_doc_request(c.node, db.name, req)
             : c.node.coord.remote()  ? c.node.coord.remote()->read_doc(node, db.name, db.ranges[range].name(), req,
                                                                        std::chrono::seconds(10))
                                      : result<doc_read>(errc::unavailable, "not clustered");
    if (!a) continue;
    auto body = parse_json(a->body);
    if (a->http_status == 404) {  // missing on this copy
      answered.push_back(node);
      continue;
    }
    if (a->http_status != 200 || !body || !body->is_array()) continue;
    answered.push_back(node);
    for (auto& item : *body) {
      if (!item.contains("ok")) continue;
      const json& doc = item["ok"];
      if (!doc.contains("_rev") || !doc["_rev"].is_string()) continue;
      leaf& l = leaves[doc["_rev"].get<std::string>()];
      if (l.holders.empty()) {
        l.doc = doc;
        l.deleted = doc.value("_deleted", false);
      }
      l.holders.insert(node);
      const json& revs = doc.contains("_revisions") ? doc["_revisions"] : json();
      if (member(revs, "start").is_number_unsigned() && member(revs, "ids").is_array()) {
        uint64_t start = revs["start"].get<uint64_t>();
        for (size_t i = 1; i < revs["ids"].size() && i <= start; ++i)
          ancestors.insert(std::to_string(start - i) + "-" + revs["ids"][i].get<std::string>());
      }
    }
  }
  if (answered.empty()) return status{errc::unavailable, "no copy of range " + db.ranges[range].name() + " answered"};
  quorum_read out;
  std::vector<doc_update> repairs;
  for (auto& [rev_text, l] : leaves) {
    if (ancestors.count(rev_text)) continue;  // a leaf on a stale copy, an ancestor on another
    rev_id rv;
    if (!parse_rev(rev_text, rv)) continue;
    bool better = !out.winner || (out.winner_deleted && !l.deleted) ||
                  (out.winner_deleted == l.deleted &&
                   (rv.pos > out.winner->pos || (rv.pos == out.winner->pos && rv.hash > out.winner->hash)));
    if (better) {
      out.winner = rv;
      out.winner_deleted = l.deleted;
      out.from = *l.holders.begin();
      if (l.holders.count(c.node.node_name)) out.from = c.node.node_name;
    }
    if (l.holders.size() < answered.size()) {
      if (auto u = to_doc_update(db, l.doc, id, false)) repairs.push_back(std::move(*u));
    }
  }
  if (!repairs.empty()) {
    // Wait for every copy: the answer that follows must not race the repair of a stale copy.
    auto written = c.node.coord.update_docs(db, std::move(repairs), db.n);
    out.repaired = written.ok();
  }
  return out;
}

void get_doc(ctx& c, const db_meta& db, const std::string& id) {
  size_t range = c.node.coord.shard_index(db, id);
  auto r = c.read_quorum();
  if (!r) return c.error(r.error());
  size_t copies = c.node.coord.copies(db, range).size();
  size_t quorum = std::min(*r ? *r : db.n / 2 + 1, copies);
  if (quorum > 1 && !c.has("rev") && !c.has("open_revs")) {
    // Read r copies, repair the stale ones, then answer the winner from a copy that has it.
    auto q = read_quorum_doc(c, db, range, id, quorum);
    if (!q) return c.error(q.error());
    if (!q->winner) return c.error(errc::not_found, "missing");
    if (q->winner_deleted) return c.error(errc::not_found, "deleted");
    if (q->from != c.node.node_name) {
      doc_request req;
      req.id = id;
      for (auto& [k, v] : c.req.params)
        if (k != "r") req.params.emplace_back(k, v);
      req.params.emplace_back("rev", q->winner->str());
      req.if_none_match = c.req.get_header_value("If-None-Match");
      return reply_forwarded(
          c, c.node.coord.remote()->read_doc(q->from, db.name, db.ranges[range].name(), req, std::chrono::seconds(10)));
    }
    c.req_rev_override = q->winner->str();
  } else if (!db.hosts(range)) {
    return forward_doc_read(c, db, range, id);
  }
  render_options opts;
  auto revs = c.bool_param("revs", false);
  auto revs_info = c.bool_param("revs_info", false);
  auto conflicts = c.bool_param("conflicts", false);
  auto deleted_conflicts = c.bool_param("deleted_conflicts", false);
  auto local_seq = c.bool_param("local_seq", false);
  auto latest = c.bool_param("latest", false);
  auto meta = c.bool_param("meta", false);
  if (auto e = first_error(revs, revs_info, conflicts, deleted_conflicts, local_seq, latest, meta)) return c.error(*e);
  opts.revs = *revs;
  opts.revs_info = *revs_info || *meta;
  opts.conflicts = *conflicts || *meta;
  opts.deleted_conflicts = *deleted_conflicts || *meta;
  opts.local_seq = *local_seq;

  rev_id wanted;
  bool by_rev = c.has("rev") || !c.req_rev_override.empty();
  if (by_rev && !valid_rev(c.has("rev") ? c.param("rev") : c.req_rev_override, wanted)) return c.error(bad_rev());
  auto snap = c.node.coord.read_for(db, id);
  if (!snap) return c.error(snap.error());
  doc_info d;
  bool found = snap->doc(id, d);
  if (!snap->fault()) return c.error(snap->fault());  // unreadable is not missing
  if (c.has("open_revs")) return get_open_revs(c, *snap, found ? &d : nullptr, opts, *latest);
  if (!found) return c.error(errc::not_found, "missing");
  int index = d.tree.winner();
  if (by_rev) {
    index = d.tree.find(wanted);
    if (index < 0) return c.error(errc::not_found, "missing");
  } else if (d.tree.winner_deleted()) {
    return c.error(errc::not_found, "deleted");
  }
  std::string rev = d.tree.rev(index).str();
  if (c.req.get_header_value("If-None-Match") == "\"" + rev + "\"") {
    c.res.status = 304;
    reply_etag(c, rev);
    return;
  }
  auto doc = render_rev(*snap, d, index, opts);
  if (!doc) return c.error(errc::not_found, "missing");
  c.reply_raw(200, *doc + "\n");
  reply_etag(c, rev);
}

void reply_written(ctx& c, const std::string& id, const doc_result& r, bool batch, bool quorum_met) {
  if (!r.st) return c.error(r.st);
  std::string rev = r.rev.str();
  if (batch) {
    c.reply(202, json{{"ok", true}, {"id", id}});
  } else {
    c.reply(quorum_met ? 201 : 202, json{{"ok", true}, {"id", id}, {"rev", rev}});
  }
  reply_etag(c, rev);
  c.res.set_header("Location", "/" + c.path[0] + "/" + id);
}

// Writes one document to w copies (the `w` query parameter, default n/2+1).
result<write_outcome> write_one(ctx& c, const db_meta& db, doc_update u) {
  auto w = c.write_quorum();
  if (!w) return w.error();
  std::vector<doc_update> docs;
  docs.push_back(std::move(u));
  return c.node.coord.update_docs(db, std::move(docs), *w);
}

void put_doc(ctx& c, const db_meta& db, std::string id) {
  auto body = parse_client_json(c.req.body, {errc::bad_request, "invalid UTF-8 JSON"});
  if (!body) return c.error(body.error());
  if (!body->is_object()) return c.error(errc::bad_request, "Document must be a JSON object");
  auto new_edits = c.bool_param("new_edits", true);
  if (!new_edits) return c.error(new_edits.error());
  if (id.empty()) {  // POST /db
    auto from_body = body_doc_id(c, *body);
    if (!from_body) return c.error(from_body.error());
    id = from_body->empty() ? next_uuid() : *from_body;
  }
  std::string rev = requested_rev(c);
  if (!rev.empty()) {
    if (body->contains("_rev") && (*body)["_rev"].is_string() && (*body)["_rev"].get<std::string>() != rev) {
      return c.error(errc::bad_request, "Document rev from request body and query string have different values");
    }
    (*body)["_rev"] = rev;
  }
  if (auto st = authorize_doc_write(c, db, id, &*body); !st) return c.error(st);
  auto u = to_doc_update(db, std::move(*body), id, *new_edits);
  if (!u) return c.error(u.error());
  auto written = write_one(c, db, std::move(*u));
  if (!written) return c.error(written.error());
  reply_written(c, id, written->results.front(), c.param("batch") == "ok", written->quorum_met);
}

void delete_doc(ctx& c, const db_meta& db, const std::string& id) {
  if (auto st = authorize_doc_write(c, db, id, nullptr); !st) return c.error(st);
  doc_update u;
  u.id = id;
  u.deleted = true;
  u.body = "{}";
  std::string rev = requested_rev(c);
  if (size_t range = c.node.coord.shard_index(db, id); !db.hosts(range)) {
    // The copy's node says whether the document is there (404 missing/deleted as below).
    doc_request req;
    req.id = id;
    auto r = ask_copies(c, db, range, req);
    if (!r) return c.error(r.error());
    if (r->http_status == 404 && (rev.empty() || r->body.find("\"missing\"") != std::string::npos)) {
      return reply_forwarded(c, r);
    }
  } else {
    auto snap = c.node.coord.read_for(db, id);
    if (!snap) return c.error(snap.error());
    doc_info d;
    if (!snap->doc(id, d)) return c.error(snap->fault() ? status{errc::not_found, "missing"} : snap->fault());
    if (rev.empty() && d.tree.winner_deleted()) return c.error(errc::not_found, "deleted");
  }
  if (!rev.empty()) {
    rev_id r;
    if (!valid_rev(rev, r)) return c.error(bad_rev());
    u.revs.push_back(r);
  }
  auto written = write_one(c, db, std::move(u));
  if (!written) return c.error(written.error());
  const doc_result& r = written->results.front();
  if (!r.st) return c.error(r.st);
  c.reply(written->quorum_met ? 200 : 202, json{{"ok", true}, {"id", id}, {"rev", r.rev.str()}});
  reply_etag(c, r.rev.str());
}

}  // namespace

result<doc_read> ask_copies(ctx& c, const db_meta& db, size_t range, const doc_request& req) {
  return c.node.coord.first_answer<doc_read>(
      db, range, c.node.coord.copies(db, range), [&](remote_shards& r, const std::string& node) {
        return r.read_doc(node, db.name, db.ranges[range].name(), req, std::chrono::seconds(30));
      });
}

void reply_forwarded(ctx& c, const result<doc_read>& r) {
  if (!r) return c.error(r.error());
  c.res.status = r->http_status;
  if (!r->etag.empty()) c.res.set_header("ETag", r->etag);
  if (r->http_status != 304) c.res.set_content(r->body, "application/json");
}

result<doc_read> serve_doc_request(node_services& node, const std::string& db_name, const doc_request& r) {
  auto db = node.coord.catalog().lookup(db_name);
  if (!db) return db.error();
  http_request req;
  req.method = r.method;
  req.body = r.body;
  for (auto& [k, v] : r.params) req.params.emplace(k, v);
  if (!r.if_none_match.empty()) req.headers.emplace_back("If-None-Match", r.if_none_match);
  req.headers.emplace_back("Content-Type", "application/json");
  http_response res;
  std::vector<std::string> path = {db_name};
  if (r.what == "local") {
    path.push_back("_local");
    path.push_back(r.id.substr(std::string("_local/").size()));
  } else if (r.what == "doc") {
    path.push_back(r.id);
  } else {
    path.push_back("_" + r.what);
  }
  ctx c{req, res, node, path, {}};
  if (r.what == "doc") {
    if (!db->hosts(node.coord.shard_index(*db, r.id))) return status{errc::not_found, "no copy here"};
    get_doc(c, *db, r.id);
  } else if (r.what == "local") {
    if (!db->hosts(node.coord.shard_index(*db, r.id))) return status{errc::not_found, "no copy here"};
    handle_local_doc(c, *db, r.id);
  } else if (r.what == "bulk_get") {
    handle_bulk_get(c, *db);
  } else if (r.what == "revs_diff") {
    handle_revs_diff(c, *db);
  } else if (r.what == "revs_limit" || r.what == "local_docs") {
    auto i = db->range_named(r.range);
    if (!i) return status{errc::not_found, "no range " + r.range + " in " + db_name};
    if (!db->hosts(*i)) return status{errc::not_found, "no copy here"};
    return serve_range_request(node, *db, *i, r);
  } else {
    return status{errc::bad_request, "unknown document request: " + r.what};
  }
  return doc_read{res.status, res.body, res.get_header_value("ETag")};
}

status authorize_doc_write(ctx& c, const db_meta& db, const std::string& id, const json* body) {
  if (c.user.is_admin()) return {};
  static const json no_security = json::object();
  const json& security = c.security ? *c.security : no_security;
  if (id.rfind("_design/", 0) == 0) return authenticator::require_db_admin(c.user, security);
  if (db.name != "_users") return {};
  // Only a user's own document gets here (http/server.cpp): its name and roles stay as they are.
  if (!c.user.name || id != "org.couchdb.user:" + *c.user.name || !body) {
    return {errc::forbidden, "Only server admins may create, delete or edit other users' documents."};
  }
  // The roles the request was authenticated with are the ones stored in this document.
  json roles = body->contains("roles") ? (*body)["roles"] : json::array();
  if (roles != json(c.user.roles)) return {errc::forbidden, "Only _admin may set roles"};
  if (!body->contains("name") || (*body)["name"] != *c.user.name) {
    return {errc::forbidden, "The `name` field must be the user's own name"};
  }
  return {};
}

void handle_doc(ctx& c, const db_meta& db, const std::string& id) {
  if (!id.empty()) {
    if (auto st = validate_doc_id(id, c.node.max_document_id_length); !st) return c.error(st);
  }
  const std::string& m = c.method();
  if (m == "GET") return get_doc(c, db, id);
  if (m == "PUT" || m == "POST") return put_doc(c, db, id);
  if (m == "DELETE") return delete_doc(c, db, id);
  c.method_not_allowed("DELETE,GET,HEAD,POST,PUT");
}

// ---- _local documents: no rev tree, revisions "0-N", not replicated, not in feeds -------------

namespace {

bool parse_local_rev(const std::string& text, uint64_t& out) {
  if (text.rfind("0-", 0) != 0 || text.size() < 3 || text.size() > 22) return false;
  char* end = nullptr;
  out = std::strtoull(text.c_str() + 2, &end, 10);
  return *end == '\0';
}

}  // namespace

void handle_local_doc(ctx& c, const db_meta& db, const std::string& id) {
  if (id.size() > c.node.max_document_id_length) return c.error(errc::illegal_docid, "Document id is too long");
  if (!valid_utf8(id)) return c.error(errc::illegal_docid, "Document id must be valid UTF-8");
  const std::string& m = c.method();
  if (size_t range = c.node.coord.shard_index(db, id); !db.hosts(range)) {
    doc_request req;
    req.what = "local";
    req.method = m;
    req.id = id;
    for (auto& [k, v] : c.req.params) req.params.emplace_back(k, v);
    req.body = c.req.body;
    return reply_forwarded(c, ask_copies(c, db, range, req));
  }
  if (m == "GET") {
    auto snap = c.node.coord.read_for(db, id);
    if (!snap) return c.error(snap.error());
    local_doc d;
    if (!snap->local(id, d)) return c.error(snap->fault() ? status{errc::not_found, "missing"} : snap->fault());
    return c.reply_raw(200, render_doc(id, "0-" + std::to_string(d.rev), false, d.body, "") + "\n");
  }
  if (m != "PUT" && m != "DELETE") return c.method_not_allowed("GET,PUT,DELETE");
  local_update u;
  u.id = id;
  u.deleted = m == "DELETE";
  std::string rev = requested_rev(c);
  if (m == "PUT") {
    auto body = parse_client_json(c.req.body, {errc::bad_request, "invalid UTF-8 JSON"});
    if (!body) return c.error(body.error());
    if (!body->is_object()) return c.error(errc::bad_request, "Document must be a JSON object");
    if (rev.empty() && body->contains("_rev")) {
      if (!(*body)["_rev"].is_string()) return c.error(bad_rev());
      rev = (*body)["_rev"].get<std::string>();
    }
    for (const char* k : {"_id", "_rev", "_revisions", "_deleted"}) body->erase(k);
    u.body = body->dump();
  }
  if (!rev.empty() && !parse_local_rev(rev, u.rev)) return c.error(bad_rev());
  auto new_rev = c.node.coord.write_local(db, std::move(u));
  if (!new_rev) return c.error(new_rev.error());
  c.reply(m == "PUT" ? 201 : 200, json{{"ok", true}, {"id", id}, {"rev", "0-" + std::to_string(*new_rev)}});
}

}  // namespace settee
