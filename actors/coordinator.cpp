#include "actors/coordinator.hpp"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include <caf/all.hpp>

#include "actors/bridge.hpp"
#include "actors/messages.hpp"
#include "actors/quorum.hpp"
#include "node/log.hpp"

namespace settee {

coordinator::coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout,
                         std::string self)
    : catalog_(catalog), shards_(shards), timeout_(timeout), self_(std::move(self)) {}

std::vector<std::string> coordinator::copies(const db_meta& db, size_t index) const {
  return db.everywhere() ? std::vector<std::string>{self_} : db.nodes[index];
}

result<shard_handle> coordinator::shard(const db_meta& db, size_t index) {
  if (!db.hosts(index)) {
    return status{errc::not_found, "no copy of " + db.name + " range " + db.ranges[index].name() + " on this node"};
  }
  return shards_.acquire(db.shard_paths[index], db.created, db.key());
}

size_t coordinator::shard_index(const db_meta& db, std::string_view doc_id) const {
  return range_index(db.ranges, hash_doc_id(doc_id));
}

result<shard_handle> coordinator::shard_for(const db_meta& db, std::string_view doc_id) {
  return shard(db, shard_index(db, doc_id));
}

result<shard_store::snapshot> coordinator::read_for(const db_meta& db, std::string_view doc_id) {
  auto h = shard_for(db, doc_id);
  if (!h) return h.error();
  return h->store->read();
}

namespace {

// The answers of every copy of every range a write went to. Shared with the callbacks, which may
// run after update_docs returned (a late copy).
struct fanout {
  struct copy {
    bool done = false;
    status st;  // the call as a whole (transport, unknown database...)
    std::vector<doc_result> results;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<copy>> ranges;  // [range][copy]

  void finish(size_t r, size_t k, result<std::vector<doc_result>> answer) {
    {
      std::lock_guard<std::mutex> lock(mu);
      copy& c = ranges[r][k];
      c.done = true;
      if (answer)
        c.results = std::move(*answer);
      else
        c.st = answer.error();
    }
    cv.notify_all();
  }
  // Every range has w successful copies or no copy left to wait for. mu held.
  bool enough(size_t w) const {
    for (auto& copies : ranges) {
      size_t ok = 0, done = 0;
      for (auto& c : copies) {
        done += c.done;
        ok += c.done && c.st;
      }
      if (ok < std::min(w, copies.size()) && done < copies.size()) return false;
    }
    return true;
  }
};

// Reports a local write to the fanout once, also when the replica is gone before committing.
struct local_completion {
  std::shared_ptr<fanout> f;
  size_t r, k;
  std::shared_ptr<write_op> op;
  shard_handle held;  // the shard stays open until the commit
  bool fired = false;
  void fire() {
    fired = true;
    if (!op->st)
      f->finish(r, k, op->st);
    else
      f->finish(r, k, std::move(op->results));
  }
  ~local_completion() {
    if (!fired) f->finish(r, k, status{errc::internal, "a shard replica stopped before committing the write"});
  }
};

}  // namespace

result<write_outcome> coordinator::update_docs(const db_meta& db, std::vector<doc_update> docs, size_t w) {
  // Group by range, remembering each doc's input position.
  std::vector<std::vector<doc_update>> by_range(db.q);
  std::vector<std::vector<size_t>> positions(db.q);
  for (size_t i = 0; i < docs.size(); ++i) {
    size_t s = shard_index(db, docs[i].id);
    by_range[s].push_back(std::move(docs[i]));
    positions[s].push_back(i);
  }
  std::vector<size_t> used;  // ranges this write touches
  for (size_t s = 0; s < db.q; ++s)
    if (!by_range[s].empty()) used.push_back(s);
  auto f = std::make_shared<fanout>();
  f->ranges.resize(used.size());
  std::vector<std::vector<std::string>> nodes(used.size());
  for (size_t r = 0; r < used.size(); ++r) {
    nodes[r] = copies(db, used[r]);
    f->ranges[r].resize(nodes[r].size());
  }
  size_t n = db.everywhere() ? 1 : db.n;
  size_t quorum = w == 0 ? n / 2 + 1 : std::min(w, n);

  for (size_t r = 0; r < used.size(); ++r) {
    size_t s = used[r];
    for (size_t k = 0; k < nodes[r].size(); ++k) {
      if (nodes[r][k] == self_) {
        auto h = shard(db, s);
        if (!h) {
          f->finish(r, k, h.error());
          continue;
        }
        auto done = std::make_shared<local_completion>();
        done->f = f;
        done->r = r;
        done->k = k;
        done->op = std::make_shared<write_op>();
        done->op->docs = by_range[s];
        done->held = *h;
        pending_write pw{done->op, nullptr, [done]() { done->fire(); }};
        caf::anon_send(h->writer, write_atom_v, std::move(pw));
      } else if (!remote_) {
        f->finish(r, k, status{errc::unavailable, "node " + nodes[r][k] + " is unavailable: not clustered"});
      } else {
        remote_->update_docs(nodes[r][k], db.name, db.ranges[s].name(), by_range[s],
                             [f, r, k, node = nodes[r][k]](result<std::vector<doc_result>> a) {
                               if (!a) log::warning("write to " + node + "'s copy failed: " + a.error().reason);
                               f->finish(r, k, std::move(a));
                             });
      }
    }
  }
  {
    std::unique_lock<std::mutex> lock(f->mu);
    f->cv.wait_until(lock, std::chrono::steady_clock::now() + timeout_, [&] { return f->enough(quorum); });
  }

  write_outcome out;
  out.results.assign(docs.size(), doc_result{});
  std::lock_guard<std::mutex> lock(f->mu);
  for (size_t r = 0; r < used.size(); ++r) {
    const auto& answers = f->ranges[r];
    status first_failure;
    for (auto& c : answers)
      if (c.done && !c.st && first_failure) first_failure = c.st;
    for (size_t d = 0; d < positions[used[r]].size(); ++d) {
      std::vector<doc_result> votes;
      for (auto& c : answers)
        if (c.done && c.st && d < c.results.size()) votes.push_back(c.results[d]);
      quorum_answer a = decide_quorum(votes, quorum);
      if (votes.empty()) {
        // No copy committed: say why (the first failure, or the deadline).
        a.result.st = !first_failure
                          ? first_failure
                          : status{errc::timeout, "The request could not be processed in a reasonable amount of time."};
      }
      out.quorum_met = out.quorum_met && a.met;
      out.results[positions[used[r]][d]] = std::move(a.result);
    }
  }
  return out;
}

result<std::vector<coordinator::range_summary>> coordinator::summaries(const db_meta& db) {
  std::vector<range_summary> out;
  for (size_t i = 0; i < db.q; ++i) {
    if (db.hosts(i)) {
      auto h = shard(db, i);
      if (!h) return h.error();
      shard_header hd = h->store->header();
      out.push_back(
          {self_,
           {hd.shard_uuid, hd.update_seq, hd.doc_count, hd.doc_del_count, hd.external_size, h->store->file_size()}});
      continue;
    }
    std::string node;
    auto s = first_answer<shard_summary>(
        db, i, copies(db, i),
        [&](remote_shards& r, const std::string& n) { return r.summary(n, db.name, db.ranges[i].name(), timeout_); },
        &node);
    if (!s) return s.error();
    out.push_back({node, std::move(*s)});
  }
  return out;
}

std::vector<coordinator::copy_time_seq> coordinator::time_seqs(const db_meta& db, bool reset) {
  std::vector<copy_time_seq> out;
  for (size_t i = 0; i < db.q; ++i) {
    std::vector<std::string> nodes = copies(db, i);
    std::sort(nodes.begin(), nodes.end());
    for (const std::string& node : nodes) {
      copy_time_seq c{db.ranges[i].name(), node, status{errc::unavailable, "not asked"}};
      if (node == self_) {
        auto h = shard(db, i);
        if (!h) {
          c.state = h.error();
        } else {
          status st;
          if (reset) {
            auto op = std::make_shared<write_op>();
            op->what = write_op::kind::time_seq_reset;
            st = write_one(h->writer, op, timeout_);
          }
          shard_header hd = h->store->header();
          c.state = st ? result<time_seq_state>(time_seq_state{hd.time_seq, hd.update_seq}) : st;
        }
      } else if (remote_) {
        c.state = remote_->time_seq(node, db.name, db.ranges[i].name(), reset, std::chrono::seconds(10));
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

result<uint64_t> coordinator::write_local(const db_meta& db, local_update u) {
  auto h = shard_for(db, u.id);
  if (!h) return h.error();
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::local;
  op->local = std::move(u);
  if (auto st = write_one(h->writer, op, timeout_); !st) return st;
  return op->local_rev;
}

status coordinator::set_copy_revs_limit(const db_meta& db, size_t range, uint32_t limit) {
  auto h = shard(db, range);
  if (!h) return h.error();
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::revs_limit;
  op->revs_limit = limit;
  return write_one(h->writer, op, timeout_);
}

coordinator::copies_outcome coordinator::set_revs_limit(const db_meta& db, uint32_t limit) {
  copies_outcome out;
  for (size_t i = 0; i < db.q; ++i) {
    for (const std::string& node : copies(db, i)) {
      ++out.asked;
      status st{errc::unavailable, "node " + node + " is unavailable: not clustered"};
      if (node == self_) {
        st = set_copy_revs_limit(db, i, limit);
      } else if (remote_) {
        doc_request req;
        req.what = "revs_limit";
        req.method = "PUT";
        req.body = std::to_string(limit);
        auto a = remote_->read_doc(node, db.name, db.ranges[i].name(), req, std::chrono::seconds(10));
        st = !a                      ? a.error()
             : a->http_status == 200 ? status{}
                                     : status{errc::unavailable, "the copy answered " + std::to_string(a->http_status)};
      }
      if (!st) out.failed.push_back({db.ranges[i].name(), node, st.reason});
    }
  }
  return out;
}

result<uint32_t> coordinator::revs_limit(const db_meta& db) {
  if (auto h = shard(db, 0)) return h->store->header().revs_limit;
  doc_request req;
  req.what = "revs_limit";
  auto a = first_answer<doc_read>(db, 0, copies(db, 0), [&](remote_shards& r, const std::string& node) {
    return r.read_doc(node, db.name, db.ranges[0].name(), req, std::chrono::seconds(10));
  });
  if (!a) return a.error();
  char* end = nullptr;
  unsigned long v = std::strtoul(a->body.c_str(), &end, 10);
  if (a->http_status != 200 || end == a->body.c_str() || v == 0) {
    return status{errc::unavailable, "no copy of range " + db.ranges[0].name() + " reported its revs_limit"};
  }
  return static_cast<uint32_t>(v);
}

}  // namespace settee
