#include "actors/find_reader.hpp"

#include <algorithm>
#include <future>
#include <queue>

#include "actors/bridge.hpp"
#include "actors/change_notifier.hpp"
#include "actors/doc_render.hpp"
#include "actors/view_jobs.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

// Commits `op` on the copy's replica and waits for it, at most `timeout` (an HTTP worker or a
// peer's RPC pool thread waits here: a replica that does not answer must not hold it).
status commit(const shard_handle& shard, const std::shared_ptr<write_op>& op, std::chrono::milliseconds timeout) {
  auto committed = std::make_shared<std::promise<void>>();  // outlives a wait that gave up
  std::future<void> done = committed->get_future();
  submit_write(
      shard.writer, op, [committed] { committed->set_value(); }, shard.store);
  if (done.wait_for(timeout) != std::future_status::ready)
    return status{errc::timeout, "the copy did not commit a JSON index change in time"};
  return op->st;
}

std::string job_id(const std::string& copy_name, const std::string& signature) {
  return "mango " + copy_name + " " + signature;
}

// One copy's build of one JSON index: each step indexes docs_per_step documents of the copy in
// one transaction (writes go on between steps, and keep the index themselves).
class mango_build final : public job {
 public:
  mango_build(std::string copy_name, shard_handle shard, json_index_def def, std::chrono::milliseconds timeout)
      : copy_(std::move(copy_name)), shard_(std::move(shard)), def_(std::move(def)), timeout_(timeout) {
    const shard_header h = shard_.store->header();
    total_ = h.doc_count + h.doc_del_count;
  }

  json task() const override {
    return json{{"type", "indexer"},           {"database", copy_}, {"design_document", nullptr}, {"index", "json"},
                {"signature", def_.signature}, {"changes_done", 0}, {"total_changes", total_},    {"progress", 0}};
  }

  job_next step(job_context& ctx) override {
    auto op = std::make_shared<write_op>();
    op->what = write_op::kind::index_build;
    op->index.signature = def_.signature;
    op->index_limit = find_reader::docs_per_step;
    if (auto st = commit(shard_, op, timeout_); !st) {
      if (st.code == errc::not_found) return job_next::done();  // the index was dropped meanwhile
      return job_next::fail(st.reason);
    }
    done_ += find_reader::docs_per_step;
    if (op->index.built) return job_next::done();
    ctx.failpoint("mango:build");  // kill tests: the index is part built, on disk
    ctx.progress(json{{"changes_done", std::min(done_, total_)},
                      {"progress", total_ ? std::min<uint64_t>(99, done_ * 100 / total_) : 99}});
    return job_next::more();
  }

  void ended(job_next::kind how, const std::string& reason) override {
    if (how == job_next::kind::failed) log::warning("JSON index build on " + copy_ + " stopped: " + reason);
  }

 private:
  std::string copy_;
  shard_handle shard_;
  json_index_def def_;
  std::chrono::milliseconds timeout_;
  uint64_t total_ = 0, done_ = 0;
};

// Index `signature` as snapshot `snap` has it; nullopt when the copy does not keep it.
std::optional<json_index_def> index_in(const shard_store::snapshot& snap, const std::string& signature) {
  for (json_index_def& d : snap.json_indexes())
    if (d.signature == signature) return std::move(d);
  return std::nullopt;
}

// Whether position `pos` is in one of `ranges` and past `after` in the direction.
bool wanted(const std::string& pos, const mango_copy_request& req) {
  if (!req.after.empty() && (req.descending ? pos >= req.after : pos <= req.after)) return false;
  for (const auto& [low, high] : req.ranges)
    if (pos >= low && pos < high) return true;
  return false;
}

}  // namespace

find_reader::find_reader(coordinator& coord, job_runner& jobs, std::shared_ptr<const mango_keys> keys,
                         change_notifier* notifier, std::chrono::milliseconds recheck)
    : coord_(coord), jobs_(jobs), keys_(std::move(keys)), notifier_(notifier), recheck_(recheck) {}

result<find_reader::index_list> find_reader::indexes(const db_meta& db,
                                                     const std::function<result<std::vector<query_index>>()>& load) {
  const uint64_t version = notifier_ ? notifier_->design_version() : 0;
  const std::string key = db.key();
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && it->second.design_version == version && mono::now() - it->second.loaded < recheck_)
      return it->second.list;
  }
  auto loaded = load();
  if (!loaded) return loaded.error();
  auto list = std::make_shared<const std::vector<query_index>>(std::move(*loaded));
  std::lock_guard<std::mutex> lock(mu_);
  if (cache_.size() >= 4096) cache_.clear();  // databases long gone
  cache_[key] = cached{list, version, mono::now()};
  return list;
}

void find_reader::start_build(const std::string& copy_name, const shard_handle& shard, const json_index_def& def) {
  const std::string id = job_id(copy_name, def.signature);
  if (def.built || jobs_.has(id)) return;
  jobs_.submit(id, view_build::lane, std::make_shared<mango_build>(copy_name, shard, def, coord_.timeout()));
}

result<json_index_def> find_reader::define(const shard_handle& shard, const mango_copy_request& req) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::index_define;
  op->index.signature = req.signature;
  op->index.definition = req.definition;
  if (auto st = commit(shard, op, coord_.timeout()); !st) return st;
  return op->index;
}

namespace {

// One copy's read of one request, over one snapshot: the page it fills, and the first failure of
// the selector (a document past the evaluation's bounds).
struct copy_read {
  const shard_store::snapshot& snap;
  const mango_copy_request& req;
  const mango_selector& selector;
  mango_page& page;
  render_options opts;
  status failed;

  // Renders document `d`'s winner into `text` and matches it; true when it matches (the parsed
  // document into `doc_out` when given).
  bool matching(const doc_info& d, std::string& text, json* doc_out) {
    text = render_winner(snap, d, opts);
    auto doc = parse_json(text);
    ++page.docs_examined;
    if (!doc) return false;
    auto ok = selector.matches(*doc);
    if (!ok) {
      failed = ok.error();
      return false;
    }
    if (doc_out && *ok) *doc_out = std::move(*doc);
    return *ok;
  }

  // How many rows the ranges of index `number` hold, up to the cap.
  void estimate(uint32_t number) {
    for (const auto& [low, high] : req.ranges) {
      if (page.estimated >= req.estimate_cap) break;
      page.estimated += snap.count_json_index(number, low, high, req.estimate_cap - page.estimated);
    }
  }

  // The rows of the ranges of built index `number`, after `req.after`, in the query's direction.
  void from_index(uint32_t number) {
    std::vector<std::pair<std::string, std::string>> ranges = req.ranges;
    if (req.descending) std::reverse(ranges.begin(), ranges.end());
    for (auto [low, high] : ranges) {
      if (!req.after.empty()) {
        if (!req.descending) low = std::max(low, req.after + '\0');  // the first position after it
        if (req.descending) high = std::min(high, req.after);
      }
      if (low >= high) continue;
      snap.scan_json_index(number, low, high, req.descending, [&](std::string_view pos, std::string_view id) {
        ++page.keys_examined;
        doc_info d;
        if (!snap.doc(id, d) || d.tree.winner_deleted()) return true;
        std::string text;
        if (req.covered) {  // in the ranges: a match
          ++page.docs_examined;
          page.rows.push_back({std::string(pos), render_winner(snap, d, opts)});
        } else if (matching(d, text, nullptr)) {
          page.rows.push_back({std::string(pos), std::move(text)});
        }
        return failed && page.rows.size() < req.limit;
      });
      if (!failed || page.rows.size() >= req.limit) break;
    }
  }

  // An index not built yet: every document of the copy, its key made by `keys`, the first
  // `limit` matches in the index's order kept (a bounded heap).
  void by_scan(const mango_keys& keys, const std::string& definition) {
    auto before = [&](const mango_row& a, const mango_row& b) {
      return req.descending ? a.pos > b.pos : a.pos < b.pos;
    };
    std::priority_queue<mango_row, std::vector<mango_row>, decltype(before)> best(before);  // worst on top
    snap.scan_docs("", false, [&](const doc_info& d) {
      if (d.tree.winner_deleted() || d.id.rfind("_design/", 0) == 0) return true;
      ++page.keys_examined;
      std::string text;
      json doc;
      if (!matching(d, text, &doc)) return static_cast<bool>(failed);
      auto key = keys.key_of(definition, doc);
      if (!key) return true;
      mango_row row{json_index::position(*key, d.id), std::move(text)};
      if (!wanted(row.pos, req)) return true;
      if (best.size() < req.limit) {
        best.push(std::move(row));
      } else if (before(row, best.top())) {
        best.pop();
        best.push(std::move(row));
      }
      return true;
    });
    while (!best.empty()) {
      page.rows.push_back(best.top());
      best.pop();
    }
    std::reverse(page.rows.begin(), page.rows.end());
  }
};

}  // namespace

result<mango_page> find_reader::answer(const std::string& copy_name, const shard_handle& shard,
                                       const mango_copy_request& req) {
  // The index as the copy keeps it: defined first when it does not (its build started either way).
  auto snap = shard.store->read();
  if (!snap) return snap.error();
  auto def = index_in(*snap, req.signature);
  if (!def) {
    if (!snap->fault()) return snap->fault();
    auto made = define(shard, req);
    if (!made) return made.error();
    snap = shard.store->read();
    if (!snap) return snap.error();
    def = index_in(*snap, req.signature).value_or(*made);
  }
  start_build(copy_name, shard, *def);
  mango_page page;
  page.built = def->built;
  if (req.limit == 0 && !req.estimate) return page;
  auto selector_json = parse_json(req.selector);
  if (!selector_json) return status{errc::bad_request, "the selector is not JSON"};
  auto selector = mango_selector::compile_part(*selector_json);
  if (!selector) return selector.error();
  copy_read read{*snap, req, *selector, page, {}, {}};
  read.opts.conflicts = req.conflicts;
  if (req.estimate) {
    page.estimated = def->built ? 0 : UINT64_MAX;  // not built: unknown
    if (def->built) read.estimate(def->number);
  } else if (def->built) {
    read.from_index(def->number);
  } else {
    read.by_scan(*keys_, def->definition);
  }
  if (!read.failed) return read.failed;
  if (!snap->fault()) return snap->fault();
  return page;
}

result<std::vector<mango_page>> find_reader::pages(const db_meta& db, const mango_copy_request& req,
                                                   const std::vector<std::string>& after, std::optional<size_t> only) {
  const std::vector<size_t> ranges = only ? std::vector<size_t>{*only} : coordinator::all_ranges(db);
  auto answers =
      coord_.each_range<mango_page>(db, ranges, [&](shard_copy& copy, size_t k, shard_copy::answer<mango_page> done) {
        const size_t r = ranges[k];  // k: its place in `ranges`
        mango_copy_request mine = req;
        if (r < after.size()) mine.after = after[r];
        copy.start_mango(mine, std::move(done));
      });
  std::vector<mango_page> out(db.ranges.size());
  for (size_t k = 0; k < answers.size(); ++k) {
    if (!answers[k].value) return answers[k].value.error();
    out[ranges[k]] = std::move(*answers[k].value);
  }
  return out;
}

void find_reader::copy_rows(const db_meta& db, size_t range, const shard_handle& shard, const mango_copy_request& req,
                            shard_copy::answer<mango_page> done) {
  done(answer(shard_name(db.name, db.shard_id(range)), shard, req));
}

size_t find_reader::cleanup(const db_meta& db, const std::set<std::string>& keep) {
  size_t dropped = 0;
  for (size_t r = 0; r < db.ranges.size(); ++r) {
    if (!db.hosts(r)) continue;
    auto shard = coord_.shard(db, r);
    if (!shard) continue;
    auto snap = shard->store->read();
    if (!snap) continue;
    std::vector<json_index_def> defs = snap->json_indexes();
    *snap = shard_store::snapshot();  // released before the writes
    for (const json_index_def& d : defs) {
      if (keep.count(d.signature)) continue;
      jobs_.cancel(job_id(shard_name(db.name, db.shard_id(r)), d.signature), true);
      auto op = std::make_shared<write_op>();
      op->what = write_op::kind::index_drop;
      op->index.signature = d.signature;
      if (auto st = commit(*shard, op, coord_.timeout()); !st) {
        log::warning("dropping a JSON index of " + db.name + ": " + st.reason);
        continue;
      }
      ++dropped;
    }
  }
  return dropped;
}

}  // namespace settee
