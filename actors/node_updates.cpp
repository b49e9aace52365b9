#include "actors/node_updates.hpp"

#include <algorithm>

#include "node/crypto.hpp"
#include "node/json.hpp"

namespace settee {

namespace {

constexpr size_t page_rows = 256;
constexpr size_t uuid_prefix_chars = 7;

std::string prefix(const shard_handle& h) {
  return h.store->header().shard_uuid.substr(0, uuid_prefix_chars);
}

}  // namespace

uint64_t event_id(const std::string& db, uint64_t instance, db_event_type type) {
  crypto::hasher h(crypto::hasher::algo::sha256);
  h.update(db);
  h.update(std::string(1, '\0') + std::to_string(instance) + '\0' + to_string(type));
  std::string digest = h.final();
  uint64_t id = 0;
  for (int i = 0; i < 8; ++i) id = id << 8 | static_cast<uint8_t>(digest[i]);
  return id;
}

node_updates::node_updates(shard_handle dbs, shard_handle log, std::string node)
    : dbs_(std::move(dbs)), log_(std::move(log)) {
  pos_.node = std::move(node);
  pos_.dbs_uuid = prefix(dbs_);
  pos_.log_uuid = prefix(log_);
}

void node_updates::start(const node_updates_pos& from) {
  pos_.dbs_time = from.dbs_time;
  pos_.seen = from.seen;
  pos_.marks = from.marks;
  auto mark_of = [&](const std::string& node) {
    return std::find_if(pos_.marks.begin(), pos_.marks.end(), [&](const catalog_mark& m) { return m.node == node; });
  };
  if (from.node == pos_.node && from.dbs_uuid == pos_.dbs_uuid) {
    pos_.dbs_seq = from.dbs_seq;
    pos_.dbs_index = from.dbs_index;
  } else {
    // Another catalog file (another node's, or this node's before it was rebuilt): a window early,
    // or where this feed left this catalog if that is later, passing over what was seen elsewhere
    // (seen_elsewhere) and what is older than the window.
    translated_ = true;
    for (seen_event& e : pos_.seen) e.matched = false;
    from_token_ = pos_.seen.size();
    events_from_ = from.dbs_time - seen_window_s;
    if (events_from_ > 0) {
      if (auto snap = dbs_.store->read()) pos_.dbs_seq = snap->skip_before_time(0, events_from_) + 1;
    }
    if (auto m = mark_of(pos_.node); m != pos_.marks.end()) {
      if (m->dbs_uuid == pos_.dbs_uuid &&
          std::pair(m->dbs_seq, m->dbs_index) > std::pair(pos_.dbs_seq, pos_.dbs_index)) {
        pos_.dbs_seq = m->dbs_seq;
        pos_.dbs_index = m->dbs_index;
        events_from_ = 0;  // every event after the mark is unread here, whatever its time
      }
      pos_.marks.erase(m);  // read here now: pos_ says where
    }
    if (!from.dbs_uuid.empty() && from.node != pos_.node) {
      if (auto m = mark_of(from.node); m != pos_.marks.end()) pos_.marks.erase(m);
      pos_.marks.push_back({from.node, from.dbs_uuid, from.dbs_seq, from.dbs_index});
      if (pos_.marks.size() > max_marks) pos_.marks.erase(pos_.marks.begin());
    }
  }
  if (from.log_uuid == pos_.log_uuid) {
    pos_.log_seq = from.log_seq;
  } else {
    translated_ = true;  // another update log: all of its rows (one per database at most)
  }
}

void node_updates::start_now(int64_t now) {
  uint64_t top = dbs_.store->header().update_seq;
  pos_.dbs_seq = top + 1;
  pos_.dbs_time = now;
  pos_.log_seq = log_.store->header().update_seq;
  // The newest events of the last window count as passed: a token resumed on another node skips them.
  auto snap = dbs_.store->read();
  if (!snap) return;
  std::vector<db_event> newest;
  snap->scan_db_events_before(top + 1, [&](const db_event& e) {
    if (e.time_s < now - seen_window_s) return false;
    newest.push_back(e);
    return newest.size() < max_seen;
  });
  for (auto e = newest.rbegin(); e != newest.rend(); ++e) remember(*e);
}

void node_updates::start_at_time(int64_t time) {
  events_from_ = log_from_ = time;
  if (time <= 0) return;
  pos_.dbs_time = time;
  // The catalog from a window earlier: the events passed over before `time` are remembered.
  if (auto snap = dbs_.store->read()) pos_.dbs_seq = snap->skip_before_time(0, time - seen_window_s) + 1;
  if (auto snap = log_.store->read()) pos_.log_seq = snap->skip_before_time(0, time);
}

bool node_updates::refill_events() {
  auto snap = dbs_.store->read();
  if (!snap) return error_ = snap.error(), false;
  snap->scan_db_events(pos_.dbs_seq, pos_.dbs_index, [&](const db_event& e) {
    events_.push_back(e);
    return events_.size() < page_rows;
  });
  events_more_ = events_.size() == page_rows;
  if (!snap->fault()) return error_ = snap->fault(), false;
  return true;
}

bool node_updates::refill_log() {
  auto page = read_update_log(log_, pos_.log_uuid, pos_.log_seq, page_rows);
  if (!page) return error_ = page.error(), false;
  for (auto& [seq, row] : page->rows) logged_.push_back({seq, std::move(row)});
  log_more_ = logged_.size() == page_rows;
  return true;
}

bool node_updates::event_first() const {
  return !events_.empty() && (logged_.empty() || events_.front().time_s <= logged_.front().row.time_s);
}

const db_update_row* node_updates::peek() {
  for (;;) {
    if (!error_) return nullptr;
    if (events_.empty() && logged_.empty()) events_more_ = log_more_ = true;  // a new round: look again
    if (events_.empty() && events_more_ && !refill_events()) return nullptr;
    if (logged_.empty() && log_more_ && !refill_log()) return nullptr;
    if (events_.empty() && logged_.empty()) return nullptr;
    if (event_first()) {
      const db_event& e = events_.front();
      if (e.time_s < events_from_) {
        pop_event(/*remember=*/true);  // before since=<time> or the window: passed over
      } else if (seen_elsewhere(e)) {
        pop_event(/*remember=*/false);  // already in pos_.seen
      } else {
        head_ = {e.db, to_string(e.type), e.instance, e.time_s};
        return &head_;
      }
    } else if (logged_.front().row.time_s >= log_from_) {
      return &logged_.front().row;
    } else {
      pop();
    }
  }
}

bool node_updates::seen_elsewhere(const db_event& e) {
  if (!translated_) return false;
  uint64_t id = event_id(e.db, e.instance, e.type);
  for (size_t i = 0; i < from_token_; ++i) {
    seen_event& s = pos_.seen[i];
    if (s.id != id || s.matched) continue;
    s.matched = true;  // once: the same name, incarnation and type can recur (a second equal id)
    s.time_s = std::max(s.time_s, e.time_s);
    return true;
  }
  return false;
}

void node_updates::remember(const db_event& e) {
  pos_.seen.push_back({event_id(e.db, e.instance, e.type), e.time_s, /*matched=*/true});
}

void node_updates::pop_event(bool remember_it) {
  const db_event& e = events_.front();
  pos_.dbs_seq = e.seq;
  pos_.dbs_index = e.index + 1;
  pos_.dbs_time = std::max(pos_.dbs_time, e.time_s);
  if (remember_it) remember(e);
  forget_old();
  events_.pop_front();
}

void node_updates::forget_old() {
  auto& seen = pos_.seen;
  int64_t oldest = pos_.dbs_time - seen_window_s;
  size_t kept = 0, kept_from_token = 0, awaiting = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    if (seen[i].time_s < oldest) continue;
    if (i < from_token_) {
      ++kept_from_token;
      awaiting += seen[i].matched ? 0 : 1;
    }
    seen[kept++] = seen[i];
  }
  seen.resize(kept);
  from_token_ = kept_from_token;
  while (seen.size() > max_seen + awaiting) {
    size_t j = seen.size();
    for (size_t i = 0; i < seen.size(); ++i) {
      if (i < from_token_ && !seen[i].matched) continue;
      if (j == seen.size() || seen[i].time_s < seen[j].time_s) j = i;
    }
    seen.erase(seen.begin() + static_cast<std::ptrdiff_t>(j));
    if (j < from_token_) --from_token_;
  }
}

node_updates_pos node_updates::pos() const {
  node_updates_pos p = pos_;
  if (p.seen.size() > max_seen) {
    std::stable_sort(p.seen.begin(), p.seen.end(),
                     [](const seen_event& x, const seen_event& y) { return x.time_s < y.time_s; });
    p.seen.erase(p.seen.begin(), p.seen.end() - max_seen);
  }
  return p;
}

void node_updates::pop() {
  if (event_first()) {
    pop_event(/*remember=*/true);
  } else if (!logged_.empty()) {
    pos_.log_seq = logged_.front().seq;
    logged_.pop_front();
  }
}

bool node_updates::next(db_update_row& row) {
  const db_update_row* r = peek();
  if (!r) return false;
  row = *r;
  pop();
  return true;
}

result<log_page> read_update_log(const shard_handle& log, const std::string& uuid, uint64_t after, size_t limit) {
  log_page page;
  page.uuid = prefix(log);
  if (!uuid.empty() && uuid != page.uuid) after = 0;
  auto snap = log.store->read();
  if (!snap) return snap.error();
  page.top = log.store->header().update_seq;
  snap->scan_changes(after, [&](const change_entry& c) {
    db_update_row row;
    row.db = c.id;
    row.time_s = c.time_s;
    doc_info d;
    std::string body;
    if (!c.deleted && snap->doc(c.id, d) && snap->winner_body(d, body)) {
      json j = parse_json(body).value_or(json());
      if (j.is_object() && j.contains("instance") && j["instance"].is_number_unsigned())
        row.instance = j["instance"].get<uint64_t>();
    }
    page.rows.emplace_back(c.seq, std::move(row));
    return page.rows.size() < limit;
  });
  if (!snap->fault()) return snap->fault();
  return page;
}

}  // namespace settee
