#include "actors/view_index.hpp"

#include "query/mango_selector.hpp"

#include <set>

#include "actors/doc_render.hpp"
#include "actors/index_files.hpp"
#include "actors/view_partials.hpp"
#include "node/collation.hpp"
#include "node/crypto.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"

namespace settee {

std::string view_signature(const json& ddoc) {
  json what = json::object();
  what["language"] = ddoc.value("language", json("javascript"));
  what["options"] = ddoc.value("options", json::object());
  json views = json::object();
  if (const json& v = member(ddoc, "views"); v.is_object()) {
    for (const auto& [name, view] : v.items()) {
      if (name == "lib") {
        views["lib"] = view;  // modules a map may require()
        continue;
      }
      if (!view.is_object()) continue;
      views[name] = json{{"map", view.value("map", json())},
                         {"reduce", view.value("reduce", json())},
                         {"options", view.value("options", json::object())}};
    }
  }
  what["views"] = views;
  return crypto::sha256_hex(what.dump());
}

namespace {

// What every key of partition `partition` starts with: the collation's array of it, open.
std::string partition_prefix(const std::string& partition) {
  std::string p = collation::sort_key(json::array({partition}));
  p.pop_back();  // the array's end: a key and then the end follow
  return p;
}

}  // namespace

std::string partition_sort_key(const std::string& partition, const std::string& key) {
  return partition_prefix(partition) + key + '\0';
}

view_scan partition_scan(const view_scan& s, const std::string& partition) {
  const std::string prefix = partition_prefix(partition);
  view_scan out = s;
  for (view_bound* b : {&out.low, &out.high}) {
    if (b->set) {
      b->sort_key = partition_sort_key(partition, b->sort_key);
      continue;
    }
    // No type tag reaches 0xff: prefix + 0xff is past every key of the partition.
    *b = view_bound{true, b == &out.low ? prefix : prefix + '\xff', std::nullopt, b == &out.low};
  }
  return out;
}

design_views views_of(const std::string& db_key, bool partitioned_db, const std::string& ddoc_id,
                      const std::string& rev, const json& ddoc) {
  design_views out;
  out.db_name = db_key.substr(0, db_key.rfind('.'));  // the key is "<name>.<created>"
  out.partitioned = partitioned_db && member(member(ddoc, "options"), "partitioned") != json(false);
  out.local_seq = member(member(ddoc, "options"), "local_seq") == json(true);
  out.ddoc_id = ddoc_id;
  out.rev = rev;
  out.worker_key = worker_key(db_key, ddoc_id, rev);
  out.ddoc_json = ddoc.dump();
  out.signature = view_signature(ddoc);
  // A partitioned index keys its rows otherwise: not the file of the same views unpartitioned.
  if (out.partitioned) out.signature = crypto::sha256_hex(out.signature + "/partitioned");
  if (const json& v = member(ddoc, "views"); v.is_object())
    for (const auto& [name, view] : v.items())
      if (name != "lib" && view.is_object() && view.contains("map") && view["map"].is_string()) {
        out.names.push_back(name);
        const json& reduce = member(view, "reduce");
        auto b =
            reduce.is_string() ? builtin_of(reduce.get<std::string>()) : result<builtin_reduce>(builtin_reduce::none);
        out.builtins.push_back(b ? *b : builtin_reduce::none);
        out.js_reduces.push_back(reduce.is_string() && b && *b == builtin_reduce::none);
      }
  return out;
}

namespace {

// Rows one document emits under one key in the order of their values, as couch_mrview_updater's
// lists:sort (Erlang's term order), not in emit order (their positions number them in this order).
// `emitted` holds the [key, value] pairs `rows` were made from; a document with no key twice (the
// usual case) costs one sort of indexes.
void order_duplicate_keys(const json& emitted, std::vector<view_row_in>& rows) {
  if (rows.size() < 2) return;
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (rows[a].sort_key != rows[b].sort_key) return rows[a].sort_key < rows[b].sort_key;
    return erlang_compare(emitted[a][1], emitted[b][1]) < 0;
  });
  bool twice = false;
  for (size_t i = 1; i < order.size() && !twice; ++i) twice = rows[order[i]].sort_key == rows[order[i - 1]].sort_key;
  if (!twice) return;
  std::vector<view_row_in> sorted;
  sorted.reserve(rows.size());
  for (size_t i : order) sorted.push_back(std::move(rows[i]));
  rows = std::move(sorted);
}

// The rows one document emitted, per view, from the worker's answer for it (a partitioned view's
// keyed by the document's partition too).
status rows_of(const json& per_view, size_t views, bool partitioned, view_doc& out) {
  if (!per_view.is_array() || per_view.size() != views) return {errc::internal, "the map answered the wrong shape"};
  out.views.assign(views, {});
  for (size_t v = 0; v < views; ++v) {
    if (!per_view[v].is_array()) return {errc::internal, "the map answered the wrong shape"};
    for (const json& pair : per_view[v]) {
      if (!pair.is_array() || pair.size() != 2) return {errc::internal, "the map answered the wrong shape"};
      std::string key = collation::sort_key(pair[0]);
      if (partitioned) key = partition_sort_key(out.id.substr(0, out.id.find(':')), key);
      out.views[v].push_back({std::move(key), pair[0].dump(), pair[1].dump()});
    }
    order_duplicate_keys(per_view[v], out.views[v]);
  }
  return {};
}

// Maps `docs` (rendered winners; their documents in `out`, ids set) in one exchange (js_pool's
// run_batch: a document that fails alone emits nothing, logged).
status map_batch(js_pool& js, const design_views& dv, const std::vector<std::string>& docs,
                 std::vector<view_doc*>& out) {
  js_batch b;
  b.where = "map of " + dv.db_name + "/" + dv.ddoc_id;
  b.exchange = [&](const std::string& body, size_t n, bool alone) {
    auto r = js.map(dv.worker_key, dv.ddoc_json, dv.names, body, n);
    if (r && !alone) metrics::node().view_docs_mapped += n;
    return r;
  };
  b.accept = [&](size_t i, const json& answer) { return rows_of(answer, dv.names.size(), dv.partitioned, *out[i]); };
  b.failed_alone = [&](size_t i, const js_reply& r) {
    log::warning(b.where + " failed on document " + out[i]->id + " (" + r.name + ": " + r.reason +
                 "): it emits nothing");
    out[i]->views.assign(dv.names.size(), {});
  };
  return run_batch(b, docs);
}

// The copy's purge requests the index has not applied (issue 35): documents they removed lose
// their rows (one that kept leaves moved to a new seq: the changes bring it again). An index that
// had indexed something and whose requests were forgotten before it applied them (the copy's
// _purged_infos_limit) cannot tell which documents went: it starts again, as CouchDB's does.
status apply_purges(const shard_store::snapshot& snap, view_store& index) {
  auto p = purges_after(snap, index.purge_seq(), index.seq() != 0);
  if (!p) return p.error();
  switch (p->what) {
    case index_purges::step::none:
      return {};
    case index_purges::step::record:
      return index.apply({}, 0, nullptr, p->purge_seq);
    case index_purges::step::rebuild:
      log::warning("a view index missed purge requests its copy forgot (_purged_infos_limit): it is built again");
      return index.clear(p->purge_seq);
    case index_purges::step::remove:
      break;
  }
  std::vector<view_doc> gone;
  for (std::string& id : p->gone) gone.push_back(view_doc{std::move(id), {}});
  return index.apply(gone, index.seq(), nullptr, p->purge_seq);
}

}  // namespace

status update_view_index(const shard_store& store, view_store& index, js_pool& js, const design_views& dv,
                         uint64_t target, size_t batch, size_t batch_bytes,
                         const std::function<bool(uint64_t indexed_seq)>& progress, const js_reduce_options& reduce) {
  if (dv.names.empty()) return {};
  const view_partials partials(dv, js, reduce);
  for (;;) {
    auto snap = store.read();
    if (!snap) return snap.error();
    if (auto st = apply_purges(*snap, index); !st) return st;
    uint64_t since = index.seq(), last = since;
    if (target && since >= target) return index.settle(partials);
    // The next batch: the changed documents after `since`, each once (its latest change), up to
    // `batch` of them or batch_bytes of bodies (one exchange stays far below a worker's answer cap).
    std::vector<view_doc> docs;
    std::vector<uint64_t> seqs;
    std::vector<std::string> bodies;
    docs.reserve(batch);
    snap->scan_changes(since, [&](const change_entry& e) {
      seqs.push_back(e.seq);
      docs.push_back(view_doc{e.id, {}});
      return docs.size() < batch;
    });
    if (!snap->fault()) return snap->fault();
    if (docs.empty()) return index.settle(partials);  // nothing after `since`: up to date
    size_t bytes = 0, taken = 0;
    std::vector<size_t> mapped_at;
    // What a map function sees, as couch_index_updater opens documents for it.
    render_options seen_by_map;
    seen_by_map.conflicts = seen_by_map.deleted_conflicts = true;
    seen_by_map.local_seq = dv.local_seq;
    for (; taken < docs.size() && (taken == 0 || bytes < batch_bytes); ++taken) {
      doc_info info;
      const view_doc& d = docs[taken];
      if (d.id.compare(0, 8, "_design/") == 0 || !snap->doc(d.id, info) || info.tree.winner_deleted()) continue;
      bodies.push_back(render_winner(*snap, info, seen_by_map));
      bytes += bodies.back().size();
      mapped_at.push_back(taken);
    }
    if (!snap->fault()) return snap->fault();
    docs.resize(taken);
    last = seqs[taken - 1];
    std::vector<view_doc*> mapped;
    for (size_t i : mapped_at) mapped.push_back(&docs[i]);
    if (!bodies.empty())
      if (auto st = map_batch(js, dv, bodies, mapped); !st) return st;
    for (auto& d : docs)
      if (d.views.empty()) d.views.assign(dv.names.size(), {});  // deleted, or a design document
    // The last batch (fewer than asked for) makes the changed blocks' partials in its transaction.
    if (auto st = index.apply(docs, last, seqs.size() < batch && taken == seqs.size() ? &partials : nullptr); !st)
      return st;
    if (progress && !progress(last)) return status{errc::unavailable, "the index update was stopped"};
  }
}

}  // namespace settee
