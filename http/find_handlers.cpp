// Mango (issue 32, first slice): POST /db/_find, POST /db/_explain and GET /db/_index, answered as
// CouchDB's mango_httpd answers them when the database has no index of its own: every query runs
// on the special `_all_docs` index (documents in id order, each matched against the selector),
// with CouchDB's warning, its bookmark (opaque, here base64url of the last id answered) and its
// execution_stats. JSON indexes (POST /db/_index) and the planner come with the next slices.
#include <chrono>
#include <cstdlib>
#include <tuple>

#include "actors/all_docs_reader.hpp"
#include "http/handlers.hpp"
#include "http/mango_query.hpp"

namespace settee {

namespace {

const json& all_docs_index() {
  static const json index = {{"ddoc", nullptr},
                             {"name", "_all_docs"},
                             {"type", "special"},
                             {"def", {{"fields", json::array({{{"_id", "asc"}}})}}}};
  return index;
}

// The one index there is: `_all_docs` gives documents in id order, so a sort on `_id` (either
// direction) is its order and any other is CouchDB's no_usable_index. True: descending.
result<bool> all_docs_order(const find_query& q) {
  for (const auto& [field, descending] : q.sort)
    if (field != "_id")
      return status{errc::mango_no_usable_index, "No index exists for this sort, try indexing by the sort fields."};
  return !q.sort.empty() && q.sort.front().second;
}

// CouchDB's warnings, one per line: a use_index that names no usable index, and the fallback.
std::string warning_of(const find_query& q) {
  std::string w;
  if (!q.use_index.empty()) {
    std::string name = "_design/" + q.use_index[0];
    if (q.use_index.size() > 1) name += ", " + q.use_index[1];
    w = name + " was not used because it does not contain a valid index for this query.\n";
  }
  return w + "No matching index found, create an index to optimize query time.";
}

struct find_answer {
  std::vector<std::string> docs;  // each rendered
  std::string last_id;            // of the last document answered
  uint64_t examined = 0;          // documents read and matched
};

// The `_all_docs` cursor: documents in id order (reversed when `descending`) after the bookmark's,
// read a batch at a time from every range, each matched; skip and limit count matches.
result<find_answer> run_all_docs(ctx& c, const db_meta& db, const find_query& q, bool descending) {
  constexpr int64_t batch = 500;
  find_answer out;
  std::string start, passed;  // where the next batch starts, and an id not to answer again
  if (q.bookmark) {
    auto after = all_docs_position(*q.bookmark);
    if (!after) return status{errc::mango_invalid_bookmark, "Invalid bookmark value: " + json(*q.bookmark).dump()};
    // Ascending, the first id after it is the id with a NUL appended; descending, it comes again.
    start = descending ? *after : *after + '\0';
    passed = *after;
  }
  uint64_t skipped = 0;
  for (;;) {
    all_docs_query aq;
    if (!start.empty()) aq.range.start = json(start).dump();  // bounds travel as JSON
    aq.range.descending = descending;
    aq.range.include_docs = true;
    aq.range.conflicts = q.conflicts;
    aq.limit = batch;
    auto listing = list_all_docs(c.node.coord, db, aq);
    if (!listing) return listing.error();
    for (const auto& row : listing->rows) {
      if (descending && row.doc.id == passed) continue;
      if (out.docs.size() >= q.limit) return out;
      ++out.examined;
      json doc = json::parse(row.doc.doc, nullptr, false);
      if (doc.is_discarded()) continue;
      auto matched = q.matcher.matches(doc);
      if (!matched) return matched.error();
      if (!*matched) continue;
      if (skipped < q.skip) {
        ++skipped;
        continue;
      }
      out.docs.push_back(project(doc, q.fields).dump());
      out.last_id = row.doc.id;
    }
    if (listing->rows.size() < static_cast<size_t>(batch) || out.docs.size() >= q.limit) return out;
    const std::string& last = listing->rows.back().doc.id;
    start = descending ? last : last + '\0';
    passed = last;
  }
}

// A _find or _explain body, checked, and its plan (so far: the order of `_all_docs`, true when
// descending).
struct planned_query {
  find_query q;
  bool descending = false;
};

result<planned_query> plan_of(ctx& c) {
  if (auto st = c.require_json_content(); !st) return st;
  auto body = c.json_body();
  if (!body) return body.error();
  auto q = parse_find(*body);
  if (!q) return q.error();
  auto descending = all_docs_order(*q);
  if (!descending) return descending.error();
  return planned_query{std::move(*q), *descending};
}

}  // namespace

void handle_find(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto plan = plan_of(c);
  if (!plan) return c.error(plan.error());
  const find_query* q = &plan->q;
  const auto started = mono::now();
  auto found = run_all_docs(c, db, *q, plan->descending);
  if (!found) return c.error(found.error());
  std::string body = "{\"docs\":[";
  for (size_t i = 0; i < found->docs.size(); ++i) body += (i ? ",\n" : "\n") + found->docs[i];
  const std::string bookmark = !found->docs.empty() ? all_docs_bookmark(found->last_id) : q->bookmark.value_or("nil");
  body += "\n],\n\"bookmark\":" + json(bookmark).dump() + ",\n\"warning\":" + json(warning_of(*q)).dump();
  if (q->execution_stats) {
    const double ms = std::chrono::duration<double, std::milli>(mono::now() - started).count();
    json stats = {{"total_keys_examined", found->examined},
                  {"total_docs_examined", found->examined},
                  {"total_quorum_docs_examined", 0},
                  {"results_returned", found->docs.size()},
                  {"execution_time_ms", ms}};
    body += ",\n\"execution_stats\":" + stats.dump();
  }
  c.reply_raw(200, body + "}\n");
}

void handle_explain(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  auto plan = plan_of(c);
  if (!plan) return c.error(plan.error());
  const find_query* q = &plan->q;
  json sort = json::object();
  for (const auto& [field, desc] : q->sort) sort[field] = desc ? "desc" : "asc";
  json fields = q->fields.empty() ? json("all_fields") : json(q->fields);
  json use_index = q->use_index;
  json opts = {{"use_index", use_index},
               {"bookmark", q->bookmark ? json(*q->bookmark) : json("nil")},
               {"limit", q->limit},
               {"skip", q->skip},
               {"sort", sort},
               {"fields", fields},
               {"partition", ""},
               {"r", q->r},
               {"conflicts", q->conflicts},
               {"stale", q->stale == "ok" ? json("ok") : json(false)},
               {"update", q->update},
               {"stable", q->stable},
               {"execution_stats", q->execution_stats},
               {"allow_fallback", q->allow_fallback}};
  json mrargs = {{"include_docs", true},
                 {"view_type", "map"},
                 {"reduce", false},
                 {"partition", nullptr},
                 {"start_key", nullptr},
                 {"end_key", "<MAX>"},
                 {"direction", plan->descending ? "rev" : "fwd"},
                 {"stable", q->stable},
                 {"update", q->update},
                 {"conflicts", "undefined"}};
  c.reply(200, json{{"dbname", db.name},
                    {"index", all_docs_index()},
                    {"partitioned", false},
                    {"selector", q->selector},
                    {"opts", opts},
                    {"limit", q->limit},
                    {"skip", q->skip},
                    {"fields", fields},
                    {"mrargs", mrargs},
                    {"covering", false}});
}

void handle_index(ctx& c, const db_meta& db) {
  (void)db;
  if (c.path.size() > 2 || c.method() == "POST")  // creating, deleting
    return c.error(errc::not_implemented, "JSON indexes are not supported by settee yet");
  if (c.method() != "GET") return c.method_not_allowed("GET,POST");
  // As mango_httpd: limit (>= 1) and skip (>= 0) page the list; anything else is its error, a 400
  // here (CouchDB answers 500 for what is bad input).
  int64_t limit = 1, skip = 0;
  for (auto [key, out, least] : {std::tuple<const char*, int64_t*, int64_t>{"limit", &limit, 1}, {"skip", &skip, 0}}) {
    if (!c.has(key)) continue;
    const std::string v = c.param(key);
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < least)
      return c.error(errc::mango_invalid_list_params, "Index parameter ranges: limit > 1, skip > 0");
    *out = n;
  }
  json indexes = json::array();
  if (skip < 1 && limit >= 1) indexes.push_back(all_docs_index());
  c.reply(200, json{{"total_rows", 1}, {"indexes", indexes}});
}

}  // namespace settee
