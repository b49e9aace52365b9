#include "actors/coordinator.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <thread>

#include "actors/bridge.hpp"
#include "actors/gather.hpp"
#include "actors/local_copy.hpp"
#include "actors/quorum.hpp"
#include "actors/remote_copy.hpp"
#include "node/clock.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"

namespace settee {

namespace {

// A copy that cannot be reached or opened: every call answers `why`.
class failed_copy final : public shard_copy {
 public:
  failed_copy(std::string node, status why) : node_(std::move(node)), why_(std::move(why)) {}
  const std::string& node() const override { return node_; }
  bool local() const override { return false; }
  result<shard_summary> summary() override { return why_; }
  result<changes_page> changes(const changes_request&) override { return why_; }
  result<resolved_since> resolve_since(const std::string&, uint64_t) override { return why_; }
  result<all_docs_page> all_docs(const all_docs_request&) override { return why_; }
  result<time_seq_state> time_seq(bool) override { return why_; }
  void open_docs(const std::vector<std::string>&, doc_bodies, docs_done done) override { done(why_); }
  result<std::optional<local_doc>> open_local(const std::string&) override { return why_; }
  result<uint64_t> write_local(const local_update&) override { return why_; }
  result<std::vector<settee::local_doc>> list_local() override { return why_; }
  status set_revs_limit(uint32_t) override { return why_; }
  result<std::string> read_blob(const std::string&, uint64_t, uint64_t) override { return why_; }
  result<bool> stage_blob(const std::string&, uint64_t, const std::string&) override { return why_; }
  status drop_staged(const std::string&) override { return why_; }
  void update_docs(std::vector<doc_update>, write_done done) override { done(why_); }

 private:
  std::string node_;
  status why_;
};

// A read that waited this long for a copy asks the next one as well (a slow copy delays a quorum
// read by this much, not by the request timeout).
constexpr std::chrono::milliseconds hedge_after{100};
// Calls to other nodes' copies that a client waits for.
constexpr std::chrono::milliseconds remote_call_timeout{30000};
// A write refused by a sealed split parent looks at `_dbs` again at least this often.
constexpr std::chrono::milliseconds map_recheck{100};

// One copy's open_docs, waited for.
result<std::vector<doc_copy>> open_on(shard_copy& copy, const std::vector<std::string>& ids, doc_bodies bodies,
                                      std::chrono::milliseconds timeout) {
  return wait_one<std::vector<doc_copy>>([&](auto done) { copy.open_docs(ids, bodies, std::move(done)); },
                                         mono::now() + timeout, "node " + copy.node());
}

}  // namespace

// This node's copy first, then the others in the database's order.
class coordinator::node_copies final : public copy_source {
 public:
  explicit node_copies(coordinator& c) : c_(c) {}
  std::vector<copy_ptr> copies(const db_meta& db, size_t range) override {
    std::vector<copy_ptr> out;
    if (db.hosts(range)) {
      auto h = c_.shards_.acquire(db.shard_paths[range], db.created, db.key());
      if (h) {
        auto copy = std::make_shared<local_copy>(std::move(*h), c_.self_, c_.timeout_);
        copy->serve_indexes(&db, range, c_.readers_);
        out.push_back(std::move(copy));
      } else
        out.push_back(std::make_shared<failed_copy>(c_.self_, h.error()));
    }
    if (db.everywhere()) return out;
    for (const std::string& node : db.nodes[range]) {
      if (node == c_.self_) continue;
      if (c_.remote_) {
        out.push_back(std::make_shared<remote_copy>(*c_.remote_, node, db.name, db.ranges[range].name(),
                                                    std::min(c_.timeout_, remote_call_timeout)));
      } else {
        out.push_back(std::make_shared<failed_copy>(
            node, status{errc::unavailable, "node " + node + " is unavailable: not clustered"}));
      }
    }
    return out;
  }

 private:
  coordinator& c_;
};

coordinator::coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout,
                         std::string self, std::chrono::milliseconds view_timeout)
    : catalog_(catalog),
      shards_(shards),
      timeout_(timeout),
      self_(std::move(self)),
      view_timeout_(view_timeout),
      own_source_(std::make_unique<node_copies>(*this)),
      source_(own_source_.get()) {}

coordinator::~coordinator() = default;

std::vector<copy_ptr> coordinator::copies(const db_meta& db, size_t index) {
  return source_->copies(db, index);
}

result<shard_handle> coordinator::shard(const db_meta& db, size_t index) {
  if (!db.hosts(index)) {
    return status{errc::not_found, "no copy of " + db.name + " range " + db.ranges[index].name() + " on this node"};
  }
  return shards_.acquire(db.shard_paths[index], db.created, db.key());
}

size_t coordinator::shard_index(const db_meta& db, std::string_view doc_id) const {
  return range_index(db.ranges, placement_hash(doc_id, db.partitioned));
}

result<shard_store::snapshot> coordinator::read_for(const db_meta& db, std::string_view doc_id) {
  auto h = shard(db, shard_index(db, doc_id));
  if (!h) return h.error();
  return h->store->read();
}

result<write_outcome> coordinator::update_docs(const db_meta& db, std::vector<doc_update> docs, size_t w) {
  metrics::node().doc_writes.fetch_add(docs.size(), std::memory_order_relaxed);
  auto out = write_once(db, docs, w);
  if (!out) return out;
  // A split seals its parent shard (errc::shard_moved) from its last copy pass until the new shard
  // map is in `_dbs`, a few milliseconds: the documents it refused are written again on that map.
  auto moved = [&] {
    std::vector<size_t> at;
    for (size_t i = 0; i < out->results.size(); ++i)
      if (out->results[i].st.code == errc::shard_moved) at.push_back(i);
    return at;
  };
  status st = follow_new_maps(
      db, [&] { return !moved().empty(); },
      [&](const db_meta& current) -> status {
        const std::vector<size_t> again = moved();
        std::vector<doc_update> retry;
        for (size_t i : again) retry.push_back(docs[i]);
        auto second = write_once(current, retry, w);
        if (!second) return second.error();
        for (size_t k = 0; k < again.size(); ++k) out->results[again[k]] = std::move(second->results[k]);
        out->quorum_met = out->quorum_met && second->quorum_met;
        return {};
      });
  if (!st) return st;
  // This node's caches of design functions learn of a design document it wrote at once, before
  // its own copy commits it (the quorum may be other nodes' copies): else a validator that had
  // loaded "no functions" would pass the next write through here.
  for (size_t i = 0; i < docs.size() && on_design_written_; ++i) {
    if (docs[i].id.rfind("_design/", 0) == 0 && out->results[i].st) {
      on_design_written_();
      break;
    }
  }
  return out;
}

status coordinator::follow_new_maps(const db_meta& db, const std::function<bool()>& pending,
                                    const std::function<status(const db_meta&)>& again) {
  const auto deadline = mono::now() + timeout_;
  db_meta current = db;
  uint64_t seen = catalog_.map_changes();
  while (pending() && mono::now() < deadline) {
    // Until the map changes here (the switch on this node, a peer's push of `_dbs`); `_dbs` is
    // read again at least every map_recheck in case a change came unannounced.
    catalog_.wait_map_change(seen, std::min(deadline, mono::now() + map_recheck));
    catalog_.mark_stale();
    seen = catalog_.map_changes();
    auto fresh = catalog_.lookup(db.name);
    if (!fresh || fresh->created != db.created) break;
    if (fresh->shard_paths == current.shard_paths && fresh->nodes == current.nodes) continue;
    current = std::move(*fresh);
    if (auto st = again(current); !st) return st;
  }
  return {};
}

size_t coordinator::write_quorum(const db_meta& db, size_t w) {
  const size_t n = db.everywhere() ? 1 : db.n;
  return w == 0 ? n / 2 + 1 : std::min(w, n);
}

coordinator::copies_outcome coordinator::on_every_copy(const db_meta& db,
                                                       const std::function<status(shard_copy&)>& set) {
  copies_outcome out;
  for (size_t i = 0; i < db.q; ++i) {
    for (const copy_ptr& c : copies(db, i)) {
      ++out.asked;
      if (status st = set(*c); !st) out.failed.push_back({db.ranges[i].name(), c->node(), st.reason});
    }
  }
  return out;
}

namespace {

// The updates at `positions` of `docs`, as the copies of their range take them. Each copy makes an
// edit's revision itself: SHA-256 (faster) only when every one of them can.
std::vector<doc_update> range_batch(const std::vector<doc_update>& docs, const std::vector<size_t>& positions,
                                    const std::vector<copy_ptr>& copies) {
  const bool sha = std::all_of(copies.begin(), copies.end(), [](auto& c) { return c->hashes_sha256(); });
  std::vector<doc_update> batch;
  batch.reserve(positions.size());
  for (size_t i : positions) {
    batch.push_back(docs[i]);
    if (sha) batch.back().hash = rev_hash::sha256;
  }
  return batch;
}

}  // namespace

result<write_outcome> coordinator::write_once(const db_meta& db, const std::vector<doc_update>& docs, size_t w) {
  // Group by range, remembering each doc's input position.
  auto positions = by_range(db, docs);
  std::vector<size_t> used;
  std::vector<std::vector<copy_ptr>> targets;
  std::vector<size_t> sizes;
  for (auto& [range, pos] : positions) {
    used.push_back(range);
    targets.push_back(copies(db, range));
    sizes.push_back(targets.back().size());
  }
  const size_t quorum = write_quorum(db, w);
  gather<std::vector<doc_result>> g(sizes);
  // Other nodes' copies are asked first; the last write dispatched, when its copy is this node's,
  // may commit on this thread (bridge::commit_here), which waits for it next anyway.
  std::vector<std::pair<size_t, size_t>> order;
  for (bool local : {false, true})
    for (size_t r = 0; r < used.size(); ++r)
      for (size_t k = 0; k < targets[r].size(); ++k)
        if (targets[r][k]->local() == local) order.emplace_back(r, k);
  std::vector<std::vector<doc_update>> batches(used.size());
  for (size_t r = 0; r < used.size(); ++r) batches[r] = range_batch(docs, positions[used[r]], targets[r]);
  std::vector<size_t> left = sizes;  // copies of each range not asked yet: the last one takes the batch
  for (size_t o = 0; o < order.size(); ++o) {
    const auto [r, k] = order[o];
    auto slot = g.slot(r, k);
    std::optional<commit_here> here;
    if (o + 1 == order.size() && targets[r][k]->local()) here.emplace();
    std::vector<doc_update> batch = --left[r] == 0 ? std::move(batches[r]) : batches[r];
    targets[r][k]->update_docs(
        std::move(batch), [slot, node = targets[r][k]->node()](result<std::vector<doc_result>> a) {
          if (!a && a.error().code == errc::shard_moved)  // a split's or move's seal: retried on the new map
            log::info("write to " + node + "'s copy refused: " + a.error().reason + " (retried on the new shard map)");
          else if (!a)
            log::warning("write to " + node + "'s copy failed: " + a.error().reason);
          slot(std::move(a));
        });
  }
  auto answers = g.take(quorum, mono::now() + timeout_);

  write_outcome out;
  out.results.assign(docs.size(), doc_result{});
  for (size_t r = 0; r < used.size(); ++r) {
    status first_failure;
    for (auto& a : answers[r])
      if (a && !*a && first_failure) first_failure = a->error();
    const std::vector<size_t>& pos = positions[used[r]];
    for (size_t d = 0; d < pos.size(); ++d) {
      std::vector<doc_result> votes;
      for (auto& a : answers[r])
        if (a && *a && d < (*a)->size()) votes.push_back((**a)[d]);
      quorum_answer qa = decide_quorum(votes, quorum);
      if (votes.empty()) {
        // No copy committed: say why (the first failure, or the deadline).
        qa.result.st = !first_failure ? first_failure
                                      : status{errc::timeout,
                                               "The request could not be processed in a reasonable amount of time."};
      }
      // A refusal by a split's sealed parent is retried on the new map (update_docs).
      if (qa.result.st.code != errc::shard_moved) out.quorum_met = out.quorum_met && qa.met;
      out.results[pos[d]] = std::move(qa.result);
    }
  }
  return out;
}

result<std::string> coordinator::read_blob(const db_meta& db, const std::string& id, const std::string& key,
                                           uint64_t offset, uint64_t length) {
  status last{errc::unavailable, "no copy of the range of '" + id + "' is known"};
  for (auto& copy : copies(db, shard_index(db, id))) {
    auto bytes = copy->read_blob(key, offset, length);
    if (bytes) return bytes;
    last = bytes.error();
  }
  return last;
}

result<bool> coordinator::stage_blob(const db_meta& db, const std::string& id, const std::string& key, uint64_t offset,
                                     const std::string& piece) {
  status last{errc::unavailable, "no copy of the range of '" + id + "' is known"};
  bool whole = true, answered = false;
  for (auto& copy : copies(db, shard_index(db, id))) {
    auto r = copy->stage_blob(key, offset, piece);
    if (!r && r.error().code != errc::unavailable) return r.error();
    if (!r) {
      last = r.error();
      continue;
    }
    answered = true;
    whole = whole && *r;
  }
  if (!answered) return last;
  return whole;
}

void coordinator::drop_staged(const db_meta& db, const std::string& id, const std::string& key) {
  for (auto& copy : copies(db, shard_index(db, id))) copy->drop_staged(key);
}

result<doc_copy> coordinator::open_doc(const db_meta& db, const std::string& id, size_t r, doc_bodies bodies) {
  metrics::node().doc_reads.fetch_add(1, std::memory_order_relaxed);
  std::vector<copy_ptr> all = copies(db, shard_index(db, id));
  size_t n = db.everywhere() ? 1 : db.n;
  size_t want = std::min(r == 0 ? n / 2 + 1 : r, all.size());
  if (want == 0) return status{errc::unavailable, "no copy of the range of '" + id + "' is known"};
  // Ask `want` copies (this node's first); whenever the answers are short of `want` (a copy failed,
  // or is slow), ask one more.
  gather<std::vector<doc_copy>> g({all.size()});
  auto deadline = mono::now() + timeout_;
  size_t started = 0;
  auto start = [&] {
    all[started]->open_docs({id}, bodies, g.slot(0, started));
    ++started;
  };
  // The first `want` start last-to-first: other nodes' calls go out before this node's copy is read
  // (a local read answers at once, on this thread), so they overlap.
  for (size_t k = want; k-- > 0;) all[k]->open_docs({id}, bodies, g.slot(0, k));
  started = want;
  std::vector<doc_copy> got;
  status last{errc::unavailable, "no copy of the range of '" + id + "' answered"};
  for (;;) {
    auto now = mono::now();
    auto answers = g.wait(want, started < all.size() ? std::min(deadline, now + hedge_after) : deadline);
    got.clear();
    size_t done = 0;
    for (auto& a : answers[0]) {
      if (!a) continue;
      ++done;
      if (*a && (*a)->size() == 1)
        got.push_back((**a)[0]);
      else if (!*a)
        last = a->error();
    }
    if (got.size() >= want || mono::now() >= deadline) break;
    if (started < all.size()) {
      start();
    } else if (done == started) {
      break;  // every copy answered: fewer than `want` could
    }
  }
  if (got.empty()) return last;
  if (got.size() == 1) return std::move(got.front());
  merged_read m = merge_doc_copies(got);
  if (!m.repairs.empty()) {
    // Wait for every copy: the answer that follows must not race the repair of a stale copy.
    auto written = update_docs(db, std::move(m.repairs), n);
    if (!written) log::warning("read repair of '" + id + "' in " + db.name + ": " + written.error().reason);
  }
  return std::move(m.doc);
}

result<std::vector<doc_copy>> coordinator::open_docs(const db_meta& db, const std::vector<std::string>& ids,
                                                     doc_bodies bodies) {
  metrics::node().doc_reads.fetch_add(ids.size(), std::memory_order_relaxed);
  std::map<size_t, std::vector<size_t>> positions;  // range -> input positions
  for (size_t i = 0; i < ids.size(); ++i) positions[shard_index(db, ids[i])].push_back(i);
  std::vector<doc_copy> out(ids.size());
  for (auto& [range, pos] : positions) {
    std::vector<std::string> part;
    for (size_t i : pos) part.push_back(ids[i]);
    auto docs = first_answer<std::vector<doc_copy>>(db, range,
                                                    [&](shard_copy& c) { return open_on(c, part, bodies, timeout_); });
    if (!docs) return docs.error();
    if (docs->size() != pos.size()) return status{errc::internal, "a copy answered for the wrong documents"};
    for (size_t k = 0; k < pos.size(); ++k) out[pos[k]] = std::move((*docs)[k]);
  }
  return out;
}

std::vector<copy_ptr> coordinator::copies_preferring(const db_meta& db, size_t index, const std::string& prefer) {
  std::vector<copy_ptr> all = copies(db, index);
  if (prefer.empty()) return all;
  auto it = std::find_if(all.begin(), all.end(), [&](const copy_ptr& c) { return c->node() == prefer; });
  if (it != all.end()) std::rotate(all.begin(), it, it + 1);
  return all;
}

result<std::shared_ptr<local_copy>> coordinator::own_local_copy(const db_meta& db, const std::string& range) {
  auto h = own_copy(db, range);
  if (!h) return h.error();
  auto copy = std::make_shared<local_copy>(std::move(*h), self_, timeout_);
  copy->serve_indexes(&db, *db.range_named(range), readers_);  // own_copy found it there
  return copy;
}

result<shard_handle> coordinator::own_copy(const db_meta& m, const std::string& range) {
  auto none = [&] { return status{errc::not_found, "no copy of " + m.name + " range " + range + " on this node"}; };
  if (auto i = m.range_named(range)) {
    if (m.hosts(*i)) return shard(m, *i);
    auto at = m.entry ? m.entry->find(m.shard_id(*i)) : std::nullopt;
    if (at && !m.entry->shards[*at].moved.empty())
      return status{errc::shard_moved, "range " + range + " of " + m.name + " moved; retry on the new shard map"};
    return none();
  }
  if (m.entry) {  // a split's parent
    for (const shard_info& s : m.entry->shards)
      if (!s.open && s.range.name() == range)
        return status{errc::shard_moved, "range " + range + " of " + m.name + " was split; retry on the new shard map"};
  }
  return none();
}

result<std::optional<local_doc>> coordinator::open_local(const db_meta& db, const std::string& id) {
  return first_answer<std::optional<local_doc>>(db, shard_index(db, id),
                                                [&](shard_copy& c) { return c.open_local(id); });
}

result<uint64_t> coordinator::write_local(const db_meta& db, const local_update& u) {
  return first_answer<uint64_t>(db, shard_index(db, u.id),
                                [&](shard_copy& c) -> result<uint64_t> { return c.write_local(u); });
}

result<std::vector<local_doc>> coordinator::list_local(const db_meta& db, size_t index) {
  return first_answer<std::vector<local_doc>>(db, index, [](shard_copy& c) { return c.list_local(); });
}

std::vector<size_t> coordinator::all_ranges(const db_meta& db) {
  std::vector<size_t> all(db.q);
  std::iota(all.begin(), all.end(), size_t{0});
  return all;
}

result<std::vector<coordinator::range_summary>> coordinator::summaries(const db_meta& db) {
  auto answers = each_range<shard_summary>(
      db, all_ranges(db),
      [](shard_copy& c, size_t, shard_copy::answer<shard_summary> done) { c.start_summary(std::move(done)); });
  std::vector<range_summary> out;
  for (auto& a : answers) {
    if (!a.value) return status{errc::unavailable, a.value.error().reason};
    out.push_back({a.copy->node(), std::move(*a.value)});
  }
  return out;
}

std::vector<coordinator::copy_time_seq> coordinator::time_seqs(const db_meta& db, bool reset) {
  std::vector<copy_time_seq> out;
  for (size_t i = 0; i < db.q; ++i) {
    std::vector<copy_ptr> all = copies(db, i);
    std::sort(all.begin(), all.end(), [](const copy_ptr& a, const copy_ptr& b) { return a->node() < b->node(); });
    for (const copy_ptr& c : all) out.push_back({db.ranges[i].name(), c->node(), c->time_seq(reset)});
  }
  return out;
}

coordinator::copies_outcome coordinator::set_revs_limit(const db_meta& db, uint32_t limit) {
  return on_every_copy(db, [limit](shard_copy& c) { return c.set_revs_limit(limit); });
}

result<uint32_t> coordinator::revs_limit(const db_meta& db) {
  auto s = first_answer<shard_summary>(db, 0, [](shard_copy& c) -> result<shard_summary> {
    auto s = c.summary();
    if (s && s->revs_limit == 0) return status{errc::unavailable, "node " + c.node() + " does not report revs_limit"};
    return s;
  });
  if (!s) return status{errc::unavailable, "no copy of range " + db.ranges[0].name() + " reported its revs_limit"};
  return s->revs_limit;
}

}  // namespace settee
