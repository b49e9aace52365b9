// Full-text search over HTTP (issue 54), answered by the node's own indexes
// (actors/search_reader): Nouveau's API (CouchDB 3.4+, nouveau_httpd): GET|POST
// /db/_design/d/_nouveau/idx, GET .../_nouveau_info/idx, POST /db/_nouveau_cleanup,
// POST /_nouveau_analyze; and Clouseau's (dreyfus_httpd, Cloudant's _search): GET|POST
// /db/_design/d/_search/idx, GET .../_search_info/idx and .../_search_disk_size/idx,
// POST /db/_search_cleanup, GET|POST /_search_analyze.
#include "actors/search_reader.hpp"

#include <algorithm>
#include <limits>

#include "http/design_function.hpp"
#include "http/handlers.hpp"
#include "node/clock.hpp"
#include "search/search_query.hpp"

namespace settee {

namespace {

// The design document's search index `name` of `api`, and the document it lives in.
result<search_design> design_of(ctx& c, const db_meta& db, search_api api, const std::string& ddoc_name,
                                const std::string& name) {
  const std::string ddoc_id = "_design/" + ddoc_name;
  auto d = open_design_doc(c, db, ddoc_id);
  if (!d) return d.error();
  auto def = search_index_of(api, ddoc_id, d->doc, name);
  if (!def) return def.error();
  partition_index(*def, db.partitioned, d->doc);
  if (!def->mango.is_null()) {  // a Mango text index: the node indexes it itself
    if (!c.node.search) return status{errc::not_implemented, "full-text search is not available on this node"};
    return search_design{ddoc_id, d->rev.str(), d->text, std::move(*def)};
  }
  if (d->doc.value("language", std::string("javascript")) != "javascript")
    return status{errc::not_implemented, "search indexes of language " + d->doc["language"].dump() + " are not run"};
  if (!c.node.search || !c.node.js) return status{errc::not_implemented, "JavaScript is not available on this node"};
  return search_design{ddoc_id, d->rev.str(), d->text, std::move(*def)};
}

// The documents of `hits` (include_docs): each one's winning revision, null when gone since.
result<std::vector<json>> docs_of(ctx& c, const db_meta& db, const std::vector<text_hit>& hits) {
  std::vector<std::string> ids;
  for (const text_hit& h : hits) ids.push_back(h.id);
  std::vector<json> out(hits.size());
  if (ids.empty()) return out;
  auto docs = c.node.coord.open_docs(db, ids, doc_bodies::leaves);
  if (!docs) return docs.error();
  for (size_t i = 0; i < docs->size(); ++i) {
    const doc_copy& d = (*docs)[i];
    if (!d.found || d.info.tree.winner_deleted()) continue;
    out[i] = parse_json(render_rev(d, d.info.tree.winner(), render_options{}).value_or("null")).value_or(json());
  }
  return out;
}

// A hit's stored fields as Nouveau shows them (simplify_fields): name -> its value, or its values
// when it has several.
json fields_json(const text_hit& h) {
  std::map<std::string, std::vector<json>> values;
  for (const auto& s : h.stored) values[s.name].push_back(s.is_number ? json(s.number) : json(s.text));
  json out = json::object();
  for (auto& [name, v] : values) out[name] = v.size() == 1 ? std::move(v[0]) : json(std::move(v));
  return out;
}

// A query's partition (the path's /db/_partition/<p>/..., or `partition=`; both: they must agree)
// checked against the index as dreyfus_httpd checks it: a partition of an index that is not
// partitioned is refused; Clouseau's partitioned index wants one (Nouveau's answers over every
// partition without), and keeps facets and groups to whole databases.
status check_partition(const search_design& sd, search_params& params, const std::string& path_partition) {
  if (!path_partition.empty()) {
    if (!params.partition.empty() && params.partition != path_partition)
      return {errc::bad_request, "Conflicting value for `partition` in query string"};
    params.partition = path_partition;
  }
  if (params.partition.empty()) {
    if (sd.def.partitioned && sd.def.api == search_api::clouseau)
      return {errc::bad_request, "`partition` parameter is mandatory for queries to this index."};
    return {};
  }
  if (!sd.def.partitioned) return {errc::bad_request, "`partition` not supported on this index"};
  if (auto st = validate_partition_name(params.partition); !st) return st;
  if (sd.def.api == search_api::clouseau &&
      (!params.query.drilldown.empty() || !params.query.ranges.empty() || !params.group_field.empty()))
    return {
        errc::bad_request,
        "`partition` and any of `drilldown`, `ranges`, `group_field`, `group_sort`, `group_limit` or `group_by` are "
        "incompatible"};
  return {};
}

}  // namespace

void handle_nouveau(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                    const std::string& partition) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,POST");
  result<json> body = json();
  if (c.method() == "POST") {
    if (auto st = c.require_json_content(); !st) return c.error(st);
    body = c.json_object_body();
    if (!body) return c.error(body.error());
  }
  std::map<std::string, std::string> qs;
  for (auto& [k, v] : c.query_in_order()) qs.emplace(k, v);
  auto params = nouveau_params(qs, c.method() == "POST" ? &*body : nullptr);
  if (!params) return c.error(params.error());
  auto sd = design_of(c, db, search_api::nouveau, ddoc_name, index);
  if (!sd) return c.error(sd.error());
  if (auto st = check_partition(*sd, *params, partition); !st) return c.error(st);
  const auto started = mono::now();
  auto page = c.node.search->query(db, *sd, params->query, params->update, params->partition);
  if (!page) return c.error(page.error());
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(mono::now() - started).count();
  std::vector<json> docs;
  if (params->include_docs) {
    auto got = docs_of(c, db, page->hits);
    if (!got) return c.error(got.error());
    docs = std::move(*got);
  }
  json hits = json::array();
  for (size_t i = 0; i < page->hits.size(); ++i) {
    const text_hit& h = page->hits[i];
    json hit = json::object();  // its members in the order CouchDB's (jiffy's sorted map) gives them
    if (params->include_docs) hit["doc"] = docs[i];
    hit["fields"] = fields_json(h);
    hit["id"] = h.id;
    hit["order"] = order_json(h.order, params->query.sort);
    hits.push_back(std::move(hit));
  }
  // The bookmark after the last hit; an empty page keeps the one given (Nouveau's "same bookmark").
  std::optional<text_order> last = params->query.after;
  if (!page->hits.empty()) last = page->hits.back().order;
  json out{{"bookmark", pack_bookmark(last, params->query.sort)},
           {"counts", params->query.counts.empty() ? json() : json(page->counts)},
           {"hits", std::move(hits)},
           {"ranges", params->query.ranges.empty() ? json() : json(page->ranges)},
           {"total_hits", page->total_hits},
           {"total_hits_relation", "EQUAL_TO"},
           {"update_latency", params->update ? took : 0}};
  c.reply(200, out);
}

// Clouseau's rows of `hits`: id, order (plain values), fields (include_fields' only), highlights
// when asked for, doc with include_docs.
result<json> clouseau_rows(ctx& c, const db_meta& db, const search_params& params, const std::vector<text_hit>& hits) {
  std::vector<json> docs;
  if (params.include_docs) {
    auto got = docs_of(c, db, hits);
    if (!got) return got.error();
    docs = std::move(*got);
  }
  json rows = json::array();
  for (size_t i = 0; i < hits.size(); ++i) {
    const text_hit& h = hits[i];
    json order = json::array();
    for (const order_value& v : h.order)
      order.push_back(v.type == order_value::kind::number ? json(v.number)
                      : v.type == order_value::kind::text ? json(v.text)
                                                          : json());
    json fields = fields_json(h);
    if (params.include_fields) {
      json kept = json::object();
      for (const std::string& f : *params.include_fields)
        if (fields.contains(f)) kept[f] = fields[f];
      fields = std::move(kept);
    }
    json row{{"id", h.id}, {"order", std::move(order)}, {"fields", std::move(fields)}};
    if (!params.query.highlight_fields.empty()) {
      json hl = json::object();
      for (const auto& [field, fragments] : h.highlights) hl[field] = fragments;
      row["highlights"] = std::move(hl);
    }
    if (params.include_docs) row["doc"] = docs[i];
    rows.push_back(std::move(row));
  }
  return rows;
}

// Every match of `params`'s query, in the order of `sort` then the group field, each hit's group
// value at order[group_at] (the field's value, missing: none).
result<text_page> all_by(ctx& c, const db_meta& db, const search_design& sd, const search_params& params,
                         const std::vector<std::string>& sort, size_t& group_at) {
  text_query q = params.query;
  q.sort = sort.empty() ? std::vector<std::string>{"-<score>"} : sort;
  q.sort.push_back(params.group_field);
  group_at = q.sort.size() - 1;
  q.limit = std::numeric_limits<size_t>::max();
  q.after.reset();
  q.counts.clear();
  q.ranges.clear();
  return c.node.search->query(db, sd, q, params.update);
}

// A grouped _search (dreyfus_fabric_group1 and group2): the groups in order of their best hit
// under group_sort, `limit` of them, each with its first group_limit hits under sort.
void grouped_search(ctx& c, const db_meta& db, const search_design& sd, const search_params& params) {
  size_t at = 0;
  auto by_group_sort = all_by(c, db, sd, params, params.group_sort, at);
  if (!by_group_sort) return c.error(by_group_sort.error());
  auto value_of = [&at](const text_hit& h) -> json {
    return at < h.order.size() && h.order[at].type == order_value::kind::text ? json(h.order[at].text) : json();
  };
  std::vector<json> groups;  // in order, at most `limit`
  for (const text_hit& h : by_group_sort->hits) {
    json v = value_of(h);
    if (std::find(groups.begin(), groups.end(), v) == groups.end()) groups.push_back(std::move(v));
  }
  if (groups.size() > params.query.limit) groups.resize(params.query.limit);
  auto by_sort = all_by(c, db, sd, params, params.query.sort, at);
  if (!by_sort) return c.error(by_sort.error());
  std::vector<std::vector<text_hit>> members(groups.size());
  std::vector<uint64_t> totals(groups.size(), 0);
  for (const text_hit& h : by_sort->hits) {
    auto g = std::find(groups.begin(), groups.end(), value_of(h));
    if (g == groups.end()) continue;
    const size_t k = static_cast<size_t>(g - groups.begin());
    ++totals[k];
    if (members[k].size() < params.group_limit) members[k].push_back(h);
  }
  const char* total_key = params.group_by ? "total_hits" : "total_rows";
  json out_groups = json::array();
  uint64_t grouped = 0;
  for (size_t k = 0; k < groups.size(); ++k) {
    auto rows = clouseau_rows(c, db, params, members[k]);
    if (!rows) return c.error(rows.error());
    grouped += totals[k];
    out_groups.push_back(json{{"by", groups[k]}, {total_key, totals[k]}, {params.group_by ? "hits" : "rows", *rows}});
  }
  json out{{total_key, by_sort->total_hits}};
  if (params.group_by) out["total_grouped_hits"] = grouped;
  out["groups"] = std::move(out_groups);
  c.reply(200, out);
}

// The query of a _search request, with Clouseau's answer: total_rows, bookmark, rows (id, order,
// fields, highlights, doc), then counts and ranges when asked for.
void handle_search(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                   const std::string& partition) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,POST");
  result<json> body = json();
  if (c.method() == "POST") {
    body = c.json_object_body();
    if (!body) return c.error(body.error());
  }
  auto params = clouseau_params(c.query_in_order(), c.method() == "POST" ? &*body : nullptr);
  if (!params) return c.error(params.error());
  auto sd = design_of(c, db, search_api::clouseau, ddoc_name, index);
  if (!sd) return c.error(sd.error());
  if (auto st = check_partition(*sd, *params, partition); !st) return c.error(st);
  if (!params->group_field.empty()) return grouped_search(c, db, *sd, *params);
  auto page = c.node.search->query(db, *sd, params->query, params->update, params->partition);
  if (!page) return c.error(page.error());
  auto rows = clouseau_rows(c, db, *params, page->hits);
  if (!rows) return c.error(rows.error());
  std::optional<text_order> last = params->query.after;
  if (!page->hits.empty()) last = page->hits.back().order;
  json out{{"total_rows", page->total_hits}, {"bookmark", pack_bookmark(last, params->query.sort)}, {"rows", *rows}};
  if (!params->query.counts.empty()) out["counts"] = page->counts;
  if (!params->query.ranges.empty()) out["ranges"] = page->ranges;
  c.reply(200, out);
}

// GET /db/_design/d/_search_info/idx (and _search_disk_size/idx: its disk_size only).
void handle_search_info(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index,
                        bool disk_size_only) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  auto sd = design_of(c, db, search_api::clouseau, ddoc_name, index);
  if (!sd) return c.error(sd.error());
  auto info = c.node.search->info(db, *sd);
  if (!info) return c.error(info.error());
  json idx = disk_size_only
                 ? json{{"disk_size", info->disk_size}}
                 : json{{"committed_seq", info->update_seq}, {"pending_seq", info->update_seq + info->pending},
                        {"doc_count", info->num_docs},       {"doc_del_count", 0},
                        {"disk_size", info->disk_size},      {"signature", sd->def.signature.substr(0, 32)}};
  c.reply(200, json{{"name", sd->ddoc_id + "/" + index}, {"search_index", idx}});
}

// GET|POST /_search_analyze: Clouseau's analyze (an analyzer by name, standard with stop words).
void handle_search_analyze(ctx& c) {
  json analyzer, text;
  if (c.method() == "GET") {
    if (c.has("analyzer")) analyzer = c.param("analyzer");
    if (c.has("text")) text = c.param("text");
  } else if (c.method() == "POST") {
    if (auto st = c.require_json_content(); !st) return c.error(st);
    auto body = c.json_object_body();
    if (!body) return c.error(body.error());
    analyzer = member(*body, "analyzer");
    text = member(*body, "text");
  } else {
    return c.method_not_allowed("GET,POST");
  }
  if (analyzer.is_null()) return c.error(errc::bad_request, "analyzer parameter is mandatory");
  if (analyzer.is_object() && analyzer.contains("name")) analyzer = analyzer["name"];
  if (!analyzer.is_string()) return c.error(errc::bad_request, "analyzer parameter must be a string or an object");
  if (text.is_null()) return c.error(errc::bad_request, "text parameter is mandatory");
  if (!text.is_string()) return c.error(errc::bad_request, "text parameter must be a string");
  auto tokens = text_analyze(clouseau_analyzer(analyzer.get<std::string>()), text.get<std::string>());
  if (!tokens) return c.error(tokens.error());
  c.reply(200, json{{"tokens", *tokens}});
}

void handle_nouveau_info(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& index) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  auto sd = design_of(c, db, search_api::nouveau, ddoc_name, index);
  if (!sd) return c.error(sd.error());
  auto info = c.node.search->info(db, *sd);
  if (!info) return c.error(info.error());
  c.reply(200, json{{"name", sd->ddoc_id + "/" + index},
                    {"search_index",
                     {{"update_seq", info->update_seq},
                      {"purge_seq", info->purge_seq},
                      {"num_docs", info->num_docs},
                      {"disk_size", info->disk_size},
                      {"signature", sd->def.signature.substr(0, 32)}}}});
}

// POST /db/_nouveau_cleanup: as _view_cleanup (which removes stale search indexes too).
void handle_search_cleanup(ctx& c, const db_meta& db) {
  handle_view_cleanup(c, db);
}

// POST /_nouveau_analyze {"analyzer": name, "text": text}: the terms the analyzer makes.
void handle_nouveau_analyze(ctx& c) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto body = c.json_object_body();
  if (!body) return c.error(body.error());
  const json analyzer = member(*body, "analyzer"), text = member(*body, "text");
  if (!analyzer.is_string() || !text.is_string() || analyzer.get<std::string>().empty() ||
      text.get<std::string>().empty())
    return c.error(errc::bad_request, "'text' and 'analyzer' fields must be non-empty strings");
  auto tokens = text_analyze(analyzer.get<std::string>(), text.get<std::string>());
  if (!tokens) return c.error(tokens.error());
  c.reply(200, json{{"tokens", *tokens}});
}

}  // namespace settee
