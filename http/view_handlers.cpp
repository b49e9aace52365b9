// GET|POST /db/_design/{ddoc}/_view/{view} (issue 31): the parameters parsed as
// couch_mrview_http does (query/view_query), the rows read through actors/view_reader and written
// as couch_mrview_http's view response, reduced when the view has a reduce (a built-in natively,
// actors/view_reduce; JavaScript on the workers, actors/js_reduce); POST .../queries runs several.
#include "actors/doc_render.hpp"
#include "actors/view_reader.hpp"
#include "http/design_function.hpp"
#include "http/handlers.hpp"
#include "node/collation.hpp"
#include "node/metrics.hpp"
#include "query/view_query.hpp"

namespace settee {
namespace {

view_bound bound_of(const std::optional<json>& key, const std::optional<std::string>& doc_id, bool inclusive) {
  view_bound b;
  if (!key) return b;
  b.set = true;
  b.sort_key = collation::sort_key(*key);
  b.doc_id = doc_id;
  b.inclusive = inclusive;
  return b;
}

// The rows' documents (include_docs): the row's own, or the one its value links by `_id`, as
// couch_mrview's include_docs; null when missing or deleted.
result<std::vector<std::string>> docs_of(ctx& c, const db_meta& db, const std::vector<view_row>& rows,
                                         const view_query& q) {
  std::vector<std::string> ids;
  for (const auto& row : rows) {
    std::string id = row.id;
    if (row.value_json.size() && row.value_json[0] == '{') {
      json v = json::parse(row.value_json, nullptr, false);
      if (v.is_object() && v.contains("_id") && v["_id"].is_string()) id = v["_id"].get<std::string>();
    }
    ids.push_back(std::move(id));
  }
  std::vector<std::string> out(rows.size(), "null");
  if (ids.empty()) return out;
  auto docs = c.node.coord.open_docs(db, ids, doc_bodies::leaves);
  if (!docs) return docs.error();
  render_options opts;
  opts.conflicts = q.conflicts;
  opts.attachments = q.attachments;  // inline, as couch_mrview's doc_row with its doc_options
  opts.att_encoding_info = q.att_encoding_info;
  attachments::blob_bytes blobs;
  for (const doc_copy& d : *docs) {
    if (!q.attachments || !d.found || d.info.tree.winner_deleted()) continue;
    if (auto st = fetch_inline_blobs(c, db, d, {d.info.tree.winner()}, opts, blobs); !st) return st;
  }
  opts.blobs = &blobs;
  for (size_t i = 0; i < docs->size(); ++i) {
    const doc_copy& d = (*docs)[i];
    if (!d.found || d.info.tree.winner_deleted()) continue;
    out[i] = render_rev(d, d.info.tree.winner(), opts).value_or("null");
  }
  return out;
}

// couch_mrview_http's reduce response: rows of key and value only.
std::string render_reduced(const view_answer& answer, const std::optional<std::string>& update_seq) {
  std::string out = "{" + (update_seq ? "\"update_seq\":" + quote(*update_seq) + "," : std::string()) + "\"rows\":[";
  for (size_t i = 0; i < answer.rows.size(); ++i)
    out += (i ? ",\n" : "\n") + std::string("{\"key\":") + answer.rows[i].key_json +
           ",\"value\":" + answer.rows[i].value_json + "}";
  return out + "\n]}\n";
}

result<std::string> render_rows(ctx& c, const db_meta& db, const view_answer& answer, const view_query& q,
                                const std::optional<std::string>& update_seq) {
  std::vector<std::string> docs;
  if (q.include_docs) {
    auto got = docs_of(c, db, answer.rows, q);
    if (!got) return got.error();
    docs = std::move(*got);
  }
  std::string out = "{\"total_rows\":" + std::to_string(answer.total_rows) +
                    ",\"offset\":" + std::to_string(answer.offset) +
                    (update_seq ? ",\"update_seq\":" + quote(*update_seq) : std::string()) + ",\"rows\":[";
  for (size_t i = 0; i < answer.rows.size(); ++i) {
    const view_row& row = answer.rows[i];
    out += (i ? ",\n" : "\n") + std::string("{\"id\":") + quote(row.id) + ",\"key\":" + row.key_json +
           ",\"value\":" + row.value_json + (q.include_docs ? ",\"doc\":" + docs[i] : "") + "}";
  }
  return out + "\n]}\n";
}

// The reduce a query runs: none (nullopt: a map query, checked as one), the view's built-in, or
// (builtin_reduce::none) its JavaScript function.
result<std::optional<builtin_reduce>> reduce_of(const json& view, const view_query& q) {
  const json& source = member(view, "reduce");
  if (!source.is_string() || !q.reduce.value_or(true)) {
    view_query as_map = q;
    if (source.is_string()) as_map.reduce.reset();  // reduce=false on a view that has one
    if (auto st = validate_map_query(as_map); !st) return st;
    return std::optional<builtin_reduce>();
  }
  auto b = builtin_of(source.get<std::string>());
  if (!b) return b.error();
  if (auto st = validate_reduce_query(q); !st) return st;
  return std::optional<builtin_reduce>(*b);
}

// One view query's answer, as couch_mrview_http renders it.
result<std::string> view_result(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& view_name,
                                const view_query& q, const std::string& partition) {
  const std::string ddoc_id = "_design/" + ddoc_name;
  auto d = open_design_doc(c, db, ddoc_id);
  if (!d) return d.error();
  const json& ddoc = d->doc;
  const json& views = member(ddoc, "views");
  if (!views.is_object() || !views.contains(view_name) || !views[view_name].is_object() ||
      !views[view_name].contains("map"))
    return status{errc::not_found, "missing_named_view"};
  if (ddoc.value("language", std::string("javascript")) != "javascript")
    return status{errc::not_implemented, "views of language " + ddoc["language"].dump() + " are not run yet"};
  if (!c.node.js || !c.node.views) return status{errc::not_implemented, "JavaScript is not available on this node"};
  auto how = reduce_of(views[view_name], q);
  if (!how) return how.error();

  const design_views dv = views_of(db.key(), db.partitioned, ddoc_id, d->rev.str(), ddoc);
  // couch_mrview's rules: a partitioned view answers partition queries only, a global one none.
  if (dv.partitioned && partition.empty())
    return status{errc::query_parse_error, "`partition` parameter is mandatory for queries to this view."};
  if (!dv.partitioned && !partition.empty())
    return status{errc::query_parse_error, "`partition` parameter is not supported in this design doc"};
  view_request r;
  r.partition = partition;
  r.view = static_cast<uint32_t>(std::find(dv.names.begin(), dv.names.end(), view_name) - dv.names.begin());
  r.descending = q.descending;
  // startkey is where the scan starts: the low end ascending, the high end descending.
  view_bound start = bound_of(q.start_key, q.start_key_docid, true);
  view_bound end = bound_of(q.end_key, q.end_key_docid, q.inclusive_end);
  r.low = q.descending ? end : start;
  r.high = q.descending ? start : end;
  r.skip = static_cast<uint64_t>(q.skip);
  if (q.limit >= 0) r.limit = static_cast<uint64_t>(q.limit);
  r.update = q.update != "false" && q.update != "lazy";
  r.lazy = q.update == "lazy";
  r.reduce = how->has_value();
  r.builtin = how->value_or(builtin_reduce::none);
  if (q.keys) r.keys = q.keys->get<std::vector<json>>();
  r.group_level = q.group == true && !q.group_level ? view_request::exact : q.group_level.value_or(0);
  auto answer = c.node.views->query(db, dv, r);
  if (!answer) return answer.error();
  ++metrics::node().view_queries;
  std::optional<std::string> update_seq;
  if (q.update_seq) {  // the seqs the indexes answered from (none updated since: update=false)
    auto token = c.node.views->update_seq(db, dv);
    if (!token) return token.error();
    update_seq = std::move(*token);
  }
  if (r.reduce) return render_reduced(*answer, update_seq);
  return render_rows(c, db, *answer, q, update_seq);
}

}  // namespace

void handle_view(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& view_name,
                 const std::string& partition) {
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("GET,HEAD,POST");
  auto q = parse_view_request(c);
  if (!q) return c.error(q.error());
  // `?partition=` names the partition as /db/_partition/<p>/... does (couch_mrview_http's
  // parse_param; both: they must agree, as chttpd_db's handle_partition_req).
  std::string part = partition;
  if (c.has("partition")) {
    const std::string given = c.param("partition");
    if (!partition.empty() && given != partition)
      return c.error(errc::bad_request, "Conflicting value for `partition` in query string");
    if (auto st = validate_partition_name(given); !st) return c.error(st);
    part = given;
  }
  auto out = view_result(c, db, ddoc_name, view_name, *q, part);
  if (!out) return c.error(out.error());
  c.reply_raw(200, std::move(*out));
}

// GET /db/_design/d/_info: couch_mrview's index information, summed over one copy of each range
// as fabric_group_info does.
void handle_design_info(ctx& c, const db_meta& db, const std::string& ddoc_name) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  const std::string ddoc_id = "_design/" + ddoc_name;
  auto d = open_design_doc(c, db, ddoc_id);
  if (!d) return c.error(d.error());
  const design_views dv = views_of(db.key(), db.partitioned, ddoc_id, d->rev.str(), d->doc);
  view_info info;
  if (!dv.names.empty()) {
    if (!c.node.views) return c.error(errc::not_implemented, "JavaScript is not available on this node");
    auto got = c.node.views->info(db, dv);
    if (!got) return c.error(got.error());
    info = *got;
  } else if (d->doc.value("language", std::string()) == "query") {
    // Mango's JSON indexes are written in each copy's own transactions: always at the copies'
    // update seq and purge seq.
    auto ranges = c.node.coord.summaries(db);
    if (!ranges) return c.error(ranges.error());
    for (const auto& r : *ranges) {
      info.indexed_seq += r.s.update_seq;
      info.purge_seq += r.s.purge_seq;
    }
  }
  json index = {
      {"compact_running", info.compacting},
      {"language", d->doc.value("language", json("javascript"))},
      {"purge_seq", info.purge_seq},
      {"signature", dv.signature.substr(0, 32)},  // 32 hex digits, as CouchDB's (its index file is named by all 64)
      {"sizes", {{"file", info.disk_size}, {"active", info.active_size}, {"external", info.active_size}}},
      {"update_seq", info.indexed_seq},
      {"updater_running", info.updating},
      {"updates_pending", {{"minimum", info.pending}, {"preferred", info.pending}, {"total", info.pending}}},
      {"waiting_clients", 0},
      {"waiting_commit", false},
      {"collator_versions", json::array({collation::collator_version()})}};
  c.reply(200, json{{"name", ddoc_name}, {"view_index", index}});
}

void handle_view_queries(ctx& c, const db_meta& db, const std::string& ddoc_name, const std::string& view_name) {
  answer_queries(c, [&](const view_query& q) -> result<std::string> {
    auto out = view_result(c, db, ddoc_name, view_name, q, "");
    if (out && !out->empty() && out->back() == '\n') out->pop_back();  // one result of several
    return out;
  });
}

}  // namespace settee
