// Document endpoints: /db/{docid} (GET, PUT, DELETE; POST /db lands here too) and /db/_local/{id}.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "actors/doc_render.hpp"
#include "actors/doc_validator.hpp"
#include "http/attachment_stream.hpp"
#include "http/auth.hpp"
#include "http/design_doc.hpp"
#include "http/handlers.hpp"
#include "node/check.hpp"
#include "node/crypto.hpp"
#include "replicator/rep_endpoint.hpp"
#include "replicator/replicator_docs.hpp"
#include "storage/attachments.hpp"
#include "storage/doc_key.hpp"
#include "wire/json_util.hpp"
#include "wire/multipart.hpp"

namespace settee {

namespace {

constexpr size_t max_rev_hash_length = 100;  // keeps (id, rev) inside LMDB's 511-byte key limit

const char* ignored_specials[] = {"_conflicts", "_deleted_conflicts", "_local_seq", "_revs_info"};
// Kept in the body as they are (couch_doc:transfer_fields): the replicator's state in `_replicator`
// documents, allowed in any database, and `_access` (CouchDB 3.5 keeps it "for future compatibility").
const char* kept_specials[] = {"_replication_id",           "_replication_state", "_replication_state_time",
                               "_replication_state_reason", "_replication_stats", "_access"};

bool valid_rev(std::string_view text, rev_id& out) {
  return parse_rev(text, out) && out.hash.size() <= max_rev_hash_length;
}

// Whether `k`, a member starting with '_' of a document that is not `_rev` or `_revisions`, is one
// couch_doc:transfer_fields takes: `_id`, `_attachments` (an object), `_deleted` (a boolean), the
// ignored and the kept ones. Any other is unknown to it.
bool known_special(const std::string& k, const json& v) {
  if (k == "_id") return true;
  if (k == "_deleted") return v.is_boolean();
  if (k == "_attachments") return v.is_object();
  return std::find(std::begin(ignored_specials), std::end(ignored_specials), k) != std::end(ignored_specials) ||
         std::find(std::begin(kept_specials), std::end(kept_specials), k) != std::end(kept_specials);
}

status bad_rev() {
  return {errc::bad_request, "Invalid rev format"};
}

// Whether couch_doc:parse_rev takes `text`: an integer (a sign allowed), '-', then anything, but
// 32 hexadecimal digits when the integer is not 0 and the rest is 32 long.
bool couch_parses_rev(const json& v) {
  if (!v.is_string()) return false;
  const std::string& text = v.get_ref<const std::string&>();
  const size_t dash = text.find('-');
  if (dash == std::string::npos) return false;
  size_t digits = text[0] == '+' ? 1 : 0;
  if (digits == dash || text.find_first_not_of("0123456789", digits) != dash) return false;
  const bool zero = text.find_first_not_of('0', digits) == dash;
  const std::string_view hash = std::string_view(text).substr(dash + 1);
  return zero || hash.size() != 32 || hash.find_first_not_of("0123456789abcdefABCDEF") == std::string_view::npos;
}

}  // namespace

member_use document_member(std::string_view name) {
  if (name.empty() || name[0] != '_') return member_use::body;
  if (name == "_attachments") return member_use::whole;
  return std::find(std::begin(kept_specials), std::end(kept_specials), name) != std::end(kept_specials)
             ? member_use::body
             : member_use::doc;
}

void whole_where_needed(const db_meta& db, const std::string& id, split_doc& d) {
  if (!d.body || (db.name.rfind('_', 0) != 0 && id.rfind("_design/", 0) != 0 && id.rfind("_local/", 0) != 0)) return;
  d.doc = rejoin(std::move(d));
  d.body.reset();
}

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

status validate_partitioned_id(const db_meta& db, const std::string& id) {
  if (!db.partitioned || id.rfind("_design/", 0) == 0 || id.rfind("_local/", 0) == 0) return {};
  const size_t colon = id.find(':');
  if (colon == std::string::npos) return {errc::illegal_docid, "Doc id must be of form partition:id"};
  const std::string partition = id.substr(0, colon), rest = id.substr(colon + 1);
  if (auto st = validate_partition_name(partition); !st) return st;
  if (rest.empty()) return {errc::illegal_docid, "Document id must not be empty"};
  if (rest[0] == '_') return {errc::illegal_docid, "Only reserved document ids may start with underscore."};
  return {};
}

result<std::string> body_doc_id(ctx& c, const json& doc) {
  if (!doc.contains("_id")) return std::string();
  if (!doc["_id"].is_string()) return status{errc::illegal_docid, "Document id must be a string"};
  std::string id = doc["_id"].get<std::string>();
  if (auto st = validate_doc_id(id, c.node.max_document_id_length); !st) return st;
  return id;
}

namespace {

// The revisions a `_revisions` object names, newest first (couch_doc:transfer_fields's checks and
// messages, then settee's own: a history that fits below its start, of hashes a key can hold).
status revision_history(const json& r, std::vector<rev_id>& history) {
  const json &start = member(r, "start"), &ids = member(r, "ids");
  if (!start.is_number_integer()) return {errc::doc_validation, "_revisions.start isn't an integer."};
  if (!ids.is_array()) return {errc::doc_validation, "_revisions.ids isn't a array."};
  for (const json& h : ids)
    if (!h.is_string()) return {errc::doc_validation, "RevId isn't a string"};
  if (!start.is_number_unsigned() || ids.empty())
    return {errc::bad_request, "`_revisions` must be {\"start\": <int>, \"ids\": [<rev ids>]}"};
  const uint64_t first = start.get<uint64_t>();
  if (first < ids.size()) return bad_rev();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& hash = ids[i].get_ref<const std::string&>();
    if (hash.empty() || hash.size() > max_rev_hash_length) return bad_rev();
    history.push_back({first - i, hash});
  }
  return {};
}

// The revision a document names, read as couch_doc:transfer_fields reads its members: in their
// order, the first bad one refusing the document (so `"_rev":"x"` before `_revisions` is refused,
// after it not even read); a special member it does not know is a doc_validation error.
// `history`: `_revisions`' revisions (then `rev` is not used). `rev` null: a _local document, whose
// revision is its own (to_local_update reads it): its members are only checked.
status read_specials(const json& doc, std::optional<rev_id>* rev, std::vector<rev_id>& history) {
  bool has_revisions = false, generation_0 = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& k = it.key();
    if (k.empty() || k[0] != '_') continue;
    if (k == "_rev" && !has_revisions) {
      if (!couch_parses_rev(*it)) return bad_rev();      // null too
      if (!rev || doc.contains("_revisions")) continue;  // parsed, then replaced by `_revisions`
      const std::string& text = it->get_ref<const std::string&>();
      rev_id r;
      if (valid_rev(text, r)) {
        *rev = r;
        continue;
      }
      // couch_doc:parse_rev takes generation 0 (and an empty hash, "1-", as parse_rev here): no
      // document has a revision of generation 0, so an edit based on one conflicts.
      const size_t dash = text.find('-');
      generation_0 = text.compare(0, dash, "0") == 0 && dash + 1 < text.size();
      if (!generation_0) return bad_rev();
    } else if (k == "_revisions" && it->is_object()) {
      // `_revisions` wins over `_rev` (PouchDB sends `"_rev":"1-"` beside a full `_revisions`).
      has_revisions = true;
      if (!rev) continue;
      if (auto st = revision_history(*it, history); !st) return st;
    } else if (k != "_rev" && !known_special(k, *it)) {
      return status{errc::doc_validation, "Bad special document member: " + k};
    }
  }
  if (generation_0) return status{errc::conflict, "Document update conflict."};
  return {};
}

// The body to store: `written` (split_doc's), or `doc` as CouchDB writes it (numbers as it stores them).
std::string stored_body(const db_meta& db, const std::string& id, const json& doc, std::optional<std::string> written) {
  if (!written) return couch_dump(doc);
  // Written already only where nothing before read or changed the body (whole_where_needed).
  SETTEE_CHECK(id.rfind("_design/", 0) != 0 && db.name != "_users" && !doc.contains("_attachments"));
  return std::move(*written);
}

}  // namespace

result<doc_update> to_doc_update(const db_meta& db, json doc, const std::string& id, bool new_edits,
                                 std::map<std::string, std::string>* follows, const attachments::policy& policy,
                                 js_pool* js, cluster_members* cluster, std::optional<std::string> body) {
  if (!doc.is_object()) return status{errc::bad_request, "Document must be a JSON object"};
  if (auto st = validate_partitioned_id(db, id); !st) return st;
  doc_update u;
  u.id = id;
  u.new_edits = new_edits;
  std::optional<rev_id> rev;
  std::vector<rev_id> history;
  if (auto st = read_specials(doc, &rev, history); !st) return st;
  if (doc.contains("_deleted")) u.deleted = doc["_deleted"].get<bool>();
  if (id.rfind("_design/", 0) == 0 && !u.deleted) {
    if (auto st = validate_design_doc(doc); !st) return st;
    if (auto st = compile_design_doc(doc, js); !st) return st;
    if (auto st = validation_runs_everywhere(doc, cluster); !st) return st;
  }
  if (auto atts = doc.find("_attachments"); atts != doc.end() && atts->empty()) {
    doc.erase(atts);  // none: CouchDB's revision has an empty list, which it never shows
  } else if (atts != doc.end()) {
    // Inline bytes leave the body as blobs; stubs are merged by the store (storage/attachments.hpp).
    if (auto st = attachments::take_inline(*atts, !new_edits, u.blobs, follows, policy); !st) return st;
    u.managed_attachments = true;
  }
  for (const char* k : {"_id", "_rev", "_deleted", "_revisions"}) doc.erase(k);
  for (const char* k : ignored_specials) doc.erase(k);
  if (db.name == "_users") authenticator::hash_user_password(doc);
  u.body = stored_body(db, id, doc, std::move(body));
  if (new_edits) {
    if (!history.empty())
      u.revs.push_back(history.front());  // the base revision
    else if (rev)
      u.revs.push_back(*rev);
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

// The rev an If-Match header names (its quotes removed), or "".
std::string if_match_rev(ctx& c) {
  std::string m = c.req.get_header_value("If-Match");
  if (m.size() >= 2 && m.front() == '"' && m.back() == '"') m = m.substr(1, m.size() - 2);
  return m;
}

// The rev a request names: ?rev=, else If-Match.
std::string requested_rev(ctx& c) {
  return c.has("rev") ? c.param("rev") : if_match_rev(c);
}

// Whether the comma-separated list in header `name` (Accept, Accept-Encoding) takes one of
// `values` (compared lower-case, without parameters) with a weight above 0.
bool header_takes(ctx& c, const char* name, std::initializer_list<std::string_view> values) {
  std::string list = c.req.get_header_value(name);
  for (size_t start = 0; start < list.size();) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, end - start);
    item.erase(std::remove(item.begin(), item.end(), ' '), item.end());
    std::string value = multipart::media_type_of(item);  // lower-cased, parameters dropped
    auto q = item.find(";q=");
    double weight = q == std::string::npos ? 1.0 : std::strtod(item.c_str() + q + 3, nullptr);
    for (std::string_view v : values)
      if (value == v && weight > 0) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

namespace {

// A JSON array of revisions in a query parameter (`open_revs`, `atts_since`).
result<std::vector<rev_id>> parse_rev_list(const std::string& text, const std::string& name) {
  status refusal{errc::bad_request, "`" + name + "` must be a JSON array of revisions"};
  auto list = parse_client_json(text, refusal);
  if (!list) return list.error();
  return rev_list_of(*list, refusal);
}

}  // namespace

result<std::vector<rev_id>> rev_list_of(const json& list, const status& refusal) {
  if (!list.is_array()) return refusal;
  std::vector<rev_id> revs;
  for (auto& r : list) {
    rev_id rid;
    if (!r.is_string() || !valid_rev(r.get<std::string>(), rid)) return bad_rev();
    revs.push_back(rid);
  }
  return revs;
}

result<doc_get> parse_doc_get(const http_params& q, const std::string& if_none_match) {
  doc_get g;
  auto revs = bool_param(q, "revs", false);
  auto revs_info = bool_param(q, "revs_info", false);
  auto conflicts = bool_param(q, "conflicts", false);
  auto deleted_conflicts = bool_param(q, "deleted_conflicts", false);
  auto local_seq = bool_param(q, "local_seq", false);
  auto latest = bool_param(q, "latest", false);
  auto meta = bool_param(q, "meta", false);
  auto atts = bool_param(q, "attachments", false);
  auto encoding_info = bool_param(q, "att_encoding_info", false);
  if (auto e = first_error(revs, revs_info, conflicts, deleted_conflicts, local_seq, latest, meta, atts, encoding_info))
    return *e;
  g.opts.revs = *revs;
  g.opts.revs_info = *revs_info || *meta;
  g.opts.conflicts = *conflicts || *meta;
  g.opts.deleted_conflicts = *deleted_conflicts || *meta;
  g.opts.local_seq = *local_seq;
  g.opts.attachments = *atts;
  g.opts.att_encoding_info = *encoding_info;
  g.latest = *latest;
  if (auto it = q.find("atts_since"); it != q.end()) {
    auto since = parse_rev_list(it->second, "atts_since");
    if (!since) return since.error();
    g.opts.atts_since = std::move(*since);
    g.opts.attachments = true;  // CouchDB: atts_since implies attachments=true
  }
  if (auto it = q.find("rev"); it != q.end()) {
    rev_id r;
    if (!valid_rev(it->second, r)) return bad_rev();
    g.rev = r;
  }
  if (auto it = q.find("open_revs"); it != q.end()) {
    if (it->second == "all") {
      g.open_revs_all = true;
    } else {
      auto list = parse_rev_list(it->second, "open_revs");
      if (!list) return status{errc::bad_request, "`open_revs` must be `all` or a JSON array of revisions"};
      g.open_revs = std::move(*list);
    }
    g.by_open_revs = true;
  }
  // A revision named (?rev= without latest, open_revs) is opened without its document's metadata,
  // as couch_db:open_doc_revs does: no _revs_info, _conflicts, _deleted_conflicts or _local_seq.
  if ((g.rev && !g.latest) || g.by_open_revs)
    g.opts.revs_info = g.opts.conflicts = g.opts.deleted_conflicts = g.opts.local_seq = false;
  g.if_none_match = if_none_match;
  return g;
}

namespace {

// The revisions an open_revs GET names, in answer order; `missing` gets the ones `d` lacks. As
// fabric_doc_open_revs: each revision once, found ones by (pos, hash), then the missing ones so.
std::vector<int> open_revs_indices(const doc_copy& d, const doc_get& g, std::vector<std::string>& missing) {
  const rev_tree& tree = d.info.tree;
  if (g.open_revs_all) return tree.leaves_by_rev();
  std::vector<int> indices;
  std::vector<rev_id> lacking;
  for (const rev_id& rid : g.open_revs) {
    int i = d.found ? tree.find(rid) : -1;
    if (i < 0) {
      lacking.push_back(rid);
    } else if (g.latest) {
      for (int leaf : tree.leaves_under(i)) indices.push_back(leaf);
    } else {
      indices.push_back(i);
    }
  }
  std::sort(indices.begin(), indices.end(), [&](int a, int b) { return tree.rev(a) < tree.rev(b); });
  indices.erase(std::unique(indices.begin(), indices.end()), indices.end());
  std::sort(lacking.begin(), lacking.end());
  lacking.erase(std::unique(lacking.begin(), lacking.end()), lacking.end());
  for (const rev_id& r : lacking) missing.push_back(r.str());
  return indices;
}

// The revision a plain GET answers: the winner, or ?rev= (with latest=true, the leaf it grew to).
result<int> requested_index(const doc_copy& d, const doc_get& g) {
  if (!d.found) return status{errc::not_found, "missing"};
  const rev_tree& tree = d.info.tree;
  if (!g.rev) {
    if (tree.winner_deleted()) return status{errc::not_found, "deleted"};
    return tree.winner();
  }
  int index = tree.find(*g.rev);
  if (index < 0) return status{errc::not_found, "missing"};
  if (g.latest) {
    // The newest leaf grown from it; of several (a conflict below it), the one that wins among
    // them (CouchDB answers a 500 there).
    auto under = tree.leaves_under(index);
    for (int leaf : tree.sorted_leaves()) {
      if (std::find(under.begin(), under.end(), leaf) != under.end()) return leaf;
    }
  }
  return index;
}

}  // namespace

result<doc_read> answer_doc_get(const doc_copy& d, const doc_get& g) {
  const rev_tree& tree = d.info.tree;
  if (g.by_open_revs) {
    if (g.open_revs_all && !d.found) return status{errc::not_found, "missing"};
    std::vector<std::string> missing;
    std::string out = "[";
    for (int i : open_revs_indices(d, g, missing)) {
      auto doc = render_rev(d, i, g.opts);
      out += out.size() > 1 ? "," : "";
      out += doc ? "{\"ok\":" + *doc + "}" : "{\"missing\":" + quote(tree.rev(i).str()) + "}";
    }
    for (auto& m : missing) out += (out.size() > 1 ? "," : "") + std::string("{\"missing\":") + quote(m) + "}";
    return doc_read{200, out + "]\n", ""};
  }
  auto index = requested_index(d, g);
  if (!index) return index.error();
  // No ETag (nor 304) for a read with meta fields, as chttpd_db's send_doc.
  const std::string etag = has_meta(d.info, g.opts) ? "" : "\"" + tree.rev(*index).str() + "\"";
  if (!etag.empty() && g.if_none_match == etag) return doc_read{304, "", etag};
  auto doc = render_rev(d, *index, g.opts);
  if (!doc) return status{errc::not_found, "missing"};
  return doc_read{200, *doc + "\n", etag};
}

namespace {

// Whether the request's Accept names `type` (or its `multipart/*`). Unlike CouchDB, `*/*` does
// not count: curl's default would get multipart where it expects JSON.
bool accepts_explicitly(ctx& c, const std::string& type) {
  return header_takes(c, "Accept", {type, "multipart/*"});
}

// Revision `index` as CouchDB's multipart/related (the JSON with `"follows":true` entries, then
// one part per such attachment, whose bytes are holes read as the answer is sent), or as plain
// JSON when none follows.
std::pair<std::string, multipart::segments> multipart_rev(const doc_copy& d, int index, const render_options& opts) {
  auto doc = render_rev(d, index, opts);
  const std::string* stored = d.body(d.info.tree.rev(index));
  if (!doc || !stored) {
    return {"application/json; error=\"true\"", {{"{\"missing\":" + quote(d.info.tree.rev(index).str()) + "}", "", 0}}};
  }
  auto parts = attachments::shown_after(*stored, inline_after(d.info, index, opts));
  if (parts.empty()) return {"application/json", {{std::move(*doc), "", 0}}};
  multipart::writer w(crypto::random_hex(16));
  w.add({{"Content-Type", "application/json"}}, *doc);
  for (const auto& p : parts) {
    multipart::writer::headers headers{{"Content-Disposition", "attachment; filename=" + quote(p.name)},
                                       {"Content-Type", p.content_type},
                                       {"Content-Length", std::to_string(p.length)}};
    if (p.gzipped) headers.emplace_back("Content-Encoding", "gzip");  // sent as stored, as CouchDB does
    w.add_blob(headers, p.key, p.length);
  }
  return {w.content_type("related"), w.finish_segments()};
}

// Answers with `body`: at once when it has no holes, else as a stream of known length.
void reply_segments(ctx& c, const db_meta& db, const std::string& id, multipart::segments body,
                    const std::string& type) {
  c.res.status = 200;
  if (body.size() == 1 && body.front().key.empty())
    return c.res.set_content(std::move(body.front().text), type.c_str());
  c.res.stream_length = static_cast<int64_t>(multipart::size_of(body));
  c.res.set_stream(segments_stream(c.node.coord, db, id, std::move(body)), type.c_str());
}

// GET with `Accept: multipart/mixed` and open_revs (the CouchDB replicator's read), or with
// `Accept: multipart/related` and attachments=true. Attachments are read as they are sent.
void reply_multipart(ctx& c, const db_meta& db, const doc_copy& d, const doc_get& g) {
  if (!g.by_open_revs) {
    auto index = requested_index(d, g);
    if (!index) return c.error(index.error());
    auto [type, body] = multipart_rev(d, *index, g.opts);
    c.res.set_header("ETag", "\"" + d.info.tree.rev(*index).str() + "\"");
    return reply_segments(c, db, d.id, std::move(body), type);
  }
  if (g.open_revs_all && !d.found) return c.error(errc::not_found, "missing");
  std::vector<std::string> missing;
  multipart::writer outer(crypto::random_hex(16));
  for (int i : open_revs_indices(d, g, missing)) {
    auto [type, body] = multipart_rev(d, i, g.opts);
    outer.add({{"Content-Type", type}}, body);
  }
  for (auto& m : missing)
    outer.add({{"Content-Type", "application/json; error=\"true\""}}, "{\"missing\":" + quote(m) + "}");
  reply_segments(c, db, d.id, outer.finish_segments(), outer.content_type("mixed"));
}

}  // namespace

status check_document_size(ctx& c, const doc_update& u) {
  // couch_doc:from_json_obj_validate: the body without its special members and attachments.
  if (u.body.size() > c.node.max_document_size) return {errc::document_too_large, u.id};
  return {};
}

result<local_update> to_local_update(const std::string& id, json* doc, std::string rev) {
  local_update u;
  u.id = id;
  if (doc) {
    if (!doc->is_object()) return status{errc::bad_request, "Document must be a JSON object"};
    std::vector<rev_id> history;
    if (auto st = read_specials(*doc, nullptr, history); !st) return st;
    if (rev.empty() && doc->contains("_rev")) {  // null too, as couch_doc:parse_rev
      if (!(*doc)["_rev"].is_string()) return bad_rev();
      rev = (*doc)["_rev"].get<std::string>();
    }
    // CouchDB: removes it, answering rev 0-0 (a non-boolean one is refused above)
    if (doc->contains("_deleted")) u.deleted = (*doc)["_deleted"].get<bool>();
    // A local document has no attachments: CouchDB drops them from its body.
    for (const char* k : {"_id", "_rev", "_revisions", "_deleted", "_attachments"}) doc->erase(k);
    for (const char* k : ignored_specials) doc->erase(k);
    u.body = couch_dump(*doc);
  } else {
    u.deleted = true;
  }
  if (!rev.empty() && !parse_local_rev(rev, u.rev)) return bad_rev();
  return u;
}

namespace {

// PUT (or POST /db with a `_local/` id) and DELETE of a local document.
// Its revision is never checked (CouchDB's increment_local_doc_revs): the stored one is the named
// one plus one. A deletion answers 200 and revision 0-0, as send_updated_doc does for a deletion.
// Stores local document `id` (body null: deletes it) after revision `rev`; its new revision "0-N".
result<std::string> store_local(ctx& c, const db_meta& db, const std::string& id, json* body, std::string rev,
                                bool& deleted) {
  auto u = to_local_update(id, body, std::move(rev));
  if (!u) return u.error();
  deleted = u->deleted;
  auto new_rev = c.node.coord.write_local(db, *u);
  if (!new_rev) return new_rev.error();
  return "0-" + std::to_string(*new_rev);
}

void write_local_doc(ctx& c, const db_meta& db, const std::string& id, json* body) {
  bool deleted = false;
  auto rev = store_local(c, db, id, body, requested_rev(c), deleted);
  if (!rev) return c.error(rev.error());
  c.reply(deleted ? 200 : 201, json{{"ok", true}, {"id", id}, {"rev", *rev}});
  c.res.set_header("ETag", "\"" + *rev + "\"");
  if (!deleted) c.set_location({c.path[0], id});  // as chttpd_db's PUT: .../db/_local%2Fid
}

// _local ids are keys of their table as they are: at most doc_key::max_plain bytes (or less, as
// configured).
status validate_local_id(const std::string& id, size_t max_length) {
  if (id.size() > std::min(max_length, doc_key::max_plain)) return {errc::illegal_docid, "Document id is too long"};
  if (!valid_utf8(id)) return {errc::illegal_docid, "Document id must be valid UTF-8"};
  return {};
}

}  // namespace

namespace {

// The `owner` of `d`'s winning revision, "" when it has none; `exists` false when `d` does not
// exist or is deleted.
std::string replicator_doc_owner(const doc_copy& d, bool& exists) {
  exists = d.found && !d.info.tree.winner_deleted();
  if (!exists) return std::string();
  const std::string* stored = d.body(d.info.tree.rev(d.info.tree.winner()));
  json current = stored ? parse_json(*stored).value_or(json()) : json();
  const json& owner = member(current, "owner");
  return owner.is_string() ? owner.get<std::string>() : std::string();
}

// couch_replicator_docs:after_doc_read for a user who is not a server admin: their own
// replication documents as they are; another user's without credentials (source and target
// through strip_endpoint_credentials), and only as JSON.
void reply_replicator_doc(ctx& c, const db_meta& db, const doc_copy& d, const doc_get& g, bool multipart) {
  bool exists = false;
  const bool own = c.user.name && replicator_doc_owner(d, exists) == *c.user.name;
  if (own && multipart) return reply_multipart(c, db, d, g);
  if (multipart) return c.error(errc::forbidden, "Another user's replication document is only shown as JSON.");
  auto r = answer_doc_get(d, g);
  if (own || !r || r->http_status >= 300) return reply_doc_read(c, r);
  auto strip = [](json& doc) {
    for (const char* side : {"source", "target"})
      if (doc.is_object() && doc.contains(side)) doc[side] = strip_endpoint_credentials(doc[side]);
  };
  json body = parse_json(r->body).value_or(json());
  if (body.is_array()) {  // open_revs
    for (json& leaf : body)
      if (leaf.is_object() && leaf.contains("ok")) strip(leaf["ok"]);
  } else {
    strip(body);
  }
  r->body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  reply_doc_read(c, r);
}

// The leaves r copies know, merged; stale copies repaired first (coordinator::open_doc).
void get_doc(ctx& c, const db_meta& db, const std::string& id) {
  auto g = parse_doc_get(c.req.params, c.req.get_header_value("If-None-Match"));
  if (!g) return c.error(g.error());
  auto r = c.read_quorum();
  if (!r) return c.error(r.error());
  // Older revisions' bodies (kept until compaction) only when the request names revisions or asks
  // which are available (revs_info).
  const bool named = g->rev || (g->by_open_revs && !g->open_revs_all) || g->opts.revs_info;
  auto d = c.node.coord.open_doc(db, id, *r, named ? doc_bodies::all : doc_bodies::leaves);
  if (!d) return c.error(d.error());
  // CouchDB's replicator reads open_revs as multipart/mixed, attachments always included (as
  // CouchDB's send_docs_multipart); multipart/related needs attachments=true.
  const bool multipart = g->by_open_revs ? accepts_explicitly(c, "multipart/mixed")
                                         : g->opts.attachments && accepts_explicitly(c, "multipart/related");
  if (multipart) {
    g->opts.attachments = g->opts.follows = g->opts.att_encoding_info = true;
  }
  attachments::blob_bytes blobs;
  if (g->opts.attachments && !multipart) {  // multipart reads them as it sends them
    std::vector<int> rendered;              // the revisions the answer shows (an error answer shows none)
    if (g->by_open_revs) {
      std::vector<std::string> missing;
      rendered = open_revs_indices(*d, *g, missing);
    } else if (auto index = requested_index(*d, *g)) {
      rendered.push_back(*index);
    }
    if (auto st = fetch_inline_blobs(c, db, *d, rendered, g->opts, blobs); !st) return c.error(st);
  }
  g->opts.blobs = &blobs;
  if (db.name == "_replicator" && !c.user.is_admin()) return reply_replicator_doc(c, db, *d, *g, multipart);
  if (multipart) return reply_multipart(c, db, *d, *g);
  reply_doc_read(c, answer_doc_get(*d, *g));
}

// As chttpd_db:send_updated_doc: 201, 200 for a deletion, 202 when fewer than w copies answered.
// (POST /db answers without an ETag, as chttpd_db's db_req POST: `etag` false.)
void reply_written(ctx& c, const std::string& id, const doc_result& r, bool batch, bool quorum_met,
                   bool deleted = false, bool etag = true) {
  if (!r.st) return c.error(r.st);
  std::string rev = r.rev.str();
  if (batch) {
    c.reply(202, json{{"ok", true}, {"id", id}});
  } else {
    c.reply(!quorum_met ? 202 : deleted ? 200 : 201, json{{"ok", true}, {"id", id}, {"rev", rev}});
  }
  if (etag) reply_etag(c, rev);
  if (!batch) c.set_location({c.path[0], id});  // CouchDB's batch=ok answer has none
}

}  // namespace

// Writes one document to w copies (the `w` query parameter, default n/2+1), once the database's
// validate_doc_update functions let it.
result<write_outcome> write_one(ctx& c, const db_meta& db, doc_update u) {
  auto w = c.write_quorum();
  if (!w) return w.error();
  std::vector<doc_update> docs;
  docs.push_back(std::move(u));
  auto verdicts = validate_writes(c, db, docs);
  if (!verdicts) return verdicts.error();
  if (!verdicts->front()) return verdicts->front();
  return c.node.coord.update_docs(db, std::move(docs), *w);
}

namespace {

// A multipart/related body (what CouchDB's replicator PUTs): the document's JSON first, then
// one part per attachment that `follows`, matched by Content-Disposition's filename or else in
// the order the document lists them. The parts are located, not copied: in the request's body or,
// for a large one, in the file the front spooled it to.
status read_multipart_doc(ctx& c, json& doc, std::map<std::string, multipart::located>& following_parts) {
  multipart::source body = multipart::in_memory(c.req.body);
  if (const body_spool* spool = c.req.spool.get()) {
    body = {spool->size(), [spool](uint64_t at, size_t n, std::string& out) { return spool->read(at, n, out); }};
  }
  auto parts = multipart::locate(body, multipart::boundary_of(c.req.get_header_value("Content-Type")));
  if (!parts) return parts.error();
  if (parts->empty()) return {errc::bad_request, "Invalid multipart body: no document part"};
  if ((*parts)[0].length > c.node.max_request_bytes)
    return {errc::too_large, "the document part is larger than max_http_request_size"};
  std::string text;
  if (auto st = body.read((*parts)[0].offset, (*parts)[0].length, text); !st) return st;
  auto parsed = parse_client_json(text, {errc::bad_request, "invalid UTF-8 JSON"});
  if (!parsed) return parsed.error();
  doc = std::move(*parsed);
  if (!doc.is_object()) return {errc::bad_request, "Document must be a JSON object"};
  std::vector<std::string> following;  // the names that follow, in the document's order
  if (const json& atts = member(doc, "_attachments"); atts.is_object()) {
    for (auto& [name, e] : atts.items()) {
      if (!e.is_object()) continue;
      for (const char* field : {"follows", "stub"})
        if (e.contains(field) && !e[field].is_boolean())
          return {errc::bad_request, "Attachment '" + name + "': `" + field + "` must be a boolean"};
      for (const char* field : {"content_type", "encoding"})
        if (e.contains(field) && !e[field].is_string())
          return {errc::bad_request, "Attachment '" + name + "': `" + field + "` must be a string"};
      if (e.value("follows", false)) following.push_back(name);
    }
  }
  if (parts->size() - 1 != following.size()) {
    return {errc::bad_request, "Invalid multipart body: " + std::to_string(following.size()) +
                                   " attachments follow the document but the body has " +
                                   std::to_string(parts->size() - 1) + " parts after it"};
  }
  for (size_t i = 1; i < parts->size(); ++i) {
    std::string name = (*parts)[i].headers.filename();
    if (name.empty()) name = following[i - 1];
    if (!following_parts.emplace(name, (*parts)[i]).second) {
      return {errc::bad_request, "Invalid multipart body: two parts for attachment '" + name + "'"};
    }
  }
  return {};
}

// Attachments of a spooled body, staged on the copies before the document is written (their
// stored entries join the body after to_doc_update; attachment_stream.hpp).
struct staged_atts {
  std::map<std::string, json> entries;  // by attachment name
  // Stages the part of each `"follows":true` entry of `doc` and takes the entry out of `doc`.
  status stage(ctx& c, const db_meta& db, const std::string& id, json& doc,
               const std::map<std::string, multipart::located>& parts, bool keep_revpos) {
    json& atts = doc["_attachments"];
    for (auto& [name, part] : parts) {
      auto it = atts.is_object() ? atts.find(name) : atts.end();
      if (it == atts.end() || !it->is_object() || it->value("follows", false) != true) {
        return {errc::bad_request,
                "Invalid multipart body: a part for attachment '" + name + "', which does not follow the document"};
      }
      const json& e = *it;
      upload up;
      up.name = name;
      up.content_type = e.value("content_type", "application/octet-stream");
      up.encoding = e.value("encoding", "");
      if (up.encoding == "identity") up.encoding.clear();
      if (!up.encoding.empty() && up.encoding != "gzip")
        return {errc::bad_request, "Attachment '" + name + "': only gzip and identity encodings are supported"};
      // The part's size is the one its entry states (encoded_length when gzip), then length decoded.
      const char* sized = up.encoding.empty() ? "length" : "encoded_length";
      if (auto l = e.find(sized); l != e.end() && !(l->is_number_unsigned() && l->get<uint64_t>() == part.length)) {
        return {errc::bad_request, "Attachment '" + name + "' says " + sized + " " + l->dump() + " but its part has " +
                                       std::to_string(part.length) + " bytes"};
      }
      if (auto l = e.find("length"); !up.encoding.empty() && l != e.end() && l->is_number_unsigned())
        up.identity_length = l->get<uint64_t>();
      if (auto d = e.find("digest"); d != e.end() && d->is_string() && d->get<std::string>().rfind("md5-", 0) == 0)
        up.content_md5 = d->get<std::string>().substr(4);
      if (auto r = e.find("revpos"); keep_revpos && r != e.end() && r->is_number_unsigned())
        up.revpos = r->get<uint64_t>();
      auto entry = stage_upload(c.node.coord, db, id, *c.req.spool, part.offset, part.length, up,
                                c.node.attachment_policy, c.node.spool_dir);
      if (!entry) return entry.error();
      entries[name] = std::move(*entry);
      atts.erase(it);
    }
    return {};
  }
  // Puts the staged entries into the body `u` is about to write.
  void add_to(doc_update& u) const {
    if (entries.empty()) return;
    json body = parse_json(u.body).value_or(json::object());
    for (auto& [name, e] : entries) body["_attachments"][name] = e;
    u.body = body.dump();
    u.managed_attachments = true;
  }
  // Forgets what was staged (the write failed).
  void drop(ctx& c, const db_meta& db, const std::string& id) const {
    for (auto& [name, e] : entries) c.node.coord.drop_staged(db, id, e["key"].get<std::string>());
  }
};

// POST /db of a `_local` document: answered here (true), or not one (false).
bool post_local_doc(ctx& c, const db_meta& db, split_doc& doc) {
  const json& given = member(doc.doc, "_id");
  if (!given.is_string() || given.get_ref<const std::string&>().rfind("_local/", 0) != 0) return false;
  std::string local_id = given.get<std::string>();
  if (auto st = validate_local_id(local_id, c.node.max_document_id_length); !st) {
    c.error(st);
    return true;
  }
  whole_where_needed(db, local_id, doc);
  write_local_doc(c, db, local_id, &doc.doc);
  return true;
}

void put_doc(ctx& c, const db_meta& db, std::string id) {
  std::map<std::string, std::string> follows;
  std::map<std::string, multipart::located> parts;
  split_doc doc;  // the document, its body written as it is parsed where it can be (node/json)
  json* body = &doc.doc;
  const bool is_multipart =
      c.method() == "PUT" && multipart::media_type_of(c.req.get_header_value("Content-Type")) == "multipart/related";
  if (is_multipart) {
    if (auto st = read_multipart_doc(c, *body, parts); !st) return c.error(st);
    if (!c.req.spool) {  // a body held in memory: the parts' bytes go to take_inline
      for (auto& [name, part] : parts) follows.emplace(name, c.req.body.substr(part.offset, part.length));
      parts.clear();
    }
  } else if (c.req.spool) {
    return c.error(errc::bad_content_type, "Content-Type must be multipart/related");
  } else if (auto parsed = parse_client_doc(c.req.body, document_member, {errc::bad_request, "invalid UTF-8 JSON"});
             parsed) {
    doc = std::move(*parsed);
  } else {
    return c.error(parsed.error());
  }
  if (!body->is_object()) return c.error(errc::bad_request, "Document must be a JSON object");
  auto new_edits = c.bool_param("new_edits", true);
  if (!new_edits) return c.error(new_edits.error());
  if (id.empty()) {  // POST /db
    if (post_local_doc(c, db, doc)) return;
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
  whole_where_needed(db, id, doc);
  if (auto st = authorize_doc_write(c, db, id, body); !st) return c.error(st);
  staged_atts staged;  // a spooled body's attachments, staged on the copies first
  auto fail = [&](const status& st) {
    staged.drop(c, db, id);
    c.error(st);
  };
  if (!parts.empty()) {
    if (auto st = attachments_here(c, db); !st) return c.error(st);
    if (auto st = staged.stage(c, db, id, *body, parts, !*new_edits); !st) return fail(st);
  }
  auto u = to_doc_update(db, std::move(*body), id, *new_edits, is_multipart ? &follows : nullptr,
                         c.node.attachment_policy, c.node.js, c.node.cluster, std::move(doc.body));
  if (!u) return fail(u.error());
  if (auto st = check_document_size(c, *u); !st) return fail(st);
  if (!follows.empty()) {
    return fail({errc::bad_request, "Invalid multipart body: a part for attachment '" + follows.begin()->first +
                                        "', which does not follow the document"});
  }
  staged.add_to(*u);
  if (u->managed_attachments) {
    if (auto st = attachments_here(c, db); !st) return fail(st);
  }
  const bool deleting = u->deleted;
  auto written = write_one(c, db, std::move(*u));
  if (!written) return fail(written.error());
  if (!written->results.front().st) staged.drop(c, db, id);
  reply_written(c, id, written->results.front(), c.param("batch") == "ok", written->quorum_met, deleting,
                c.method() != "POST");
}

// COPY's `Destination: target[?rev=R]` (couch_httpd_db:parse_copy_destination_header).
struct copy_destination {
  std::string id, rev;
};

result<copy_destination> parse_destination(ctx& c) {
  const std::string destination = c.req.get_header_value("Destination");
  if (destination.empty()) return status{errc::bad_request, "Destination header is mandatory for COPY."};
  if (destination.rfind("http://", 0) == 0 || destination.rfind("https://", 0) == 0)
    return status{errc::bad_request, "Destination URL must be relative."};
  copy_destination to{destination, ""};
  if (size_t q = destination.find('?'); q != std::string::npos) {
    to.id = destination.substr(0, q);
    std::string query = destination.substr(q + 1);
    size_t eq = query.find('=');
    to.rev = eq == std::string::npos ? "" : query.substr(eq + 1);
    rev_id r;
    if (!valid_rev(to.rev, r) && to.id.rfind("_local/", 0) != 0) return bad_rev();
  }
  to.id = percent_decode(to.id);
  if (to.id.rfind("_local/", 0) == 0) {
    if (auto st = validate_local_id(to.id, c.node.max_document_id_length); !st) return st;
  } else if (auto st = validate_doc_id(to.id, c.node.max_document_id_length); !st) {
    return st;
  }
  return to;
}

// The body a COPY writes: the source revision (?rev=, If-Match, or the winner) with its attachments
// as their bytes (the target is a document of its own); a `_local` source's body as it is.
result<json> copy_source(ctx& c, const db_meta& db, const std::string& source) {
  if (source.rfind("_local/", 0) == 0) {
    auto d = c.node.coord.open_local(db, source);
    if (!d) return d.error();
    if (!*d) return status{errc::not_found, "missing"};
    auto body = parse_json((*d)->body);
    if (!body) return status{errc::internal, "the source document could not be read"};
    return std::move(*body);
  }
  doc_get g;
  if (std::string rev = requested_rev(c); !rev.empty()) {
    rev_id r;
    if (!valid_rev(rev, r)) return bad_rev();
    g.rev = r;
  }
  auto r = c.read_quorum();
  if (!r) return r.error();
  auto d = c.node.coord.open_doc(db, source, *r, g.rev ? doc_bodies::all : doc_bodies::leaves);
  if (!d) return d.error();
  auto index = requested_index(*d, g);
  if (!index) return index.error();
  render_options opts;
  opts.attachments = true;
  attachments::blob_bytes blobs;
  if (auto st = fetch_inline_blobs(c, db, *d, {*index}, opts, blobs); !st) return st;
  opts.blobs = &blobs;
  auto rendered = render_rev(*d, *index, opts);
  if (!rendered) return status{errc::not_found, "missing"};
  auto body = parse_json(*rendered);
  if (!body) return status{errc::internal, "the source document could not be read"};
  for (const char* k : {"_id", "_rev", "_revisions", "_deleted"}) body->erase(k);
  return std::move(*body);
}

// COPY /db/doc (chttpd_db's COPY, `_local` documents on either side too): the source written as a
// new revision of the target (R: the target's current revision; none: the target must not exist).
void copy_doc(ctx& c, const db_meta& db, const std::string& source) {
  auto to = parse_destination(c);
  if (!to) return c.error(to.error());
  auto body = copy_source(c, db, source);
  if (!body) return c.error(body.error());
  if (to->id.rfind("_local/", 0) == 0) {
    bool deleted = false;
    auto rev = store_local(c, db, to->id, &*body, to->rev, deleted);
    if (!rev) return c.error(rev.error());
    c.reply(201, json{{"ok", true}, {"id", to->id}, {"rev", *rev}});
    c.res.set_header("ETag", "\"" + *rev + "\"");  // as chttpd_db's COPY of any document
    return c.set_location({c.path[0], to->id});
  }
  if (!to->rev.empty()) (*body)["_rev"] = to->rev;
  if (auto st = authorize_doc_write(c, db, to->id, &*body); !st) return c.error(st);
  auto u =
      to_doc_update(db, std::move(*body), to->id, true, nullptr, c.node.attachment_policy, c.node.js, c.node.cluster);
  if (!u) return c.error(u.error());
  if (auto st = check_document_size(c, *u); !st) return c.error(st);
  if (u->managed_attachments) {
    if (auto st = attachments_here(c, db); !st) return c.error(st);
  }
  auto written = write_one(c, db, std::move(*u));
  if (!written) return c.error(written.error());
  reply_written(c, to->id, written->results.front(), false, written->quorum_met);
}

void delete_doc(ctx& c, const db_meta& db, const std::string& id) {
  if (auto st = authorize_doc_write(c, db, id, nullptr); !st) return c.error(st);
  doc_update u;
  u.id = id;
  u.deleted = true;
  u.body = "{}";
  std::string rev = requested_rev(c);
  auto found = c.node.coord.open_docs(db, {id}, doc_bodies::none);
  if (!found) return c.error(found.error());
  const doc_copy& d = found->front();
  if (!d.found) return c.error(errc::not_found, "missing");
  if (rev.empty() && d.info.tree.winner_deleted()) return c.error(errc::not_found, "deleted");
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

void reply_doc_read(ctx& c, const result<doc_read>& r) {
  if (!r) return c.error(r.error());
  c.res.status = r->http_status;
  if (!r->etag.empty()) c.res.set_header("ETag", r->etag);
  c.res.set_header("Cache-Control", "must-revalidate");  // chttpd:send_json's default
  if (r->http_status != 304) c.res.set_content(r->body, "application/json");
}

namespace {

// couch_replicator_docs:before_doc_update for a user who is not a server admin: their documents
// get their name as `owner`; other users' documents (and those without an owner, a server
// admin's) are not theirs to write.
status authorize_replicator_write(ctx& c, const db_meta& db, const std::string& id, json* body) {
  const status others{errc::forbidden, "Can't update replication documents from other users."};
  if (!c.user.name) return others;
  const std::string& name = *c.user.name;
  if (body && body->is_object()) {
    const json& owner = member(*body, "owner");
    if (owner.is_null())
      (*body)["owner"] = name;
    else if (owner != json(name))
      return others;
  }
  auto found = c.node.coord.open_docs(db, {id}, doc_bodies::leaves);
  if (!found) return found.error();
  bool exists = false;
  if (replicator_doc_owner(found->front(), exists) != name && exists) return others;
  return {};
}

}  // namespace

status authorize_doc_write(ctx& c, const db_meta& db, const std::string& id, json* body) {
  // Documents of _replicator must describe a replication (couch_replicator's validation function:
  // per document, so one in a _bulk_docs gets its own `forbidden` row).
  if (db.name == replicator_docs::db_name && body && id.rfind("_design/", 0) != 0)
    if (auto st = validate_replicator_doc(*body, c.node.server_uuid, c.node.self_url); !st) return st;
  if (c.user.is_admin()) return {};
  if (db.name == "_replicator") return authorize_replicator_write(c, db, id, body);
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

namespace {

// As CouchDB: an id that could never be written names no document, so a read or a DELETE of it is
// a 404 `missing`; only a write says why the id is refused (400 illegal_docid).
status check_doc_id(ctx& c, const std::string& id, bool write) {
  status st = validate_doc_id(id, c.node.max_document_id_length);
  if (!st && !write) return {errc::not_found, "missing"};
  return st;
}

}  // namespace

void handle_doc(ctx& c, const db_meta& db, const std::string& id) {
  const std::string& m = c.method();
  if (!id.empty()) {
    if (auto st = check_doc_id(c, id, m == "PUT" || m == "POST"); !st) return c.error(st);
  }
  if (m == "GET") return get_doc(c, db, id);
  if (m == "PUT" || m == "POST") return put_doc(c, db, id);
  if (m == "DELETE") return delete_doc(c, db, id);
  if (m == "COPY" && !id.empty()) return copy_doc(c, db, id);
  c.method_not_allowed("DELETE,GET,HEAD,POST,PUT,COPY");
}

// ---- attachments ------------------------------------------------------------------------------

status fetch_inline_blobs(ctx& c, const db_meta& db, const doc_copy& d, const std::vector<int>& indices,
                          const render_options& opts, attachments::blob_bytes& out) {
  for (const std::string& key : inline_keys(d, indices, opts)) {
    if (out.count(key)) continue;
    auto bytes = c.node.coord.read_blob(db, d.id, key);
    if (!bytes) return bytes.error();
    out.emplace(key, std::move(*bytes));
  }
  return {};
}

status attachments_here(ctx& c, const db_meta& db) {
  if (!c.node.cluster->clustered()) return {};
  if (db.everywhere()) {
    return {errc::not_implemented, "attachments are not stored in system databases of a cluster yet"};
  }
  for (const auto& copies : db.nodes) {
    for (const std::string& n : copies) {
      auto m = n == c.node.node_name ? nullptr : c.node.cluster->get(n);
      if (m && !m->stores_attachments()) {
        return {errc::not_implemented, "node " + n +
                                           " holds a copy of this database and cannot store attachments "
                                           "(an older release): upgrade it first"};
      }
    }
  }
  return {};
}

namespace {

// CouchDB's attachment names: not empty, no leading '_', valid UTF-8.
status validate_attachment_name(const std::string& name) {
  if (name.empty()) return {errc::bad_request, "Attachment name must not be empty"};
  if (name[0] == '_') return {errc::bad_request, "Attachment name '" + name + "' starts with prohibited character '_'"};
  if (!valid_utf8(name)) return {errc::bad_request, "Attachment name is not UTF-8 encoded"};
  return {};
}

// Several ranges of one attachment are answered from memory up to this many bytes in all.
constexpr uint64_t max_multirange_bytes = 16u << 20;

// The ranges of `Range: bytes=...` of a `length`-byte attachment, each [from, to]; none: serve it
// whole (no header, a form CouchDB ignores). `to < from` is 416 (parse_ranges).
using byte_ranges = std::vector<std::pair<uint64_t, uint64_t>>;
result<byte_ranges> requested_ranges(const std::string& header, uint64_t length) {
  // mochiweb's parse_range_request, then chttpd_db:parse_ranges.
  if (header.rfind("bytes=", 0) != 0 || length == 0) return byte_ranges{};
  auto number = [](const std::string& t, uint64_t& v) {
    if (t.empty() || t.size() > 19 || t.find_first_not_of("0123456789") != std::string::npos) return false;
    v = std::stoull(t);
    return true;
  };
  byte_ranges out;
  std::string list = header.substr(6);
  for (size_t start = 0; start <= list.size();) {
    size_t comma = std::min(list.find(',', start), list.size());
    std::string spec = list.substr(start, comma - start);
    start = comma + 1;
    spec.erase(0, spec.find_first_not_of(' '));
    spec.erase(spec.find_last_not_of(' ') + 1);
    auto dash = spec.find('-');
    if (dash == std::string::npos) return byte_ranges{};  // not a byte range: the whole attachment
    std::string a = spec.substr(0, dash), b = spec.substr(dash + 1);
    uint64_t from = 0, to = 0;
    bool has_from = number(a, from), has_to = number(b, to);
    if ((!a.empty() && !has_from) || (!b.empty() && !has_to) || (!has_from && !has_to)) return byte_ranges{};
    if (out.empty() && has_from && from == 0 && !has_to) return byte_ranges{};  // "bytes=0-": all of it
    if (!has_from) {                                                            // the last `to` bytes
      from = to >= length ? 0 : length - to;
      to = length - 1;
    } else if (!has_to || to >= length) {
      to = length - 1;
    }
    if (to < from || from >= length) {  // CouchDB answers a 206 with a wrong body
      return status{errc::range_not_satisfiable, "Requested range not satisfiable"};
    }
    out.emplace_back(from, to);
  }
  return out;
}

// Whether the request's Accept-Encoding takes gzip (a `q=0` refuses it).
bool accepts_gzip(ctx& c) {
  return header_takes(c, "Accept-Encoding", {"gzip", "x-gzip"});
}

// An attachment answer's first headers (chttpd_db): chttpd_util:maybe_add_csp_header("attachments",
// ..., "sandbox"), so served bytes never run as the node's page; its ETag; must-revalidate.
void attachment_headers(ctx& c, const std::string& etag) {
  if (c.node.cfg.get_bool("csp", "attachments_enable", true))
    c.res.set_header("Content-Security-Policy", c.node.cfg.get("csp", "attachments_header_value", "sandbox"));
  c.res.set_header("ETag", etag);
  c.res.set_header("Cache-Control", "must-revalidate");
}

void get_attachment(ctx& c, const db_meta& db, const std::string& doc_id, const std::string& att) {
  std::string rev_text = c.param("rev");
  auto d = c.node.coord.open_doc(db, doc_id, 1, rev_text.empty() ? doc_bodies::leaves : doc_bodies::all);
  if (!d) return c.error(d.error());
  if (!d->found) return c.error(errc::not_found, "missing");
  const rev_tree& tree = d->info.tree;
  int index = tree.winner();
  if (!rev_text.empty()) {
    rev_id r;
    if (!valid_rev(rev_text, r)) return c.error(bad_rev());
    index = tree.find(r);
    if (index < 0) return c.error(errc::not_found, "missing");
  } else if (tree.winner_deleted()) {
    return c.error(errc::not_found, "deleted");
  }
  const std::string* body = d->body(tree.rev(index));
  if (!body) return c.error(errc::not_found, "missing");
  json doc = parse_json(*body).value_or(json());
  const json* e = attachments::entry_of(doc, att);
  const std::string* key = e ? attachments::key_of(*e) : nullptr;
  if (!key) return c.error(errc::not_found, "Document is missing attachment");
  // CouchDB's ETag for an attachment is its digest's base64 part, quoted.
  std::string digest = e->value("digest", "");
  std::string etag = "\"" + (digest.rfind("md5-", 0) == 0 ? digest.substr(4) : digest) + "\"";
  attachment_headers(c, etag);
  if (c.req.get_header_value("If-None-Match") == etag) {
    c.res.status = 304;
    return;
  }
  std::string type = e->value("content_type", "application/octet-stream");
  // A gzip-stored attachment goes as stored to a client that takes gzip, decoded to others, never
  // in ranges (chttpd_db; which sends no Content-MD5 either way).
  const bool encoded = attachments::gzipped(*e);
  const bool as_stored = !encoded || accepts_gzip(c);
  const uint64_t stored_length = attachments::stored_length(*e);
  const uint64_t length = as_stored ? stored_length : e->value("length", uint64_t{0});
  uint64_t from = 0, end = length;  // what is sent: [from, end) of the bytes the client reads
  c.res.status = 200;
  if (encoded) {
    c.res.set_header("Accept-Ranges", "none");
    if (as_stored) c.res.set_header("Content-Encoding", "gzip");
  } else {
    auto ranges = requested_ranges(c.req.get_header_value("Range"), length);
    if (!ranges) return c.error(ranges.error());
    c.res.set_header("Accept-Ranges", "bytes");
    auto content_range = [&](uint64_t a, uint64_t b) {
      return "bytes " + std::to_string(a) + "-" + std::to_string(b) + "/" + std::to_string(length);
    };
    if (ranges->size() == 1) {
      from = ranges->front().first;
      end = ranges->front().second + 1;
      c.res.set_header("Content-Range", content_range(from, end - 1));
      c.res.status = 206;
    } else if (ranges->size() > 1 && ranges->size() < 10) {
      // chttpd_db:send_ranges_multipart (the parts are read into memory: at most 9 of them, and
      // a request for more than max_multirange_bytes in all gets the whole attachment instead).
      uint64_t total = 0;
      for (auto& [a, b] : *ranges) total += b - a + 1;
      if (total <= max_multirange_bytes) {
        std::string boundary = crypto::random_hex(16);
        std::string out = "--" + boundary;
        for (auto& [a, b] : *ranges) {
          auto bytes = c.node.coord.read_blob(db, doc_id, *key, a, b - a + 1);
          if (!bytes) return c.error(bytes.error());
          out += "\r\nContent-Type: " + type + "\r\nContent-Range: " + content_range(a, b) + "\r\n\r\n";
          out += *bytes;
          out += "\r\n--" + boundary;
        }
        out += "--";
        c.res.status = 206;
        c.res.set_content(std::move(out), ("multipart/byteranges; boundary=\"" + boundary + "\"").c_str());
        return;
      }
    }
  }
  // What must be read: the range of the stored bytes, or all of them to decode.
  if ((as_stored ? end - from : stored_length) > attachment_stream_from) {  // a piece at a time
    blob_slice s{*key, from, end};
    if (!as_stored) s = blob_slice{*key, 0, stored_length, true, from, end - from};
    c.res.set_stream(blob_stream(c.node.coord, db, doc_id, std::move(s)), type.c_str());
    c.res.stream_length = static_cast<int64_t>(end - from);
    return;
  }
  auto bytes =
      as_stored ? c.node.coord.read_blob(db, doc_id, *key, from, end - from) : c.node.coord.read_blob(db, doc_id, *key);
  if (!bytes) return c.error(bytes.error());
  if (!as_stored) {
    auto plain = attachments::identity_bytes(*e, std::move(*bytes));
    if (!plain || plain->size() != length)
      return c.error(errc::internal, "attachment '" + att + "' of " + doc_id + " does not decode");
    bytes = plain->substr(from, end - from);
  }
  if (bytes->size() != end - from)
    return c.error(errc::internal, "attachment '" + att + "' of " + doc_id + " is shorter than its entry");
  c.res.set_content(std::move(*bytes), type.c_str());
}

// PUT (bytes in the body) or DELETE of one attachment: a new revision of the document with the
// others kept as stubs (chttpd_db:db_attachment_req). No rev: PUT creates the document, DELETE
// is a 404 when there is none, else a conflict.
void write_attachment(ctx& c, const db_meta& db, const std::string& doc_id, const std::string& att) {
  const bool put = c.method() == "PUT";
  if (auto st = validate_attachment_name(att); !st) return c.error(st);
  if (auto st = authorize_doc_write(c, db, doc_id, nullptr); !st) return c.error(st);
  if (auto st = attachments_here(c, db); !st) return c.error(st);
  std::string if_match = if_match_rev(c);
  if (c.has("rev") && !if_match.empty() && c.param("rev") != if_match)
    return c.error(errc::bad_request, "Document rev and etag have different values");
  std::string rev = requested_rev(c);
  json doc = json::object();
  if (!rev.empty() || !put) {
    rev_id r;
    if (!rev.empty() && !valid_rev(rev, r)) return c.error(bad_rev());
    auto d = c.node.coord.open_doc(db, doc_id);
    if (!d) return c.error(d.error());
    if (rev.empty()) {  // DELETE without a rev: 404 for no document or attachment, else the conflict below
      if (!d->found) return c.error(errc::not_found, "missing");
      if (d->info.tree.winner_deleted()) return c.error(errc::not_found, "deleted");
      const std::string* winner = d->body(d->info.tree.rev(d->info.tree.winner()));
      if (!winner || !attachments::entry_of(parse_json(*winner).value_or(json::object()), att))
        return c.error(errc::not_found, "Document is missing attachment");
    } else {
      int i = d->found ? d->info.tree.find(r) : -1;
      const std::string* body = i < 0 ? nullptr : d->body(r);
      if (!body) return c.error(errc::conflict, "Document update conflict.");
      doc = parse_json(*body).value_or(json::object());
      doc["_rev"] = rev;
      // Written on a tombstone, the new revision stays deleted (chttpd_db edits the revision it
      // opened, deleted flag and all): an attachment write never resurrects a document.
      if (d->info.tree.nodes()[i].deleted) doc["_deleted"] = true;
    }
  }
  // DELETE of an attachment the revision does not have: 404 (chttpd_db:get_existing_attachment).
  if (!put && !rev.empty() && !attachments::entry_of(doc, att))
    return c.error(errc::not_found, "Document is missing attachment");
  // The other attachments stay, as stubs of the base revision; this one goes or is replaced.
  if (doc.contains("_attachments") && doc["_attachments"].is_object()) {
    json& atts = doc["_attachments"];
    atts.erase(att);
    for (auto& [name, e] : atts.items()) {
      if (attachments::key_of(e)) e = json{{"stub", true}};
    }
    if (atts.empty()) doc.erase("_attachments");
  }
  // The new bytes follow the document as a multipart body's part would (attachments::take_inline:
  // Content-MD5 is the part's digest, gzip is decoded, max_attachment_size applies). A body the
  // front spooled to a file (a large one) is staged on the copies first, its entry made here.
  std::map<std::string, std::string> follows;
  staged_atts staged;  // a spooled body, staged on the copies first
  if (put) {
    upload up;
    up.encoding = c.req.get_header_value("Content-Encoding");
    std::transform(up.encoding.begin(), up.encoding.end(), up.encoding.begin(), ::tolower);
    if (up.encoding == "identity") up.encoding.clear();
    if (!up.encoding.empty() && up.encoding != "gzip")
      return c.error(errc::bad_content_type, "Only gzip and identity content-encodings are supported");
    up.content_type = c.req.get_header_value("Content-Type");
    if (up.content_type.empty()) up.content_type = "application/octet-stream";
    up.content_md5 = c.req.get_header_value("Content-MD5");
    if (c.req.spool) {
      auto e = stage_upload(c.node.coord, db, doc_id, *c.req.spool, 0, c.req.spool->size(), up,
                            c.node.attachment_policy, c.node.spool_dir);
      if (!e) return c.error(e.error());
      staged.entries[att] = std::move(*e);
    } else {
      json entry{{"follows", true}, {"content_type", up.content_type}};
      if (!up.encoding.empty()) entry["encoding"] = up.encoding;
      if (!up.content_md5.empty()) entry["digest"] = "md5-" + up.content_md5;
      doc["_attachments"][att] = std::move(entry);
      follows.emplace(att, c.req.body);
    }
  }
  auto u =
      to_doc_update(db, std::move(doc), doc_id, true, &follows, c.node.attachment_policy, c.node.js, c.node.cluster);
  if (!u) {
    staged.drop(c, db, doc_id);
    return c.error(u.error());
  }
  staged.add_to(*u);  // the staged entry joins the body the checks above made
  u->managed_attachments = true;
  auto written = write_one(c, db, std::move(*u));
  const doc_result* r = written ? &written->results.front() : nullptr;
  if (!r || !r->st) {
    staged.drop(c, db, doc_id);
    return c.error(r ? r->st : written.error());
  }
  json out{{"ok", true}, {"id", doc_id}, {"rev", r->rev.str()}};
  if (!put) return c.reply(200, out);
  c.reply(written->quorum_met ? 201 : 202, out);
  c.set_location({c.path[0], doc_id, att});
}

}  // namespace

void handle_attachment(ctx& c, const db_meta& db, const std::string& doc_id, const std::string& att) {
  const std::string& m = c.method();
  if (auto st = check_doc_id(c, doc_id, m != "GET"); !st) return c.error(st);
  if (m == "GET") return get_attachment(c, db, doc_id, att);
  if (m == "PUT" || m == "DELETE") return write_attachment(c, db, doc_id, att);
  c.method_not_allowed("DELETE,GET,HEAD,PUT");
}

// ---- _local documents: no rev tree, revisions "0-N", not replicated, not in feeds -------------

void handle_local_doc(ctx& c, const db_meta& db, const std::string& id) {
  if (auto st = validate_local_id(id, c.node.max_document_id_length); !st) return c.error(st);
  const std::string& m = c.method();
  if (m == "GET" || m == "DELETE") {
    auto d = c.node.coord.open_local(db, id);
    if (!d) return c.error(d.error());
    if (!*d) return c.error(errc::not_found, "missing");
    if (m == "DELETE") return write_local_doc(c, db, id, nullptr);  // whatever `rev` it names
    // A local document has one revision and no history: a request for any other is a 404.
    if (c.has("rev") || c.has("open_revs")) return c.error(errc::not_found, "missing");
    auto revs = c.bool_param("revs", false);
    if (!revs) return c.error(revs.error());
    std::string rev = "0-" + std::to_string((*d)->rev);
    std::string extra = *revs ? ",\"_revisions\":{\"start\":0,\"ids\":[\"" + std::to_string((*d)->rev) + "\"]}" : "";
    doc_read r{200, render_doc(id, rev, false, (*d)->body, extra) + "\n", "\"" + rev + "\""};
    if (c.req.get_header_value("If-None-Match") == r.etag) r.http_status = 304;
    return reply_doc_read(c, r);
  }
  if (m == "COPY") return copy_doc(c, db, id);
  if (m != "PUT") return c.method_not_allowed("GET,PUT,DELETE,COPY");
  auto body = parse_client_json(c.req.body, {errc::bad_request, "invalid UTF-8 JSON"});
  if (!body) return c.error(body.error());
  write_local_doc(c, db, id, &*body);
}

// ---- release 0.2's readDoc, for 0.2 coordinators during an upgrade or downgrade --------------

namespace {

result<doc_read> legacy_answer(local_copy& copy, const doc_request& r, size_t max_id_length) {
  http_params q;
  for (auto& [k, v] : r.params) q.emplace(k, v);
  if (r.what == "doc") {
    auto g = parse_doc_get(q, r.if_none_match);
    if (!g) return g.error();
    auto docs = copy.read_docs({r.id}, doc_bodies::all);
    if (!docs) return docs.error();
    return answer_doc_get(docs->front(), *g);
  }
  if (r.what == "local" && r.method == "GET") {
    auto d = copy.open_local(r.id);
    if (!d) return d.error();
    if (!*d) return status{errc::not_found, "missing"};
    return doc_read{200, render_doc(r.id, "0-" + std::to_string((*d)->rev), false, (*d)->body, "") + "\n", ""};
  }
  if (r.what == "local" && (r.method == "PUT" || r.method == "DELETE")) {
    std::optional<json> body;
    if (r.method == "PUT") {
      auto parsed = parse_client_json(r.body, {errc::bad_request, "invalid UTF-8 JSON"});
      if (!parsed) return parsed.error();
      body = std::move(*parsed);
    }
    auto u = to_local_update(r.id, body ? &*body : nullptr, q.count("rev") ? q.find("rev")->second : "");
    if (!u) return u.error();
    auto written = copy.write_local(*u);
    if (!written) return written.error();
    json out = {{"ok", true}, {"id", r.id}, {"rev", "0-" + std::to_string(*written)}};
    return doc_read{body ? 201 : 200, out.dump() + "\n", ""};
  }
  if (r.what == "bulk_get" || r.what == "revs_diff") {
    auto body = parse_client_json(r.body, {errc::bad_request, "invalid UTF-8 JSON"});
    if (!body) return body.error();
    if (!body->is_object()) return status{errc::bad_request, "Request body must be a JSON object"};
    if (r.what == "revs_diff") {
      auto docs = copy.read_docs(revs_diff_ids(*body), doc_bodies::none);
      if (!docs) return docs.error();
      auto out = answer_revs_diff(*body, *docs);
      if (!out) return out.error();
      return doc_read{200, out->dump() + "\n", ""};
    }
    render_options opts;
    auto revs = bool_param(q, "revs", false);
    auto latest = bool_param(q, "latest", false);
    if (auto e = first_error(revs, latest)) return *e;
    opts.revs = *revs;
    auto ids = bulk_get_ids(*body, max_id_length);
    if (!ids) return ids.error();
    auto docs = copy.read_docs(*ids, doc_bodies::all);
    if (!docs) return docs.error();
    return doc_read{200, render_bulk_get((*body)["docs"], *docs, opts, *latest, max_id_length), ""};
  }
  return status{errc::bad_request, "unknown document request: " + r.what + " " + r.method};
}

}  // namespace

result<doc_read> serve_legacy_read(local_copy& copy, const doc_request& req, size_t max_id_length) {
  auto a = legacy_answer(copy, req, max_id_length);
  if (a) return a;
  return doc_read{http_status_of(a.error().code), error_json(a.error()).dump() + "\n", ""};
}

result<std::vector<status>> validate_writes(ctx& c, const db_meta& db, const std::vector<doc_update>& docs) {
  if (!c.node.validator) return std::vector<status>(docs.size());
  auto guarded = c.node.validator->guarded(db);  // most databases have none: nothing to build
  if (!guarded) return guarded.error();
  if (!*guarded) return std::vector<status>(docs.size());
  write_caller caller;
  json user = {{"db", db.name}, {"name", c.user.name ? json(*c.user.name) : json(nullptr)}, {"roles", c.user.roles}};
  caller.user_ctx = user.dump();
  caller.sec_obj = c.security ? c.security->dump() : "{}";
  return c.node.validator->validate(db, docs, caller);
}

}  // namespace settee
