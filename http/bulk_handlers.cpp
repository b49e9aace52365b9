// Bulk endpoints: _bulk_docs (both edit modes), _bulk_get, _revs_diff.
#include <algorithm>
#include <map>

#include "http/doc_render.hpp"
#include "http/handlers.hpp"

namespace settee {

namespace {

result<json> json_object_body(ctx& c) {
  if (auto st = c.require_json_content(); !st) return st;
  auto body = parse_client_json(c.req.body, {errc::bad_request, "invalid UTF-8 JSON"});
  if (!body) return body.error();
  if (!body->is_object()) return status{errc::bad_request, "Request body must be a JSON object"};
  return std::move(*body);
}

}  // namespace

void handle_bulk_docs(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = json_object_body(c);
  if (!body) return c.error(body.error());
  if (!body->contains("docs")) return c.error(errc::bad_request, "POST body must include `docs` parameter.");
  json& docs = (*body)["docs"];
  if (!docs.is_array()) return c.error(errc::bad_request, "`docs` parameter must be an array.");
  if (docs.size() > c.node.bulk_docs_max) {
    return c.error(errc::too_large,
                   "too many documents in one request (at most " + std::to_string(c.node.bulk_docs_max) + ")");
  }
  bool new_edits = true;
  if (body->contains("new_edits")) {
    if (!(*body)["new_edits"].is_boolean())
      return c.error(errc::bad_request, "`new_edits` parameter must be a boolean.");
    new_edits = (*body)["new_edits"].get<bool>();
  }

  // Validate everything before writing anything: a malformed request writes nothing.
  std::vector<doc_update> updates;
  std::vector<std::string> ids;
  struct local_write {
    size_t position;
    local_update u;
  };
  std::vector<local_write> locals;
  std::vector<std::pair<size_t, status>> refused;  // documents this user may not write, by position
  updates.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    json& d = docs[i];
    if (!d.is_object()) return c.error(errc::bad_request, "Document must be a JSON object");
    auto id = body_doc_id(c, d);
    if (!id) {
      if (d["_id"].is_string() && d["_id"].get_ref<const std::string&>().rfind("_local/", 0) == 0) {
        local_write lw{i, {}};
        lw.u.id = d["_id"].get<std::string>();
        lw.u.deleted = d.value("_deleted", false);
        if (d.contains("_rev") && d["_rev"].is_string()) {
          std::string r = d["_rev"].get<std::string>();
          lw.u.rev = r.rfind("0-", 0) == 0 ? std::strtoull(r.c_str() + 2, nullptr, 10) : 0;
        }
        for (const char* k : {"_id", "_rev", "_deleted"}) d.erase(k);
        lw.u.body = d.dump();
        locals.push_back(std::move(lw));
        ids.push_back(locals.back().u.id);
        continue;
      }
      return c.error(id.error());
    }
    std::string doc_id = id->empty() ? next_uuid() : *id;
    if (auto st = authorize_doc_write(c, db, doc_id, &d); !st) {
      refused.emplace_back(i, st);
      ids.push_back(doc_id);
      continue;
    }
    auto u = to_doc_update(db, std::move(d), doc_id, new_edits);
    if (!u) return c.error(u.error());
    updates.push_back(std::move(*u));
    ids.push_back(doc_id);
  }

  auto w = c.write_quorum();
  if (!w) return c.error(w.error());
  auto written = c.node.coord.update_docs(db, std::move(updates), *w);
  if (!written) return c.error(written.error());
  const std::vector<doc_result>& results = written->results;
  std::vector<std::pair<size_t, result<uint64_t>>> local_results;
  for (auto& lw : locals) local_results.emplace_back(lw.position, c.node.coord.write_local(db, std::move(lw.u)));

  json out = json::array();
  size_t next_doc = 0, next_local = 0, next_refused = 0;
  // A document that failed for the server's sake (disk full, a copy unreachable) sets the overall
  // status, as CouchDB's fabric does when a shard write fails; refusals of single documents
  // (conflicts, forbidden) do not: they are answers about those documents.
  int server_failure = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    json row;
    if (next_refused < refused.size() && refused[next_refused].first == i) {
      const status& st = refused[next_refused++].second;
      out.push_back({{"id", ids[i]}, {"error", error_name_of(st.code)}, {"reason", st.reason}});
      continue;
    }
    if (next_local < local_results.size() && local_results[next_local].first == i) {
      auto& r = local_results[next_local++].second;
      if (r)
        row = {{"ok", true}, {"id", ids[i]}, {"rev", "0-" + std::to_string(*r)}};
      else
        row = {{"id", ids[i]}, {"error", error_name_of(r.error().code)}, {"reason", r.error().reason}};
      out.push_back(row);
      continue;
    }
    const doc_result& r = results[next_doc++];
    if (r.st) {
      if (new_edits) out.push_back({{"ok", true}, {"id", ids[i]}, {"rev", r.rev.str()}});
    } else {
      row = {{"id", ids[i]}};
      if (!new_edits) row["rev"] = r.rev.str();
      row["error"] = error_name_of(r.st.code);
      row["reason"] = r.st.reason;
      out.push_back(row);
      if (http_status_of(r.st.code) >= 500 && !server_failure) server_failure = http_status_of(r.st.code);
    }
  }
  c.reply(server_failure ? server_failure : written->quorum_met ? 201 : 202, out);
}

void handle_bulk_get(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = json_object_body(c);
  if (!body) return c.error(body.error());
  if (!body->contains("docs") || !(*body)["docs"].is_array())
    return c.error(errc::bad_request, "Missing JSON list of 'docs'.");
  render_options opts;
  auto revs = c.bool_param("revs", false);
  auto latest = c.bool_param("latest", false);
  if (auto e = first_error(revs, latest)) return c.error(*e);
  opts.revs = *revs;

  // Entries of ranges this node holds no copy of go, one request per range, to a node that does.
  const json& entries = (*body)["docs"];
  std::map<size_t, std::vector<size_t>> elsewhere;  // range -> entry positions
  for (size_t k = 0; k < entries.size(); ++k) {
    const json& req = entries[k];
    if (!req.is_object() || !req.contains("id") || !req["id"].is_string()) {
      return c.error(errc::bad_request, "Each entry of `docs` must be an object with a string `id`");
    }
    size_t range = c.node.coord.shard_index(db, req["id"].get_ref<const std::string&>());
    if (!db.hosts(range)) elsewhere[range].push_back(k);
  }
  std::map<size_t, std::string> answered;  // entry position -> its result object
  for (auto& [range, positions] : elsewhere) {
    doc_request fwd;
    fwd.what = "bulk_get";
    fwd.method = "POST";
    for (auto& [k, v] : c.req.params) fwd.params.emplace_back(k, v);
    json part = {{"docs", json::array()}};
    for (size_t k : positions) part["docs"].push_back(entries[k]);
    fwd.body = part.dump();
    auto r = ask_copies(c, db, range, fwd);
    if (!r) return c.error(r.error());
    auto parsed = parse_json(r->body);
    if (r->http_status != 200 || !parsed || !(*parsed)["results"].is_array() ||
        (*parsed)["results"].size() != positions.size()) {
      return c.error(errc::internal, "a node answered _bulk_get with " + std::to_string(r->http_status));
    }
    for (size_t j = 0; j < positions.size(); ++j) answered[positions[j]] = (*parsed)["results"][j].dump();
  }

  std::string out = "{\"results\":[";
  bool first_result = true;
  for (size_t k = 0; k < entries.size(); ++k) {
    const json& req = entries[k];
    if (auto it = answered.find(k); it != answered.end()) {
      out += first_result ? "" : ",";
      first_result = false;
      out += it->second;
      continue;
    }
    std::string id = req["id"].get<std::string>();
    std::string rev_text = req.contains("rev") && req["rev"].is_string() ? req["rev"].get<std::string>() : "";
    auto error_doc = [&](const char* error, const std::string& reason) {
      return "{\"error\":{\"id\":" + quote(id) + ",\"rev\":" + quote(rev_text.empty() ? "undefined" : rev_text) +
             ",\"error\":\"" + error + "\",\"reason\":" + quote(reason) + "}}";
    };
    std::string docs;
    if (auto st = validate_doc_id(id, c.node.max_document_id_length); !st) {
      docs = error_doc("illegal_docid", st.reason);
    } else {
      auto snap = c.node.coord.read_for(db, id);
      if (!snap) return c.error(snap.error());
      doc_info d;
      std::vector<int> indices;
      if (!snap->doc(id, d)) {
        if (!snap->fault()) return c.error(snap->fault());
        docs = error_doc("not_found", "missing");
      } else if (rev_text.empty()) {
        if (d.tree.winner_deleted())
          docs = error_doc("not_found", "deleted");
        else
          indices.push_back(d.tree.winner());
      } else {
        rev_id r;
        int i = parse_rev(rev_text, r) ? d.tree.find(r) : -1;
        if (i < 0) {
          docs = error_doc("not_found", "missing");
        } else if (*latest && !d.tree.is_leaf(i)) {
          for (int leaf : d.tree.leaves()) {
            auto path = d.tree.path_to(leaf);
            if (std::find(path.begin(), path.end(), i) != path.end()) indices.push_back(leaf);
          }
        } else {
          indices.push_back(i);
        }
      }
      for (int i : indices) {
        auto doc = render_rev(*snap, d, i, opts);
        docs += docs.empty() ? "" : ",";
        docs += doc ? "{\"ok\":" + *doc + "}" : error_doc("not_found", "missing");
      }
    }
    out += first_result ? "" : ",";
    first_result = false;
    out += "{\"id\":" + quote(id) + ",\"docs\":[" + docs + "]}";
  }
  c.reply_raw(200, out + "]}\n");
}

void handle_revs_diff(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = json_object_body(c);
  if (!body) return c.error(body.error());
  json out = json::object();
  // Documents of ranges this node holds no copy of: one request per range to a node that does.
  std::map<size_t, json> elsewhere;
  for (auto it = body->begin(); it != body->end(); ++it) {
    size_t range = c.node.coord.shard_index(db, it.key());
    if (db.hosts(range)) continue;
    if (!elsewhere.count(range)) elsewhere[range] = json::object();
    elsewhere[range][it.key()] = it.value();
  }
  for (auto& [range, part] : elsewhere) {
    doc_request fwd;
    fwd.what = "revs_diff";
    fwd.method = "POST";
    fwd.body = part.dump();
    auto r = ask_copies(c, db, range, fwd);
    if (!r) return c.error(r.error());
    if (r->http_status != 200) return reply_forwarded(c, r);  // e.g. a bad rev: the same 400
    auto parsed = parse_json(r->body);
    if (!parsed || !parsed->is_object()) return c.error(errc::internal, "a node answered _revs_diff with no object");
    for (auto it = parsed->begin(); it != parsed->end(); ++it) out[it.key()] = it.value();
  }
  for (auto it = body->begin(); it != body->end(); ++it) {
    const std::string& id = it.key();
    if (!db.hosts(c.node.coord.shard_index(db, id))) continue;
    if (!it.value().is_array()) return c.error(errc::bad_request, "Each document must map to a list of revisions");
    auto snap = c.node.coord.read_for(db, id);
    if (!snap) return c.error(snap.error());
    doc_info d;
    bool found = snap->doc(id, d);
    if (!snap->fault()) return c.error(snap->fault());
    json missing = json::array();
    uint64_t max_missing_pos = 0;
    for (auto& r : it.value()) {
      rev_id rid;
      if (!r.is_string() || !parse_rev(r.get<std::string>(), rid))
        return c.error(errc::bad_request, "Invalid rev format");
      if (!found || d.tree.find(rid) < 0) {
        missing.push_back(r);
        max_missing_pos = std::max(max_missing_pos, rid.pos);
      }
    }
    if (missing.empty()) continue;
    json entry = {{"missing", missing}};
    if (found) {
      json ancestors = json::array();
      for (int leaf : d.tree.sorted_leaves())
        if (d.tree.nodes()[leaf].pos < max_missing_pos) ancestors.push_back(d.tree.rev(leaf).str());
      if (!ancestors.empty()) entry["possible_ancestors"] = ancestors;
    }
    out[id] = entry;
  }
  c.reply(200, out);
}

}  // namespace settee
