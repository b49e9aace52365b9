#include "actors/cluster_updates.hpp"

#include <algorithm>

namespace settee {

namespace {
constexpr size_t page_rows = 256;
constexpr int none = -2, local_part = -1;
}  // namespace

cluster_updates::cluster_updates(node_updates local, remote_shards* remote, std::vector<std::string> peers,
                                 std::chrono::milliseconds timeout)
    : local_(std::move(local)), remote_(remote), timeout_(timeout) {
  if (!remote_) return;
  for (auto& p : peers) {
    peer_part r;
    r.node = std::move(p);
    r.serves = remote_->serves_db_updates(r.node);
    remotes_.push_back(std::move(r));
  }
}

void cluster_updates::start_now(int64_t now) {
  local_.start_now(now);
  for (peer_part& r : remotes_) {
    if (r.serves) refill(r, UINT64_MAX, true);  // no rows: the log's uuid and top
  }
}

void cluster_updates::start_at_time(int64_t time) {
  local_.start_at_time(time);
  not_before_ = time;  // other nodes' logs are read from their start and filtered
}

status cluster_updates::start(const std::vector<node_updates_pos>& from) {
  const std::string& self = local_.pos().node;
  const node_updates_pos* mine = nullptr;
  const node_updates_pos* catalog = nullptr;  // the entry whose catalog events were read
  bool known = false;
  for (const auto& p : from) {
    if (p.node == self) mine = &p;
    if (!p.dbs_uuid.empty() && !catalog) catalog = &p;
    known = known || p.node == self ||
            std::any_of(remotes_.begin(), remotes_.end(), [&](const peer_part& r) { return r.node == p.node; });
  }
  const status foreign{errc::bad_request, "`since` is not a _db_updates sequence issued by this cluster"};
  if (!known) return foreign;
  if (mine && from.size() == 1 && mine->dbs_uuid != local_.pos().dbs_uuid && mine->log_uuid != local_.pos().log_uuid) {
    return foreign;  // a node of the same name in another cluster: neither file is this node's
  }
  if (mine && mine->dbs_uuid == local_.pos().dbs_uuid) {
    local_.start(*mine);
  } else {
    // The catalog events were read on another node (or this node's files were replaced): carry the
    // position over by time; this node's own update log continues where the token says, if it can.
    node_updates_pos carried = catalog ? *catalog : from.front();
    carried.log_uuid = mine ? mine->log_uuid : "";
    carried.log_seq = mine ? mine->log_seq : 0;
    local_.start(carried);
  }
  for (peer_part& r : remotes_) {
    for (const auto& p : from) {
      if (p.node != r.node) continue;
      r.uuid = p.log_uuid;
      r.seq = p.log_seq;
    }
  }
  return {};
}

bool cluster_updates::refill(peer_part& r, uint64_t after_override, bool use_override) {
  auto page = remote_->db_updates(r.node, use_override ? "" : r.uuid, use_override ? after_override : r.seq, page_rows,
                                  timeout_);
  r.failed = !page.ok();
  if (!page) return false;  // its position stays: its rows come when it answers again
  if (use_override) {
    r.uuid = page->uuid;
    r.seq = std::min(after_override, page->top);
    return true;
  }
  if (!r.uuid.empty() && page->uuid != r.uuid) r.translated = true;  // another log: from its start
  r.uuid = page->uuid;
  for (auto& row : page->rows) r.rows.push_back(std::move(row));
  r.more = page->rows.size() == page_rows;
  return true;
}

int cluster_updates::first() {
  const db_update_row* best = local_.peek();
  int at = best ? local_part : none;
  for (size_t k = 0; k < remotes_.size(); ++k) {
    peer_part& r = remotes_[k];
    if (r.rows.empty() && r.more && r.serves) refill(r);
    if (r.rows.empty()) continue;
    const db_update_row& row = r.rows.front().second;
    if (!best || row.time_s < best->time_s) {
      best = &row;
      at = static_cast<int>(k);
    }
  }
  if (at == none) {
    // Nothing anywhere now: the next look asks every node again (a new round).
    for (peer_part& r : remotes_) {
      r.more = true;
      if (!r.serves && remote_) r.serves = remote_->serves_db_updates(r.node);  // upgraded since
    }
  }
  return at;
}

const db_update_row* cluster_updates::peek() {
  for (;;) {
    int k = current_ = first();
    if (k == none) return nullptr;
    const db_update_row* row = k == local_part ? local_.peek() : &remotes_[k].rows.front().second;
    if (k == local_part || row->time_s >= not_before_) return row;  // this node's part filters itself
    pop();
  }
}

void cluster_updates::pop() {
  int k = current_;
  current_ = none;
  if (k == local_part) {
    local_.pop();
  } else if (k != none) {
    peer_part& r = remotes_[k];
    r.seq = r.rows.front().first;
    r.rows.pop_front();
  }
}

std::vector<node_updates_pos> cluster_updates::positions() const {
  std::vector<node_updates_pos> out{local_.pos()};
  for (const peer_part& r : remotes_) {
    node_updates_pos p;
    p.node = r.node;
    p.log_uuid = r.uuid;
    p.log_seq = r.seq;
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::string> cluster_updates::unavailable() const {
  std::vector<std::string> out;
  for (const peer_part& r : remotes_)
    if (!r.serves || r.failed) out.push_back(r.node);
  return out;
}

std::vector<std::string> cluster_updates::translated() const {
  std::vector<std::string> out;
  if (local_.translated()) out.push_back(local_.pos().node);
  for (const peer_part& r : remotes_)
    if (r.translated) out.push_back(r.node);
  return out;
}

}  // namespace settee
