#include "http/changes_feed.hpp"

#include "actors/internal_replication.hpp"
#include "http/doc_render.hpp"

namespace settee {

namespace {
constexpr size_t refill_batch = 512;
}

changes_feed::changes_feed(coordinator& coord, const db_meta& db, changes_options opts, std::string node_name)
    : coord_(coord), db_(db), opts_(std::move(opts)), node_name_(std::move(node_name)) {}

status changes_feed::start(const std::string& since) {
  std::vector<seq_entry> from;
  bool now = since == "now";
  if (!now) {
    auto decoded = decode_seq(since);
    if (!decoded) return decoded.error();
    from = std::move(*decoded);
  }
  shards_.resize(db_.q);
  for (size_t i = 0; i < db_.q; ++i) {
    auto h = coord_.shard(db_, i);
    if (!h) return h.error();
    handles_.push_back(*h);
    shard_header hd = h->store->header();
    shard_pos& p = shards_[i];
    p.range = db_.ranges[i];
    p.uuid_prefix = hd.shard_uuid.substr(0, uuid_prefix_length);
    p.top = hd.update_seq;
    if (now || opts_.descending) {
      p.seq = opts_.descending ? 0 : hd.update_seq;
      continue;
    }
    if (from.empty()) continue;  // since=0
    // The same range on the same copy: continue there. Another copy of the range (another node's,
    // e.g. the client's node died): translate through the replication checkpoints. Anything else
    // (another incarnation of the database, another range layout) starts the range from 0: more
    // rows, never fewer, and the response says so (spec 11.1).
    resolution res = resolution::rewound;
    for (auto& e : from) {
      if (e.range.begin != p.range.begin || e.range.end != p.range.end) continue;
      if (e.uuid_prefix == p.uuid_prefix) {
        p.seq = std::min(e.seq, hd.update_seq);
        res = resolution::exact;
        break;
      }
      auto snap = h->store->read();
      if (!snap) return snap.error();
      if (auto t = translate_since(*snap, e.uuid_prefix, e.seq)) {
        p.seq = std::min(*t, hd.update_seq);
        res = resolution::translated;
      }
    }
    resolutions_.emplace_back(p.range.name(), res);
  }
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, node_name_, p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
  return {};
}

bool changes_feed::refill(size_t i) {
  shard_pos& p = shards_[i];
  if (p.snap && p.snap_reset && p.snap->renew()) {
    p.snap_reset = false;  // the same reader slot, a fresh snapshot
  } else {
    auto snap = handles_[i].store->read();
    if (!snap) return false;
    p.snap = std::make_shared<shard_store::snapshot>(std::move(*snap));
    p.snap_reset = false;
  }
  auto collect = [&](const change_entry& e) {
    p.buffer.push_back(e);
    return p.buffer.size() < refill_batch;
  };
  if (opts_.descending) {
    if (p.seq == 1) return false;  // consumed down to the first change
    p.snap->scan_changes_descending(p.seq, collect);
  } else {
    p.snap->scan_changes(p.seq, collect);
  }
  return !p.buffer.empty();
}

bool changes_feed::wanted(size_t shard, const change_entry& e) const {
  switch (opts_.filter_kind) {
    case changes_options::filter::none:
      return true;
    case changes_options::filter::doc_ids:
      return opts_.doc_ids.count(e.id) > 0;
    case changes_options::filter::design:
      return e.id.rfind("_design/", 0) == 0;
    case changes_options::filter::selector: {
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
    p.seq = e.seq;
    if (!wanted(best, e)) continue;
    row = render(best, e);
    return true;
  }
}

std::string changes_feed::render(size_t shard, const change_entry& e) {
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
  if (opts_.include_docs) {
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
    if (p.snap && !p.snap_reset) {
      n += p.snap->count_changes_after(p.seq);  // as of the snapshot the rows came from
    } else if (auto snap = handles_[i].store->read()) {
      n += snap->count_changes_after(p.seq);
    }
  }
  return n;
}

void changes_feed::release_snapshots() {
  for (auto& p : shards_) {
    if (p.buffer.empty() && p.snap && !p.snap_reset) {
      p.snap->reset();
      p.snap_reset = true;
    }
  }
}

std::string changes_feed::since_resolution() const {
  bool all_exact = true;
  for (auto& [range, res] : resolutions_) all_exact = all_exact && res == resolution::exact;
  if (all_exact) return "";
  std::string out = "{";
  for (auto& [range, res] : resolutions_) {
    if (out.size() > 1) out += ",";
    out += quote(range) + ":" +
           (res == resolution::exact        ? "\"exact\""
            : res == resolution::translated ? "\"translated\""
                                            : "\"rewound\"");
  }
  return out + "}";
}

bool changes_feed::alive() const {
  return coord_.catalog().alive(db_);
}

}  // namespace settee
