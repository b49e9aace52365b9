#include "actors/doc_validator.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <thread>

#include "actors/all_docs_reader.hpp"
#include "actors/change_notifier.hpp"
#include "actors/doc_render.hpp"
#include "node/check.hpp"
#include "node/log.hpp"
#include "storage/rev_tree.hpp"

namespace settee {
namespace {

// `body` (a JSON object's text) with `head` fields first and `tail` fields last.
std::string with_fields(const std::string& head, const std::string& body, const std::string& tail) {
  size_t open = body.find('{');
  size_t close = body.rfind('}');
  std::string inner = open == std::string::npos || close == std::string::npos || close <= open
                          ? std::string()
                          : body.substr(open + 1, close - open - 1);
  const bool empty = inner.find_first_not_of(" \t\r\n") == std::string::npos;
  std::string out = "{" + head;
  if (!empty) out += (head.empty() ? "" : ",") + inner;
  if (!tail.empty()) out += (head.empty() && empty ? "" : ",") + tail;
  return out + "}";
}

// What a refusal or a failure of function `f` becomes (couch_query_servers:validate_doc_update).
status refusal(const js_reply& r, const std::string& ddoc_id) {
  if (r.what == js_reply::kind::thrown) {
    if (r.value.is_object() && r.value.size() == 1) {
      // (Not `*items().begin()`: that dereferences a temporary iterator, which dies at once.)
      const auto first = r.value.begin();
      const std::string key = first.key();
      const json& message = first.value();
      std::string text = message.is_string() ? message.get<std::string>() : message.dump();
      if (key == "forbidden") return {errc::forbidden, text};
      if (key == "unauthorized") return {errc::unauthorized, text};
      return {errc::unknown_error, text};
    }
    if (r.value.is_string()) return {errc::unknown_error, r.value.get<std::string>()};
    if (r.value.is_array() && r.value.size() == 3 && r.value[2].is_string())  // ["error", name, reason]
      return {errc::unknown_error, r.value[2].get<std::string>()};
    return {errc::unknown_error, r.value.dump()};
  }
  if (r.what == js_reply::kind::error) return {errc::unknown_error, r.name + ": " + r.reason};
  if (r.name == "timeout") return {errc::timeout, "validate_doc_update of " + ddoc_id + ": " + r.reason};
  return {errc::internal, "validate_doc_update of " + ddoc_id + " failed: " + r.name + ": " + r.reason};
}

constexpr size_t max_none = 100000;

}  // namespace

std::string validation_new_doc(const doc_update& u) {
  std::string head = "\"_id\":" + quote(u.id);
  std::string tail;
  if (!u.revs.empty()) {
    head += ",\"_rev\":" + quote(u.revs.front().str());
    tail = "\"_revisions\":{\"start\":" + std::to_string(u.revs.front().pos) + ",\"ids\":[";
    for (size_t i = 0; i < u.revs.size(); ++i) tail += (i ? "," : "") + quote(u.revs[i].hash);
    tail += "]}";
  }
  if (u.deleted) tail = "\"_deleted\":true" + (tail.empty() ? "" : "," + tail);
  return with_fields(head, u.body, tail);
}

std::string validation_old_doc(const doc_update& u, const doc_copy& current) {
  if (!current.found) return "null";
  const rev_tree& t = current.info.tree;
  int at = -1;
  if (u.new_edits) {
    // The revision the edit names; without one, the deleted winner a new document would extend.
    if (!u.revs.empty()) {
      at = t.find(u.revs.front());
    } else if (t.winner() >= 0 && t.winner_deleted()) {
      at = t.winner();
    }
  } else {
    // A replicated revision: the newest revision of its history this copy has.
    for (size_t i = 1; i < u.revs.size() && at < 0; ++i) at = t.find(u.revs[i]);
  }
  if (at < 0 || !t.is_leaf(at)) return "null";
  render_options opts;
  opts.revs = true;
  auto doc = render_rev(current, at, opts);
  return doc ? *doc : "null";
}

doc_validator::doc_validator(coordinator& coord, js_pool& js, change_notifier* notifier,
                             std::chrono::milliseconds recheck)
    : coord_(coord),
      js_(js),
      notifier_(notifier),
      recheck_(recheck),
      // A batch at once per two cores, and never more than there are workers: each worker running
      // a batch takes a core from the HTTP threads, and fewer batches are larger ones (validated
      // PUTs at c=32 on 2 cores: one runner 1.08x two, p99 6.3 -> 5.9 ms; bench/durable_writes.sh
      // VDU=1).
      max_runners_(std::max<size_t>(1, std::min<size_t>(js.max_workers(), std::thread::hardware_concurrency() / 2))) {}

result<std::shared_ptr<const std::vector<doc_validator::function>>> doc_validator::functions_of(const db_meta& db) {
  const std::string key = db.key();
  const uint64_t hash = std::hash<std::string>{}(key);
  auto by_hash = [](const none_entry& e, uint64_t h) { return e.key_hash < h; };
  uint64_t version = 0;
  {
    // One load per database at a time: the writers that miss together wait for it and take its
    // answer (a listing each would be a stampede at every `recheck`).
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      version = notifier_ ? notifier_->design_version() : 0;
      auto none = std::lower_bound(none_.begin(), none_.end(), hash, by_hash);
      if (none != none_.end() && none->key_hash == hash && none->design_version == version &&
          mono::now() - none->loaded < recheck_)
        return no_functions();
      auto it = cache_.find(key);
      if (it != cache_.end() && it->second.design_version == version && mono::now() - it->second.loaded < recheck_)
        return it->second.functions;
      if (std::find(loading_.begin(), loading_.end(), hash) == loading_.end()) break;
      loaded_.wait(lock);
    }
    loading_.push_back(hash);
  }
  auto fns = load_functions(db);
  std::lock_guard<std::mutex> lock(mu_);
  loading_.erase(std::find(loading_.begin(), loading_.end(), hash));
  loaded_.notify_all();
  if (!fns) return fns.error();
  auto none = std::lower_bound(none_.begin(), none_.end(), hash, by_hash);
  const bool listed = none != none_.end() && none->key_hash == hash;
  if ((*fns)->empty()) {
    cache_.erase(key);
    if (listed) {
      *none = none_entry{hash, version, mono::now()};
    } else {
      if (none_.size() >= max_none) none_.clear();  // databases come and go: never unbounded
      none_.insert(std::lower_bound(none_.begin(), none_.end(), hash, by_hash), none_entry{hash, version, mono::now()});
    }
    return no_functions();
  }
  if (listed) none_.erase(none);
  if (cache_.size() > 10000) cache_.clear();
  cache_[key] = entry{*fns, version, mono::now()};
  return *fns;
}

// The design documents of `db` as every copy that answers has them, the newest revision of each
// (a design document acknowledged on a quorum is seen at once, whichever copy lags); by id.
result<std::vector<all_docs_row>> doc_validator::design_docs(const db_meta& db) {
  all_docs_request req = design_docs_request(true);
  req.with_deleted = true;  // a copy that has the deletion outranks one that lags with the document
  std::map<std::string, all_docs_row> newest;
  auto rev_of = [](const std::string& text) {
    rev_id r;
    (void)parse_rev(text, r);  // a stored revision always parses
    return r;
  };
  for (size_t i = 0; i < db.ranges.size(); ++i) {
    auto pages = coord_.ask_each<all_docs_page>(
        coord_.copies(db, i), [&req](shard_copy& c, size_t, auto done) { c.start_all_docs(req, std::move(done)); });
    const status* failed = nullptr;
    bool any = false;
    for (auto& page : pages) {
      if (!page) {
        failed = &page.error();
        continue;
      }
      any = true;
      for (auto& row : page->rows) {
        auto [at, fresh] = newest.emplace(row.id, row);
        if (!fresh && rev_of(at->second.rev) < rev_of(row.rev)) at->second = row;
      }
    }
    if (!any) return failed ? *failed : status{errc::unavailable, "no copy of a range answered"};
  }
  std::vector<all_docs_row> out;
  for (auto& [id, row] : newest) out.push_back(std::move(row));
  return out;
}

// The database's design documents with a validate_doc_update, in the order of their ids.
result<std::shared_ptr<const std::vector<doc_validator::function>>> doc_validator::load_functions(const db_meta& db) {
  auto listing = design_docs(db);
  if (!listing) return listing.error();
  auto fns = std::make_shared<std::vector<function>>();
  for (const auto& doc : *listing) {
    if (doc.deleted || doc.doc.empty()) continue;
    json d = json::parse(doc.doc, nullptr, false);
    auto v = d.is_object() ? d.find("validate_doc_update") : d.end();
    if (!d.is_object() || v == d.end() || !v->is_string()) continue;
    auto lang = d.find("language");
    if (lang != d.end() && !(lang->is_string() && lang->get<std::string>() == "javascript")) continue;
    fns->push_back({doc.id, worker_key(db.key(), doc.id, doc.rev), doc.doc});
  }
  if (fns->empty()) return no_functions();
  return std::shared_ptr<const std::vector<function>>(fns);
}

std::shared_ptr<const std::vector<doc_validator::function>> doc_validator::no_functions() {
  static const auto none = std::make_shared<const std::vector<function>>();
  return none;
}

result<bool> doc_validator::guarded(const db_meta& db) {
  auto fns = functions_of(db);
  if (!fns) return fns.error();
  return !(*fns)->empty();
}

void doc_validator::run_batch(const std::vector<queued*>& batch) {
  const function& f = *batch.front()->f;
  std::vector<std::string> calls;
  calls.reserve(batch.size());
  for (queued* q : batch) calls.push_back(q->args);
  auto replies = js_.run_each(f.key, f.ddoc_json, json::array({"validate_doc_update"}), calls);
  for (size_t i = 0; i < batch.size(); ++i) {
    queued& q = *batch[i];
    if (!replies) {
      q.result = replies.error();
      continue;
    }
    const js_reply& r = (*replies)[i];
    for (const auto& line : r.log)
      log::info("validate_doc_update of " + *q.db_name + "/" + f.ddoc_id + " logged: " + line);
    if (r.ok()) continue;
    q.result = refusal(r, f.ddoc_id);
    if (q.result.code != errc::forbidden && q.result.code != errc::unauthorized)
      log::warning("validate_doc_update of " + *q.db_name + "/" + f.ddoc_id + ": " + q.result.reason);
  }
}

void doc_validator::run_batched(std::vector<queued>& mine) {
  constexpr size_t max_batch = 256;
  std::condition_variable me;  // each caller is woken only for its own answers, or to run a batch
  std::unique_lock<std::mutex> lock(queue_mu_);
  for (auto& q : mine) {
    q.owner = &me;
    queue_.push_back(&q);
  }
  auto all_done = [&] { return std::all_of(mine.begin(), mine.end(), [](const queued& q) { return q.done; }); };
  while (!all_done()) {
    const bool free = runners_ < max_runners_;
    // Every runner busy for stall_after (a function that loops until its deadline, say): this
    // caller runs its own calls on another worker rather than wait behind it.
    const bool stalled = !free && runners_ < js_.max_workers() && mono::now() - newest_run_ >= stall_after;
    auto lead = queue_.end();
    if (free && !queue_.empty()) lead = queue_.begin();
    if (stalled) lead = std::find_if(queue_.begin(), queue_.end(), [&](const queued* q) { return q->owner == &me; });
    if (lead == queue_.end()) {
      if (free) {
        me.wait(lock);
      } else {
        me.wait_for(lock, stall_after);
      }
      continue;
    }
    // Everything queued for the lead's function (the queue's head's; past a stall, this caller's
    // own first call's), in the order queued.
    const std::string key = (*lead)->f->key;
    std::vector<queued*> batch, rest;
    for (queued* q : queue_) (q->f->key == key && batch.size() < max_batch ? batch : rest).push_back(q);
    queue_.swap(rest);
    ++runners_;
    newest_run_ = mono::now();
    lock.unlock();
    run_batch(batch);
    lock.lock();
    --runners_;
    std::vector<std::condition_variable*> owners;
    for (queued* q : batch) {
      q->done = true;
      if (q->owner != &me && std::find(owners.begin(), owners.end(), q->owner) == owners.end())
        owners.push_back(q->owner);
    }
    for (auto* o : owners) o->notify_one();
    if (!queue_.empty() && queue_.front()->owner != &me) queue_.front()->owner->notify_one();  // a runner is free
  }
  // Leaving with work queued and no runner: the next caller in line runs it.
  if (!queue_.empty() && runners_ < max_runners_) queue_.front()->owner->notify_one();
}

result<std::vector<status>> doc_validator::validate(const db_meta& db, const std::vector<doc_update>& docs,
                                                    const write_caller& caller) {
  std::vector<status> out(docs.size());
  auto fns = functions_of(db);
  if (!fns) return fns.error();
  if ((*fns)->empty()) return out;
  std::vector<std::string> ids;
  std::vector<size_t> which;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (docs[i].id.compare(0, 8, "_design/") == 0 || docs[i].id.compare(0, 7, "_local/") == 0) continue;
    ids.push_back(docs[i].id);
    which.push_back(i);
  }
  if (ids.empty()) return out;
  auto current = coord_.open_docs(db, ids, doc_bodies::leaves);
  if (!current) return current.error();
  // The arguments of each document to validate; then one round per function, over the documents
  // every earlier function let through (the first refusal wins, as CouchDB's).
  std::vector<std::pair<size_t, std::string>> pending;
  for (size_t k = 0; k < which.size(); ++k) {
    const doc_update& u = docs[which[k]];
    const doc_copy& d = (*current)[k];
    // A replicated revision this copy has already is not written again: nothing to validate.
    if (!u.new_edits && !u.revs.empty() && d.found && d.info.tree.find(u.revs.front()) >= 0) continue;
    pending.emplace_back(which[k], "[" + validation_new_doc(u) + "," + validation_old_doc(u, d) + "," +
                                       caller.user_ctx + "," + caller.sec_obj + "]");
  }
  for (const function& f : **fns) {
    std::vector<queued> round;
    for (auto& [i, args] : pending)
      if (out[i]) round.push_back(queued{&f, &db.name, args, {}, false});
    if (round.empty()) break;
    run_batched(round);
    size_t r = 0;
    for (auto& [i, args] : pending)
      if (out[i]) out[i] = round[r++].result;
    SETTEE_CHECK(r == round.size());  // each document got the answer of its own call
  }
  SETTEE_CHECK(out.size() == docs.size());
  return out;
}

}  // namespace settee
