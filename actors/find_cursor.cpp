#include "actors/find_cursor.hpp"

#include <algorithm>

#include "actors/all_docs_reader.hpp"
#include "actors/position_merge.hpp"
#include "node/check.hpp"
#include "query/mango_text.hpp"

namespace settee {
namespace {

// The request for one copy of each range: index `ix`'s rows in the plan's ranges.
mango_copy_request copy_request(const query_plan& plan, const find_query& q, uint64_t limit) {
  mango_copy_request req;
  req.signature = plan.index->def.signature();
  req.definition = plan.index->def.definition();
  req.selector = (plan.filter.is_null() ? q.selector : plan.filter).dump();
  req.ranges = plan.ranges;
  req.descending = plan.descending;
  req.limit = limit;
  req.conflicts = q.conflicts;
  req.covered = plan.covered;
  return req;
}

}  // namespace

find_cursor::find_cursor(coordinator& coord, find_reader& reader, search_reader* search)
    : coord_(coord), reader_(reader), search_(search) {}

namespace {

// Whether the selector asks $text (or its normalized $default), which only a text index answers.
bool asks_text(const json& v) {
  if (v.is_array()) return std::any_of(v.begin(), v.end(), [](const json& e) { return asks_text(e); });
  if (!v.is_object()) return false;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() == "$text" || it.key() == "$default" || asks_text(*it)) return true;
  return false;
}

// The one text index of `text` usable for `normal` (mango_cursor_text:create: several are an
// error unless use_index names one); nullopt when none is.
result<std::optional<query_index>> usable_text(const std::vector<query_index>& text, const json& normal) {
  std::optional<query_index> found;
  for (const query_index& ix : text) {
    if (!text_index_usable(ix.text, normal)) continue;
    if (found) return status{errc::mango_multiple_text, "You must specify an index with the `use_index` parameter."};
    found = ix;
  }
  return found;
}

}  // namespace

result<planned_find> find_cursor::plan(const db_meta& db, find_query q, std::string partition) {
  auto indexes = reader_.indexes(db, [&] { return mango_indexes(db); });
  if (!indexes) return indexes.error();
  std::vector<query_index> json_ones, text_ones;  // split only when there are text indexes
  const bool texts = std::any_of((*indexes)->begin(), (*indexes)->end(), [](auto& ix) { return !ix.text.is_null(); });
  if (texts)
    for (const query_index& ix : **indexes) (ix.text.is_null() ? json_ones : text_ones).push_back(ix);
  const json normal = texts ? normalize_selector(q.text_selector.is_null() ? q.selector : q.text_selector) : json();
  auto text_plan = [&](query_index ix) {
    planned_find out{std::move(q), {}, {}, std::move(partition), *indexes, std::move(ix), normal};
    return out;
  };
  for (const query_index& ix : text_ones)
    if (named_by(ix, q)) return text_plan(ix);
  if (asks_text(q.selector)) {
    auto t = usable_text(text_ones, normal);
    if (!t) return t.error();
    if (!*t)
      return status{errc::mango_no_usable_index,
                    "No text index can answer $text: create one with \"type\": \"text\" (POST /db/_index)."};
    return text_plan(std::move(**t));
  }
  auto plans = plan_find(q, texts ? json_ones : **indexes);
  // No JSON index serves the query (or its sort): a text index that does answers it.
  if (!text_ones.empty() && ((plans && !plans->front().index && plans->front().parts.empty()) ||
                             (!plans && plans.error().code == errc::mango_no_usable_index))) {
    auto t = usable_text(text_ones, normal);
    if (!t) return t.error();
    if (*t) return text_plan(std::move(**t));
  }
  if (!plans && plans.error().code == errc::mango_no_usable_index && db.partitioned)  // mango_idx:mango_sort_error
    return status{errc::mango_no_usable_index, std::string(partition.empty() ? "No global" : "No partitioned") +
                                                   " index exists for this sort, try indexing by the sort fields."};
  if (!plans) return plans.error();
  planned_find out{std::move(q), std::move(plans->front()), {}, std::move(partition), *indexes, std::nullopt, json()};
  if (plans->size() > 1) {
    // The index whose ranges hold the fewest rows (selectivity from the indexes themselves); the
    // planner's order breaks ties and leads while an index is not built everywhere.
    size_t best = 0;
    for (size_t i = 0; i < plans->size(); ++i) {
      const query_plan& p = i == 0 ? out.plan : (*plans)[i];
      out.estimates.emplace_back(p.index->ddoc + "/" + p.index->name, estimate(db, p, out.q));
      if (out.estimates[i].second < out.estimates[best].second) best = i;
    }
    if (best != 0) out.plan = std::move((*plans)[best]);
  }
  return out;
}

result<find_answer> find_cursor::run(const db_meta& db, const planned_find& p) {
  if (p.text) return run_text(db, p);
  if (!p.plan.parts.empty()) return run_union(db, p.q, p.plan);
  if (p.plan.index) return run_index(db, p.q, p.plan);
  return run_all_docs(db, p.q, p.plan.descending, p.partition);
}

// The `_all_docs` cursor: documents in id order (reversed when `descending`) after the bookmark's,
// read a batch at a time from every range, each matched; skip and limit count matches.
result<find_answer> find_cursor::run_all_docs(const db_meta& db, const find_query& q, bool descending,
                                              const std::string& partition) {
  constexpr int64_t batch = 500;
  find_answer out;
  std::string start, passed;  // where the next batch starts, and an id not to answer again
  std::string end;            // a partition's: its ids sort between "p:" and "p;"
  if (!partition.empty()) {
    start = partition + (descending ? ";" : ":");
    end = partition + (descending ? ":" : ";");
  }
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
    if (!end.empty()) {
      aq.range.end = json(end).dump();
      aq.only_range = coord_.partition_index(db, partition);
    }
    aq.range.descending = descending;
    aq.range.include_docs = true;
    aq.range.conflicts = q.conflicts;
    aq.limit = batch;
    auto listing = list_all_docs(coord_, db, aq);
    if (!listing) return listing.error();
    for (const auto& row : listing->rows) {
      if (descending && row.doc.id == passed) continue;
      if (row.doc.id.rfind("_design/", 0) == 0) continue;  // as mango_cursor_view's all_docs rows
      if (out.docs.size() >= q.limit) return out;
      ++out.keys_examined;
      ++out.docs_examined;
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
      out.bookmark = all_docs_bookmark(row.doc.id);
    }
    SETTEE_CHECK(out.docs.size() <= q.limit && skipped <= q.skip);
    if (listing->rows.size() < static_cast<size_t>(batch) || out.docs.size() >= q.limit) return out;
    const std::string& last = listing->rows.back().doc.id;
    start = descending ? last : last + '\0';
    passed = last;
  }
}

// The Mango indexes (JSON and text) of the database's design documents.
result<std::vector<query_index>> find_cursor::mango_indexes(const db_meta& db) {
  auto listing = list_design_docs(coord_, db, true);
  if (!listing) return listing.error();
  std::vector<query_index> out;
  for (const auto& row : listing->rows) {
    if (row.doc.deleted || row.doc.doc.empty()) continue;
    auto d = parse_json(row.doc.doc);
    if (!d) continue;
    for (query_index& ix : indexes_of(row.doc.id, *d)) out.push_back(std::move(ix));
    for (auto& [name, def] : text_indexes_of(*d)) {
      query_index ix;
      ix.ddoc = row.doc.id;
      ix.name = name;
      ix.text = std::move(def);
      ix.ddoc_rev = row.doc.rev;
      ix.ddoc_json = row.doc.doc;
      if (auto o = d->find("options"); o != d->end() && o->is_object()) ix.partitioned = o->value("partitioned", false);
      out.push_back(std::move(ix));
    }
  }
  return out;
}

// A JSON index's cursor: each range's next skip + limit matching rows (after the bookmark's
// position for it), merged by position; the bookmark keeps every range's last position used.
result<find_answer> find_cursor::run_index(const db_meta& db, const find_query& q, const query_plan& plan) {
  find_answer out;
  const std::string signature = plan.index->def.signature();
  std::vector<std::string> after(db.ranges.size());
  if (q.bookmark) {
    auto at = index_positions(*q.bookmark);
    if (!at || signature.compare(0, at->signature.size(), at->signature) != 0 || at->signature.size() != 16)
      return status{errc::mango_invalid_bookmark, "Invalid bookmark value: " + json(*q.bookmark).dump()};
    // Each range goes on from the position of the range it was, or was part of (a split's parent).
    for (size_t r = 0; r < db.ranges.size(); ++r) {
      for (const auto& [name, pos] : at->ranges) {
        auto was = shard_range::parse(name);
        if (was && was->begin <= db.ranges[r].begin && db.ranges[r].end <= was->end) after[r] = pos;
      }
    }
  }
  if (plan.ranges.empty() || q.limit == 0) {
    out.bookmark = q.bookmark.value_or("");
    return out;
  }
  const uint64_t wanted = q.skip + q.limit < q.limit ? UINT64_MAX : q.skip + q.limit;
  auto pages = reader_.pages(db, copy_request(plan, q, wanted), after, q.only_range);
  if (!pages) return pages.error();
  for (size_t r = 0; r < pages->size(); ++r) {  // pages come from other nodes too
    auto pos = [](const mango_row& row) -> const std::string& { return row.pos; };
    if (!in_order((*pages)[r].rows, pos, plan.descending) ||
        (!(*pages)[r].rows.empty() && !after[r].empty() &&
         (plan.descending ? (*pages)[r].rows.front().pos >= after[r] : (*pages)[r].rows.front().pos <= after[r])))
      return status{errc::internal, "a copy of " + db.name + " answered index rows out of order"};
  }
  // Merged by position, in the query's direction.
  std::vector<size_t> next(pages->size(), 0);
  uint64_t taken = 0;
  status failed;
  merge_positions(
      pages->size(), plan.descending,
      [&](size_t r) { return next[r] < (*pages)[r].rows.size() ? &(*pages)[r].rows[next[r]].pos : nullptr; },
      [&](size_t r) {
        if (taken >= wanted) return false;
        mango_row& row = (*pages)[r].rows[next[r]++];
        // A range's position only moves on (the bookmark never sends a range back).
        SETTEE_CHECK(after[r].empty() || (plan.descending ? row.pos < after[r] : row.pos > after[r]));
        after[r] = row.pos;
        if (taken++ < q.skip) {
          ++out.skipped;
        } else if (q.fields.empty()) {  // the whole document, as the copy rendered it
          out.docs.push_back(std::move(row.doc));
        } else if (auto doc = parse_json(row.doc); doc) {
          out.docs.push_back(project(*doc, q.fields).dump());
        } else {
          failed = status{errc::internal, "a copy answered a document that is not JSON"};
          return false;
        }
        return taken < wanted;
      });
  if (!failed) return failed;
  SETTEE_CHECK(out.docs.size() <= q.limit && out.skipped <= q.skip);
  for (const mango_page& p : *pages) {
    out.keys_examined += p.keys_examined;
    out.docs_examined += p.docs_examined;
  }
  std::vector<std::pair<std::string, std::string>> positions;
  for (size_t r = 0; r < db.ranges.size(); ++r)
    if (!after[r].empty()) positions.emplace_back(db.ranges[r].name(), after[r]);
  out.bookmark = taken > 0 ? index_bookmark(signature, positions) : q.bookmark.value_or("");
  return out;
}

// A union of indexes (a $or whose branches use their own): each part's matches after the
// previous part's, skip and limit counting across them; the bookmark names the part and its own.
result<find_answer> find_cursor::run_union(const db_meta& db, const find_query& q, const query_plan& plan) {
  size_t from = 0;
  std::optional<std::string> inner;
  if (q.bookmark) {
    auto at = union_position(*q.bookmark);
    if (!at || at->first >= plan.parts.size())
      return status{errc::mango_invalid_bookmark, "Invalid bookmark value: " + json(*q.bookmark).dump()};
    from = at->first;
    if (!at->second.empty()) inner = at->second;
  }
  find_answer out;
  uint64_t skip = q.skip, limit = q.limit;
  for (size_t k = from; k < plan.parts.size(); ++k) {
    find_query part = q;
    part.skip = skip;
    part.limit = limit;
    part.bookmark = k == from ? inner : std::nullopt;
    auto got = run_index(db, part, plan.parts[k]);
    if (!got) return got.error();
    for (std::string& d : got->docs) out.docs.push_back(std::move(d));
    out.keys_examined += got->keys_examined;
    out.docs_examined += got->docs_examined;
    SETTEE_CHECK(got->docs.size() <= limit && got->skipped <= skip);  // each part within what was left
    skip -= got->skipped;
    limit -= got->docs.size();
    out.bookmark = union_bookmark(k, got->bookmark);
    if (limit == 0) break;
  }
  return out;
}

// The rows `plan`'s ranges hold, summed over one copy of each range.
uint64_t find_cursor::estimate(const db_meta& db, const query_plan& plan, const find_query& q) {
  if (plan.ranges.empty()) return 0;
  mango_copy_request req = copy_request(plan, q, 0);
  req.estimate = true;
  auto pages = reader_.pages(db, req, {}, q.only_range);
  return pages ? estimated_rows(*pages) : UINT64_MAX;
}

uint64_t estimated_rows(const std::vector<mango_page>& pages) {
  uint64_t sum = 0;
  for (const mango_page& p : pages) {
    if (p.estimated == UINT64_MAX) return UINT64_MAX;  // a later range's count must not hide it
    sum = p.estimated >= UINT64_MAX - 1 - sum ? UINT64_MAX - 1 : sum + p.estimated;
  }
  return sum;
}

}  // namespace settee
