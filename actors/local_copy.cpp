#include "actors/local_copy.hpp"

#include "actors/bridge.hpp"
#include "actors/doc_render.hpp"
#include "actors/internal_replication.hpp"
#include "node/json.hpp"

namespace settee {

namespace {

// CouchDB collation of a string key against a bound of any JSON type:
// null < false < true < numbers < strings < arrays < objects.
int compare_key(const std::string& id, const json& bound) {
  if (bound.is_string()) {
    const std::string& b = bound.get_ref<const std::string&>();
    return id < b ? -1 : id > b ? 1 : 0;
  }
  return (bound.is_array() || bound.is_object()) ? -1 : 1;
}

}  // namespace

void local_copy::submit(std::shared_ptr<write_op> op, std::function<void()> done) const {
  submit_write(shard_.writer, std::move(op), std::move(done), shard_.store);  // the file stays open until then
}

result<shard_summary> local_copy::summary() {
  shard_header hd = shard_.store->header();
  return shard_summary{hd.shard_uuid,    hd.update_seq,    hd.doc_count,
                       hd.doc_del_count, hd.external_size, shard_.store->file_size(),
                       hd.revs_limit,    hd.purge_seq};
}

namespace {

// A document of a feed or listing (include_docs): the winner, with its attachments' bytes read
// from the same snapshot when `attachments`.
std::string render_listed(const shard_store::snapshot& snap, const doc_info& d, bool conflicts, bool attachments,
                          bool encoding_info) {
  render_options opts;
  opts.conflicts = conflicts;
  opts.att_encoding_info = encoding_info;
  attachments::blob_bytes blobs;
  std::string body;
  if (attachments && snap.winner_body(d, body)) {
    opts.attachments = true;
    opts.blobs = &blobs;
    for (const auto& a : attachments::shown_after(body, 0)) {
      std::string bytes;
      if (snap.blob(a.key, bytes)) blobs.emplace(a.key, std::move(bytes));
    }
  }
  return render_winner(snap, d, opts);
}

}  // namespace

result<changes_page> local_copy::changes(const changes_request& req) {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  changes_page page;
  auto collect = [&](const change_entry& e) {
    change_row row;
    row.e = e;
    if (req.with_docs) {
      doc_info d;
      if (snap->doc(e.id, d)) row.doc = render_listed(*snap, d, req.conflicts, req.attachments, req.att_encoding_info);
    }
    page.rows.push_back(std::move(row));
    return page.rows.size() < req.limit;
  };
  if (req.limit == 0) {
    // A count (changes_feed::pending): the changes after `since` (descending: below it). A page
    // of rows counts nothing, which would make reading a whole feed quadratic.
    page.pending = req.descending ? snap->count_changes_before(req.since) : snap->count_changes_after(req.since);
  } else if (req.descending) {
    if (req.since != 1) snap->scan_changes_descending(req.since, collect);
  } else {
    uint64_t since = req.since;
    if (req.not_before > 0) page.skipped_to = since = snap->skip_before_time(since, req.not_before);
    snap->scan_changes(since, collect);
  }
  if (!snap->fault()) return snap->fault();  // never a page that silently skips a change
  return page;
}

result<resolved_since> local_copy::resolve_since(const std::string& uuid_prefix, uint64_t seq) {
  return resolve_on_copy(shard_, uuid_prefix, seq);
}

result<all_docs_page> local_copy::all_docs(const all_docs_request& req) {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  all_docs_page page;
  page.doc_count = shard_.store->header().doc_count;
  auto add = [&](const doc_info& d) {
    int w = d.tree.winner();
    all_docs_row r{d.id, d.tree.rev(w).str(), d.tree.nodes()[w].deleted, true, ""};
    if (req.include_docs && !r.deleted) {
      r.doc = render_listed(*snap, d, req.conflicts, req.attachments, req.att_encoding_info);
    }
    page.rows.push_back(std::move(r));
  };
  if (req.by_keys) {
    for (const std::string& id : req.keys) {
      doc_info d;
      if (snap->doc(id, d))
        add(d);
      else
        page.rows.push_back({id, "", false, false, ""});
    }
    if (!snap->fault()) return snap->fault();
    return page;
  }
  std::optional<json> start = req.start.empty() ? std::nullopt : parse_json(req.start);
  std::optional<json> end = req.end.empty() ? std::nullopt : parse_json(req.end);
  // Keys are JSON texts: one that is not would silently widen the range to every document.
  if ((!req.start.empty() && !start) || (!req.end.empty() && !end))
    return status{errc::bad_request, "a key range bound is not JSON"};
  // The scan starts at the start key; the live documents before it (CouchDB's `offset`) come from
  // the rank table, not from a scan of them (storage/doc_rank.hpp).
  std::string from;
  if (start && start->is_string()) {
    from = start->get<std::string>();
    uint64_t lower = snap->live_before(from);
    if (!req.descending) {
      page.before = lower;
    } else {  // before = the live documents after the start key
      doc_info at;
      bool live_at = snap->doc(from, at) && !at.tree.winner_deleted();
      page.before = snap->live_total() - lower - (live_at ? 1 : 0);
    }
  } else if (start) {
    // Ids sort after null, booleans and numbers, and before arrays and objects (CouchDB's collation).
    bool ids_after = !(start->is_array() || start->is_object());
    if (ids_after == req.descending) {  // every id is on the near side of the start key
      page.before = snap->live_total();
      if (!snap->fault()) return snap->fault();
      return page;
    }
  }
  snap->scan_docs(from, req.descending, [&](const doc_info& d) {
    if (d.tree.winner_deleted() && !req.with_deleted) return true;
    if (end) {
      int vs_end = compare_key(d.id, *end);
      bool past = req.descending ? (req.inclusive_end ? vs_end < 0 : vs_end <= 0)
                                 : (req.inclusive_end ? vs_end > 0 : vs_end >= 0);
      if (past) return false;
    }
    add(d);
    return page.rows.size() < req.max_rows;
  });
  if (!snap->fault()) return snap->fault();  // a listing never skips what it cannot read
  return page;
}

result<time_seq_state> local_copy::time_seq(bool reset) {
  if (reset) {
    auto op = std::make_shared<write_op>();
    op->what = write_op::kind::time_seq_reset;
    if (auto st = write_one(shard_.writer, op, timeout_); !st) return st;
  }
  shard_header hd = shard_.store->header();
  return time_seq_state{hd.time_seq, hd.update_seq};
}

result<std::vector<doc_copy>> local_copy::read_docs(const std::vector<std::string>& ids, doc_bodies bodies) const {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  std::vector<doc_copy> out(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    doc_copy& d = out[i];
    d.id = ids[i];
    d.found = snap->doc(ids[i], d.info);
    if (!snap->fault()) return snap->fault();  // unreadable is not missing
    if (!d.found || bodies == doc_bodies::none) continue;
    for (size_t k = 0; k < d.info.tree.nodes().size(); ++k) {
      if (bodies == doc_bodies::leaves && !d.info.tree.is_leaf(static_cast<int>(k))) continue;
      rev_id rev = d.info.tree.rev(static_cast<int>(k));
      std::string body;
      if (snap->body(d.id, rev, body)) d.bodies.emplace_back(std::move(rev), std::move(body));
    }
    if (!snap->fault()) return snap->fault();
  }
  return out;
}

result<std::string> local_copy::read_blob(const std::string& key, uint64_t offset, uint64_t length) {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  std::string out;
  if (snap->blob_range(key, offset, length, out)) return out;
  if (!snap->fault()) return snap->fault();
  return status{errc::not_found, "Document is missing attachment"};
}

void local_copy::open_docs(const std::vector<std::string>& ids, doc_bodies bodies, docs_done done) {
  done(read_docs(ids, bodies));
}

result<std::optional<local_doc>> local_copy::open_local(const std::string& id) {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  settee::local_doc d;
  if (snap->local(id, d)) return std::optional<settee::local_doc>(std::move(d));
  if (!snap->fault()) return snap->fault();
  return std::optional<settee::local_doc>();
}

result<uint64_t> local_copy::write_local(const local_update& u) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = u;
  if (auto st = write_one(shard_.writer, op, timeout_); !st) return st;
  return op->local_rev;
}

result<std::vector<local_doc>> local_copy::list_local() {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  std::vector<settee::local_doc> docs;
  snap->scan_local([&](const settee::local_doc& d) {
    docs.push_back(d);
    return true;
  });
  if (!snap->fault()) return snap->fault();
  return docs;
}

result<bool> local_copy::stage_blob(const std::string& key, uint64_t offset, const std::string& piece) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::stage_blob;
  op->blob_key = key;
  op->blob_offset = offset;
  op->blob_piece = piece;
  if (auto st = write_one(shard_.writer, op, timeout_); !st) return st;
  return op->blob_whole;
}

status local_copy::drop_staged(const std::string& key) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::drop_staged;
  op->blob_key = key;
  return write_one(shard_.writer, op, timeout_);
}

status local_copy::set_revs_limit(uint32_t limit) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::revs_limit;
  op->revs_limit = limit;
  return write_one(shard_.writer, op, timeout_);
}

void local_copy::update_docs(std::vector<doc_update> docs, write_done done) {
  auto op = std::make_shared<write_op>();
  op->docs = std::move(docs);
  submit(op, [op, done = std::move(done)]() {
    if (!op->st)
      done(op->st);
    else
      done(std::move(op->results));
  });
}

void local_copy::purge_docs(std::vector<purge_info> reqs, purge_done done) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::purge;
  op->purges = std::move(reqs);
  submit(op, [op, done = std::move(done)]() {
    if (!op->st)
      done(op->st);
    else
      done(std::move(op->purged));
  });
}

result<purge_page> local_copy::purge_infos(uint64_t since, uint32_t limit) {
  auto snap = shard_.store->read();
  if (!snap) return snap.error();
  purge_page page;
  shard_header hd;
  if (!snap->header(hd)) return snap->fault() ? status{errc::internal, "unreadable header"} : snap->fault();
  page.purge_seq = hd.purge_seq;
  page.limit = hd.purged_infos_limit;
  page.oldest = snap->oldest_purge_seq();
  if (limit > 0) {
    snap->scan_purges(since, [&](const purge_info& p) {
      page.infos.push_back(p);
      return page.infos.size() < limit;
    });
  }
  if (!snap->fault()) return snap->fault();
  return page;
}

status local_copy::set_purged_infos_limit(uint32_t limit) {
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::purged_infos_limit;
  op->purged_infos_limit = limit;
  return write_one(shard_.writer, op, timeout_);
}

void local_copy::start_view(const view_copy_request& req, answer<view_page> done) {
  if (!readers_ || !db_) return shard_copy::start_view(req, std::move(done));
  readers_->view_rows(*db_, range_, shard_, req, std::move(done));
}

void local_copy::start_mango(const mango_copy_request& req, answer<mango_page> done) {
  if (!readers_ || !db_) return shard_copy::start_mango(req, std::move(done));
  readers_->mango_rows(*db_, range_, shard_, req, std::move(done));
}

void local_copy::start_search(const search_copy_request& req, answer<search_copy_page> done) {
  if (!readers_ || !db_) return shard_copy::start_search(req, std::move(done));
  readers_->search_rows(*db_, range_, shard_, req, std::move(done));
}

}  // namespace settee
