#include "http/changes_feed.hpp"

#include <charconv>

#include "node/log.hpp"

namespace settee {

changes_feed::changes_feed(coordinator& coord, const db_meta& db, changes_options opts, std::string node_name)
    : coord_(coord), db_(db), opts_(std::move(opts)), node_name_(std::move(node_name)) {}

namespace {

constexpr uint32_t refill_batch = 512;

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

std::vector<size_t> changes_feed::ranges() const {
  if (opts_.shard) return {*opts_.shard};
  std::vector<size_t> all(db_.q);
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return all;
}

std::string changes_feed::preferred_copy(size_t range, const seq_entry* given) const {
  // One shard's feed: its first copy, whichever node serves it (plain seqs are per copy).
  if (opts_.shard) return db_.everywhere() || db_.nodes[range].empty() ? node_name_ : db_.nodes[range].front();
  // This node's copy, else the one the token names (where it moved to, if it did), then the others.
  if (db_.hosts(range) || !given) return db_.hosts(range) ? node_name_ : "";
  auto at = db_.entry ? db_.entry->find(db_.shard_id(range)) : std::nullopt;
  if (at) {
    auto to = db_.entry->shards[*at].moved.find(given->node);
    if (to != db_.entry->shards[*at].moved.end()) return to->second;
  }
  return given->node;
}

status changes_feed::start_at_time(int64_t t) {
  const std::vector<size_t> read = ranges();
  shards_.resize(read.size());
  for (size_t k = 0; k < read.size(); ++k) {
    const size_t i = read[k];
    shard_pos& p = shards_[k];
    p.range = db_.ranges[i];
    auto where = coord_.first_answer<resolved_since>(
        db_, i, [](shard_copy& c) { return c.resolve_since("", 0); }, &p.copy, preferred_copy(i, nullptr));
    if (!where) return where.error();
    auto bins = p.copy->time_seq(false);
    bool known = bins.ok();  // false: the copy keeps no time-seq (an older release): start at 0
    time_seq_state ts = bins ? *bins : time_seq_state{{}, where->update_seq};
    p.uuid_prefix = where->uuid.substr(0, uuid_prefix_length);
    p.top = ts.update_seq;
    if (opts_.descending) continue;  // a time is ignored going backwards: from the end, as since=now
    auto s = known && t >= 0 ? time_seq::since(ts.bins, t) : std::optional<uint64_t>(0);
    p.seq = s ? std::min(*s, ts.update_seq) : ts.update_seq;
    if (opts_.time_exact && t >= 0) p.not_before = t;
  }
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, p.copy->node(), p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
  return {};
}

status changes_feed::start_shard_at(uint64_t seq) {
  const size_t i = *opts_.shard;
  shards_.resize(1);
  shard_pos& p = shards_[0];
  p.range = db_.ranges[i];
  const std::string first = preferred_copy(i, nullptr);
  auto where = coord_.first_answer<resolved_since>(
      db_, i, [](shard_copy& c) { return c.resolve_since("", 0); }, &p.copy, first);
  if (!where) return where.error();
  p.uuid_prefix = where->uuid.substr(0, uuid_prefix_length);
  p.top = where->update_seq;
  p.seq = opts_.descending ? 0 : seq;
  if (seq > 0 && !opts_.descending && p.copy->node() != first) {
    // The seq numbers the first copy's changes, which cannot answer: this copy from its start
    // (more rows, never fewer; the response says so).
    p.seq = 0;
    resolutions_.emplace_back(p.range.name(), resolved_since::how::rewound);
  }
  return {};  // positions are plain seqs (token()): no clustered token builder
}

std::optional<seq_entry> changes_feed::ancestor_position(const std::vector<seq_entry>& from, size_t i) const {
  if (!db_.entry) return std::nullopt;
  const shard_range& r = db_.ranges[i];
  // Where a copy on `node` of shard `s` went, if it moved (same uuid, same numbering).
  auto moved = [](const shard_info& s, const std::string& node) {
    auto to = s.moved.find(node);
    return to == s.moved.end() ? node : to->second;
  };
  auto here = db_.entry->find(db_.shard_id(i));
  for (const seq_entry& e : from) {
    if (!(e.range.begin <= r.begin && r.end <= e.range.end) || e.range == r) continue;
    // The token's range is a closed shard of this database whose copy on e.node it names (that
    // copy may have moved before the split).
    for (const shard_info& s : db_.entry->shards) {
      if (s.open || !(s.range == e.range)) continue;
      const std::string split_on = moved(s, e.node);
      auto uuid = s.uuids.find(split_on);
      if (uuid == s.uuids.end() || uuid->second.compare(0, uuid_prefix_length, e.uuid_prefix) != 0) continue;
      // The descendant's copy made there, wherever it moved since.
      const std::string now = here ? moved(db_.entry->shards[*here], split_on) : split_on;
      if (!db_.everywhere() && std::find(db_.nodes[i].begin(), db_.nodes[i].end(), now) == db_.nodes[i].end()) continue;
      seq_entry at = e;
      at.node = now;
      return at;
    }
  }
  return std::nullopt;
}

std::vector<std::string> changes_feed::ancestor_prefixes(const seq_entry& e) const {
  std::vector<std::string> out;
  if (!db_.entry) return out;
  const catalog_entry& lineage = *db_.entry;
  auto at = std::find_if(lineage.shards.begin(), lineage.shards.end(),
                         [&](const shard_info& s) { return s.range == e.range; });
  std::string node = e.node;
  std::string known = e.uuid_prefix;  // the copy's uuid as far as known: its parent's must derive it
  for (size_t depth = 0; at != lineage.shards.end() && depth < 64; ++depth) {
    // The node this copy was made on: its moves undone (bounded, whatever the map holds).
    for (size_t hop = 0; hop < 64; ++hop) {
      auto from = std::find_if(at->moved.begin(), at->moved.end(), [&](const auto& m) { return m.second == node; });
      if (from == at->moved.end()) break;
      node = from->first;
    }
    if (at->parents.empty()) break;
    auto parent = lineage.find(at->parents.front());
    if (!parent) break;
    const shard_range child = at->range;
    at = lineage.shards.begin() + static_cast<std::ptrdiff_t>(*parent);
    auto uuid = at->uuids.find(node);
    // Not a copy this parent's split made (another incarnation, or a split before 0.4): stop.
    if (uuid == at->uuids.end() || split_child_uuid(uuid->second, child).compare(0, known.size(), known) != 0) break;
    out.push_back(uuid->second.substr(0, uuid_prefix_length));
    known = uuid->second;
  }
  return out;
}

void changes_feed::translate_through_ancestors(const shard_pos& p, const seq_entry& e, resolved_since& r) const {
  if (r.resolution != resolved_since::how::rewound) return;
  for (const std::string& prefix : ancestor_prefixes(e)) {
    auto a = p.copy->resolve_since(prefix, e.seq);
    if (!a || a->resolution != resolved_since::how::translated) continue;
    if (r.resolution == resolved_since::how::rewound || a->seq > r.seq) {
      r.seq = a->seq;
      r.resolution = resolved_since::how::translated;
    }
  }
}

status changes_feed::start_closed_at(uint64_t seq) {
  const shard_info& c = *opts_.closed;
  const std::string node = c.nodes.empty() ? node_name_ : c.nodes.front();
  auto end = c.end_seq.find(node);
  if (end == c.end_seq.end())
    return status{errc::internal, "the shard map has no end_seq for " + c.id() + " on " + node};
  closed_seq_ = std::min(seq, end->second);
  for (size_t i = 0; i < db_.ranges.size(); ++i) {
    const shard_range& r = db_.ranges[i];
    if (r.begin < c.range.begin || r.end > c.range.end) continue;  // not a descendant
    shard_pos p;
    p.range = r;
    auto where = coord_.first_answer<resolved_since>(
        db_, i, [](shard_copy& copy) { return copy.resolve_since("", 0); }, &p.copy, node);
    if (!where) return where.error();
    if (p.copy->node() != node) {
      return status{errc::unavailable, "the copy of " + c.id() + "'s descendants on " + node +
                                           " that numbers its changes does not answer; try again later"};
    }
    p.uuid_prefix = where->uuid.substr(0, uuid_prefix_length);
    p.top = end->second;
    p.seq = closed_seq_;
    p.bound = end->second;
    shards_.push_back(std::move(p));
  }
  return {};
}

status changes_feed::start(const std::string& since) {
  if (opts_.closed) {
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(since.data(), since.data() + since.size(), seq);
    if (opts_.descending) return status{errc::bad_request, "a closed shard's feed reads ascending only"};
    if (since == "now")
      seq = UINT64_MAX;
    else if (since.empty() || ec != std::errc() || end != since.data() + since.size())
      return status{errc::bad_request,
                    "`since` of a closed shard's feed must be a seq of the shard (an integer), 0 or now"};
    return start_closed_at(seq);
  }
  if (shaped_like_time(since)) {
    auto t = time_seq::parse_time(since);
    if (!t) return status{errc::bad_request, "invalid_time_format"};
    return start_at_time(*t);
  }
  std::vector<seq_entry> from;
  bool now = since == "now";
  if (opts_.shard && !now) {
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(since.data(), since.data() + since.size(), seq);
    if (since.empty() || ec != std::errc() || end != since.data() + since.size()) {
      return status{errc::bad_request,
                    "`since` of a shard's feed must be a seq of the shard (an integer), 0, now "
                    "or a time (YYYY-MM-DDTHH:MM:SSZ)"};
    }
    return start_shard_at(seq);
  }
  if (!now) {
    auto decoded = decode_seq(since);
    if (!decoded) return decoded.error();
    from = std::move(*decoded);
  }
  const std::vector<size_t> read = ranges();
  shards_.resize(read.size());
  for (size_t k = 0; k < read.size(); ++k) {
    const size_t i = read[k];
    shard_pos& p = shards_[k];
    p.range = db_.ranges[i];
    // The position the token gives for this range, if any.
    const seq_entry* given = nullptr;
    for (auto& e : from)
      if (e.range.begin == p.range.begin && e.range.end == p.range.end) given = &e;
    // A range split since the token was made: its ancestor's position on the same node's copy
    // holds for the descendant too (children continue their parent's numbering).
    std::optional<seq_entry> ancestor = given || now ? std::nullopt : ancestor_position(from, i);
    if (ancestor) {
      auto rr = coord_.first_answer<resolved_since>(
          db_, i, [](shard_copy& c) { return c.resolve_since("", 0); }, &p.copy, ancestor->node);
      if (!rr) return rr.error();
      p.uuid_prefix = rr->uuid.substr(0, uuid_prefix_length);
      p.top = rr->update_seq;
      if (opts_.descending) continue;
      if (p.copy->node() == ancestor->node) {
        p.seq = ancestor->seq;
        resolutions_.emplace_back(p.range.name(), resolved_since::how::exact);
        continue;
      }
      // Another copy (the descendant's node is down): through the checkpoints it inherited.
      seq_entry named = *ancestor;
      for (const seq_entry& e : from)
        if (e.uuid_prefix == ancestor->uuid_prefix && e.range == ancestor->range) named = e;
      auto r = p.copy->resolve_since(named.uuid_prefix, named.seq);
      if (!r) return r.error();
      translate_through_ancestors(p, named, *r);
      p.seq = r->resolution == resolved_since::how::rewound ? 0 : std::min(r->seq, p.top);
      resolutions_.emplace_back(p.range.name(), r->resolution);
      continue;
    }
    std::string prefix = given && !now ? given->uuid_prefix : "";
    uint64_t seq = given ? given->seq : 0;

    auto rr = coord_.first_answer<resolved_since>(
        db_, i, [&](shard_copy& c) { return c.resolve_since(prefix, seq); }, &p.copy, preferred_copy(i, given));
    if (!rr) return rr.error();
    resolved_since r = std::move(*rr);
    if (given && !now) translate_through_ancestors(p, *given, r);
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
    if (log::enabled(log::level::debug) && (!given || r.resolution != resolved_since::how::exact)) {
      log::debug(
          "changes feed of " + db_.name + " range " + p.range.name() + " resumes on " + p.copy->node() + " at seq " +
          std::to_string(p.seq) + " of " + std::to_string(p.top) + " (" +
          (given ? "read on " + given->node + " up to " + std::to_string(given->seq) : "a range the token lacks") +
          ")");
    }
  }
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, p.copy->node(), p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
  return {};
}

bool changes_feed::has_remote() const {
  return std::any_of(shards_.begin(), shards_.end(), [](const shard_pos& p) { return !p.copy->local(); });
}

bool changes_feed::refill(size_t i) {
  shard_pos& p = shards_[i];
  if (p.bound && p.seq >= *p.bound) return false;    // a closed shard's end
  if (opts_.descending && p.seq == 1) return false;  // consumed down to the first change
  changes_request req;
  req.since = p.seq;
  req.limit = refill_batch;
  req.descending = opts_.descending;
  req.with_docs = opts_.include_docs || opts_.filter_kind == changes_options::filter::selector;
  req.conflicts = opts_.conflicts;
  req.attachments = opts_.attachments;
  req.att_encoding_info = opts_.att_encoding_info;
  // A time-based start skips the bin's leading changes on the copy, reading only their commit times.
  if (!opts_.descending && p.not_before) req.not_before = *p.not_before;
  auto page = p.copy->changes(req);
  if (!page) {
    if (p.copy->local()) {  // this node's copy could not be read: stop, never skip past it
      log::error("changes feed of " + db_.name + " range " + p.range.name() + ": " + page.error().reason);
      error_ = page.error();
    }
    return false;  // another node's copy went away: the feed ends here, resumable from its last seq
  }
  p.seq = std::max(p.seq, page->skipped_to);
  p.read_to_end = page->rows.size() < req.limit;
  for (auto& row : page->rows) {
    if (p.bound && row.e.seq > *p.bound) {  // the descendant's own changes, after the split
      p.read_to_end = true;
      break;
    }
    p.buffer.push_back(std::move(row));
  }
  if (p.bound && p.buffer.empty()) p.seq = *p.bound;  // nothing of the closed shard is left here
  return !p.buffer.empty();
}

bool changes_feed::wanted(const change_row& r) {
  switch (opts_.filter_kind) {
    case changes_options::filter::none:
      return true;
    case changes_options::filter::doc_ids:
      return opts_.doc_ids.count(r.e.id) > 0;
    case changes_options::filter::design:
      return r.e.id.rfind("_design/", 0) == 0;
    case changes_options::filter::selector: {
      auto doc = parse_json(r.doc);
      if (!doc) return false;
      auto matched = opts_.selector->matches(*doc);
      if (!matched) error_ = matched.error();  // the feed stops here with the error, resumable before it
      return matched && *matched;
    }
  }
  return true;
}

bool changes_feed::next(std::string& row) {
  paused_ = false;
  for (size_t skipped = 0;; ++skipped) {
    if (!error_) return false;
    if (skipped == skip_budget) {
      paused_ = true;
      return false;
    }
    // The shard whose next change was committed first (descending: last) goes next.
    int best = -1;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].buffer.empty() && !refill(i)) continue;
      const change_entry& e = shards_[i].buffer.front().e;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      if (opts_.closed) {  // one numbering: in seq order, so the position is the last row's seq
        if (e.seq < shards_[best].buffer.front().e.seq) best = static_cast<int>(i);
        continue;
      }
      int64_t bt = shards_[best].buffer.front().e.time_s;
      if (opts_.descending ? e.time_s > bt : e.time_s < bt) best = static_cast<int>(i);
    }
    if (!error_ || best < 0) return false;
    shard_pos& p = shards_[best];
    change_row r = std::move(p.buffer.front());
    p.buffer.pop_front();
    p.seq = r.e.seq;
    closed_seq_ = std::max(closed_seq_, r.e.seq);
    if (p.not_before) {
      // The bin's leading changes from before the requested second are skipped; from the first
      // change at or after it on, everything is emitted (a clock that went back errs toward more).
      if (r.e.time_s < *p.not_before) continue;
      p.not_before.reset();
    }
    if (!wanted(r)) continue;
    row = render(r);
    return true;
  }
}

std::string changes_feed::render(const change_row& r) {
  const change_entry& e = r.e;
  ++emitted_;
  std::string row = "{\"seq\":";
  // fabric_view_changes: a row carries its seq when the limit left before it is a multiple of the
  // interval (with CouchDB's default limit and an even interval: the first row of each interval).
  bool real_seq = opts_.seq_interval <= 0 ||
                  (opts_.limit_for_interval - static_cast<int64_t>(emitted_ - 1)) % opts_.seq_interval == 0;
  row += real_seq ? token_json() : "null";
  row += ",\"id\":" + quote(e.id) + ",\"changes\":[";
  if (opts_.all_docs) {
    for (size_t i = 0; i < e.leaf_revs.size(); ++i)
      row += (i ? ",{\"rev\":" : "{\"rev\":") + quote(e.leaf_revs[i]) + "}";
  } else {
    row += "{\"rev\":" + quote(e.rev) + "}";
  }
  row += "]";
  if (e.deleted) row += ",\"deleted\":true";
  if (opts_.include_docs) row += ",\"doc\":" + (r.doc.empty() ? std::string("null") : r.doc);
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
  if (opts_.closed) return std::to_string(closed_finished() ? *shards_.front().bound : closed_seq_);
  if (opts_.shard) return std::to_string(seqs.front());
  return tokens_->token(seqs);
}

std::string changes_feed::token_json() const {
  return opts_.shard || opts_.closed ? token() : quote(token());  // a shard's seq is a number
}

std::string changes_feed::state_tag() const {
  std::string s;
  for (auto& p : shards_) s += p.uuid_prefix + ":" + std::to_string(p.top) + ";";
  return s;
}

uint64_t changes_feed::pending() const {
  // As CouchDB (fabric_rpc's pending, and since 3.4 for descending feeds too): the changes each
  // range has not passed yet. A range whose last page reached its end has only its buffer left;
  // any other is counted by its copy (a feed with limit=0 never read a page).
  uint64_t n = 0;
  for (const shard_pos& p : shards_) {
    if (p.read_to_end || p.bound || (opts_.descending && p.seq == 1)) {
      n += p.buffer.size();
      continue;
    }
    changes_request req;
    req.since = p.seq;
    req.limit = 0;
    req.descending = opts_.descending;
    auto count = p.copy->changes(req);
    if (count) n += count->rows.size() + count->pending;  // a 0.3 copy answers one row and the rest
  }
  return n;
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

bool changes_feed::closed_finished() const {
  return !shards_.empty() && std::all_of(shards_.begin(), shards_.end(), [](const shard_pos& p) {
    return p.buffer.empty() && p.bound && p.seq >= *p.bound;
  });
}

std::string changes_feed::closed_ending() const {
  std::optional<shard_info> closed = opts_.closed;
  std::string node;
  if (!closed && opts_.shard && !shards_.empty()) {  // an open shard's feed: split since it started?
    auto now = coord_.catalog().find(db_.name);
    if (!now || now->created != db_.created || !now->entry) return "";
    auto at = now->entry->find(db_.shard_id(*opts_.shard));
    if (!at || now->entry->shards[*at].open) return "";
    closed = now->entry->shards[*at];
  }
  if (!closed) return "";
  node = closed->nodes.empty() ? node_name_ : closed->nodes.front();
  auto end = closed->end_seq.find(node);
  if (end == closed->end_seq.end() || token() != std::to_string(end->second)) return "";  // not at its end yet
  std::string out = ",\"shard_closed\":true,\"children\":[";
  for (size_t i = 0; i < closed->children.size(); ++i)
    out +=
        (i ? ",{\"id\":" : "{\"id\":") + quote(closed->children[i]) + ",\"since\":" + std::to_string(end->second) + "}";
  return out + "]";
}

bool changes_feed::alive() const {
  if (opts_.closed) return !closed_finished() && coord_.catalog().alive(db_);
  if (!opts_.shard) return coord_.catalog().alive(db_);
  // One shard's feed lives while its shard is open (a split closes it: the feed ends at its last
  // seq, and _changes/_meta names the children and where they start).
  auto now = coord_.catalog().find(db_.name);
  return now && now->created == db_.created &&
         std::find(now->shard_paths.begin(), now->shard_paths.end(), db_.shard_paths[*opts_.shard]) !=
             now->shard_paths.end() &&
         coord_.catalog().alive(*now);
}

}  // namespace settee
