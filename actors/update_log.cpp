#include "actors/update_log.hpp"

#include <unistd.h>

#include "actors/bridge.hpp"
#include "node/clock.hpp"
#include "node/files.hpp"
#include "node/json.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

// "<name>.<suffix>" -> name and instance; false for keys of anything but a database incarnation.
bool split_key(const std::string& key, std::string& name, int64_t& instance) {
  auto dot = key.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) return false;
  instance = 0;
  for (size_t i = dot + 1; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9' || instance > (INT64_MAX - 9) / 10) return false;
    instance = instance * 10 + (key[i] - '0');
  }
  name = key.substr(0, dot);
  return true;
}

// The update seq of each of this node's copies of `m`, by range name (a copy that cannot be
// opened, e.g. just deleted, is left out).
json local_seqs(shard_registry& shards, const db_meta& m) {
  json seqs = json::object();
  for (size_t i = 0; i < m.q; ++i) {
    if (!m.hosts(i)) continue;
    auto h = shards.acquire(m.shard_paths[i], m.created, m.key());
    if (h) seqs[m.ranges[i].name()] = h->store->header().update_seq;
  }
  return seqs;
}

// True when `recorded` (a record's body) already covers instance `instance` at `seqs`.
bool covers(const json& recorded, int64_t instance, const json& seqs) {
  if (!recorded.is_object() || recorded.value("instance", int64_t{-1}) != instance) return false;
  const json& had = recorded["seqs"];
  if (!had.is_object()) return false;
  for (auto& [range, seq] : seqs.items()) {
    auto it = had.find(range);
    if (it == had.end() || !it->is_number_unsigned() || it->get<uint64_t>() < seq.get<uint64_t>()) return false;
  }
  return true;
}

json recorded_body(const shard_store::snapshot& snap, const std::string& name, doc_info& d, bool& found) {
  found = snap.doc(name, d);
  std::string body;
  if (!found || !snap.winner_body(d, body)) return json();
  return parse_json(body).value_or(json());
}

// This boot's id from the kernel; empty when there is none to read.
std::string kernel_boot_id() {
  auto text = read_file("/proc/sys/kernel/random/boot_id");
  if (!text) return "";
  while (!text->empty() && (text->back() == '\n' || text->back() == ' ')) text->pop_back();
  return *text;
}

}  // namespace

update_log::update_log(shard_registry& shards, db_catalog& catalog, const clock& clk, std::string data_dir,
                       update_log_options opts)
    : shards_(shards),
      catalog_(catalog),
      clk_(clk),
      path_(file_in(data_dir)),
      boot_path_(boot_file_in(data_dir)),
      opts_(std::move(opts)) {
  if (opts_.boot_id.empty()) opts_.boot_id = kernel_boot_id();
  shards_.set_role(path_, file_role::derived);
}

update_log::~update_log() {
  stop();
}

status update_log::open() {
  // "<boot id> open|clean". No file: a release that synced the record wrote it (keep it).
  auto was = read_file(boot_path_);
  if (was && ::access(path_.c_str(), F_OK) == 0) {
    auto space = was->find(' ');
    std::string boot = was->substr(0, space);
    bool clean = space != std::string::npos && was->compare(space + 1, 5, "clean") == 0;
    if (!clean && (boot != opts_.boot_id || boot.empty())) {
      log::info(path_ + " was not stopped cleanly before the machine restarted: rebuilding it from this node's copies");
      shard_store::remove_files(path_);
    }
    // A clean stop recorded every mark first: no copy can be ahead of its record.
    up_to_date_ = clean;
  }
  if (auto st = replace_file(boot_path_, opts_.boot_id + " open\n", 0644); !st) return st;
  opened_ = true;
  return {};
}

// The flusher: a job of the node's runner, woken by the first mark after a record.
class update_log::flusher final : public job {
 public:
  explicit flusher(update_log& log) : log_(log) {}
  job_next step(job_context&) override { return log_.flush_step(); }

 private:
  update_log& log_;
};

void update_log::start(job_runner& runner) {
  started_ = true;
  runner_ = &runner;
  runner.submit(job_id, lane, std::make_shared<flusher>(*this));
}

void update_log::stop() {
  if (runner_) runner_->cancel(job_id, true);
  runner_ = nullptr;
  std::set<std::string> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    if (started_) left.swap(marked_);
  }
  // What was marked since the flusher's last record (the last commits before the shards closed).
  if (!left.empty() && !write(left)) log::error("the last updated databases were not recorded");
  {
    std::lock_guard<std::mutex> lock(mu_);
    recovered_ = true;
    recorded_ = marks_;
  }
  cv_.notify_all();
  if (!opened_) return;
  opened_ = false;
  auto h = record();
  status st = h ? h->store->sync() : h.error();
  // Only a flusher that ran saw every commit (with the bookkeeping off, nothing was recorded).
  if (st && started_) st = replace_file(boot_path_, opts_.boot_id + " clean\n", 0644);
  if (!st) log::error("the record of updated databases was not stopped cleanly: " + st.reason);
}

void update_log::mark(const std::string& key) {
  std::string name;
  int64_t instance = 0;
  if (key == db_catalog::notify_key() || !split_key(key, name, instance)) return;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!marked_.insert(key).second) return;
    ++marks_;
    first = marked_.size() == 1;
    if (first) first_mark_ = mono::now();
  }
  if (first && runner_) runner_->wake(job_id);
}

void update_log::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  uint64_t target = marks_;
  cv_.wait(lock, [&] { return stopping_ || (recovered_ && recorded_ >= target); });
}

job_next update_log::flush_step() {
  if (!recovery_ran_) {
    recovery_ran_ = true;
    if (!up_to_date_) recover();
    std::lock_guard<std::mutex> lock(mu_);
    found_ = marks_;  // what recovery marked (and anything marked meanwhile)
    recovered_ = found_ == 0;
    last_ = mono::now() - opts_.min_interval;
    cv_.notify_all();
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (marked_.empty()) return job_next::idle();
  if (recovered_) {
    // Let a burst gather, and keep to one record per min_interval (what recovery found goes at once).
    const auto at = std::max(first_mark_ + opts_.gather, last_ + opts_.min_interval);
    const auto now = mono::now();
    if (now < at) return job_next::pause(std::chrono::ceil<std::chrono::milliseconds>(at - now));
  }
  std::set<std::string> batch;
  batch.swap(marked_);
  const uint64_t taken = marks_;
  lock.unlock();
  const bool ok = write(batch);
  lock.lock();
  last_ = mono::now();
  marked_.insert(later_.begin(), later_.end());  // incarnations the catalog did not know yet
  later_.clear();
  if (ok) {
    recorded_ = taken;
    recovered_ = recovered_ || recorded_ >= found_;
    cv_.notify_all();
  } else {
    marked_.insert(batch.begin(), batch.end());  // again after min_interval
  }
  if (!marked_.empty()) first_mark_ = last_;
  return job_next::more();
}

bool update_log::write(const std::set<std::string>& keys) {
  auto h = record();
  if (!h) {
    log::error("cannot open " + path_ + ": " + h.error().reason);
    return false;
  }
  auto op = std::make_shared<write_op>();
  {
    auto snap = h->store->read();
    if (!snap) {
      log::error("cannot read " + path_ + ": " + snap.error().reason);
      return false;
    }
    if (!collect(*snap, keys, op->docs)) return false;
  }
  if (op->docs.empty()) return true;
  // The flusher is the record's only writer, so the base revisions read above are current.
  if (status st = write_one(h->writer, op, opts_.timeout); !st) {
    log::error("recording updated databases in " + path_ + " failed: " + st.reason);
    return false;
  }
  return true;
}

bool update_log::collect(const shard_store::snapshot& snap, const std::set<std::string>& keys,
                         std::vector<doc_update>& out) {
  for (const std::string& key : keys) {
    std::string name;
    int64_t instance = 0;
    if (!split_key(key, name, instance)) continue;
    auto m = catalog_.find(name);
    if (m && m->created < instance) {
      // A copy of an incarnation this node's catalog has not loaded yet (created on another node a
      // moment ago): look at `_dbs` again, and if it is still not there, keep the mark for later.
      catalog_.mark_stale();
      m = catalog_.lookup(name);
      if (m && m->created < instance) {
        later_.insert(key);
        continue;
      }
    }
    if (!m || m->created != instance) continue;  // deleted (or re-created) since: its events say so
    json seqs = local_seqs(shards_, *m);
    doc_info d;
    bool found = false;
    json had = recorded_body(snap, name, d, found);
    if (covers(had, instance, seqs)) continue;
    doc_update u;
    u.id = name;
    u.body = json{{"instance", instance}, {"seqs", seqs}}.dump();
    if (found) u.revs.push_back(d.tree.rev(d.tree.winner()));
    out.push_back(std::move(u));
  }
  if (!snap.fault()) {
    log::error("cannot read " + path_ + ": " + snap.fault().reason);
    return false;
  }
  return true;
}

void update_log::recover() {
  auto h = record();
  if (!h) {
    log::error("cannot open " + path_ + ": " + h.error().reason);
    return;
  }
  for (const std::string& name : catalog_.names()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
    }
    auto m = catalog_.find(name);
    if (!m) continue;
    json seqs = local_seqs(shards_, *m);
    bool written = false;
    for (auto& [range, seq] : seqs.items()) written = written || seq.get<uint64_t>() > 0;
    if (!written) continue;
    auto snap = h->store->read();
    if (!snap) return;
    doc_info d;
    bool found = false;
    if (!covers(recorded_body(*snap, name, d, found), m->created, seqs)) mark(m->key());
  }
}

}  // namespace settee
