#include "actors/search_index.hpp"

#include "actors/doc_render.hpp"
#include "actors/index_files.hpp"
#include "node/log.hpp"
#include "query/mango_text.hpp"
#include "search/search_fields.hpp"

namespace settee {

namespace {

constexpr size_t commit_docs = 20000;

// The design document's member holding the index's function: ["nouveau", name] or ["indexes", name].
json function_of(const search_index_def& def) {
  return json::array({json::array({def.api == search_api::nouveau ? "nouveau" : "indexes", def.name})});
}

// A partitioned index knows each document's partition (its id before the first colon).
void add_partition(const search_target& t, text_doc& d) {
  if (t.def.partitioned && !d.fields.empty())
    d.fields.push_back({text_field::kind::string, "_partition", d.id.substr(0, d.id.find(':')), 0, false, false});
}

// One document's fields from the worker's answer for it (one function: the first of its list).
void fields_into(const search_target& t, const json& per_function, text_doc& out) {
  if (!per_function.is_array() || per_function.empty()) return;
  auto fields = fields_of(t.def.api, per_function[0]);
  if (!fields) {
    log::info("index function " + t.def.ddoc_id + "/" + t.def.name + " of " + t.db_name + " raised exception {" +
              fields.error().reason + "} with doc._id " + out.id);
    return;
  }
  out.fields = std::move(*fields);
  add_partition(t, out);
}

// Indexes `bodies` (rendered winners; their documents in `out`, ids set) in one exchange
// (js_pool's run_batch: a document that fails alone indexes nothing, logged).
status index_batch(js_pool& js, const search_target& t, const std::vector<std::string>& bodies,
                   std::vector<text_doc*>& out) {
  js_batch b;
  b.where = "index function of " + t.db_name + "/" + t.def.ddoc_id + "/" + t.def.name;
  b.exchange = [&](const std::string& body, size_t n, bool) {
    return js.index(t.worker_key, t.ddoc_json, function_of(t.def), body, n);
  };
  b.accept = [&](size_t i, const json& answer) {
    fields_into(t, answer, *out[i]);
    return status{};
  };
  b.failed_alone = [&](size_t i, const js_reply& r) {
    log::warning(b.where + " failed on document " + out[i]->id + " (" + r.name + ": " + r.reason +
                 "): it indexes nothing");
  };
  return run_batch(b, bodies);
}

// A Mango text index's documents (`bodies` as they are stored, with _id and _rev): their fields
// made here (query/mango_text), no JavaScript.
void index_mango(const search_target& t, const std::vector<std::string>& bodies, std::vector<text_doc*>& out) {
  const text_document_fields mango_fields(t.def.mango);
  for (size_t i = 0; i < bodies.size(); ++i) {
    auto doc = parse_json(bodies[i]);
    if (!doc || !doc->is_object()) continue;
    out[i]->fields = mango_fields(*doc);
    add_partition(t, *out[i]);
  }
}

// The fields of the documents of `bodies`: a Mango text index's made here, an index function's
// by the workers.
status index_bodies(js_pool& js, const search_target& t, const std::vector<std::string>& bodies,
                    std::vector<text_doc*>& out) {
  if (!t.def.mango.is_null()) {
    index_mango(t, bodies, out);
    return {};
  }
  return bodies.empty() ? status{} : index_batch(js, t, bodies, out);
}

// The copy's purge requests the index has not applied: their documents that are gone leave it.
status apply_purges(const shard_store::snapshot& snap, text_index& index) {
  auto p = purges_after(snap, index.purge_seq(), index.seq() != 0);
  if (!p) return p.error();
  switch (p->what) {
    case index_purges::step::none:
      return {};
    case index_purges::step::record:
      return index.apply({}, 0, p->purge_seq);
    case index_purges::step::rebuild:
      log::warning("a search index missed purge requests its copy forgot (_purged_infos_limit): it is built again");
      return index.clear(p->purge_seq);
    case index_purges::step::remove:
      break;
  }
  std::vector<text_doc> gone;
  for (std::string& id : p->gone) gone.push_back(text_doc{std::move(id), {}});
  return index.apply(gone, index.seq(), p->purge_seq);
}

}  // namespace

status update_search_index(const shard_store& store, text_index& index, js_pool& js, const search_target& t,
                           uint64_t target, size_t batch, size_t batch_bytes,
                           const std::function<bool(uint64_t indexed_seq)>& progress) {
  size_t staged = 0;     // documents staged since the last commit
  uint64_t pending = 0;  // the seq they reach
  for (;;) {
    auto snap = store.read();
    if (!snap) return snap.error();
    // Purge requests between commits (clear() would drop what is staged), so at the start and
    // once more after the last commit.
    if (staged == 0)
      if (auto st = apply_purges(*snap, index); !st) return st;
    const uint64_t since = staged > 0 ? pending : index.seq();
    if (target && since >= target) {
      if (staged == 0) return {};
      if (auto st = index.apply({}, pending, index.purge_seq()); !st) return st;
      staged = 0;
      continue;
    }
    std::vector<text_doc> docs;
    std::vector<uint64_t> seqs;
    snap->scan_changes(since, [&](const change_entry& e) {
      seqs.push_back(e.seq);
      docs.push_back(text_doc{e.id, {}});
      return docs.size() < batch;
    });
    if (!snap->fault()) return snap->fault();
    if (docs.empty()) {  // nothing after `since`: up to date
      if (staged == 0) return {};
      if (auto st = index.apply({}, pending, index.purge_seq()); !st) return st;
      staged = 0;
      continue;
    }
    std::vector<std::string> bodies;
    std::vector<text_doc*> indexed;
    size_t bytes = 0, taken = 0;
    render_options seen;  // what an index function sees, as CouchDB opens documents for it (Mango: as _find)
    seen.conflicts = seen.deleted_conflicts = t.def.mango.is_null();
    for (; taken < docs.size() && (taken == 0 || bytes < batch_bytes); ++taken) {
      doc_info info;
      text_doc& d = docs[taken];
      if (d.id.compare(0, 8, "_design/") == 0 || !snap->doc(d.id, info) || info.tree.winner_deleted()) continue;
      bodies.push_back(render_winner(*snap, info, seen));
      bytes += bodies.back().size();
      indexed.push_back(&d);
    }
    if (!snap->fault()) return snap->fault();
    docs.resize(taken);
    const uint64_t last = seqs[taken - 1];
    if (auto st = index_bodies(js, t, bodies, indexed); !st) return st;
    // A commit (an fsync, and a segment for Lucene to merge later) every commit_docs documents
    // or at the end; what was staged before a crash is indexed again from the last commit.
    staged += docs.size();
    if (staged >= commit_docs) {
      if (auto st = index.apply(docs, last, index.purge_seq()); !st) return st;
      staged = 0;
    } else if (auto st = index.stage(docs); !st) {
      return st;
    }
    pending = last;
    if (progress && !progress(last)) {
      if (staged > 0)
        if (auto st = index.apply({}, pending, index.purge_seq()); !st) return st;
      return status{errc::unavailable, "the index update was stopped"};
    }
  }
}

}  // namespace settee
