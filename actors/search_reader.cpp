#include "actors/search_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <thread>

#include "actors/db_catalog.hpp"
#include "actors/index_files.hpp"
#include "node/log.hpp"

namespace settee {

search_reader::search_reader(coordinator& coord, js_pool& js, job_runner& jobs, std::string dir)
    : coord_(coord),
      js_(js),
      dir_(std::move(dir)),
      pool_(std::max<size_t>(1, std::min<size_t>(js.max_workers(), std::thread::hardware_concurrency()))),
      builds_(jobs, pool_, "search_build") {}

namespace {

constexpr const char* suffix = ".search";

search_target target_of(const db_meta& db, const search_design& sd) {
  return search_target{db.name, worker_key(db.key(), sd.ddoc_id, sd.rev), sd.ddoc_json, sd.def};
}

}  // namespace

result<std::shared_ptr<search_reader::open_index>> search_reader::index_of(const db_meta& db, size_t range,
                                                                           const search_index_def& def) {
  const std::string path = dir_ + "/" + shard_name(db.name, db.shard_id(range)) + "/" + def.signature + suffix;
  return open_.get(path, [&]() -> result<std::shared_ptr<open_index>> {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return status{errc::internal, "could not make the search index directory " + path + ": " + ec.message()};
    auto index = text_index::open(path, analysis_of(def));
    if (!index) return index.error();
    auto idx = std::make_shared<open_index>();
    idx->path = path;
    idx->index = std::move(*index);
    return idx;
  });
}

size_t search_reader::cleanup(const db_meta& db, const std::vector<std::string>& keep) {
  size_t removed = 0;
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    for (const std::string& path : stale_indexes(dir_ + "/" + shard_name(db.name, db.shard_id(r)), suffix, keep)) {
      open_.erase(path);  // closed when the last search of it ends
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
      ++removed;
    }
  }
  return removed;
}

void search_reader::forget_copy(const std::string& copy) {
  open_.erase_below(dir_ + "/" + copy);
}

status search_reader::update(open_index& index, const shard_store& store, const search_target& t,
                             const std::string& copy, uint64_t target, const std::function<bool()>& stop) {
  std::lock_guard<std::mutex> lock(index.mu);
  const uint64_t from = index.index->seq(), to = std::max(target, store.update_seq());
  if (from >= target && index.index->purge_seq() >= store.purge_seq()) return {};
  // A search_indexer row in _active_tasks while it runs (CouchDB's dreyfus and nouveau name).
  index_task task(
      tasks_,
      json{{"type", "search_indexer"}, {"database", copy}, {"design_document", t.def.ddoc_id}, {"index", t.def.name}},
      from, to);
  auto progress = [&](uint64_t seq) {
    task.progress(seq);
    return !stop || !stop();
  };
  index.updating = true;
  status st = update_search_index(store, *index.index, js_, t, target, 500, 16u << 20, progress);
  index.updating = false;
  return st;
}

void search_reader::build(const db_meta& db, const search_target& t, const std::shared_ptr<open_index>& index,
                          const shard_handle& shard, const std::string& copy, std::function<void(status)> done) {
  view_build_part part;
  part.index = index->path;
  part.seq = [store = shard.store] { return store->update_seq(); };
  part.update = [this, index, store = shard.store, t, copy](uint64_t target, const std::function<bool()>& stop) {
    return update(*index, *store, t, copy, target, stop);
  };
  part.done = std::move(done);
  builds_.join(db.key() + "/" + t.def.signature, std::move(part));
}

namespace {

// `req` answered from `held` (the index of a copy at `copy_seq`).
result<search_copy_page> answer_copy(std::shared_ptr<const text_index> held, bool updating,
                                     const search_copy_request& req, uint64_t copy_seq) {
  const text_index& index = *held;
  search_copy_page page;
  page.indexed_seq = index.seq();
  page.purge_seq = index.purge_seq();
  page.copy_seq = copy_seq;
  page.updating = updating;
  page.doc_count = index.doc_count();
  if (req.what == search_copy_request::phase::describe) {
    page.disk_size = index.disk_size();
    return page;
  }
  if (req.what == search_copy_request::phase::hold) {
    page.index = std::move(held);
    return page;
  }
  if (req.what == search_copy_request::phase::stats) {
    auto stats = index.stats(req.query);
    if (!stats) return stats.error();
    page.stats = std::move(*stats);
    return page;
  }
  text_query q = req.query;
  q.stats = req.stats ? &*req.stats : nullptr;
  auto found = index.search(q);
  if (!found) return found.error();
  page.page = std::move(*found);
  return page;
}

}  // namespace

void search_reader::start_local(const db_meta& db, size_t range, const shard_handle& shard, const search_design& sd,
                                const search_copy_request& req, shard_copy::answer<search_copy_page> done) {
  auto idx = index_of(db, range, sd.def);
  if (!idx) return done(idx.error());
  std::shared_ptr<open_index> index = std::move(*idx);
  const uint64_t copy_seq = shard.store->update_seq();
  const bool behind = index->index->seq() < copy_seq || index->index->purge_seq() < shard.store->purge_seq();
  std::shared_ptr<const text_index> held(index, index->index.get());  // keeps `index` open
  if (!req.update || !behind || req.what == search_copy_request::phase::describe)
    return done(answer_copy(std::move(held), index->updating, req, copy_seq));
  // Behind: the database's build job brings it up to date, then it is read on the build's thread.
  // The callback owns what it uses: its asker may have given up.
  const std::string copy = shard_name(db.name, db.shard_id(range));
  build(db, target_of(db, sd), index, shard, copy,
        [index, held = std::move(held), store = shard.store, req, done = std::move(done)](status st) {
          if (!st) return done(st);
          done(answer_copy(held, index->updating, req, store->update_seq()));
        });
}

void search_reader::copy_search(const db_meta& db, size_t range, const shard_handle& shard,
                                const search_copy_request& req, shard_copy::answer<search_copy_page> done) {
  search_design sd{req.ddoc_id, req.rev, req.ddoc, {}};
  if (req.parsed) {
    sd.def = *req.parsed;
    return start_local(db, range, shard, sd, req, std::move(done));
  }
  auto ddoc = parse_json(req.ddoc);  // another node's request
  if (!ddoc || !ddoc->is_object()) return done(status{errc::bad_request, "the design document is not a JSON object"});
  auto def = search_index_of(req.api, req.ddoc_id, *ddoc, req.index);
  if (!def) return done(def.error());
  partition_index(*def, db.partitioned, *ddoc);
  if (def->signature != req.signature)
    return done(status{errc::not_implemented, "this node indexes " + req.ddoc_id + "/" + req.index +
                                                  " under another signature (a different release)"});
  sd.def = std::move(*def);
  start_local(db, range, shard, sd, req, std::move(done));
}

result<std::vector<search_copy_page>> search_reader::pages_of(const db_meta& db, const search_copy_request& req,
                                                              const std::string& partition) {
  const std::vector<size_t> ranges =
      partition.empty() ? coordinator::all_ranges(db) : std::vector<size_t>{coord_.partition_index(db, partition)};
  // A copy whose index is behind answers after bringing it up to date: waited for as long as a
  // view's (view_permsg_timeout), not the request timeout.
  auto pages = coord_.each_range<search_copy_page>(
      db, ranges,
      [&](shard_copy& copy, size_t, shard_copy::answer<search_copy_page> done) {
        copy.start_search(req, std::move(done));
      },
      {}, coord_.view_timeout());
  std::vector<search_copy_page> out;
  for (auto& p : pages) {
    if (!p.value) return p.value.error();
    out.push_back(std::move(*p.value));
    out.back().node = p.copy->node();
  }
  return out;
}

namespace {

search_copy_request request_of(const search_design& sd) {
  search_copy_request req;
  req.api = sd.def.api;
  req.ddoc_id = sd.ddoc_id;
  req.rev = sd.rev;
  req.ddoc = sd.ddoc_json;
  req.index = sd.def.name;
  req.signature = sd.def.signature;
  req.parsed = &sd.def;
  return req;
}

}  // namespace

result<text_page> search_reader::query(const db_meta& db, const search_design& sd, const text_query& q, bool update,
                                       const std::string& partition) {
  search_copy_request req = request_of(sd);
  req.query = q;
  req.query.top_n = std::numeric_limits<size_t>::max();  // every value counted: exact sums here
  req.update = update;
  // A partition's documents are all in its range; the query keeps to them there.
  if (!partition.empty()) req.query.drilldown.push_back({"_partition", partition});
  if (db.ranges.size() > 1 && partition.empty())
    if (auto here = query_here(db, req, q)) return std::move(*here);
  if (db.ranges.size() > 1) {
    // Scores from every copy's statistics (a partition's query too: the whole database's), the
    // same whatever the number of ranges.
    req.what = search_copy_request::phase::stats;
    auto pages = pages_of(db, req, "");
    if (!pages) return pages.error();
    text_stats sum;
    for (const search_copy_page& p : *pages) sum.add(p.stats);
    req.stats = std::move(sum);
  }
  req.what = search_copy_request::phase::search;
  auto pages = pages_of(db, req, partition);
  if (!pages) return pages.error();
  return merge_pages(*pages, q);
}

std::optional<result<text_page>> search_reader::query_here(const db_meta& db, search_copy_request req,
                                                           const text_query& q) {
  req.what = search_copy_request::phase::hold;
  bool elsewhere = false;  // a range was offered a copy on another node (asked on this thread)
  auto pages = coord_.each_range<search_copy_page>(
      db, coordinator::all_ranges(db),
      [&](shard_copy& copy, size_t, shard_copy::answer<search_copy_page> done) {
        if (copy.local()) return copy.start_search(req, std::move(done));
        elsewhere = true;
        done(status{errc::unavailable, "not a copy of this node"});
      },
      {}, coord_.view_timeout());
  std::vector<std::shared_ptr<const text_index>> held;  // open while `parts` are searched
  std::vector<const text_index*> parts;
  for (auto& p : pages) {
    // A range with copies elsewhere: the two phases ask them. Only this node's copies (a build
    // that failed or outlasted the view timeout): its error, not the same wait again.
    if (!p.value) return elsewhere ? std::nullopt : std::optional<result<text_page>>(p.value.error());
    if (!p.value->index) return std::nullopt;
    held.push_back(std::move(p.value->index));
    parts.push_back(held.back().get());
  }
  return text_index::search(parts, q);
}

result<search_info> search_reader::info(const db_meta& db, const search_design& sd) {
  search_copy_request req = request_of(sd);
  req.what = search_copy_request::phase::describe;
  req.update = false;
  auto pages = pages_of(db, req, "");
  if (!pages) return pages.error();
  search_info out;
  for (const search_copy_page& p : *pages) {
    out.update_seq += p.indexed_seq;
    out.purge_seq += p.purge_seq;
    out.num_docs += p.doc_count;
    out.disk_size += p.disk_size;
    out.pending += p.copy_seq > p.indexed_seq ? p.copy_seq - p.indexed_seq : 0;
    out.updating = out.updating || p.updating;
  }
  return out;
}

}  // namespace settee
