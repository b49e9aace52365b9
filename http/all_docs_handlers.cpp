// _all_docs, _design_docs and _local_docs (GET, POST, and POST .../queries): one listing over the
// ranges, merged here, with CouchDB's options (query/view_query.hpp) and its row shapes.
#include <algorithm>
#include <functional>
#include <map>

#include "actors/all_docs_reader.hpp"
#include "actors/doc_render.hpp"
#include "http/handlers.hpp"
#include "query/view_query.hpp"

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
  auto listed = list_design_docs(c.node.coord, db, false);
  if (!listed) return listed.error();
  return listed->in_bounds;
}

// The bounds of a partition's _all_docs: ids "p:..." sort between "p:" and "p;" (';' follows
// ':'), and a start or end key must be one of them.
status partition_bounds(const view_query& q, const std::string& partition, all_docs_request& base) {
  const std::string lo = partition + ":", hi = partition + ";";
  auto in_partition = [&](const std::optional<json>& k) {
    return !k || (k->is_string() && partition_of(k->get<std::string>()) == partition);
  };
  if (!in_partition(q.start_key) || !in_partition(q.end_key))
    return {errc::bad_request, "`start_key` and `end_key` must be ids of partition `" + partition + "`"};
  auto id_or = [](const std::optional<json>& k, const std::string& def) { return k ? k->get<std::string>() : def; };
  base.start = json(id_or(q.start_key, q.descending ? hi : lo)).dump();
  base.end = json(id_or(q.end_key, q.descending ? lo : hi)).dump();
  return {};
}

// The rows of a listing (`keys`: a keys query's, in the order read); `first` stays true when none.
std::string listing_rows(const all_docs_listing& listed, const view_query& q, const std::vector<json>* keys,
                         bool design, bool& first) {
  std::string rows;
  for (const auto& r : listed.rows) {
    // _design_docs?keys=: only the design documents' keys, dropped after skip and limit as
    // fabric_view_all_docs:filter_keys_by_namespace drops the others.
    const json* key = keys ? &(*keys)[r.key] : nullptr;
    if (design && key && !(key->is_string() && key->get_ref<const std::string&>().rfind("_design/", 0) == 0)) continue;
    if (key && !r.doc.found) {
      append_missing(rows, first, *key);
    } else {
      append_row(rows, first, q, r.doc);
    }
  }
  return rows;
}

// _all_docs or _design_docs: the listing object for `q`; with `partition`, the partition's
// documents only, from its one range.
result<std::string> list_docs(ctx& c, const db_meta& db, const view_query& q, bool design,
                              const std::string* partition = nullptr) {
  all_docs_query read;
  all_docs_request& base = read.range;
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
  } else if (partition) {
    if (auto st = partition_bounds(q, *partition, base); !st) return st;
  } else {
    if (q.start_key) base.start = q.start_key->dump();
    if (q.end_key) base.end = q.end_key->dump();
  }
  if (partition) read.only_range = c.node.coord.partition_index(db, *partition);
  read.skip = q.skip;
  read.limit = q.limit;
  std::vector<json> keys;
  if (by_keys) {
    keys = keys_in_order(q);
    read.keys.emplace();
    for (const json& key : keys) {
      const bool id = key.is_string() && (!partition || partition_of(key.get<std::string>()) == *partition);
      read.keys->push_back(id ? std::optional<std::string>(key.get<std::string>()) : std::nullopt);
    }
  }
  auto listed = list_all_docs(c.node.coord, db, read);
  if (!listed) return listed.error();
  uint64_t total = listed->doc_count;
  if (design) {
    // The usual request (the whole namespace) already read every design document: count those;
    // a bounded one reads their ids once more.
    const bool whole = !by_keys && !q.start_key && !q.end_key && q.limit < 0;
    auto n = whole ? result<uint64_t>(listed->in_bounds) : design_count(c, db);
    if (!n) return n.error();
    total = *n;
  }
  bool first = true;
  const std::string rows = listing_rows(*listed, q, by_keys ? &keys : nullptr, design, first);
  auto seq = update_seq_of(c, db, q);
  if (!seq) return seq.error();
  // A `keys` query has no offset (fabric_view_all_docs sends null); rows before the start key
  // count towards it, then skip, at most total_rows (fabric_view_all_docs' FinalOffset).
  const std::string offset =
      by_keys ? "null" : std::to_string(std::min(total, listed->before + static_cast<uint64_t>(q.skip)));
  return object_text(std::to_string(total), offset, rows, !first, *seq);
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

result<view_query> parse_view_request(ctx& c) {
  view_query q;
  // As couch_mrview_http:parse_body_and_query: a POST body's options, then the query string's.
  if (c.method() == "POST") {
    auto body = c.json_object_body();
    if (!body) return body.error();
    if (auto st = apply_view_options(q, *body, "`keys` body member must be an array."); !st) return st;
  }
  if (auto st = apply_view_params(q, c.query_in_order()); !st) return st;
  return q;
}

void handle_all_docs(ctx& c, const db_meta& db, const std::string& what) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  auto q = parse_view_request(c);
  if (!q) return c.error(q.error());
  auto out = listing(c, db, what, *q);
  if (!out) return c.error(out.error());
  c.reply_raw(200, std::move(*out) + "\n");
}

void answer_queries(ctx& c, const std::function<result<std::string>(const view_query&)>& one) {
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
    auto result = one(q);
    if (!result) return c.error(result.error());
    out += (i ? ",\r\n" : "\r\n") + *result;
  }
  out += queries.empty() ? "]}\n" : "\r\n]}\n";
  c.reply_raw(200, std::move(out));
}

void handle_all_docs_queries(ctx& c, const db_meta& db, const std::string& what) {
  answer_queries(c, [&](const view_query& q) { return listing(c, db, what, q); });
}

void handle_partition_all_docs(ctx& c, const db_meta& db, const std::string& partition) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  auto q = parse_view_request(c);
  if (!q) return c.error(q.error());
  if (auto st = validate_map_query(*q); !st) return c.error(st);
  auto out = list_docs(c, db, *q, false, &partition);
  if (!out) return c.error(out.error());
  c.reply_raw(200, std::move(*out) + "\n");
}

}  // namespace settee
