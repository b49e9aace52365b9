// Bulk endpoints: _bulk_docs (both edit modes), _bulk_get, _revs_diff.
#include <algorithm>
#include <map>

#include "actors/doc_render.hpp"
#include "http/handlers.hpp"
#include "node/metrics.hpp"
#include "wire/json_util.hpp"

namespace settee {

namespace {

// A _bulk_docs answer as text (the array of rows in the request's order, and a newline): a row
// written once, not a DOM of a thousand rows dumped (error rows, rare, as ctx::reply dumps them).
// A document that failed for the server's sake (disk full, a copy unreachable) sets `server_failure`, as CouchDB's
// fabric does when a shard write fails; refusals of single documents (conflicts, forbidden) do not: they are answers
// about those documents.
std::string bulk_rows(const std::vector<std::string>& ids, const std::vector<std::pair<size_t, status>>& refused,
                      std::vector<std::pair<size_t, result<uint64_t>>>& local_results,
                      const std::vector<doc_result>& results, bool new_edits, int& server_failure) {
  std::string out = "[";
  auto add = [&out](const json& row) {
    if (out.size() > 1) out += ',';
    out += row.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  size_t next_doc = 0, next_local = 0, next_refused = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    json row;
    if (next_refused < refused.size() && refused[next_refused].first == i) {
      const status& st = refused[next_refused++].second;
      row = {{"id", ids[i]}};
      add_error(row, st);
      add(row);
      continue;
    }
    if (next_local < local_results.size() && local_results[next_local].first == i) {
      auto& r = local_results[next_local++].second;
      if (r) {
        row = {{"ok", true}, {"id", ids[i]}, {"rev", "0-" + std::to_string(*r)}};
      } else {
        row = {{"id", ids[i]}};
        add_error(row, r.error());
      }
      add(row);
      continue;
    }
    const doc_result& r = results[next_doc++];
    if (r.st) {
      if (new_edits) {  // {"ok":true,"id":..,"rev":..}, as dump writes it (ids are valid UTF-8)
        out += out.size() > 1 ? ",{\"ok\":true,\"id\":" : "{\"ok\":true,\"id\":";
        append_quoted(out, ids[i]);
        out += ",\"rev\":\"";
        out += r.rev.str();
        out += "\"}";
      }
    } else {
      row = {{"id", ids[i]}};
      if (!new_edits) row["rev"] = r.rev.str();
      add_error(row, r.st);
      add(row);
      if (http_status_of(r.st.code) >= 500 && !server_failure) server_failure = http_status_of(r.st.code);
    }
  }
  out += "]\n";
  return out;
}

}  // namespace

void handle_bulk_docs(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  metrics::node().bulk_requests.fetch_add(1, std::memory_order_relaxed);
  // {"docs":[...]} around documents as deep as a PUT takes; each document's body written as it is
  // parsed (no DOM for it: node/json's split_doc).
  auto body = c.split_docs_body("docs", document_member, 2);
  if (!body) return c.error(body.error());
  if (!body->top.is_object()) return c.error(errc::bad_request, "Request body must be a JSON object");
  if (!body->listed) {
    if (!body->top.contains("docs")) return c.error(errc::bad_request, "POST body must include `docs` parameter.");
    return c.error(errc::bad_request, "`docs` parameter must be an array.");
  }
  std::vector<split_doc>& docs = body->docs;
  if (docs.size() > c.node.bulk_docs_max) {
    return c.error(errc::too_large,
                   "too many documents in one request (at most " + std::to_string(c.node.bulk_docs_max) + ")");
  }
  bool new_edits = true;
  if (body->top.contains("new_edits")) {
    if (!body->top["new_edits"].is_boolean())
      return c.error(errc::bad_request, "`new_edits` parameter must be a boolean.");
    new_edits = body->top["new_edits"].get<bool>();
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
  std::vector<size_t> update_at;                   // the position of each of `updates`
  updates.reserve(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    json& d = docs[i].doc;
    if (!d.is_object()) return c.error(errc::bad_request, "Document must be a JSON object");
    auto id = body_doc_id(c, d);
    if (!id) {
      if (d["_id"].is_string() && d["_id"].get_ref<const std::string&>().rfind("_local/", 0) == 0) {
        std::string local_id = d["_id"].get<std::string>();
        whole_where_needed(db, local_id, docs[i]);
        auto u = to_local_update(local_id, &d, "");
        if (!u) return c.error(u.error());
        locals.push_back({i, std::move(*u)});
        ids.push_back(locals.back().u.id);
        continue;
      }
      return c.error(id.error());
    }
    std::string doc_id = id->empty() ? next_uuid() : *id;
    whole_where_needed(db, doc_id, docs[i]);
    if (auto st = authorize_doc_write(c, db, doc_id, &d); !st) {
      refused.emplace_back(i, st);
      ids.push_back(doc_id);
      continue;
    }
    auto u = to_doc_update(db, std::move(d), doc_id, new_edits, nullptr, c.node.attachment_policy, c.node.js,
                           c.node.cluster, std::move(docs[i].body));
    // One document refused (an invalid design document or one whose JavaScript does not compile, as
    // couch_db's validate_doc_update; one settee cannot honour, with a validate_doc_update), not the batch.
    if (!u && (u.error().code == errc::not_implemented || u.error().code == errc::invalid_design_doc ||
               u.error().code == errc::compilation_error)) {
      refused.emplace_back(i, u.error());
      ids.push_back(doc_id);
      continue;
    }
    if (!u) return c.error(u.error());
    if (auto st = check_document_size(c, *u); !st) return c.error(st);  // the whole request, as CouchDB
    if (u->managed_attachments) {
      if (auto st = attachments_here(c, db); !st) return c.error(st);
    }
    updates.push_back(std::move(*u));
    update_at.push_back(ids.size());
    ids.push_back(doc_id);
  }
  // validate_doc_update: a document a function refuses gets its own error row, the others go on.
  auto verdicts = validate_writes(c, db, updates);
  if (!verdicts) return c.error(verdicts.error());
  if (std::any_of(verdicts->begin(), verdicts->end(), [](const status& st) { return !st; })) {
    std::vector<doc_update> allowed;
    for (size_t k = 0; k < updates.size(); ++k) {
      if ((*verdicts)[k]) {
        allowed.push_back(std::move(updates[k]));
      } else {
        refused.emplace_back(update_at[k], (*verdicts)[k]);
      }
    }
    updates = std::move(allowed);
    std::sort(refused.begin(), refused.end(),
              [](const std::pair<size_t, status>& a, const std::pair<size_t, status>& b) { return a.first < b.first; });
  }

  auto w = c.write_quorum();
  if (!w) return c.error(w.error());
  auto written = c.node.coord.update_docs(db, std::move(updates), *w);
  if (!written) return c.error(written.error());
  std::vector<std::pair<size_t, result<uint64_t>>> local_results;
  for (auto& lw : locals) local_results.emplace_back(lw.position, c.node.coord.write_local(db, std::move(lw.u)));

  int server_failure = 0;
  std::string out = bulk_rows(ids, refused, local_results, written->results, new_edits, server_failure);
  c.reply_raw(server_failure ? server_failure : written->quorum_met ? 201 : 202, std::move(out));
}

result<render_options> bulk_get_options(const json& entry, const render_options& opts) {
  auto since = entry.find("atts_since");
  if (since == entry.end() || since->is_null()) return opts;
  auto revs = rev_list_of(*since, {errc::bad_request, "`atts_since` must be a JSON array of revisions"});
  if (!revs) return revs.error();
  render_options out = opts;
  out.atts_since = std::move(*revs);
  out.attachments = true;
  return out;
}

namespace {

// The id of a _bulk_get entry that names one it can read: an object whose `id` is a valid
// document id; nullptr for any other entry (it gets its own error row).
const std::string* readable_id(const json& entry, size_t max_id_length) {
  if (!entry.is_object()) return nullptr;
  auto id = entry.find("id");
  if (id == entry.end() || !id->is_string()) return nullptr;
  const std::string& text = id->get_ref<const std::string&>();
  return validate_doc_id(text, max_id_length) ? &text : nullptr;
}

// The revisions one _bulk_get entry answers with: its `rev` (with `latest`, the leaves grown from
// it), else every leaf, deleted ones too (chttpd_db opens revs `all`). None, with `why`, when
// there are none.
std::vector<int> bulk_get_indices(const json& entry, const doc_copy& d, bool latest, std::string& why) {
  const rev_tree& tree = d.info.tree;
  const json& rev = member(entry, "rev");
  if (!d.found) {
    why = "missing";
    return {};
  }
  if (rev.is_null()) return tree.leaves_by_rev();
  rev_id r;
  int i = rev.is_string() && parse_rev(rev.get<std::string>(), r) ? tree.find(r) : -1;
  if (i < 0) {
    why = "missing";
    return {};
  }
  return latest ? tree.leaves_under(i) : std::vector<int>{i};
}

// chttpd_db:bulk_get_json_error.
std::string bulk_get_error(const json& id, const json& rev, const char* error, const std::string& reason) {
  return "{\"error\":{\"id\":" + id.dump() + ",\"rev\":" + rev.dump() + ",\"error\":\"" + error +
         "\",\"reason\":" + quote(reason) + "}}";
}

// An entry's error before any document is read (bulk_get_open_doc_revs1's checks, in its order);
// "" when it has none.
std::string entry_error(const json& entry, size_t max_id_length, const render_options& opts) {
  static const json null;
  if (!entry.is_object() || !entry.contains("id") || entry["id"].is_null())
    return bulk_get_error(null, null, "bad_request", "document id missed");
  const json& id = entry["id"];
  if (!id.is_string()) return bulk_get_error(id, null, "illegal_docid", "Document id must be a string");
  if (auto st = validate_doc_id(id.get<std::string>(), max_id_length); !st)
    return bulk_get_error(id, null, "illegal_docid", st.reason);
  const json& rev = member(entry, "rev");
  rev_id r;
  if (!rev.is_null() && !(rev.is_string() && parse_rev(rev.get<std::string>(), r)))
    return bulk_get_error(id, rev, "bad_request", "Invalid rev format");
  if (auto o = bulk_get_options(entry, opts); !o)
    return bulk_get_error(id, member(entry, "atts_since"), "bad_request", o.error().reason);
  return "";
}

}  // namespace

std::string render_bulk_get(const json& entries, const std::vector<doc_copy>& docs, const render_options& opts,
                            bool latest, size_t max_id_length) {
  std::string out = "{\"results\":[";
  size_t next = 0;  // docs holds one entry per entry with a readable id, in order
  for (size_t k = 0; k < entries.size(); ++k) {
    const json& req = entries[k];
    static const json none;
    const json& id = req.is_object() ? member(req, "id") : none;
    std::string found = entry_error(req, max_id_length, opts);
    if (readable_id(req, max_id_length)) {
      const doc_copy& d = docs[next++];
      if (found.empty()) {
        std::string why;
        std::vector<int> indices = bulk_get_indices(req, d, latest, why);
        const json& rev = member(req, "rev");
        if (!why.empty()) found = bulk_get_error(id, rev.is_null() ? json("undefined") : rev, "not_found", why);
        auto entry_opts = bulk_get_options(req, opts);
        for (int i : indices) {
          auto doc = render_rev(d, i, *entry_opts);
          found += found.empty() ? "" : ",";
          found += doc ? "{\"ok\":" + *doc + "}"
                       : bulk_get_error(id, json(d.info.tree.rev(i).str()), "not_found", "missing");
        }
      }
    }
    out += k ? "," : "";
    out += "{\"id\":" + id.dump() + ",\"docs\":[" + found + "]}";
  }
  return out + "]}\n";
}

result<std::vector<std::string>> bulk_get_ids(const json& body, size_t max_id_length) {
  if (!body.contains("docs") || !body["docs"].is_array())
    return status{errc::bad_request, "Missing JSON list of 'docs'."};
  std::vector<std::string> ids;
  for (const json& req : body["docs"])
    if (const std::string* id = readable_id(req, max_id_length)) ids.push_back(*id);
  return ids;
}

void handle_bulk_get(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  render_options opts;
  auto revs = c.bool_param("revs", false);
  auto latest = c.bool_param("latest", false);
  auto atts = c.bool_param("attachments", false);
  auto encoding_info = c.bool_param("att_encoding_info", false);
  if (auto e = first_error(revs, latest, atts, encoding_info)) return c.error(*e);
  opts.revs = *revs;
  opts.attachments = *atts;
  opts.att_encoding_info = *encoding_info;
  auto ids = bulk_get_ids(*body, c.node.max_document_id_length);
  if (!ids) return c.error(ids.error());
  // Older revisions' bodies (kept until compaction) only when an entry names a revision.
  bool named = false;
  for (const json& entry : (*body)["docs"]) named = named || (entry.is_object() && entry.contains("rev"));
  auto docs = c.node.coord.open_docs(db, *ids, named ? doc_bodies::all : doc_bodies::leaves);
  if (!docs) return c.error(docs.error());
  // The bytes every entry shows inline (docs holds one entry per valid id, in order).
  attachments::blob_bytes blobs;
  size_t next = 0;
  for (const json& entry : (*body)["docs"]) {
    if (!readable_id(entry, c.node.max_document_id_length)) continue;
    const doc_copy& d = (*docs)[next++];
    if (!entry_error(entry, c.node.max_document_id_length, opts).empty()) continue;  // that entry's error row
    auto entry_opts = bulk_get_options(entry, opts);
    std::string why;
    auto indices = bulk_get_indices(entry, d, *latest, why);
    if (auto st = fetch_inline_blobs(c, db, d, indices, *entry_opts, blobs); !st) return c.error(st);
  }
  opts.blobs = &blobs;
  c.reply_raw(200, render_bulk_get((*body)["docs"], *docs, opts, *latest, c.node.max_document_id_length));
}

result<json> answer_revs_diff(const json& body, const std::vector<doc_copy>& docs) {
  json out = json::object();
  size_t k = 0;
  for (auto it = body.begin(); it != body.end(); ++it, ++k) {
    const std::string& id = it.key();
    if (!it.value().is_array()) return status{errc::bad_request, "Each document must map to a list of revisions"};
    const doc_copy& d = docs[k];
    std::vector<rev_id> lacking;
    uint64_t max_missing_pos = 0;
    for (auto& r : it.value()) {
      rev_id rid;
      if (!r.is_string() || !parse_rev(r.get<std::string>(), rid))
        return status{errc::bad_request, "Invalid rev format"};
      if (!d.found || d.info.tree.find(rid) < 0) {
        lacking.push_back(rid);
        max_missing_pos = std::max(max_missing_pos, rid.pos);
      }
    }
    if (lacking.empty()) continue;
    // Each once, by (pos, hash): fabric_doc_missing_revs merges the copies' answers sorted.
    std::sort(lacking.begin(), lacking.end());
    lacking.erase(std::unique(lacking.begin(), lacking.end()), lacking.end());
    json missing = json::array();
    for (const rev_id& r : lacking) missing.push_back(r.str());
    json entry = {{"missing", missing}};
    if (d.found) {
      json ancestors = json::array();
      for (int leaf : d.info.tree.sorted_leaves())
        if (d.info.tree.nodes()[leaf].pos < max_missing_pos) ancestors.push_back(d.info.tree.rev(leaf).str());
      if (!ancestors.empty()) entry["possible_ancestors"] = ancestors;
    }
    out[id] = entry;
  }
  return out;
}

std::vector<std::string> revs_diff_ids(const json& body) {
  std::vector<std::string> ids;
  for (auto it = body.begin(); it != body.end(); ++it) ids.push_back(it.key());
  return ids;
}

void handle_revs_diff(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  for (auto it = body->begin(); it != body->end(); ++it) {  // refuse before reading anything
    if (!it.value().is_array()) return c.error(errc::bad_request, "Each document must map to a list of revisions");
  }
  auto docs = c.node.coord.open_docs(db, revs_diff_ids(*body), doc_bodies::none);
  if (!docs) return c.error(docs.error());
  auto out = answer_revs_diff(*body, *docs);
  if (!out) return c.error(out.error());
  c.reply(200, *out);
}

// POST /db/_missing_revs: _revs_diff's answer in CouchDB's older shape, only the documents
// with missing revisions (chttpd_db: {"missing_revs": {id: [rev, ...]}}).
void handle_missing_revs(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  for (auto it = body->begin(); it != body->end(); ++it) {
    if (!it.value().is_array()) return c.error(errc::bad_request, "Each document must map to a list of revisions");
  }
  auto docs = c.node.coord.open_docs(db, revs_diff_ids(*body), doc_bodies::none);
  if (!docs) return c.error(docs.error());
  auto diff = answer_revs_diff(*body, *docs);
  if (!diff) return c.error(diff.error());
  json missing = json::object();
  for (auto it = diff->begin(); it != diff->end(); ++it) missing[it.key()] = it.value()["missing"];
  c.reply(200, json{{"missing_revs", missing}});
}

}  // namespace settee
