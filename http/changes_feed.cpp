#include "http/changes_feed.hpp"

#include "actors/coordinator.hpp"
#include "actors/doc_render.hpp"
#include "storage/rev_tree.hpp"
#include "wire/json_util.hpp"

namespace settee {

namespace {

// style=all_docs with a selector (couch_changes:filter): each leaf of the document matched on its
// own, and only the leaves that match listed; none: the change is not listed.
result<bool> matching_leaves(coordinator& coord, const db_meta& db, const mango_selector& selector, change_row& row) {
  auto leaves = leaf_docs(coord, db, row);
  if (!leaves) return leaves.error();
  std::vector<std::string> kept;
  for (const auto& [rev, text] : *leaves) {
    auto doc = parse_json(text);
    if (!doc) continue;
    auto matches = selector.matches(*doc);
    if (!matches) return matches.error();
    if (*matches) kept.push_back(rev);
  }
  row.e.leaf_revs = std::move(kept);
  return !row.e.leaf_revs.empty();
}

changes_read_options read_options(const changes_options& o, coordinator& coord, const db_meta& db) {
  changes_read_options r;
  r.descending = o.descending;
  r.with_docs = o.include_docs || o.filter_kind == changes_options::filter::selector ||
                o.filter_kind == changes_options::filter::javascript;
  r.conflicts = o.conflicts;
  r.attachments = o.attachments;
  r.att_encoding_info = o.att_encoding_info;
  // A filter may pass over many changes per row it wants: full pages then.
  if (o.filter_kind == changes_options::filter::none) r.page_rows = o.page_rows;
  r.time_exact = o.time_exact;
  r.shard = o.shard;
  r.closed = o.closed;
  switch (o.filter_kind) {
    case changes_options::filter::none:
      break;
    case changes_options::filter::javascript:
      r.page_filter = o.page_filter;
      break;
    case changes_options::filter::doc_ids:
      r.filter = [ids = o.doc_ids](const change_row& row) -> result<bool> { return ids.count(row.e.id) > 0; };
      break;
    case changes_options::filter::design:
      r.filter = [](const change_row& row) -> result<bool> { return row.e.id.rfind("_design/", 0) == 0; };
      break;
    case changes_options::filter::selector:
      r.filter = [selector = o.selector, all_docs = o.all_docs, &coord, db](change_row& row) -> result<bool> {
        if (all_docs && row.e.leaf_revs.size() > 1) return matching_leaves(coord, db, *selector, row);
        auto doc = parse_json(row.doc);
        if (!doc) return false;
        return selector->matches(*doc);
      };
      break;
  }
  return r;
}

}  // namespace

result<std::vector<std::pair<std::string, std::string>>> leaf_docs(coordinator& coord, const db_meta& db,
                                                                   const change_row& row) {
  auto docs = coord.open_docs(db, {row.e.id}, doc_bodies::leaves);
  if (!docs) return docs.error();
  const doc_copy& d = docs->front();
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& rev : row.e.leaf_revs) {
    rev_id r;
    const int i = parse_rev(rev, r) && d.found ? d.info.tree.find(r) : -1;
    if (auto text = i >= 0 ? render_rev(d, i, render_options{}) : std::nullopt) out.emplace_back(rev, std::move(*text));
  }
  return out;
}

changes_feed::changes_feed(coordinator& coord, const db_meta& db, changes_options opts)
    : opts_(std::move(opts)), reader_(coord, db, read_options(opts_, coord, db)) {}

bool changes_feed::next(std::string& row) {
  change_row r;
  if (!reader_.next(r)) return false;
  row = render(r);
  return true;
}

std::string changes_feed::render(const change_row& r) {
  const change_entry& e = r.e;
  ++emitted_;
  std::string row = "{\"seq\":";
  // fabric_view_changes: a row carries its seq when the limit left before it is a multiple of the
  // interval (with CouchDB's default limit and an even interval: the first row of each interval).
  bool real_seq = opts_.seq_interval <= 0 ||
                  (opts_.limit_for_interval - static_cast<int64_t>(emitted_ - 1)) % opts_.seq_interval == 0;
  row += real_seq ? token_json() : "null";
  row += ",\"id\":" + quote(e.id) + ",\"changes\":[";
  if (opts_.all_docs) {
    for (size_t i = 0; i < e.leaf_revs.size(); ++i)
      row += (i ? ",{\"rev\":" : "{\"rev\":") + quote(e.leaf_revs[i]) + "}";
  } else {
    row += "{\"rev\":" + quote(e.rev) + "}";
  }
  row += "]";
  if (e.deleted) row += ",\"deleted\":true";
  if (opts_.include_docs) row += ",\"doc\":" + (r.doc.empty() ? std::string("null") : r.doc);
  row += "}";
  return row;
}

}  // namespace settee
