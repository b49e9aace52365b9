#include "actors/view_reader.hpp"

#include "actors/position_merge.hpp"
#include "actors/view_partials.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "actors/clustered_seq.hpp"
#include "actors/compactor.hpp"
#include "actors/db_catalog.hpp"
#include "actors/index_files.hpp"
#include "node/collation.hpp"
#include "node/files.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "storage/lmdb_env.hpp"

namespace settee {

namespace {

// One range's rows, in the query's direction, each with its position (sort key, then id).
struct ranged {
  std::vector<view_row> rows;
  std::vector<std::string> keys;
  size_t next = 0;
};

// The ranges' rows merged: the smallest (largest, descending) position first; `skip` rows passed
// over (their number is returned), then at most `limit` taken into `out`.
uint64_t merge(std::vector<ranged>& parts, bool descending, uint64_t skip, uint64_t limit, std::vector<view_row>& out) {
  uint64_t skipped = 0;
  merge_positions(
      parts.size(), descending,
      [&](size_t r) { return parts[r].next < parts[r].keys.size() ? &parts[r].keys[parts[r].next] : nullptr; },
      [&](size_t r) {
        if (out.size() >= limit) return false;
        view_row& row = parts[r].rows[parts[r].next++];
        if (skipped < skip) {
          ++skipped;
        } else {
          out.push_back(std::move(row));
        }
        return out.size() < limit;
      });
  return skipped;
}

}  // namespace

view_reader::view_reader(coordinator& coord, js_pool& js, job_runner& jobs, std::string dir, js_reduce_options reduce)
    : coord_(coord),
      js_(js),
      jobs_(jobs),
      dir_(std::move(dir)),
      reduce_(reduce),
      reduce_limit_(reduce.limit),
      pool_(std::max<size_t>(1, std::min<size_t>(js.max_workers(), std::thread::hardware_concurrency()))),
      builds_(jobs, pool_, "view_build") {}

namespace {

// What an index of `dv` over the copy `shard` must be (view_store::open empties a file that is not).
view_meta meta_for(const design_views& dv, const shard_store& shard) {
  return view_meta{dv.signature, shard.header().shard_uuid, collation::collator_version(),
                   static_cast<uint32_t>(dv.names.size()), 0};
}

}  // namespace

result<std::shared_ptr<view_reader::open_index>> view_reader::index_of(const db_meta& db, size_t range,
                                                                       const design_views& dv,
                                                                       const shard_store& shard) {
  const std::string path = dir_ + "/" + shard_name(db.name, db.shard_id(range)) + "/" + dv.signature + ".view";
  return open_.get(path, [&]() -> result<std::shared_ptr<open_index>> {
    ::unlink((path + ".compact").c_str());  // a compaction's copy a crash left behind
    auto store = view_store::open(path, meta_for(dv, shard));
    if (!store) return store.error();
    auto idx = std::make_shared<open_index>();
    idx->path = path;
    idx->store = std::move(*store);
    return idx;
  });
}

size_t view_reader::cleanup(const db_meta& db, const std::vector<std::string>& keep) {
  size_t removed = 0;
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    // The data files (not their -lock files) of signatures no design document names.
    for (const std::string& path : stale_indexes(dir_ + "/" + shard_name(db.name, db.shard_id(r)), ".view", keep)) {
      open_.erase(path);  // a query that still reads it keeps its mapping until it ends
      lmdb::remove_file(path);
      ++removed;
    }
  }
  return removed;
}

void view_reader::compact(const db_meta& db, const design_views& dv) {
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    const std::string copy = shard_name(db.name, db.shard_id(r));
    if (!lmdb::file_exists(dir_ + "/" + copy + "/" + dv.signature + ".view")) continue;  // never built here
    auto shard = coord_.shard(db, r);
    if (!shard) continue;
    auto idx = index_of(db, r, dv, *shard->store);
    if (!idx) {
      log::warning("the index of " + dv.ddoc_id + " on " + copy + " cannot be compacted: " + idx.error().reason);
      continue;
    }
    std::shared_ptr<open_index> index = *idx;
    if (index->compacting.exchange(true)) continue;  // queued or running already
    const view_meta want = meta_for(dv, *shard->store);
    auto job = std::make_shared<view_compaction>(
        copy, dv.ddoc_id, [this, index, want] { return compact_index(*index, want); },
        [index] { index->compacting = false; });
    if (!jobs_.submit("view_compaction/" + copy + "/" + dv.signature, compactor::lane, job)) index->compacting = false;
  }
}

status view_reader::compact_index(open_index& index, const view_meta& want) {
  // Updates wait meanwhile (mu); queries read on from the file until the swap, then from the copy.
  std::lock_guard<std::mutex> updater(index.mu);
  if (!index.store) return status{errc::internal, "the index could not be reopened"};
  const std::string tmp = index.path + ".compact";
  if (status st = index.store->compact_to(tmp); !st) return st;
  job_context::failpoint("view_compaction:copied");
  std::unique_lock<std::shared_mutex> swapping(index.swap);
  status out;
  open_.with(index.path, [&](open_index* kept) {
    if (kept != &index) {  // removed meanwhile (cleanup, copy gone)
      ::unlink(tmp.c_str());
      return false;
    }
    index.store.reset();  // one environment per file per process: closed before the copy opens
    status renamed = rename_durably(tmp, index.path);
    if (!renamed) ::unlink(tmp.c_str());
    auto reopened = view_store::open(index.path, want);
    if (!reopened) {
      out = reopened.error();
      return true;  // dropped: the next query opens it again
    }
    index.store = std::move(*reopened);
    out = renamed;
    return false;
  });
  return out;
}

void view_reader::forget_copy(const std::string& copy) {
  const std::string dir = dir_ + "/" + copy;
  open_.erase_below(dir);  // a query that still reads one keeps its mapping until it ends
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  if (ec) log::warning("could not remove the view indexes of " + copy + ": " + ec.message());
}

namespace {

// CouchDB's group key of a row's `key` at `level` (view_request::exact: the key; 0: null; an
// array longer than `level`: its first `level` elements).
json group_key(const json& key, int64_t level) {
  if (level == view_request::exact) return key;
  if (level == 0) return nullptr;
  if (!key.is_array() || key.size() <= static_cast<size_t>(level)) return key;
  return json(key.begin(), key.begin() + level);
}

}  // namespace

result<view_answer> view_reader::query(const db_meta& db, const design_views& dv, const view_request& q) {
  if (q.keys) return by_keys(db, dv, q);
  if (!q.reduce) return merged(db, dv, q, q.skip, q.limit);
  if (q.group_level == 0 &&
      (q.builtin == builtin_reduce::count || q.builtin == builtin_reduce::sum || q.builtin == builtin_reduce::stats)) {
    // One group: each copy reduces its range (a _count by its blocks' counts, _sum and _stats by
    // its blocks' partials and the rows at the range's ends), this node combines the copies'.
    view_copy_request ask;
    ask.scan.limit = 0;
    ask.count_before = false;
    ask.count_range = q.builtin == builtin_reduce::count;
    ask.reduce = q.builtin == builtin_reduce::count ? 0 : static_cast<uint8_t>(q.builtin);
    auto pages = pages_of(db, dv, q, ask);
    if (!pages) return pages.error();
    uint64_t n = 0;
    std::vector<json> partials;
    for (const view_page& p : *pages) {
      n += p.counted;
      if (p.counted > 0 && !p.reduction.empty()) partials.push_back(json::parse(p.reduction, nullptr, false));
    }
    view_answer out;
    if (n == 0 || q.skip > 0 || q.limit == 0) return out;
    if (q.builtin == builtin_reduce::count) {
      out.rows.push_back({"", "null", std::to_string(n)});
      return out;
    }
    auto whole = rereduce(q.builtin, partials);
    if (!whole) return whole.error();
    out.rows.push_back({"", "null", whole->dump()});
    return out;
  }
  if (q.builtin != builtin_reduce::approx_count_distinct) return grouped(db, dv, q);
  // _approx_count_distinct counts distinct keys: a key in two ranges is one, so the rows meet here.
  auto all = merged(db, dv, q, 0, std::numeric_limits<uint64_t>::max());
  if (!all) return all;
  auto rows = reduced(dv, all->rows, q);
  if (!rows) return rows.error();
  view_answer out;
  out.rows = std::move(*rows);
  return out;
}

result<view_answer> view_reader::grouped(const db_meta& db, const design_views& dv, const view_request& q) {
  // Each copy groups its range and reduces each group (its first skip + limit groups: the merged
  // first ones are among them); groups of the same key from several copies are re-reduced here.
  const uint64_t want = q.limit == std::numeric_limits<uint64_t>::max() ? q.limit : q.skip + q.limit;
  const uint8_t code =
      q.builtin == builtin_reduce::none ? view_copy_request::js_reduce_code : static_cast<uint8_t>(q.builtin);
  view_copy_request ask;
  ask.scan.limit = want;
  ask.count_before = false;
  ask.reduce = code;
  ask.grouped = true;
  auto pages = pages_of(db, dv, q, ask);
  if (!pages) return pages.error();
  std::vector<ranged> parts(pages->size());
  // A group's sort key: the position its copy gave it (a release before 0.5 gave none).
  auto sort_key_of = [](const view_row& row) {
    return row.pos.empty() ? collation::sort_key(json::parse(row.key_json, nullptr, false)) : row.pos;
  };
  for (size_t r = 0; r < pages->size(); ++r) {
    parts[r].rows = std::move((*pages)[r].rows);
    for (const auto& row : parts[r].rows) parts[r].keys.push_back(sort_key_of(row));
  }
  // The groups in order; a group's values (one per copy that has it) side by side.
  std::vector<view_row> merged_rows;
  merge(parts, q.descending, 0, std::numeric_limits<uint64_t>::max(), merged_rows);
  std::vector<std::string> keys;
  std::vector<std::vector<std::string>> values;
  std::string last;
  for (auto& row : merged_rows) {
    std::string sk = sort_key_of(row);
    if (keys.empty() || sk != last) {
      if (values.size() >= want) break;
      keys.push_back(std::move(row.key_json));
      values.emplace_back();
      last = std::move(sk);
    }
    values.back().push_back(std::move(row.value_json));
  }
  std::vector<json> combined(values.size());
  if (q.builtin == builtin_reduce::none) {
    auto js = js_rereduce_groups(js_, dv, dv.names[q.view], values, reduce_options());
    if (!js) return js.error();
    combined = std::move(*js);
    // A copy's reduce_overflow_error is the group's answer (couch_query_servers:os_rereduce).
    for (size_t g = 0; g < values.size(); ++g)
      for (const auto& v : values[g])
        if (v.rfind("{\"reduce_overflow_error\":", 0) == 0) combined[g] = json::parse(v, nullptr, false);
  } else {
    for (size_t g = 0; g < values.size(); ++g) {
      std::vector<json> partials;
      for (const auto& v : values[g]) partials.push_back(json::parse(v, nullptr, false));
      auto r = partials.size() == 1 ? result<json>(std::move(partials[0])) : rereduce(q.builtin, partials);
      if (!r) return r.error();
      combined[g] = std::move(*r);
    }
  }
  view_answer out;
  for (size_t g = q.skip; g < values.size(); ++g) out.rows.push_back({"", std::move(keys[g]), combined[g].dump()});
  return out;
}

result<view_answer> view_reader::by_keys(const db_meta& db, const design_views& dv, const view_request& q) {
  view_answer out;
  std::vector<json> keys = *q.keys;
  if (q.descending) std::reverse(keys.begin(), keys.end());
  if (keys.empty()) {  // no rows, but the view's row count all the same (as couch_mrview)
    view_request none = q;
    none.keys.reset();
    auto counted = merged(db, dv, none, 0, 0);
    if (!counted) return counted;
    out.total_rows = counted->total_rows;
    out.offset = std::min(q.skip, out.total_rows);
    return out;
  }
  std::vector<view_row> rows;
  std::vector<range_start> starts;  // per range: before its first key with rows there, else before the last key
  for (const json& key : keys) {
    view_request one = q;
    one.keys.reset();
    one.low = one.high = view_bound{true, collation::sort_key(key), std::nullopt, true};
    std::vector<range_start> each;
    auto part = merged(db, dv, one, 0, std::numeric_limits<uint64_t>::max(), &each);
    if (!part) return part;
    out.total_rows = part->total_rows;
    starts.resize(each.size());
    for (size_t r = 0; r < each.size(); ++r)
      if (!starts[r].rows) starts[r] = each[r];
    if (!q.reduce) {
      for (auto& row : part->rows) rows.push_back(std::move(row));
      continue;
    }
    view_request whole = one;  // this key's rows are one group (group=true is required)
    whole.skip = 0;
    whole.limit = std::numeric_limits<uint64_t>::max();
    auto group = reduced(dv, part->rows, whole);
    if (!group) return group.error();
    for (auto& row : *group) rows.push_back(std::move(row));
  }
  for (const range_start& s : starts) out.offset += s.before;
  out.offset = std::min(out.offset + q.skip, out.total_rows);
  for (size_t i = q.skip; i < rows.size() && out.rows.size() < q.limit; ++i) out.rows.push_back(std::move(rows[i]));
  return out;
}

result<std::vector<view_row>> view_reader::reduced(const design_views& dv, const std::vector<view_row>& all,
                                                   const view_request& q) {
  // Consecutive rows whose group keys collate equal are one group; skip and limit count groups.
  std::vector<json> keys, values;
  for (const auto& row : all) {
    keys.push_back(json::parse(row.key_json, nullptr, false));
    values.push_back(json::parse(row.value_json, nullptr, false));
  }

  struct group {
    json key;
    size_t from, to;  // its rows
  };
  std::vector<group> groups;
  uint64_t skipped = 0;
  for (size_t i = 0; i < keys.size() && groups.size() < q.limit;) {
    json key = group_key(keys[i], q.group_level);
    const std::string sk = collation::sort_key(key);
    size_t j = i + 1;
    while (j < keys.size() && collation::sort_key(group_key(keys[j], q.group_level)) == sk) ++j;
    if (skipped < q.skip) {
      ++skipped;
    } else {
      groups.push_back({std::move(key), i, j});
    }
    i = j;
  }
  std::vector<view_row> out;
  if (q.builtin == builtin_reduce::none) {  // the view's JavaScript function, on the workers
    std::vector<std::vector<const view_row*>> in(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
      for (size_t i = groups[g].from; i < groups[g].to; ++i) in[g].push_back(&all[i]);
    auto reductions = js_reduce_groups(js_, dv, dv.names[q.view], in, reduce_options());
    if (!reductions) return reductions.error();
    for (size_t g = 0; g < groups.size(); ++g) out.push_back({"", groups[g].key.dump(), (*reductions)[g].dump()});
    return out;
  }
  for (const group& g : groups) {
    std::vector<std::pair<const json*, const json*>> rows;
    for (size_t i = g.from; i < g.to; ++i) rows.emplace_back(&keys[i], &values[i]);
    auto reduction = reduce_rows(q.builtin, rows);
    if (!reduction) return reduction.error();
    out.push_back({"", g.key.dump(), reduction->dump()});
  }
  return out;
}

namespace {

// `req` read from an index that is as up to date as it is going to be (of a copy at `copy_seq`).
result<view_page> read_index(const view_store& index, const view_copy_request& req, uint64_t copy_seq, bool updating) {
  view_page page;
  page.indexed_seq = index.seq();
  page.purge_seq = index.purge_seq();
  page.copy_seq = copy_seq;
  page.updating = updating;
  if (req.describe) {
    page.uuid = index.meta().shard_uuid;
    page.disk_size = index.disk_size();
    page.active_size = index.active_size();
  }
  // A partition's query reads the partition's rows of a partitioned view: its bounds wrapped.
  const bool partition = !req.partition.empty();
  view_scan whole = partition ? partition_scan(req.scan, req.partition) : req.scan;
  if (req.grouped) whole.limit = std::numeric_limits<uint64_t>::max();  // the limit counts groups
  const view_scan& s = whole;
  if (req.count_range || (req.reduce && !req.grouped)) {
    auto n = index.count(s);
    if (!n) return n.error();
    page.counted = *n;
  }
  if (req.reduce && !req.grouped && page.counted > 0) {
    // The blocks wholly in range by their partials, the rest by their rows, combined.
    const auto how = static_cast<builtin_reduce>(req.reduce);
    std::vector<std::string> partial_texts;
    std::vector<view_row> rows;
    if (auto st = index.reduce_range(s, partial_texts, rows); !st) return st;
    std::vector<json> partials;
    for (const auto& p : partial_texts) partials.push_back(json::parse(p, nullptr, false));
    if (!rows.empty()) {
      auto reduced = reduce_view_rows(how, rows);
      if (!reduced) return reduced.error();
      partials.push_back(std::move(*reduced));
    }
    auto whole = rereduce(how, partials);
    if (!whole) return whole.error();
    page.reduction = whole->dump();
    page.total = 0;
    return page;  // no rows travel
  }
  if (req.grouped) return page;  // the groups are read by copy_groups
  auto rows = index.scan(s, &page.total);
  if (!rows) return rows.error();
  page.rows = std::move(*rows);
  if (partition) {  // total_rows: the partition's
    auto n = index.count(partition_scan(view_scan{s.view, {}, {}, s.descending}, req.partition));
    if (!n) return n.error();
    page.total = *n;
  }
  // CouchDB's offset: the rows before the range's start, in the query's direction.
  const view_bound& start = s.descending ? s.high : s.low;
  const view_bound& asked = req.scan.descending ? req.scan.high : req.scan.low;
  if (req.count_before && asked.set) {
    view_scan before{s.view, {}, {}, s.descending};
    if (partition) before = partition_scan(before, req.partition);
    view_bound& edge = s.descending ? before.low : before.high;
    edge = start;
    edge.inclusive = !start.inclusive;
    auto n = index.count(before);
    if (!n) return n.error();
    page.before = *n;
  }
  return page;
}

// The groups of `req`'s range in `index`, in the view's order (the first scan.limit of them in
// the query's direction): whole blocks by their counts (_count) or partials (_sum, _stats).
result<std::vector<view_group>> copy_groups(const view_store& index, const view_copy_request& req,
                                            const block_reducer& fold) {
  const bool partition = !req.partition.empty();
  view_scan s = partition ? partition_scan(req.scan, req.partition) : req.scan;
  const auto how = static_cast<builtin_reduce>(req.reduce);
  const bool js = req.reduce == view_copy_request::js_reduce_code;
  const block_use use = how == builtin_reduce::count                                       ? block_use::counts
                        : js || how == builtin_reduce::sum || how == builtin_reduce::stats ? block_use::partials
                                                                                           : block_use::rows;
  const int64_t level = req.group_level;
  auto length = [partition, level](std::string_view key) {
    size_t skip = 0;  // a partitioned view's key is the second element of [partition, key]
    if (partition) {
      const size_t p = key.empty() ? std::string_view::npos : collation::value_length(key.substr(1));
      if (p == std::string_view::npos) return p;
      skip = 1 + p;
    }
    const size_t n = collation::group_length(key.substr(skip), level);
    return n == std::string_view::npos ? n : skip + n;
  };
  std::vector<view_group> groups;
  const uint64_t most = s.descending ? std::numeric_limits<uint64_t>::max() : s.limit;
  // A built-in reduces the rows it reads as it goes (JavaScript: all at once, later).
  const block_reducer* folding = use == block_use::partials && !js ? &fold : nullptr;
  if (auto st = index.reduce_groups(s, length, use, most, groups, folding); !st) return st;
  if (s.descending) {
    std::reverse(groups.begin(), groups.end());
    if (groups.size() > s.limit) groups.resize(s.limit);
  }
  return groups;
}

}  // namespace

result<std::vector<view_row>> view_reader::reduce_groups(const design_views& dv, std::vector<view_group>& groups,
                                                         const view_copy_request& req) {
  const builtin_reduce how =
      req.reduce == view_copy_request::js_reduce_code ? builtin_reduce::none : static_cast<builtin_reduce>(req.reduce);
  std::vector<view_row> out;
  for (view_group& g : groups) {
    // The group's key: its first row's in the query's direction, cut to the group level.
    std::string key = req.scan.descending ? std::move(g.last_key) : std::move(g.first_key);
    if (req.group_level != view_request::exact)
      key = group_key(json::parse(key, nullptr, false), req.group_level).dump();
    // Its position: the group key's sort key (the asker merges the copies' groups by it), which
    // the group's bytes are, closed by an array's end when cut by a level. None for a partition.
    std::string pos;
    if (req.partition.empty())
      pos = req.group_level == 0 ? std::string(1, '\x10')  // null's
            : req.group_level != view_request::exact && g.id.size() > 0 && g.id[0] == '\x60' ? g.id + '\0'
                                                                                             : g.id;
    out.push_back({"", std::move(key), "", std::move(pos)});
  }
  if (how == builtin_reduce::none) {  // the view's JavaScript function, on the workers
    // Each group's rows reduced; that value and its blocks' partials go to the asker as rows of
    // the group's key, which re-reduces them with the other copies' in one exchange for all.
    std::vector<std::vector<const view_row*>> in(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
      for (const view_row& row : groups[g].rows) in[g].push_back(&row);
    auto reductions = js_reduce_groups(js_, dv, dv.names[req.scan.view], in, reduce_options());
    if (!reductions) return reductions.error();
    std::vector<std::vector<std::string>> values(groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      const json& rows_value = (*reductions)[g];
      values[g] = std::move(groups[g].partials);
      if (!groups[g].rows.empty()) values[g].push_back(rows_value.dump());
      // A reduce_overflow_error of the rows is the group's answer (couch_query_servers:os_rereduce).
      if (rows_value.is_object() && rows_value.contains("reduce_overflow_error")) values[g] = {rows_value.dump()};
    }
    std::vector<view_row> each;
    for (size_t g = 0; g < groups.size(); ++g)
      for (std::string& v : values[g]) each.push_back({"", out[g].key_json, std::move(v), out[g].pos});
    return each;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    view_group& group = groups[g];
    if (how == builtin_reduce::count) {
      out[g].value_json = std::to_string(group.counted + group.rows.size());
      continue;
    }
    std::vector<json> partials;
    for (const std::string& p : group.partials) partials.push_back(json::parse(p, nullptr, false));
    if (!group.rows.empty()) {
      auto r = reduce_view_rows(how, group.rows);
      if (!r) return r.error();
      partials.push_back(std::move(*r));
    }
    auto r = partials.size() == 1 ? result<json>(std::move(partials[0])) : rereduce(how, partials);
    if (!r) return r.error();
    out[g].value_json = r->dump();
  }
  return out;
}

status view_reader::update(open_index& index, const shard_store& store, const design_views& dv, const std::string& copy,
                           uint64_t target, const std::function<bool()>& stop) {
  std::lock_guard<std::mutex> lock(index.mu);
  if (!index.store) return status{errc::internal, "the index of " + dv.ddoc_id + " could not be reopened"};
  const uint64_t from = index.store->seq(), to = std::max(target, store.update_seq());
  if (from >= target && index.store->purge_seq() >= store.purge_seq()) return {};
  // CouchDB's indexer row in _active_tasks while it runs, with an estimate of the time left.
  index_task task(tasks_, json{{"type", "indexer"}, {"database", copy}, {"design_document", dv.ddoc_id}}, from, to);
  auto progress = [&](uint64_t seq) {
    task.progress(seq);
    return !stop || !stop();
  };
  index.updating = true;
  status st = update_view_index(store, *index.store, js_, dv, target, 500, 16u << 20, progress, reduce_options());
  index.updating = false;
  if (st) ++metrics::node().view_index_updates;
  return st;
}

void view_reader::build(const db_meta& db, const design_views& dv, const std::shared_ptr<open_index>& index,
                        const shard_handle& shard, const std::string& copy, std::function<void(status)> done) {
  view_build_part part;
  part.index = index->path;
  part.seq = [store = shard.store] { return store->update_seq(); };
  part.update = [this, index, store = shard.store, dv, copy](uint64_t target, const std::function<bool()>& stop) {
    return update(*index, *store, dv, copy, target, stop);
  };
  part.done = std::move(done);
  builds_.join(db.key() + "/" + dv.signature, std::move(part));
}

result<std::vector<view_page>> view_reader::described(const db_meta& db, const design_views& dv) {
  view_request q;
  q.update = false;
  view_copy_request ask;
  ask.scan.limit = 0;
  ask.count_before = false;
  ask.describe = true;
  return pages_of(db, dv, q, ask);
}

result<view_info> view_reader::info(const db_meta& db, const design_views& dv) {
  auto pages = described(db, dv);
  if (!pages) return pages.error();
  view_info out;
  for (const view_page& p : *pages) {
    out.indexed_seq += p.indexed_seq;
    out.purge_seq += p.purge_seq;
    out.pending += p.copy_seq > p.indexed_seq ? p.copy_seq - p.indexed_seq : 0;
    out.disk_size += p.disk_size;
    out.active_size += p.active_size;
    out.updating = out.updating || p.updating;
    out.compacting = out.compacting || p.compacting;
  }
  return out;
}

result<view_page> view_reader::answer_copy(open_index& index, const view_copy_request& req, uint64_t copy_seq,
                                           const design_views& dv) {
  result<view_page> page = status{errc::internal, "the index of " + dv.ddoc_id + " could not be reopened"};
  result<std::vector<view_group>> groups = std::vector<view_group>{};
  {
    std::shared_lock<std::shared_mutex> reading(index.swap);
    if (index.store) page = read_index(*index.store, req, copy_seq, index.updating);
    if (page && req.grouped) groups = copy_groups(*index.store, req, view_partials(dv, js_, reduce_options()));
  }
  if (!page) return page;
  if (!groups) return groups.error();
  page->compacting = index.compacting;
  if (!req.grouped) return page;
  // This copy's groups of the range, each reduced here (outside the lock: JavaScript may take its
  // time); the asker combines the copies' groups.
  auto rows = reduce_groups(dv, *groups, req);
  if (!rows) return rows.error();
  page->rows = std::move(*rows);
  return page;
}

void view_reader::start_local(const db_meta& db, size_t range, const shard_handle& shard, const design_views& dv,
                              const view_copy_request& req, shard_copy::answer<view_page> done) {
  auto idx = index_of(db, range, dv, *shard.store);
  if (!idx) return done(idx.error());
  std::shared_ptr<open_index> index = std::move(*idx);
  const uint64_t copy_seq = shard.store->update_seq();
  bool behind = false;
  {
    std::shared_lock<std::shared_mutex> reading(index->swap);
    behind = index->store && (index->store->seq() < copy_seq || index->store->purge_seq() < shard.store->purge_seq());
  }
  const std::string copy = shard_name(db.name, db.shard_id(range));
  if (!req.update || !behind) {
    done(answer_copy(*index, req, copy_seq, dv));
    if (!req.lazy || !behind) return;
    // update=lazy: brought up to date after the answer (one lazy update per index at a time).
    if (index->lazy.exchange(true)) return;
    build(db, dv, index, shard, copy, [index, ddoc = dv.ddoc_id](const status& st) {
      index->lazy = false;
      if (!st) log::warning("a lazy update of the index of " + ddoc + " failed: " + st.reason);
    });
    return;
  }
  // Behind: the database's build job brings it up to date (its ranges at once), then it is read on
  // the build's thread. The callback owns what it uses: its asker may have given up.
  build(db, dv, index, shard, copy, [this, index, store = shard.store, dv, req, done = std::move(done)](status st) {
    if (!st) return done(st);
    done(answer_copy(*index, req, store->update_seq(), dv));
  });
}

void view_reader::copy_rows(const db_meta& db, size_t range, const shard_handle& shard, const view_copy_request& req,
                            shard_copy::answer<view_page> done) {
  if (req.parsed) return start_local(db, range, shard, *req.parsed, req, std::move(done));
  auto ddoc = parse_json(req.ddoc);  // another node's request
  if (!ddoc || !ddoc->is_object()) return done(status{errc::bad_request, "the design document is not a JSON object"});
  const design_views dv = views_of(db.key(), db.partitioned, req.ddoc_id, req.rev, *ddoc);
  if (dv.signature != req.signature)
    return done(status{errc::not_implemented, "this node indexes design document " + req.ddoc_id +
                                                  " under another signature (a different release)"});
  start_local(db, range, shard, dv, req, std::move(done));
}

result<std::vector<view_page>> view_reader::pages_of(const db_meta& db, const design_views& dv, const view_request& q,
                                                     view_copy_request req) {
  req.ddoc_id = dv.ddoc_id;
  req.rev = dv.rev;
  req.ddoc = dv.ddoc_json;
  req.signature = dv.signature;
  req.scan = view_scan{q.view, q.low, q.high, q.descending, 0, req.scan.limit};
  req.partition = q.partition;
  req.update = q.update;
  req.lazy = q.lazy;
  req.group_level = q.group_level;
  req.parsed = &dv;  // this node's copies need not parse it again
  // A partition's rows are all in its range (shard_map's placement_hash).
  const std::vector<size_t> ranges =
      q.partition.empty() ? coordinator::all_ranges(db) : std::vector<size_t>{coord_.partition_index(db, q.partition)};
  // A copy whose index is behind answers after bringing it up to date: waited for as long as
  // CouchDB waits for a view worker (view_permsg_timeout), not the request timeout.
  auto pages = coord_.each_range<view_page>(
      db, ranges,
      [&](shard_copy& copy, size_t, shard_copy::answer<view_page> done) { copy.start_view(req, std::move(done)); }, {},
      coord_.view_timeout());
  std::vector<view_page> out;
  for (auto& p : pages) {
    if (!p.value) return p.value.error();
    out.push_back(std::move(*p.value));
    out.back().node = p.copy->node();
  }
  return out;
}

result<std::string> view_reader::update_seq(const db_meta& db, const design_views& dv) {
  auto pages = described(db, dv);
  if (!pages) return pages.error();
  std::vector<seq_entry> entries;
  for (size_t r = 0; r < pages->size(); ++r) {
    const view_page& p = (*pages)[r];
    entries.push_back({db.ranges[r], p.node, p.uuid.substr(0, uuid_prefix_length), p.indexed_seq});
  }
  return encode_seq(entries);
}

result<view_answer> view_reader::merged(const db_meta& db, const design_views& dv, const view_request& q, uint64_t skip,
                                        uint64_t limit, std::vector<range_start>* each) {
  // Each range's rows up to skip + limit, in the query's direction, from one copy of each range:
  // this node's when it holds one (read here), else another node's (its viewRows).
  view_copy_request ask;
  ask.scan.limit = limit == std::numeric_limits<uint64_t>::max() ? limit : skip + limit;
  ask.count_before = ask.scan.limit > 0;
  auto pages = pages_of(db, dv, q, ask);
  if (!pages) return pages.error();
  view_answer out;
  std::vector<ranged> parts(db.ranges.size());
  for (size_t r = 0; r < pages->size(); ++r) {
    view_page& page = (*pages)[r];
    out.total_rows += page.total;
    out.offset += page.before;
    if (each) each->push_back({page.before, !page.rows.empty()});
    parts[r].rows = std::move(page.rows);
    // Merged by their positions in the copies' indexes: the view's order as bytes.
    for (auto& row : parts[r].rows) parts[r].keys.push_back(std::move(row.pos));
    if (!in_order(
            parts[r].keys, [](const std::string& p) -> const std::string& { return p; }, q.descending))
      return status{errc::internal, "a copy of " + db.name + " answered view rows out of order"};
  }
  merge(parts, q.descending, skip, limit, out.rows);
  out.offset = std::min(out.total_rows, out.offset + skip);  // fabric_view_map's FinalOffset
  return out;
}

}  // namespace settee
