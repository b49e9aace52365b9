#include "actors/changes_reader.hpp"

#include <algorithm>
#include <charconv>

#include "node/check.hpp"
#include "node/json.hpp"
#include "node/log.hpp"

namespace settee {

changes_reader::changes_reader(coordinator& coord, const db_meta& db, changes_read_options opts)
    : coord_(coord), db_(db), opts_(std::move(opts)) {}

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

std::vector<size_t> changes_reader::ranges() const {
  return opts_.shard ? std::vector<size_t>{*opts_.shard} : coordinator::all_ranges(db_);
}

std::string changes_reader::preferred_copy(size_t range, const seq_entry* given) const {
  // One shard's feed: its first copy, whichever node serves it (plain seqs are per copy).
  if (opts_.shard) return db_.everywhere() || db_.nodes[range].empty() ? coord_.self() : db_.nodes[range].front();
  // This node's copy, else the one the token names (where it moved to, if it did), then the others.
  if (db_.hosts(range) || !given) return db_.hosts(range) ? coord_.self() : "";
  auto at = db_.entry ? db_.entry->find(db_.shard_id(range)) : std::nullopt;
  if (at) {
    auto to = db_.entry->shards[*at].moved.find(given->node);
    if (to != db_.entry->shards[*at].moved.end()) return to->second;
  }
  return given->node;
}

result<std::vector<resolved_since>> changes_reader::resolve_all(const std::vector<resolve_ask>& asks) {
  const std::vector<size_t> read = ranges();
  std::vector<std::string> prefer;
  for (const resolve_ask& a : asks) prefer.push_back(a.prefer);
  auto answers = coord_.each_range<resolved_since>(
      db_, read,
      [&](shard_copy& c, size_t k, shard_copy::answer<resolved_since> done) {
        c.start_resolve_since(asks[k].prefix, asks[k].seq, std::move(done));
      },
      prefer);
  shards_.resize(read.size());
  std::vector<resolved_since> out;
  for (size_t k = 0; k < read.size(); ++k) {
    if (!answers[k].value) return answers[k].value.error();
    shard_pos& p = shards_[k];
    p.range = db_.ranges[read[k]];
    p.copy = answers[k].copy;
    p.uuid_prefix = answers[k].value->uuid.substr(0, uuid_prefix_length);
    p.top = answers[k].value->update_seq;
    out.push_back(std::move(*answers[k].value));
  }
  return out;
}

void changes_reader::make_token_builder() {
  std::vector<seq_entry> layout;
  for (auto& p : shards_) layout.push_back({p.range, p.copy->node(), p.uuid_prefix, 0});
  tokens_ = std::make_unique<seq_token_builder>(layout);
}

status changes_reader::start_at_time(int64_t t) {
  std::vector<resolve_ask> asks;
  for (size_t i : ranges()) asks.push_back({preferred_copy(i, nullptr), "", 0});
  auto where = resolve_all(asks);
  if (!where) return where.error();
  std::vector<copy_ptr> copies;
  for (auto& p : shards_) copies.push_back(p.copy);
  auto bins = coord_.ask_each<time_seq_state>(
      copies,
      [](shard_copy& c, size_t, shard_copy::answer<time_seq_state> done) { c.start_time_seq(false, std::move(done)); });
  for (size_t k = 0; k < shards_.size(); ++k) {
    shard_pos& p = shards_[k];
    bool known = bins[k].ok();  // false: the copy keeps no time-seq (an older release): start at 0
    time_seq_state ts = known ? *bins[k] : time_seq_state{{}, (*where)[k].update_seq};
    p.top = ts.update_seq;
    if (opts_.descending) continue;  // a time is ignored going backwards: from the end, as since=now
    auto s = known && t >= 0 ? time_seq::since(ts.bins, t) : std::optional<uint64_t>(0);
    p.seq = s ? std::min(*s, ts.update_seq) : ts.update_seq;
    if (opts_.time_exact && t >= 0) p.not_before = t;
  }
  make_token_builder();
  return {};
}

status changes_reader::start_shard_at(uint64_t seq) {
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

std::optional<seq_entry> changes_reader::ancestor_position(const std::vector<seq_entry>& from, size_t i) const {
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

std::vector<std::string> changes_reader::ancestor_prefixes(const seq_entry& e) const {
  if (!db_.entry) return {};
  return ancestor_uuid_prefixes(*db_.entry, e.range, e.uuid_prefix, uuid_prefix_length);
}

void changes_reader::translate_through_ancestors(const shard_pos& p, const seq_entry& e, resolved_since& r) const {
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

status changes_reader::start_closed_at(uint64_t seq) {
  const shard_info& c = *opts_.closed;
  const std::string node = c.nodes.empty() ? coord_.self() : c.nodes.front();
  auto end = c.end_seq.find(node);
  if (end == c.end_seq.end())
    return status{errc::internal, "the shard map has no end_seq for " + c.id() + " on " + node};
  closed_seq_ = std::min(seq, end->second);
  std::vector<size_t> descendants;
  for (size_t i = 0; i < db_.ranges.size(); ++i) {
    const shard_range& r = db_.ranges[i];
    if (r.begin >= c.range.begin && r.end <= c.range.end) descendants.push_back(i);
  }
  auto answers = coord_.each_range<resolved_since>(
      db_, descendants,
      [](shard_copy& copy, size_t, shard_copy::answer<resolved_since> done) {
        copy.start_resolve_since("", 0, std::move(done));
      },
      std::vector<std::string>(descendants.size(), node));
  for (size_t k = 0; k < descendants.size(); ++k) {
    if (!answers[k].value) return answers[k].value.error();
    if (answers[k].copy->node() != node) {
      return status{errc::unavailable, "the copy of " + c.id() + "'s descendants on " + node +
                                           " that numbers its changes does not answer; try again later"};
    }
    shard_pos p;
    p.range = db_.ranges[descendants[k]];
    p.copy = answers[k].copy;
    p.uuid_prefix = answers[k].value->uuid.substr(0, uuid_prefix_length);
    p.top = end->second;
    p.seq = closed_seq_;
    p.bound = end->second;
    shards_.push_back(std::move(p));
  }
  return {};
}

status changes_reader::start(const std::string& since) {
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
  const bool now = since == "now";
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
  std::vector<seq_entry> from;
  if (!now) {
    auto decoded = decode_seq(since);
    if (!decoded) return decoded.error();
    from = std::move(*decoded);
  }
  return start_at_token(from, now);
}

status changes_reader::start_at_token(const std::vector<seq_entry>& from, bool now) {
  const std::vector<size_t> read = ranges();
  std::vector<const seq_entry*> given(read.size(), nullptr);  // the position the token gives the range
  // A range split since the token was made: its ancestor's position on the same node's copy holds
  // for the descendant too (children continue their parent's numbering).
  std::vector<std::optional<seq_entry>> ancestor(read.size());
  std::vector<resolve_ask> asks(read.size());
  for (size_t k = 0; k < read.size(); ++k) {
    const shard_range& r = db_.ranges[read[k]];
    for (auto& e : from)
      if (e.range.begin == r.begin && e.range.end == r.end) given[k] = &e;
    if (!given[k] && !now) ancestor[k] = ancestor_position(from, read[k]);
    if (ancestor[k]) {
      asks[k] = {ancestor[k]->node, "", 0};
    } else {
      asks[k] = {preferred_copy(read[k], given[k]), given[k] ? given[k]->uuid_prefix : "",
                 given[k] ? given[k]->seq : 0};
    }
  }
  auto resolved = resolve_all(asks);
  if (!resolved) return resolved.error();
  for (size_t k = 0; k < read.size(); ++k) {
    shard_pos& p = shards_[k];
    resolved_since& r = (*resolved)[k];
    if (ancestor[k]) {
      if (opts_.descending) continue;
      if (p.copy->node() == ancestor[k]->node) {
        p.seq = ancestor[k]->seq;
        resolutions_.emplace_back(p.range.name(), resolved_since::how::exact);
        continue;
      }
      // Another copy (the descendant's node is down): through the checkpoints it inherited.
      seq_entry named = *ancestor[k];
      for (const seq_entry& e : from)
        if (e.uuid_prefix == ancestor[k]->uuid_prefix && e.range == ancestor[k]->range) named = e;
      auto t = p.copy->resolve_since(named.uuid_prefix, named.seq);
      if (!t) return t.error();
      translate_through_ancestors(p, named, *t);
      p.seq = t->resolution == resolved_since::how::rewound ? 0 : std::min(t->seq, p.top);
      resolutions_.emplace_back(p.range.name(), t->resolution);
      continue;
    }
    if (given[k]) translate_through_ancestors(p, *given[k], r);
    if (now || opts_.descending) {
      p.seq = opts_.descending ? 0 : r.update_seq;
      continue;
    }
    if (from.empty()) continue;  // since=0
    // Another copy of the range (e.g. the client's node died) is translated through the
    // replication checkpoints; anything else (another incarnation, another range layout) starts
    // the range from 0: more rows, never fewer, and the response says so (spec 11.1).
    p.seq = r.seq;
    resolutions_.emplace_back(p.range.name(), given[k] ? r.resolution : resolved_since::how::rewound);
    if (log::enabled(log::level::debug) && (!given[k] || r.resolution != resolved_since::how::exact)) {
      log::debug("changes feed of " + db_.name + " range " + p.range.name() + " resumes on " + p.copy->node() +
                 " at seq " + std::to_string(p.seq) + " of " + std::to_string(p.top) + " (" +
                 (given[k] ? "read on " + given[k]->node + " up to " + std::to_string(given[k]->seq)
                           : "a range the token lacks") +
                 ")");
    }
  }
  make_token_builder();
  return {};
}

bool changes_reader::has_remote() const {
  return std::any_of(shards_.begin(), shards_.end(), [](const shard_pos& p) { return !p.parked && !p.copy->local(); });
}

void changes_reader::park() {
  if (opts_.closed) return;  // a closed shard's feed reads its descendants' copies: kept as found
  for (shard_pos& p : shards_) {
    if (p.parked || !p.copy->local()) continue;
    p.copy.reset();
    p.parked = true;
  }
}

void changes_reader::unpark() const {
  for (const shard_pos& p : shards_) {
    if (!p.parked) continue;
    auto i = db_.range_named(p.range.name());
    SETTEE_CHECK(i.has_value());
    auto all = coord_.copies(db_, *i);  // this node's first: the copy parked, or why it cannot open
    SETTEE_CHECK(!all.empty() && all.front()->node() == coord_.self());
    p.copy = std::move(all.front());
    p.parked = false;
  }
}

bool changes_reader::next_page(size_t i, changes_request& req) const {
  const shard_pos& p = shards_[i];
  if (p.bound && p.seq >= *p.bound) return false;  // a closed shard's end
  if (p.passed_until || (p.until && p.seq >= *p.until)) return false;
  if (opts_.descending && p.seq == 1) return false;  // consumed down to the first change
  req.since = p.seq;
  req.limit = std::max<uint32_t>(opts_.page_rows, 1);
  req.descending = opts_.descending;
  req.with_docs = opts_.with_docs;
  req.conflicts = opts_.conflicts;
  req.attachments = opts_.attachments;
  req.att_encoding_info = opts_.att_encoding_info;
  // A time-based start skips the bin's leading changes on the copy, reading only their commit times.
  if (!opts_.descending && p.not_before) req.not_before = *p.not_before;
  return true;
}

bool changes_reader::take_page(size_t i, const changes_request& req, result<changes_page>& page) {
  shard_pos& p = shards_[i];
  if (!page) {
    if (p.copy->local()) {  // this node's copy could not be read: stop, never skip past it
      log::error("changes feed of " + db_.name + " range " + p.range.name() + ": " + page.error().reason);
      error_ = page.error();
    }
    return false;  // another node's copy went away: the feed ends here, resumable from its last seq
  }
  p.seq = std::max(p.seq, page->skipped_to);
  p.read_to_end = page->rows.size() < req.limit;
  // Each row after the last: a page out of seq order (another node's answer is data, checked
  // here) would repeat or skip changes, so the feed stops at it instead.
  uint64_t last = p.seq;
  for (const auto& row : page->rows) {
    const bool after = opts_.descending ? (last == 0 || row.e.seq < last) : row.e.seq > last;
    if (!after) {
      error_ = status{errc::internal, "range " + p.range.name() + " on " + p.copy->node() +
                                          " answered its changes out of seq order at seq " + std::to_string(row.e.seq)};
      log::error("changes feed of " + db_.name + ": " + error_.reason);
      return false;
    }
    last = row.e.seq;
  }
  if (opts_.page_filter && !page->rows.empty()) {
    auto wanted = opts_.page_filter(page->rows);
    if (!wanted) {
      error_ = wanted.error();  // the feed stops before this page, resumable there
      return false;
    }
    for (size_t i = 0; i < page->rows.size() && i < wanted->size(); ++i) page->rows[i].hidden = !(*wanted)[i];
  }
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

void changes_reader::refill(const std::vector<size_t>& which) {
  unpark();
  std::vector<size_t> asked;
  std::vector<changes_request> reqs;
  std::vector<copy_ptr> copies;
  for (size_t i : which) {
    changes_request req;
    if (!next_page(i, req)) {
      shards_[i].dry = true;
      continue;
    }
    asked.push_back(i);
    reqs.push_back(req);
    copies.push_back(shards_[i].copy);
  }
  if (asked.empty()) return;
  auto pages =
      coord_.ask_each<changes_page>(copies, [&](shard_copy& c, size_t k, shard_copy::answer<changes_page> done) {
        c.start_changes(reqs[k], std::move(done));
      });
  for (size_t k = 0; k < asked.size(); ++k) {
    shard_pos& p = shards_[asked[k]];
    // A range that gave nothing, or its last changes, is read again after next() said "nothing".
    p.dry = !take_page(asked[k], reqs[k], pages[k]) || p.read_to_end;
  }
}

bool changes_reader::next(change_row& row) {
  paused_ = false;
  for (size_t skipped = 0;; ++skipped) {
    if (!error_) return false;
    if (skipped == skip_budget) {
      paused_ = true;
      return false;
    }
    std::vector<size_t> empty;
    for (size_t i = 0; i < shards_.size(); ++i)
      if (shards_[i].buffer.empty() && !shards_[i].dry) empty.push_back(i);
    if (!empty.empty()) refill(empty);
    if (!error_) return false;
    // The shard whose next change was committed first (descending: last) goes next.
    int best = -1;
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i].buffer.empty() || shards_[i].passed_until) continue;
      const change_entry& e = shards_[i].buffer.front().e;
      if (past_until(shards_[i], e)) {  // this range is done: its rows after the bound stay unread
        shards_[i].passed_until = true;
        continue;
      }
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
    if (best < 0) {
      for (shard_pos& p : shards_) p.dry = false;  // the next call reads every range again
      park();
      return false;
    }
    shard_pos& p = shards_[best];
    row = std::move(p.buffer.front());
    p.buffer.pop_front();
    // A range's position never goes back (tokens and checkpoints rely on it): its page was checked
    // in order after the position it was read from.
    SETTEE_CHECK(opts_.descending ? (p.seq == 0 || row.e.seq < p.seq) : row.e.seq > p.seq);
    p.seq = row.e.seq;
    closed_seq_ = std::max(closed_seq_, row.e.seq);
    if (p.not_before) {
      // The bin's leading changes from before the requested second are skipped; from the first
      // change at or after it on, everything is emitted (a clock that went back errs toward more).
      if (row.e.time_s < *p.not_before) continue;
      p.not_before.reset();
    }
    if (row.hidden) continue;
    if (opts_.filter) {
      auto wanted = opts_.filter(row);
      if (!wanted) {
        error_ = wanted.error();  // the feed stops here with the error, resumable before it
        return false;
      }
      if (!*wanted) continue;
    }
    return true;
  }
}

bool changes_reader::past_until(const shard_pos& p, const change_entry& e) const {
  return (p.until && e.seq > *p.until) || (until_time_ && e.time_s > *until_time_);
}

status changes_reader::set_until(const std::string& until) {
  if (opts_.descending) return {errc::bad_request, "`until` bounds ascending feeds only"};
  if (shaped_like_time(until)) {
    auto t = time_seq::parse_time(until);
    if (!t) return {errc::bad_request, "invalid_time_format"};
    until_time_ = *t;
    return {};
  }
  if (until == "now") {
    for (shard_pos& p : shards_) p.until = p.top;
    return {};
  }
  if (opts_.shard || opts_.closed) {  // one numbering: a plain seq of the shard
    uint64_t seq = 0;
    auto [end, ec] = std::from_chars(until.data(), until.data() + until.size(), seq);
    if (until.empty() || ec != std::errc() || end != until.data() + until.size())
      return {errc::bad_request, "`until` of a shard's feed must be a seq of the shard (an integer), now or a time"};
    for (shard_pos& p : shards_) p.until = seq;
    return {};
  }
  // A token: placed on each range's copy as a `since` would be, by a reader of its own; a range
  // that reader reads from another copy, or could only rewind to, has no exact bound here.
  changes_read_options plain;
  changes_reader at(coord_, db_, plain);
  if (auto st = at.start(until); !st) {
    if (st.code == errc::bad_request) return {errc::bad_request, "Malformed sequence supplied in 'until' parameter."};
    return st;
  }
  if (at.shards_.size() != shards_.size()) return {errc::bad_request, "`until` does not name this database's ranges"};
  unpark();
  for (size_t k = 0; k < shards_.size(); ++k) {
    const shard_pos& b = at.shards_[k];
    shard_pos& p = shards_[k];
    bool exact = b.copy && p.copy && b.copy->node() == p.copy->node() && b.uuid_prefix == p.uuid_prefix;
    for (auto& [range, how] : at.resolutions_)
      if (range == p.range.name() && how == resolved_since::how::rewound) exact = false;
    if (!exact) {
      return {errc::bad_request, "`until` names a position of range " + p.range.name() +
                                     " that cannot be placed exactly on the copy this feed reads; use a time"};
    }
    p.until = b.seq;
  }
  return {};
}

std::string changes_reader::until_token() const {
  std::vector<uint64_t> seqs;
  for (const shard_pos& p : shards_) {
    if (!p.until) return "";
    seqs.push_back(*p.until);
  }
  if (opts_.shard || opts_.closed) return seqs.empty() ? "" : std::to_string(seqs.front());
  return tokens_ ? tokens_->token(seqs) : "";
}

bool changes_reader::finished(int64_t now_s) const {
  if (!until_time_) {
    bool bounded = false;
    for (const shard_pos& p : shards_) bounded = bounded || p.until;
    if (!bounded) return false;
  }
  for (const shard_pos& p : shards_) {
    if (p.passed_until || (p.until && p.seq >= *p.until)) continue;
    if (until_time_ && !p.until && p.buffer.empty() && p.read_to_end && now_s > *until_time_) continue;
    return false;
  }
  return true;
}

std::string changes_reader::token() const {
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

std::string changes_reader::token_json() const {
  return opts_.shard || opts_.closed ? token() : quote(token());  // a shard's seq is a number
}

std::string changes_reader::state_tag() const {
  std::string s;
  for (auto& p : shards_) s += p.uuid_prefix + ":" + std::to_string(p.top) + ";";
  return s;
}

uint64_t changes_reader::pending() const {
  // As CouchDB (fabric_rpc's pending, and since 3.4 for descending feeds too): the changes each
  // range has not passed yet. A range whose last page reached its end has only its buffer left;
  // any other is counted by its copy (a feed with limit=0 never read a page), all at once.
  uint64_t n = 0;
  unpark();
  std::vector<copy_ptr> copies;
  std::vector<changes_request> counts;
  for (const shard_pos& p : shards_) {
    if (p.read_to_end || p.bound || (opts_.descending && p.seq == 1)) {
      n += p.buffer.size();
      continue;
    }
    changes_request req;
    req.since = p.seq;
    req.limit = 0;
    req.descending = opts_.descending;
    copies.push_back(p.copy);
    counts.push_back(req);
  }
  auto answers =
      coord_.ask_each<changes_page>(copies, [&](shard_copy& c, size_t k, shard_copy::answer<changes_page> done) {
        c.start_changes(counts[k], std::move(done));
      });
  for (auto& count : answers)
    if (count) n += count->rows.size() + count->pending;  // a 0.3 copy answers one row and the rest
  return n;
}

std::string changes_reader::since_resolution() const {
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

bool changes_reader::closed_finished() const {
  return !shards_.empty() && std::all_of(shards_.begin(), shards_.end(), [](const shard_pos& p) {
    return p.buffer.empty() && p.bound && p.seq >= *p.bound;
  });
}

std::string changes_reader::closed_ending() const {
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
  node = closed->nodes.empty() ? coord_.self() : closed->nodes.front();
  auto end = closed->end_seq.find(node);
  if (end == closed->end_seq.end() || token() != std::to_string(end->second)) return "";  // not at its end yet
  std::string out = ",\"shard_closed\":true,\"children\":[";
  for (size_t i = 0; i < closed->children.size(); ++i)
    out +=
        (i ? ",{\"id\":" : "{\"id\":") + quote(closed->children[i]) + ",\"since\":" + std::to_string(end->second) + "}";
  return out + "]";
}

bool changes_reader::alive() const {
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
