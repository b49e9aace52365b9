#include "actors/all_docs_reader.hpp"

#include "actors/position_merge.hpp"

namespace settee {

result<all_docs_listing> list_all_docs(coordinator& coord, const db_meta& db, const all_docs_query& q) {
  std::vector<all_docs_request> asks(db.q, q.range);
  for (auto& a : asks) a.max_rows = q.limit < 0 ? UINT64_MAX : static_cast<uint64_t>(q.skip + q.limit);
  // A key another range holds is not looked up when only one range is read.
  auto asked = [&](const std::optional<std::string>& key) {
    return key && (!q.only_range || coord.shard_index(db, *key) == *q.only_range);
  };
  if (q.keys) {  // each range looks up its own keys
    for (auto& a : asks) a.by_keys = true;
    for (const auto& key : *q.keys)
      if (asked(key)) asks[coord.shard_index(db, *key)].keys.push_back(*key);
  }
  const std::vector<size_t> read = q.only_range ? std::vector<size_t>{*q.only_range} : coordinator::all_ranges(db);
  auto answers = coord.each_range<all_docs_page>(
      db, read, [&](shard_copy& c, size_t k, auto done) { c.start_all_docs(asks[read[k]], std::move(done)); });
  std::vector<all_docs_page> pages(db.q);
  all_docs_listing out;
  for (size_t k = 0; k < read.size(); ++k) {
    if (!answers[k].value) return answers[k].value.error();
    const size_t i = read[k];
    pages[i] = std::move(*answers[k].value);
    out.doc_count += pages[i].doc_count;
    out.before += pages[i].before;
    out.in_bounds += pages[i].rows.size();
  }

  int64_t skipped = 0;
  auto room = [&] { return q.limit < 0 || static_cast<int64_t>(out.rows.size()) < q.limit; };
  std::vector<size_t> next(db.q, 0);
  if (q.keys) {
    for (size_t k = 0; k < q.keys->size() && room(); ++k) {
      const auto& key = (*q.keys)[k];
      all_docs_row r{key.value_or(""), "", false, false, ""};
      if (asked(key)) {
        size_t s = coord.shard_index(db, *key);
        if (next[s] >= pages[s].rows.size()) return status{errc::internal, "a copy answered fewer keys than asked"};
        r = std::move(pages[s].rows[next[s]++]);  // each range answered its keys in order
      }
      if (skipped++ < q.skip) continue;
      out.rows.push_back({k, std::move(r)});
    }
    return out;
  }
  // Each range yields its live documents within the bounds, in order; the merge interleaves them.
  const bool desc = q.range.descending;
  auto id_of = [](const all_docs_row& r) -> const std::string& { return r.id; };
  for (size_t i = 0; i < db.q; ++i)  // pages come from other nodes too
    if (!in_order(pages[i].rows, id_of, desc))
      return status{errc::internal, "a copy of " + db.name + " answered its documents out of order"};
  merge_positions(
      db.q, desc, [&](size_t i) { return next[i] < pages[i].rows.size() ? &pages[i].rows[next[i]].id : nullptr; },
      [&](size_t i) {
        if (!room()) return false;
        all_docs_row& r = pages[i].rows[next[i]++];
        if (skipped++ >= q.skip) out.rows.push_back({0, std::move(r)});
        return room();
      });
  return out;
}

all_docs_request design_docs_request(bool include_docs) {
  all_docs_request r;
  r.start = quote("_design/");  // JSON texts, as a client's startkey/endkey
  r.end = quote("_design0");
  r.inclusive_end = false;
  r.include_docs = include_docs;
  return r;
}

result<all_docs_listing> list_design_docs(coordinator& coord, const db_meta& db, bool include_docs) {
  all_docs_query q;
  q.range = design_docs_request(include_docs);
  return list_all_docs(coord, db, q);
}

}  // namespace settee
