#include "actors/db_catalog.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "actors/bridge.hpp"
#include "node/log.hpp"

namespace settee {

using json = nlohmann::json;

db_catalog::db_catalog(shard_registry& shards, const clock& clk, std::string data_dir, std::string node_name,
                       std::chrono::milliseconds timeout)
    : shards_(shards),
      clk_(clk),
      data_dir_(std::move(data_dir)),
      node_name_(std::move(node_name)),
      timeout_(timeout),
      dbs_path_(data_dir_ + "/_dbs.lmdb") {}

db_meta db_catalog::make_meta(const std::string& name, uint32_t q, int64_t created) const {
  db_meta m;
  m.name = name;
  m.q = q;
  m.created = created;
  m.ranges = make_ranges(q);
  for (auto& r : m.ranges) {
    m.shard_paths.push_back(data_dir_ + "/shards/" + r.name() + "/" + name + "." + std::to_string(created));
  }
  return m;
}

namespace {

// Every live `_dbs` entry as it is stored now.
std::map<std::string, std::pair<uint32_t, int64_t>> read_entries(const shard_store::snapshot& snap) {
  std::map<std::string, std::pair<uint32_t, int64_t>> out;
  snap.scan_docs("", false, [&](const doc_info& d) {
    std::string body;
    if (!snap.winner_body(d, body)) return true;
    json j = json::parse(body, nullptr, false);
    if (!j.is_object() || !j["q"].is_number_unsigned() || !j["created"].is_number_integer()) {
      log::error("ignoring unreadable _dbs entry for " + d.id);
      return true;
    }
    out[d.id] = {j["q"].get<uint32_t>(), j["created"].get<int64_t>()};
    return true;
  });
  return out;
}

}  // namespace

status db_catalog::load() {
  auto h = dbs();
  if (!h) return h.error();
  auto snap = h->store->read();
  if (!snap) return snap.error();
  std::unique_lock lock(mu_);
  for (auto& [name, qc] : read_entries(*snap)) {
    auto m = make_meta(name, qc.first, qc.second);
    last_suffix_ = std::max(last_suffix_, m.created);
    dbs_by_name_.emplace(name, std::move(m));
  }
  loaded_seq_ = h->store->header().update_seq;
  return {};
}

status db_catalog::reload() {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto h = dbs();
  if (!h) return h.error();
  uint64_t seq = h->store->header().update_seq;
  if (seq == loaded_seq_) return {};
  auto snap = h->store->read();
  if (!snap) return snap.error();
  auto entries = read_entries(*snap);
  std::vector<db_meta> gone, added;
  {
    std::shared_lock lock(mu_);
    for (auto& [name, m] : dbs_by_name_) {
      auto e = entries.find(name);
      // Deleted, or re-created elsewhere as a new incarnation.
      if (e == entries.end() || e->second.second != m.created) gone.push_back(m);
    }
  }
  // Files first, then the name: once a database is gone from the catalog its files are gone too.
  for (auto& m : gone) {
    shards_.notify(m.key());
    for (auto& p : m.shard_paths) shards_.remove(p);
  }
  {
    std::unique_lock lock(mu_);
    for (auto& m : gone) dbs_by_name_.erase(m.name);
    for (auto& [name, qc] : entries) {
      if (dbs_by_name_.count(name)) continue;
      auto m = make_meta(name, qc.first, qc.second);
      last_suffix_ = std::max(last_suffix_, m.created);
      added.push_back(m);
      dbs_by_name_.emplace(name, std::move(m));
    }
    loaded_seq_ = seq;
  }
  for (auto& m : added) {
    for (auto& p : m.shard_paths) {
      if (auto s = shards_.acquire(p, m.created, m.key()); !s) return s.error();
    }
  }
  return {};
}

db_meta db_catalog::dbs_meta() const {
  db_meta m;
  m.name = "_dbs";
  m.q = 1;
  m.ranges = make_ranges(1);
  m.shard_paths = {dbs_path_};
  return m;
}

result<db_meta> db_catalog::find(const std::string& name) const {
  std::shared_lock lock(mu_);
  auto it = dbs_by_name_.find(name);
  if (it == dbs_by_name_.end()) return status{errc::db_not_found, "Database does not exist."};
  return it->second;
}

bool db_catalog::alive(const db_meta& m) const {
  auto now = find(m.name);
  if (!now || now->created != m.created) return false;
  for (auto& p : m.shard_paths) {
    if (shards_.removed(p)) return false;
  }
  return true;
}

std::vector<std::string> db_catalog::names() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> out;
  out.reserve(dbs_by_name_.size());
  for (auto& [name, m] : dbs_by_name_) out.push_back(name);
  return out;
}

status db_catalog::write_entry(const std::string& name, const std::string& body, bool deleted) {
  auto h = dbs();
  if (!h) return h.error();
  auto op = std::make_shared<write_op>();
  doc_update u;
  u.id = name;
  u.body = body;
  u.deleted = deleted;
  if (auto snap = h->store->read()) {
    doc_info d;
    if (snap->doc(name, d)) u.revs.push_back(d.tree.rev(d.tree.winner()));
  }
  op->docs.push_back(std::move(u));
  return write_one(h->writer, op, timeout_);
}

result<db_meta> db_catalog::create(const std::string& name, uint32_t q) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  if (find(name)) {
    return status{errc::file_exists, "The database could not be created, the file already exists."};
  }
  int64_t suffix = std::max(clk_.now_s(), last_suffix_ + 1);
  db_meta m = make_meta(name, q, suffix);
  json by_range = json::object();
  for (auto& r : m.ranges) by_range[r.name()] = json::array({node_name_});
  json body = {{"q", q}, {"n", 1}, {"created", suffix}, {"by_range", by_range}, {"props", json::object()}};
  if (auto st = write_entry(name, body.dump(), false); !st) return st;
  // Create the shard files now, so a 201 means the database is fully there.
  for (auto& p : m.shard_paths) {
    if (auto h = shards_.acquire(p, suffix, m.key()); !h) return h.error();
  }
  last_suffix_ = suffix;
  std::unique_lock lock(mu_);
  dbs_by_name_[name] = m;
  return m;
}

status db_catalog::remove(const std::string& name) {
  std::lock_guard<std::mutex> wlock(write_mu_);
  auto m = find(name);
  if (!m) return m.error();
  if (auto st = write_entry(name, "{}", true); !st) return st;
  shards_.notify(m->key());  // open feeds notice and end, releasing the shards
  for (auto& p : m->shard_paths) shards_.remove(p);
  std::unique_lock lock(mu_);
  dbs_by_name_.erase(name);  // after the files: a 200 means they are gone
  return {};
}

}  // namespace settee
