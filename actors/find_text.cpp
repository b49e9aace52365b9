// find_cursor's run on a Mango text index (CouchDB's mango_cursor_text): the selector as a Lucene
// query (query/mango_text) asked of the full-text index (actors/search_reader) a page at a time;
// each hit's document opened and matched against the selector again (the query finds a superset:
// $elemMatch, $regex, $type and the like are only approximated), skip and limit counted on the
// matches. The bookmark is the last hit's order, one position in a total order, so the next page
// goes on after it whatever the database's shards did meanwhile.
#include <algorithm>
#include <set>

#include "actors/doc_render.hpp"
#include "actors/find_cursor.hpp"
#include "query/mango_text.hpp"
#include "search/search_query.hpp"

namespace settee {

namespace {

// The most hits asked of the index at once (dreyfus' max_limit, as mango_cursor_text asks).
constexpr size_t page_limit = 200;

// The index's definition as its copies read it (its design document).
result<search_design> design_of(const db_meta& db, const query_index& ix) {
  auto ddoc = parse_json(ix.ddoc_json);
  if (!ddoc) return status{errc::internal, "unreadable design document " + ix.ddoc};
  auto def = search_index_of(search_api::clouseau, ix.ddoc, *ddoc, ix.name);
  if (!def) return def.error();
  partition_index(*def, db.partitioned, *ddoc);
  return search_design{ix.ddoc, ix.ddoc_rev, ix.ddoc_json, std::move(*def)};
}

}  // namespace

result<find_answer> find_cursor::run_text(const db_meta& db, const planned_find& p) {
  if (!search_) return status{errc::not_implemented, "full-text search is not available on this node"};
  const find_query& q = p.q;
  auto sd = design_of(db, *p.text);
  if (!sd) return sd.error();
  const json& normal = p.text_selector;
  auto lucene = text_query_of(normal);
  if (!lucene) return lucene.error();
  auto sort = text_sort(q.sort, normal);
  if (!sort) return sort.error();
  find_answer out;
  if (lucene->empty() || q.limit == 0) return out;
  text_query tq;
  tq.query = *lucene;
  tq.sort = std::move(*sort);
  tq.lowercase_expanded = false;  // keyword fields keep their case: "Bob*" finds "Bobby"
  tq.limit = static_cast<size_t>(std::min<uint64_t>(page_limit, q.limit + q.skip));
  if (q.bookmark) {
    auto after = unpack_bookmark(*q.bookmark);
    if (!after) return status{errc::mango_invalid_bookmark, "Invalid bookmark value: " + json(*q.bookmark).dump()};
    tq.after = std::move(*after);
  }
  const std::string partition = sd->def.partitioned ? p.partition : "";
  std::set<std::string> seen;  // a document answers once (mango_cursor_text's documents_seen)
  uint64_t skipped = 0;
  render_options shown;
  shown.conflicts = q.conflicts;
  for (;;) {
    auto page = search_->query(db, *sd, tq, q.update, partition);
    if (!page) {
      if (page.error().code == errc::bad_request) return status{errc::mango_text_search, page.error().reason};
      return page.error();
    }
    if (page->hits.empty()) return out;
    std::vector<std::string> ids;
    for (const text_hit& h : page->hits) ids.push_back(h.id);
    auto docs = coord_.open_docs(db, ids, doc_bodies::leaves);
    if (!docs) return docs.error();
    for (size_t i = 0; i < page->hits.size(); ++i) {
      const text_hit& h = page->hits[i];
      tq.after = h.order;
      out.bookmark = pack_bookmark(h.order, tq.sort).get<std::string>();
      const doc_copy& d = (*docs)[i];
      if (!d.found || d.info.tree.winner_deleted()) continue;  // gone since it was indexed
      ++out.keys_examined;
      ++out.docs_examined;
      auto doc = parse_json(render_rev(d, d.info.tree.winner(), shown).value_or("null"));
      if (!doc || !doc->is_object()) continue;
      auto matched = q.matcher.matches(*doc);
      if (!matched) return matched.error();
      if (!*matched || !seen.insert(h.id).second) continue;
      if (skipped < q.skip) {
        ++skipped;
        continue;
      }
      out.docs.push_back(project(*doc, q.fields).dump());
      if (out.docs.size() >= q.limit) return out;
    }
    if (page->hits.size() < tq.limit) return out;  // the index has no more
  }
}

}  // namespace settee
