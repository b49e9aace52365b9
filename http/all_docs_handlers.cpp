// _all_docs, _design_docs and _local_docs (GET, POST, and POST .../queries): one listing over the
// ranges, merged here, with CouchDB's options (http/view_query.hpp) and its row shapes.
#include <algorithm>
#include <map>

#include "actors/doc_render.hpp"
#include "http/handlers.hpp"
#include "http/view_query.hpp"

namespace settee {

namespace {

// Design documents are the ids in ["_design/", "_design0"): '0' follows '/'.
constexpr const char* first_design = "_design/";
constexpr const char* past_design = "_design0";

void append_row(std::string& out, bool& first, const view_query& q, const all_docs_row& r) {
  out += first ? "\r\n" : ",\r\n";
  first = false;
  std::string qid = quote(r.id);
  out += "{\"id\":";
  out += qid;
  out += ",\"key\":";
  out += qid;
  out += ",\"value\":{\"rev\":\"";
  out += r.rev;
  out += r.deleted ? "\",\"deleted\":true}" : "\"}";
  if (q.include_docs) {
    out += ",\"doc\":";
    out += r.deleted || r.doc.empty() ? "null" : r.doc;
  }
  out += "}";
}

void append_missing(std::string& out, bool& first, const json& key) {
  out += (first ? "\r\n" : ",\r\n") + std::string("{\"key\":") + key.dump() + ",\"error\":\"not_found\"}";
  first = false;
}

// One range's part of the request, from the first of its copies that answers.
result<all_docs_page> range_rows(ctx& c, const db_meta& db, size_t i, const all_docs_request& req) {
  return c.node.coord.first_answer<all_docs_page>(db, i, [&](shard_copy& copy) { return copy.all_docs(req); });
}

// `keys` in the order rows are given: reversed when descending, as fabric_view_all_docs.
std::vector<json> keys_in_order(const view_query& q) {
  std::vector<json> keys(q.keys->begin(), q.keys->end());
  if (q.descending) std::reverse(keys.begin(), keys.end());
  return keys;
}

std::string object_text(const std::string& total, const std::string& offset, const std::string& rows, bool any,
                        const std::string& update_seq) {
  std::string out = "{\"total_rows\":" + total + ",\"offset\":" + offset + ",\"rows\":[" + rows + (any ? "\r\n]" : "]");
  if (!update_seq.empty()) out += ",\"update_seq\":" + update_seq;
  return out + "}";
}

result<std::string> update_seq_of(ctx& c, const db_meta& db, const view_query& q) {
  if (!q.update_seq) return std::string();
  auto ranges = c.node.coord.summaries(db);
  if (!ranges) return ranges.error();
  return quote(seq_token(db, *ranges));
}

// The live design documents of the database (CouchDB's `total_rows` for _design_docs).
result<uint64_t> design_count(ctx& c, const db_meta& db) {
  all_docs_request req;
  req.start = json(first_design).dump();
  req.end = json(past_design).dump();
  req.inclusive_end = false;
  uint64_t n = 0;
  for (size_t i = 0; i < db.q; ++i) {
    auto page = range_rows(c, db, i, req);
    if (!page) return page.error();
    n += page->rows.size();
  }
  return n;
}

// _all_docs or _design_docs: the listing object for `q`.
result<std::string> list_docs(ctx& c, const db_meta& db, const view_query& q, bool design) {
  all_docs_request base;
  base.descending = q.descending;
  base.inclusive_end = q.inclusive_end;
  base.include_docs = q.include_docs;
  base.conflicts = q.conflicts;
  base.attachments = q.attachments;
  base.att_encoding_info = q.att_encoding_info;
  const bool by_keys = q.keys.has_value();
  if (design && !by_keys) {
    // Only ids (strings) bound the namespace, clamped to it as couch_db:fold_design_docs.
    auto id_or = [](const std::optional<json>& k, const char* def) {
      return k && k->is_string() ? k->get<std::string>() : std::string(def);
    };
    std::string lo = first_design, hi = past_design;
    std::string start = id_or(q.start_key, q.descending ? past_design : first_design);
    std::string end = id_or(q.end_key, q.descending ? first_design : past_design);
    start = q.descending ? std::min(start, hi) : std::max(start, lo);
    end = q.descending ? std::max(end, lo) : std::min(end, hi);
    base.start = json(start).dump();
    base.end = json(end).dump();
  } else {
    if (q.start_key) base.start = q.start_key->dump();
    if (q.end_key) base.end = q.end_key->dump();
  }
  base.max_rows = q.limit < 0 ? UINT64_MAX : static_cast<uint64_t>(q.skip + q.limit);

  std::vector<all_docs_page> pages(db.q);
  std::vector<json> keys;
  if (by_keys) {  // each range looks up its own keys
    keys = keys_in_order(q);
    base.by_keys = true;
    std::vector<std::vector<std::string>> wanted(db.q);
    for (auto& key : keys)
      if (key.is_string()) wanted[c.node.coord.shard_index(db, key.get_ref<const std::string&>())].push_back(key);
    for (size_t i = 0; i < db.q; ++i) {
      all_docs_request req = base;
      req.keys = std::move(wanted[i]);
      auto page = range_rows(c, db, i, req);
      if (!page) return page.error();
      pages[i] = std::move(*page);
    }
  } else {
    for (size_t i = 0; i < db.q; ++i) {
      auto page = range_rows(c, db, i, base);
      if (!page) return page.error();
      pages[i] = std::move(*page);
    }
  }
  uint64_t total = 0;
  if (design) {
    // The usual request (the whole namespace) already read every design document: count those;
    // a bounded one reads their ids once more.
    const bool whole = !by_keys && !q.start_key && !q.end_key && q.limit < 0;
    if (whole) {
      for (auto& p : pages) total += p.rows.size();
    } else {
      auto n = design_count(c, db);
      if (!n) return n.error();
      total = *n;
    }
  } else {
    for (auto& p : pages) total += p.doc_count;
  }

  std::string rows;
  bool first = true;
  int64_t emitted = 0, skipped = 0, offset = q.skip;
  auto room = [&] { return q.limit < 0 || emitted < q.limit; };
  if (by_keys) {
    std::vector<size_t> next(db.q, 0);
    for (auto& key : keys) {
      if (!room()) break;
      const all_docs_row* r = nullptr;
      if (key.is_string()) {
        size_t s = c.node.coord.shard_index(db, key.get_ref<const std::string&>());
        r = &pages[s].rows[next[s]++];  // each range answered its keys in order
      }
      if (skipped++ < q.skip) continue;
      ++emitted;
      if (!r || !r->found) {
        append_missing(rows, first, key);
      } else {
        append_row(rows, first, q, *r);
      }
    }
  } else {
    // Each range yields its live documents within the key range, in order; a k-way merge
    // interleaves them. Rows before the start key count towards `offset`, as in CouchDB.
    std::vector<size_t> next(db.q, 0);
    for (auto& p : pages) offset += static_cast<int64_t>(p.before);
    while (room()) {
      int best = -1;
      for (size_t i = 0; i < db.q; ++i) {
        if (next[i] >= pages[i].rows.size()) continue;
        const std::string& id = pages[i].rows[next[i]].id;
        if (best < 0 || (q.descending ? id > pages[best].rows[next[best]].id : id < pages[best].rows[next[best]].id)) {
          best = static_cast<int>(i);
        }
      }
      if (best < 0) break;
      const all_docs_row& r = pages[best].rows[next[best]++];
      if (skipped++ < q.skip) continue;
      ++emitted;
      append_row(rows, first, q, r);
    }
  }
  auto seq = update_seq_of(c, db, q);
  if (!seq) return seq.error();
  // A `keys` query has no offset (fabric_view_all_docs sends null).
  return object_text(std::to_string(total), by_keys ? "null" : std::to_string(offset), rows, !first, *seq);
}

// _local_docs: local documents are few and never in feeds; every range lists its own.
result<std::string> list_local_docs(ctx& c, const db_meta& db, const view_query& q) {
  std::vector<local_doc> docs;
  for (size_t i = 0; i < db.q; ++i) {
    auto part = c.node.coord.list_local(db, i);
    if (!part) return part.error();
    docs.insert(docs.end(), std::make_move_iterator(part->begin()), std::make_move_iterator(part->end()));
  }
  std::sort(docs.begin(), docs.end(), [](const local_doc& a, const local_doc& b) { return a.id < b.id; });
  if (q.descending) std::reverse(docs.begin(), docs.end());
  auto row_of = [&](std::string& rows, bool& first, const local_doc& d) {
    all_docs_row r{d.id, "0-" + std::to_string(d.rev), false, true, ""};
    if (q.include_docs) r.doc = render_doc(d.id, r.rev, false, d.body, "");
    append_row(rows, first, q, r);
  };
  std::string rows;
  bool first = true;
  int64_t emitted = 0, skipped = 0;
  auto room = [&] { return q.limit < 0 || emitted < q.limit; };
  if (q.keys) {
    std::map<std::string, const local_doc*> by_id;
    for (const local_doc& d : docs) by_id.emplace(d.id, &d);
    for (const json& key : keys_in_order(q)) {
      if (!room()) break;
      if (skipped++ < q.skip) continue;
      ++emitted;
      auto it = key.is_string() ? by_id.find(key.get<std::string>()) : by_id.end();
      if (it == by_id.end()) {
        append_missing(rows, first, key);
      } else {
        row_of(rows, first, *it->second);
      }
    }
  } else {
    auto bound = [](const std::optional<json>& k) -> std::optional<std::string> {
      if (!k || !k->is_string()) return std::nullopt;  // only ids bound a listing of ids
      return k->get<std::string>();
    };
    std::optional<std::string> start = bound(q.start_key), end = bound(q.end_key);
    for (const local_doc& d : docs) {
      if (!room()) break;
      if (start && (q.descending ? d.id > *start : d.id < *start)) continue;
      if (end) {
        int vs = d.id.compare(*end);
        bool past = q.descending ? (q.inclusive_end ? vs < 0 : vs <= 0) : (q.inclusive_end ? vs > 0 : vs >= 0);
        if (past) break;
      }
      if (skipped++ < q.skip) continue;
      ++emitted;
      row_of(rows, first, d);
    }
  }
  auto seq = update_seq_of(c, db, q);
  if (!seq) return seq.error();
  return object_text("null", "null", rows, !first, *seq);
}

result<std::string> listing(ctx& c, const db_meta& db, const std::string& what, const view_query& q) {
  if (auto st = validate_map_query(q); !st) return st;
  if (what == "_local_docs") return list_local_docs(c, db, q);
  return list_docs(c, db, q, what == "_design_docs");
}

}  // namespace

void handle_all_docs(ctx& c, const db_meta& db, const std::string& what) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  view_query q;
  // As couch_mrview_http:parse_body_and_query: a POST body's options, then the query string's.
  if (c.method() == "POST") {
    auto body = c.json_object_body();
    if (!body) return c.error(body.error());
    if (auto st = apply_view_options(q, *body, "`keys` body member must be an array."); !st) return c.error(st);
  }
  if (auto st = apply_view_params(q, c.query_in_order()); !st) return c.error(st);
  auto out = listing(c, db, what, q);
  if (!out) return c.error(out.error());
  c.reply_raw(200, std::move(*out) + "\n");
}

void handle_all_docs_queries(ctx& c, const db_meta& db, const std::string& what) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  if (!body->contains("queries")) return c.error(errc::bad_request, "POST body must include `queries` parameter.");
  const json& queries = (*body)["queries"];
  if (!queries.is_array()) return c.error(errc::bad_request, "`queries` member must be an array.");
  // As chttpd_db:multi_all_docs_view: the query string's options, then each query's own.
  view_query common;
  if (auto st = apply_view_params(common, c.query_in_order()); !st) return c.error(st);
  std::string out = "{\"results\":[";
  for (size_t i = 0; i < queries.size(); ++i) {
    if (!queries[i].is_object()) return c.error(errc::bad_request, "Each query must be a JSON object");
    view_query q = common;
    if (auto st = apply_view_options(q, queries[i], "`keys` member must be an array."); !st) return c.error(st);
    auto one = listing(c, db, what, q);
    if (!one) return c.error(one.error());
    out += (i ? ",\r\n" : "\r\n") + *one;
  }
  out += queries.empty() ? "]}\n" : "\r\n]}\n";
  c.reply_raw(200, std::move(out));
}

}  // namespace settee
