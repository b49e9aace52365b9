#include "actors/node_updates.hpp"

#include <algorithm>

#include "node/json.hpp"

namespace settee {

namespace {

constexpr size_t page_rows = 256;
constexpr size_t uuid_prefix_chars = 7;
// A catalog position carried to another file resumes this much before the last event read there:
// the new file learnt the events later (replication), never earlier by more than its lag.
constexpr int64_t translation_slack_s = 300;

std::string prefix(const shard_handle& h) {
  return h.store->header().shard_uuid.substr(0, uuid_prefix_chars);
}

}  // namespace

node_updates::node_updates(shard_handle dbs, shard_handle log, std::string node)
    : dbs_(std::move(dbs)), log_(std::move(log)) {
  pos_.node = std::move(node);
  pos_.dbs_uuid = prefix(dbs_);
  pos_.log_uuid = prefix(log_);
}

void node_updates::start(const node_updates_pos& from) {
  if (from.dbs_uuid == pos_.dbs_uuid) {
    pos_.dbs_seq = from.dbs_seq;
    pos_.dbs_index = from.dbs_index;
    pos_.dbs_time = from.dbs_time;
  } else {
    // Another catalog file (a replaced node, or another node's events): by time, slightly early.
    translated_ = true;
    pos_.dbs_time = from.dbs_time;
    int64_t t = from.dbs_time - translation_slack_s;
    if (t > 0) {
      if (auto snap = dbs_.store->read()) pos_.dbs_seq = snap->skip_before_time(0, t) + 1;
    }
  }
  if (from.log_uuid == pos_.log_uuid) {
    pos_.log_seq = from.log_seq;
  } else {
    translated_ = true;  // another update log: all of its rows (one per database at most)
  }
}

void node_updates::start_now() {
  pos_.dbs_seq = dbs_.store->header().update_seq + 1;
  pos_.log_seq = log_.store->header().update_seq;
}

void node_updates::start_at_time(int64_t time) {
  not_before_ = time;
  if (time <= 0) return;
  if (auto snap = dbs_.store->read()) pos_.dbs_seq = snap->skip_before_time(0, time) + 1;
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
      if (e.time_s >= not_before_) {
        head_ = {e.db, to_string(e.type), e.instance, e.time_s};
        return &head_;
      }
    } else if (logged_.front().row.time_s >= not_before_) {
      return &logged_.front().row;
    }
    pop();  // before since=<time>: passed over
  }
}

void node_updates::pop() {
  if (event_first()) {
    const db_event& e = events_.front();
    pos_.dbs_seq = e.seq;
    pos_.dbs_index = e.index + 1;
    pos_.dbs_time = e.time_s;
    events_.pop_front();
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
