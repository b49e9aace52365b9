#include "http/changes_feed.hpp"

#include "actors/internal_replication.hpp"
#include "http/doc_render.hpp"
#include "node/log.hpp"

namespace settee {

namespace {
constexpr size_t refill_batch = 512;
constexpr std::chrono::milliseconds remote_timeout{10000};
}  // namespace

result<changes_page> read_changes_page(const shard_handle& shard, const changes_request& req) {
  auto snap = shard.store->read();
  if (!snap) return snap.error();
  changes_page page;
  auto collect = [&](const change_entry& e) {
    change_row row;
    row.e = e;
    if (req.with_docs) {
      doc_info d;
      render_options ro;
      ro.conflicts = req.conflicts;
      if (snap->doc(e.id, d)) row.doc = render_winner(*snap, d, ro);
    }
    page.rows.push_back(std::move(row));
    return page.rows.size() < req.limit;
  };
  if (req.descending) {
    if (req.since != 1) snap->scan_changes_descending(req.since, collect);
  } else {
    uint64_t since = req.since;
    if (req.not_before > 0) page.skipped_to = since = snap->skip_before_time(since, req.not_before);
    snap->scan_changes(since, collect);
    page.pending = snap->count_changes_after(page.rows.empty() ? since : page.rows.back().e.seq);
  }
  if (!snap->fault()) return snap->fault();  // never a page that silently skips a change
  return page;
}

changes_feed::changes_feed(coordinator& coord, const db_meta& db, changes_options opts, std::string node_name)
    : coord_(coord), db_(db), opts_(std::move(opts)), node_name_(std::move(node_name)) {}

namespace {

// A `since` shaped YYYY-MM-DDTHH:MM:SSZ is a time (spec/time_seq.md section 7), valid or not.
bool shaped_like_time(const std::string& s) {
  if (s.size() != 20) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char want = i == 4 || i == 7 ? '-' : i == 10 ? 'T' : i == 13 || i == 16 ? ':' : i == 19 ? 'Z' : '0';
    if (want == '0' ? (s[i] < '0' || s[i] > '9') : s[i] != want) return false;
  }
  return true;
}

}  // namespace

status changes_feed::start_at_time(int64_t t) {
  shards_.resize(db_.q);
  handles_.resize(db_.q);
  for (size_t i = 0; i < db_.q; ++i) {
    shard_pos& p = shards_[i];
    p.range = db_.ranges[i];
    time_seq_state ts;
    std::string uuid;
    bool known = true;  // false: the copy keeps no time-seq (an older release): start at 0
    if (db_.hosts(i)) {
      auto h = coord_.shard(db_, i);
      if (!h) return h.error();
      handles_[i] = *h;
      shard_header hd = h->store->header();
      ts = {hd.time_seq, hd.update_seq};
      uuid = hd.shard_uuid;
      p.node = node_name_;
    } else {
      auto where = coord_.first_answer<resolved_since>(
          db_, i, coord_.copies(db_, i),
          [&](remote_shards& r, const std::string& n) {
            return r.resolve_since(n, db_.name, p.range.name(), "", 0, remote_timeout);
          },
          &p.node);
      if (!where) return where.error();
      auto bins = coord_.remote()->time_seq(p.node, db_.name, p.range.name(), false, remote_timeout);
      known = bins.ok();
      ts = bins ? *bins : time_seq_state{{}, where->update_seq};
      uuid = where->uuid;
      p.remote = true;
    }
    p.uuid_prefix = uuid.substr(0, uuid_prefix_length);
    p.top = ts.update_seq;
    if (opts_.descending) continue;  // a time is ignored going backwards: from the end, as since=now
    auto s = known && t >= 0 ? time_seq::since(ts.bins, t) : std::optional<uint64_t>(0);
    p.seq = s ? std::min(*s, ts.update_seq) : ts.update_seq;
    if (opts_.time_exact && t >= 0) p.not_before = t;
  }
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, p.node, p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
  return {};
}

status changes_feed::start(const std::string& since) {
  if (shaped_like_time(since)) {
    auto t = time_seq::parse_time(since);
    if (!t) return status{errc::bad_request, "invalid_time_format"};
    return start_at_time(*t);
  }
  std::vector<seq_entry> from;
  bool now = since == "now";
  if (!now) {
    auto decoded = decode_seq(since);
    if (!decoded) return decoded.error();
    from = std::move(*decoded);
  }
  shards_.resize(db_.q);
  handles_.resize(db_.q);
  for (size_t i = 0; i < db_.q; ++i) {
    shard_pos& p = shards_[i];
    p.range = db_.ranges[i];
    // The position the token gives for this range, if any.
    const seq_entry* given = nullptr;
    for (auto& e : from)
      if (e.range.begin == p.range.begin && e.range.end == p.range.end) given = &e;
    std::string prefix = given && !now ? given->uuid_prefix : "";
    uint64_t seq = given ? given->seq : 0;

    // This node's copy, else another node's: the one the token names first, then the others.
    resolved_since r;
    if (db_.hosts(i)) {
      auto h = coord_.shard(db_, i);
      if (!h) return h.error();
      handles_[i] = *h;
      r = resolve_on_copy(*h, prefix, seq);
      p.node = node_name_;
    } else {
      std::vector<std::string> nodes = coord_.copies(db_, i);
      if (given) {
        auto it = std::find(nodes.begin(), nodes.end(), given->node);
        if (it != nodes.end()) std::rotate(nodes.begin(), it, it + 1);
      }
      auto rr = coord_.first_answer<resolved_since>(
          db_, i, nodes,
          [&](remote_shards& rs, const std::string& n) {
            return rs.resolve_since(n, db_.name, p.range.name(), prefix, seq, remote_timeout);
          },
          &p.node);
      if (!rr) return rr.error();
      r = std::move(*rr);
      p.remote = true;
    }
    p.uuid_prefix = r.uuid.substr(0, uuid_prefix_length);
    p.top = r.update_seq;
    if (now || opts_.descending) {
      p.seq = opts_.descending ? 0 : r.update_seq;
      continue;
    }
    if (from.empty()) continue;  // since=0
    // Another copy of the range (e.g. the client's node died) is translated through the
    // replication checkpoints; anything else (another incarnation, another range layout) starts
    // the range from 0: more rows, never fewer, and the response says so (spec 11.1).
    p.seq = r.seq;
    resolutions_.emplace_back(p.range.name(), given ? r.resolution : resolved_since::how::rewound);
  }
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, p.node, p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
  return {};
}

bool changes_feed::has_remote() const {
  return std::any_of(shards_.begin(), shards_.end(), [](const shard_pos& p) { return p.remote; });
}

bool changes_feed::refill(size_t i) {
  shard_pos& p = shards_[i];
  if (p.remote) {
    changes_request req;
    req.since = p.seq;
    req.limit = refill_batch;
    req.descending = opts_.descending;
    req.with_docs = opts_.include_docs || opts_.filter_kind == changes_options::filter::selector;
    req.conflicts = opts_.conflicts;
    if (!opts_.descending && p.not_before) req.not_before = *p.not_before;
    if (opts_.descending && p.seq == 1) return false;
    auto page = coord_.remote()->changes(p.node, db_.name, p.range.name(), req, remote_timeout);
    if (!page) return false;  // the copy went away: the feed ends here, resumable from its last seq
    p.seq = std::max(p.seq, page->skipped_to);
    p.remote_pending = page->pending;
    for (auto& row : page->rows) {
      p.buffer.push_back(std::move(row.e));
      p.docs.push_back(std::move(row.doc));
    }
    return !p.buffer.empty();
  }
  auto snap = handles_[i].store->read();
  if (!snap) {
    log::error("changes feed of " + db_.name + " range " + p.range.name() + ": " + snap.error().reason);
    error_ = snap.error();
    return false;
  }
  p.snap = std::make_shared<shard_store::snapshot>(std::move(*snap));
  auto collect = [&](const change_entry& e) {
    p.buffer.push_back(e);
    return p.buffer.size() < refill_batch;
  };
  if (opts_.descending) {
    if (p.seq == 1) return false;  // consumed down to the first change
    p.snap->scan_changes_descending(p.seq, collect);
  } else {
    // A time-based start skips the bin's leading changes here, reading only their commit times.
    if (p.not_before) p.seq = p.snap->skip_before_time(p.seq, *p.not_before);
    p.snap->scan_changes(p.seq, collect);
  }
  if (!p.snap->fault()) error_ = p.snap->fault();
  return !p.buffer.empty();
}

bool changes_feed::wanted(size_t shard, const change_entry& e, const std::string& remote_doc) const {
  switch (opts_.filter_kind) {
    case changes_options::filter::none:
      return true;
    case changes_options::filter::doc_ids:
      return opts_.doc_ids.count(e.id) > 0;
    case changes_options::filter::design:
      return e.id.rfind("_design/", 0) == 0;
    case changes_options::filter::selector: {
      if (shards_[shard].remote) {
        auto doc = parse_json(remote_doc);
        return doc && opts_.selector->matches(*doc);
      }
      const auto& snap = *shards_[shard].snap;
      doc_info d;
      if (!snap.doc(e.id, d)) return false;
      auto doc = parse_json(render_winner(snap, d, {}));
      return doc && opts_.selector->matches(*doc);
    }
  }
  return true;
}

bool changes_feed::next(std::string& row) {
  for (;;) {
    if (!error_) return false;
    // The shard whose next change was committed first (descending: last) goes next.
    int best = -1;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].buffer.empty() && !refill(i)) continue;
      const change_entry& e = shards_[i].buffer.front();
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      int64_t bt = shards_[best].buffer.front().time_s;
      if (opts_.descending ? e.time_s > bt : e.time_s < bt) best = static_cast<int>(i);
    }
    if (best < 0) return false;
    shard_pos& p = shards_[best];
    change_entry e = std::move(p.buffer.front());
    p.buffer.pop_front();
    std::string doc;  // a remote copy's rendered winner, when asked for
    if (p.remote) {
      doc = std::move(p.docs.front());
      p.docs.pop_front();
    }
    p.seq = e.seq;
    if (p.not_before) {
      // The bin's leading changes from before the requested second are skipped; from the first
      // change at or after it on, everything is emitted (a clock that went back errs toward more).
      if (e.time_s < *p.not_before) continue;
      p.not_before.reset();
    }
    bool want = wanted(best, e, doc);
    if (want) row = render(best, e, doc);
    if (p.snap && !p.snap->fault()) error_ = p.snap->fault();
    if (!error_) return false;  // stop at what cannot be read: never skip it
    if (want) return true;
  }
}

std::string changes_feed::render(size_t shard, const change_entry& e, const std::string& remote_doc) {
  ++emitted_;
  std::string row = "{\"seq\":";
  bool real_seq = opts_.seq_interval <= 0 || emitted_ % static_cast<uint64_t>(opts_.seq_interval) == 0;
  row += real_seq ? quote(token()) : "null";
  row += ",\"id\":" + quote(e.id) + ",\"changes\":[";
  if (opts_.all_docs) {
    for (size_t i = 0; i < e.leaf_revs.size(); ++i)
      row += (i ? ",{\"rev\":" : "{\"rev\":") + quote(e.leaf_revs[i]) + "}";
  } else {
    row += "{\"rev\":" + quote(e.rev) + "}";
  }
  row += "]";
  if (e.deleted) row += ",\"deleted\":true";
  if (opts_.include_docs && shards_[shard].remote) {
    row += ",\"doc\":" + (remote_doc.empty() ? std::string("null") : remote_doc);
  } else if (opts_.include_docs) {
    doc_info d;
    const auto& snap = *shards_[shard].snap;
    row += ",\"doc\":";
    if (snap.doc(e.id, d)) {
      render_options ro;
      ro.conflicts = opts_.conflicts;
      row += render_winner(snap, d, ro);
    } else {
      row += "null";
    }
  }
  row += "}";
  return row;
}

std::string changes_feed::token() const {
  std::vector<uint64_t> seqs;
  seqs.reserve(shards_.size());
  for (auto& p : shards_) {
    // Descending: a shard not read yet stands at its top; one that was, at its last row (resuming
    // ascending from there repeats rows, never skips one).
    seqs.push_back(opts_.descending && p.seq == 0 ? p.top : p.seq);
  }
  return tokens_->token(seqs);
}

std::string changes_feed::state_tag() const {
  std::string s;
  for (auto& p : shards_) s += p.uuid_prefix + ":" + std::to_string(p.top) + ";";
  return s;
}

uint64_t changes_feed::pending() const {
  if (opts_.descending) return 0;
  uint64_t n = 0;
  for (size_t i = 0; i < shards_.size(); ++i) {
    const shard_pos& p = shards_[i];
    if (p.remote) {
      n += p.buffer.size() + p.remote_pending;  // as of the last page
    } else if (p.snap) {
      n += p.snap->count_changes_after(p.seq);  // as of the snapshot the rows came from
    } else if (auto snap = handles_[i].store->read()) {
      n += snap->count_changes_after(p.seq);
    }
  }
  return n;
}

void changes_feed::release_snapshots() {
  // Dropped, not reset: a reset LMDB reader keeps its slot, and a shard has 1,024 slots for
  // every feed waiting on it (thousands of listeners ran out of them).
  for (auto& p : shards_)
    if (p.buffer.empty()) p.snap.reset();
}

std::string changes_feed::since_resolution() const {
  bool all_exact = true;
  using how = resolved_since::how;
  for (auto& [range, res] : resolutions_) all_exact = all_exact && res == how::exact;
  if (all_exact) return "";
  std::string out = "{";
  for (auto& [range, res] : resolutions_) {
    if (out.size() > 1) out += ",";
    out += quote(range) + ":" +
           (res == how::exact        ? "\"exact\""
            : res == how::translated ? "\"translated\""
                                     : "\"rewound\"");
  }
  return out + "}";
}

bool changes_feed::alive() const {
  return coord_.catalog().alive(db_);
}

}  // namespace settee
