// Mango (issue 32): POST /db/_find and /db/_explain, GET|POST /db/_index, DELETE
// /db/_index/ddoc/json|text/name and POST /db/_index/_bulk_delete, as CouchDB's mango_httpd
// answers them. A query runs on the JSON index the planner chose (query/mango_plan): one copy of
// each range answers its rows (actors/find_reader), merged by index position in
// actors/find_cursor; on a Mango text index (issue 54: query/mango_text, actors/find_text.cpp);
// or, with no usable index, on the special `_all_docs` index (documents in id order, each
// matched), with CouchDB's warning.
// Bookmarks are opaque: the last id answered (`_all_docs`), or each range's last position.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <tuple>

#include "actors/all_docs_reader.hpp"
#include "actors/find_cursor.hpp"
#include "actors/view_index.hpp"
#include "http/design_function.hpp"
#include "http/handlers.hpp"
#include "node/check.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "query/mango_explain.hpp"
#include "query/mango_index.hpp"
#include "query/mango_plan.hpp"
#include "query/mango_query.hpp"
#include "query/mango_text.hpp"
#include "search/search_ddoc.hpp"

namespace settee {

namespace {

// The node's _find coordination (actors/find_cursor), for this request.
find_cursor cursor(ctx& c) {
  return find_cursor(c.node.coord, *c.node.mango, c.node.search);
}

result<planned_find> plan_of(ctx& c, const db_meta& db, const std::string& partition) {
  if (auto st = c.require_json_content(); !st) return st;
  auto body = c.json_body();
  if (!body) return body.error();
  // The partition: the path's (/db/_partition/<p>/_find), or in a partitioned database the body's
  // `partition` (mango's option; an ordinary database refuses a non-empty one in parse_find).
  std::string part = partition;
  if (db.partitioned && body->is_object() && body->contains("partition") && (*body)["partition"].is_string()) {
    std::string given = (*body)["partition"].get<std::string>();
    body->erase("partition");
    if (!given.empty()) {
      if (!part.empty() && part != given)
        return status{errc::bad_request, "`partition` in the body is not the partition of the path"};
      if (auto st = validate_partition_name(given); !st) return st;
      part = given;
    }
  }
  json given_selector;  // before a partition's clause (a text index keeps to the partition itself)
  if (!part.empty() && body->is_object() && body->contains("selector")) {
    given_selector = (*body)["selector"];
    // A partition's query: its documents only (their ids begin with "p:").
    // ({} under an $and would be {"$eq":{}} once normalized: an empty selector gives way to it.)
    json only = {{"_id", {{"$beginsWith", part + ":"}}}};
    json& given = (*body)["selector"];
    given = given.is_object() && given.empty() ? only : json{{"$and", json::array({given, only})}};
  }
  auto q = parse_find(*body);
  if (!q) return q.error();
  if (!part.empty()) q->only_range = c.node.coord.partition_index(db, part);
  q->text_selector = std::move(given_selector);
  return cursor(c).plan(db, std::move(*q), part);
}

// _explain's settee extension: the index's key ranges read (none: the selector matches nothing),
// in hex, whether documents are matched again, the rows the ranges hold, a union's parts, the
// indexes weighed and those that could not serve the query, with why.
json settee_explain(ctx& c, const db_meta& db, const planned_find& planned) {
  const query_plan& plan = planned.plan;
  const find_query* q = &planned.q;
  json out = json::object();
  auto nullable = [](uint64_t rows) { return rows == UINT64_MAX ? json(nullptr) : json(rows); };
  if (!plan.rejected.empty()) {
    json rejected = json::array();
    for (const rejected_index& r : plan.rejected) rejected.push_back(json{{"index", r.index}, {"reason", r.why}});
    out["rejected"] = rejected;
  }
  if (!plan.index) return out;
  json ranges = json::array();
  for (const auto& [low, high] : plan.ranges)
    ranges.push_back(json{{"low", crypto::to_hex(reinterpret_cast<const unsigned char*>(low.data()), low.size())},
                          {"high", crypto::to_hex(reinterpret_cast<const unsigned char*>(high.data()), high.size())}});
  out["ranges"] = ranges;
  out["covered"] = plan.covered;
  if (plan.parts.empty()) {
    // Counted already when the planner weighed several indexes.
    const std::string name = plan.index->ddoc + "/" + plan.index->name;
    auto known = std::find_if(planned.estimates.begin(), planned.estimates.end(),
                              [&](const auto& e) { return e.first == name; });
    out["estimated_rows"] =
        nullable(known != planned.estimates.end() ? known->second : cursor(c).estimate(db, plan, *q));
  } else {  // a union: each part's index and ranges
    json parts = json::array();
    for (const query_plan& part : plan.parts)
      parts.push_back(json{{"index", part.index->ddoc + "/" + part.index->name}, {"ranges", part.ranges.size()}});
    out["parts"] = parts;
  }
  if (!planned.estimates.empty()) {
    json candidates = json::array();
    for (const auto& [name, rows] : planned.estimates)
      candidates.push_back(json{{"index", name}, {"estimated_rows", nullable(rows)}});
    out["candidates"] = candidates;
  }
  return out;
}

// _explain's end for a text index (mango_cursor_text:explain): the Lucene query, the partition,
// the sort keys ("relevance" without a sort).
status explain_text(const planned_find& planned, json& out) {
  const find_query& q = planned.q;
  const json& normal = planned.text_selector;
  auto lucene = text_query_of(normal);
  if (!lucene) return lucene.error();
  auto keys = text_sort(q.sort, normal);
  if (!keys) return keys.error();
  out["query"] = *lucene;
  out["partition"] = planned.partition.empty() ? json(nullptr) : json(planned.partition);
  out["sort"] = keys->empty() ? json("relevance") : json(*keys);
  return {};
}

}  // namespace

void handle_find(ctx& c, const db_meta& db, const std::string& partition) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto plan = plan_of(c, db, partition);
  if (!plan) return c.error(plan.error());
  const find_query* q = &plan->q;
  const auto started = mono::now();
  auto found = cursor(c).run(db, *plan);
  if (!found) return c.error(found.error());
  SETTEE_CHECK(found->docs.size() <= q->limit);  // the cursor applied the limit
  size_t bytes = 256;
  for (const std::string& d : found->docs) bytes += d.size() + 2;
  std::string body;
  body.reserve(bytes);
  body += "{\"docs\":[";
  for (size_t i = 0; i < found->docs.size(); ++i) body.append(i ? ",\n" : "\n").append(found->docs[i]);
  const std::string bookmark = !found->bookmark.empty() ? found->bookmark : q->bookmark.value_or("nil");
  body += "\n],\n\"bookmark\":" + json(bookmark).dump();
  std::vector<std::string> warnings = plan->plan.warnings;
  // mango_cursor:index_scan_warning: many documents examined per result returned.
  const int64_t threshold = c.node.cfg.get_int("mango", "index_scan_warning_threshold", 10);
  const uint64_t returned = std::max<uint64_t>(found->docs.size(), 1);  // none returned: the ratio is the count
  auto& stats = metrics::node();                                        // CouchDB's mango.* statistics
  ++stats.mango_queries;
  if (!plan->plan.index && !plan->text) ++stats.mango_unindexed_queries;
  if (!q->use_index.empty() && std::any_of(warnings.begin(), warnings.end(), [](const std::string& w) {
        return w.find(" was not used because ") != std::string::npos;
      }))
    ++stats.mango_invalid_index;
  stats.mango_docs_examined += found->docs_examined;
  stats.mango_keys_examined += found->keys_examined;
  stats.mango_results_returned += found->docs.size();
  if (threshold > 0 && found->docs_examined > static_cast<uint64_t>(threshold) * returned) {
    ++stats.mango_too_many_docs_scanned;
    warnings.push_back(
        "The number of documents examined is high in proportion to the number of results returned. Consider adding "
        "a more specific index to improve this.");
  }
  if (!warnings.empty()) {
    std::string warning;
    for (const std::string& w : warnings) warning += (warning.empty() ? "" : "\n") + w;
    body += ",\n\"warning\":" + json(warning).dump();
  }
  if (q->execution_stats) {
    const double ms = std::chrono::duration<double, std::milli>(mono::now() - started).count();
    json stats = {{"total_keys_examined", found->keys_examined},
                  {"total_docs_examined", found->docs_examined},
                  {"total_quorum_docs_examined", 0},
                  {"results_returned", found->docs.size()},
                  {"execution_time_ms", ms}};
    body += ",\n\"execution_stats\":" + stats.dump();
  }
  c.reply_raw(200, body + "}\n");
}

void handle_explain(ctx& c, const db_meta& db, const std::string& partition) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto planned = plan_of(c, db, partition);
  if (!planned) return c.error(planned.error());
  const find_query* q = &planned->q;
  const query_plan& plan = planned->plan;
  json sort = json::object();
  for (const auto& [field, desc] : q->sort) sort[field] = desc ? "desc" : "asc";
  json fields = q->fields;  // all fields: [] (mango_cursor:explain)
  json use_index = q->use_index;
  json opts = {{"use_index", use_index},
               {"bookmark", q->bookmark ? json(*q->bookmark) : json("nil")},
               {"limit", q->limit},
               {"skip", q->skip},
               {"sort", sort},
               {"fields", fields},
               {"partition", planned->partition},
               {"r", q->r},
               {"conflicts", q->conflicts},
               {"stale", q->stale == "ok" ? json("ok") : json(false)},
               {"update", q->update},
               {"stable", q->stable},
               {"execution_stats", q->execution_stats},
               {"allow_fallback", q->allow_fallback}};
  const json selector = normalize_selector(q->selector);
  json index = planned->text ? index_json(*planned->text)
               : plan.index  ? index_json(*plan.index)
                             : all_docs_index_json();
  json out = {{"dbname", db.name},
              {"index", std::move(index)},
              {"partitioned", db.partitioned},
              {"selector", selector},
              {"opts", opts},
              {"limit", q->limit},
              {"skip", q->skip},
              {"fields", fields},
              {"index_candidates", index_candidates(*q, *planned->indexes, plan)},
              {"selector_hints", selector_hints(selector)}};
  if (planned->text) {
    if (auto st = explain_text(*planned, out); !st) return c.error(st);
    return c.reply(200, out);
  }
  json start_key = nullptr, end_key = "<MAX>";
  if (plan.index) {
    start_key = plan.start_key;
    end_key = plan.end_key;
    if (plan.descending) std::swap(start_key, end_key);
  }
  const bool covering = plan_covers(*q, plan);
  out["mrargs"] = {{"include_docs", !covering},
                   {"view_type", "map"},
                   {"reduce", false},
                   {"partition", planned->partition.empty() ? json(nullptr) : json(planned->partition)},
                   {"start_key", start_key},
                   {"end_key", end_key},
                   {"direction", plan.descending ? "rev" : "fwd"},
                   {"stable", q->stable},
                   {"update", q->update},
                   {"conflicts", "undefined"}};
  out["covering"] = covering;
  json extension = settee_explain(c, db, *planned);
  if (!extension.empty()) out["settee"] = std::move(extension);
  c.reply(200, out);
}

namespace {

// The design document `id` as it is now (null when missing or deleted), and its revision.
struct ddoc_state {
  json doc;
  std::string rev;
};
result<ddoc_state> ddoc_now(ctx& c, const db_meta& db, const std::string& id) {
  auto d = open_design_doc(c, db, id);
  if (!d) {
    if (d.error().code == errc::not_found) return ddoc_state{json(), ""};
    return d.error();
  }
  json doc = d->doc;
  doc["_id"] = id;
  return ddoc_state{std::move(doc), d->rev.str()};
}

// Writes design document `doc` (over revision `rev`, "" for a new one; `deleted` removes it).
status save_ddoc(ctx& c, const db_meta& db, json doc, const std::string& id, const std::string& rev, bool deleted) {
  if (!rev.empty()) doc["_rev"] = rev;
  if (deleted) doc["_deleted"] = true;
  if (auto st = authorize_doc_write(c, db, id, &doc); !st) return st;
  auto u = to_doc_update(db, std::move(doc), id, true, nullptr, c.node.attachment_policy, c.node.js, c.node.cluster);
  if (!u) return u.error();
  auto written = write_one(c, db, std::move(*u));
  if (!written) return written.error();
  const doc_result& w = written->results.front();
  if (w.st.code == errc::conflict)
    return {errc::mango_error_saving_ddoc, "Encountered a conflict while saving the design document."};
  return w.st;
}

// The copies drop the indexes no design document defines any more (as _view_cleanup does).
void drop_unused(ctx& c, const db_meta& db) {
  auto listing = list_design_docs(c.node.coord, db, true);
  if (!listing) return;
  std::vector<std::string> keep = kept_signatures(db, *listing);
  on_every_holder(c, db, "_index cleanup", [&](cluster_member& m) { return m.view_cleanup(db.name, keep); });
}

void create_index(ctx& c, const db_meta& db) {
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto body = c.json_body();
  if (!body) return c.error(body.error());
  auto req = parse_index_request(*body);
  if (!req) return c.error(req.error());
  const query_index& ix = req->index;
  auto now = ddoc_now(c, db, ix.ddoc);
  if (!now) return c.error(now.error());
  if (now->doc.is_object()) {
    const json& lang = member(now->doc, "language");
    if (lang != "query")
      return c.error(errc::mango_invalid_ddoc_lang, "Existing design doc has an invalid language: " +
                                                        erlang_w(lang.is_null() ? json("javascript") : lang));
  }
  bool changed = false;
  json doc = !ix.text.is_null() ? with_text_index(now->doc, ix.ddoc, ix.name, ix.text, changed)
                                : with_index(now->doc, ix, changed);
  if (changed) {
    if (auto st = save_ddoc(c, db, doc, ix.ddoc, now->rev, false); !st) return c.error(st);
  }
  if (!ix.text.is_null())  // built by its first query (as a _search index)
    return c.reply(200, json{{"result", changed ? "created" : "exists"}, {"id", ix.ddoc}, {"name", ix.name}});
  // Every copy starts to keep the index now (built in the background), not at the first query.
  mango_copy_request touch;
  touch.signature = ix.def.signature();
  touch.definition = ix.def.definition();
  touch.limit = 0;
  if (auto pages = c.node.mango->pages(db, touch, {}); !pages)
    log::warning("a new JSON index of " + db.name + " waits for its first query: " + pages.error().reason);
  c.reply(200, json{{"result", changed ? "created" : "exists"}, {"id", ix.ddoc}, {"name", ix.name}});
}

// Removes index `name` (of `type`, "json" or "text") of design document `ddoc_id`; the design
// document goes with its last one.
status remove_index(ctx& c, const db_meta& db, const std::string& ddoc_id, const std::string& type,
                    const std::string& name) {
  auto now = ddoc_now(c, db, ddoc_id);
  if (!now) return now.error();
  if (!now->doc.is_object() || member(now->doc, "language") != "query") return {errc::not_found, "missing"};
  bool empty = false;
  auto doc = without_index(now->doc, type, name, empty);
  if (!doc) return {errc::not_found, "missing"};
  return save_ddoc(c, db, *doc, ddoc_id, now->rev, empty);
}

void list_indexes(ctx& c, const db_meta& db) {
  // As mango_httpd: limit (>= 1) and skip (>= 0) page the list; anything else is its error, a 400
  // here (CouchDB answers 500 for what is bad input).
  int64_t limit = INT64_MAX, skip = 0;
  for (auto [key, out, least] : {std::tuple<const char*, int64_t*, int64_t>{"limit", &limit, 1}, {"skip", &skip, 0}}) {
    if (!c.has(key)) continue;
    const std::string v = c.param(key);
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < least)
      return c.error(errc::mango_invalid_list_params, "Index parameter ranges: limit > 1, skip > 0");
    *out = n;
  }
  auto indexes = cursor(c).mango_indexes(db);
  if (!indexes) return c.error(indexes.error());
  json all = json::array({all_docs_index_json()});
  for (const query_index& ix : *indexes) all.push_back(index_json(ix));
  json page = json::array();
  for (size_t i = static_cast<size_t>(std::min<int64_t>(skip, static_cast<int64_t>(all.size())));
       i < all.size() && static_cast<int64_t>(page.size()) < limit; ++i)
    page.push_back(all[i]);
  c.reply(200, json{{"total_rows", all.size()}, {"indexes", page}});
}

void bulk_delete(ctx& c, const db_meta& db) {
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto body = c.json_body();
  if (!body) return c.error(body.error());
  if (!body->is_object()) return c.error(errc::bad_request, "Request body must be a JSON object");
  const json& ids = member(*body, "docids");
  if (!ids.is_array()) return c.error(errc::mango_missing_key, "Missing required key: docids");
  for (const json& id : ids)
    if (!id.is_string())
      return c.error(errc::mango_invalid_bulk_docs,
                     "Bulk Delete requires an array of non-null docids. Docids: " + erlang_w(ids));
  auto indexes = cursor(c).mango_indexes(db);
  if (!indexes) return c.error(indexes.error());
  json success = json::array(), fail = json::array();
  for (const json& given : ids) {
    const std::string id = given.get<std::string>();
    const std::string ddoc_id = id.rfind("_design/", 0) == 0 ? id : "_design/" + id;
    bool any = false;
    status st;
    for (const query_index& ix : *indexes) {
      if (ix.ddoc != ddoc_id || !st) continue;
      any = true;
      st = remove_index(c, db, ddoc_id, ix.text.is_null() ? "json" : "text", ix.name);
    }
    if (any && st) {
      success.push_back(json{{"id", id}, {"ok", true}});
    } else {
      fail.push_back(json{{"id", id}, {"error", any ? st.reason : "Index not found"}});
    }
  }
  drop_unused(c, db);
  c.reply(200, json{{"success", success}, {"fail", fail}});
}

}  // namespace

void handle_index(ctx& c, const db_meta& db) {
  // /db/_index, /db/_index/_bulk_delete, /db/_index/[_design/]<ddoc>/json/<name>,
  // /db/_index/<_design%2Fddoc>/json/<name>.
  if (c.path.size() == 2) {
    if (c.method() == "GET") return list_indexes(c, db);
    if (c.method() == "POST") return create_index(c, db);
    return c.method_not_allowed("GET,POST");
  }
  if (c.path.size() == 3 && c.path[2] == "_bulk_delete") {
    if (c.method() != "POST") return c.method_not_allowed("POST");
    return bulk_delete(c, db);
  }
  std::vector<std::string> rest(c.path.begin() + 2, c.path.end());
  if (!rest.empty() && rest[0] == "_design") rest.erase(rest.begin());
  if (rest.size() != 3 || (rest[1] != "json" && rest[1] != "text")) return c.error(errc::not_found, "missing");
  if (c.method() != "DELETE") return c.method_not_allowed("DELETE");
  // The design document's id may come whole, its slash encoded (pouchdb-find's deleteIndex).
  const std::string ddoc_id = rest[0].rfind("_design/", 0) == 0 ? rest[0] : "_design/" + rest[0];
  if (auto st = remove_index(c, db, ddoc_id, rest[1], rest[2]); !st) return c.error(st);
  drop_unused(c, db);
  c.reply(200, json{{"ok", true}});
}

std::vector<std::string> kept_signatures(const db_meta& db, const all_docs_listing& design_docs) {
  std::vector<std::string> keep;
  for (const auto& row : design_docs.rows) {
    if (row.doc.deleted || row.doc.doc.empty()) continue;
    json d = parse_json(row.doc.doc).value_or(json());
    if (!d.is_object()) continue;
    // As the readers name them: a partitioned database's views and search indexes have
    // signatures of their own.
    if (member(d, "views").is_object()) keep.push_back(views_of(db.key(), db.partitioned, row.doc.id, "", d).signature);
    for (const query_index& ix : indexes_of(row.doc.id, d)) keep.push_back(ix.def.signature());
    for (search_api api : {search_api::nouveau, search_api::clouseau})
      for (search_index_def& s : search_indexes_of(api, row.doc.id, d)) {
        partition_index(s, db.partitioned, d);
        keep.push_back(s.signature);
      }
  }
  return keep;
}

}  // namespace settee
