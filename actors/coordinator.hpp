// coordinator: turns a database-level request into work on the copies of its shard ranges, and
// their answers into one. Written once against shard_copy (shard_copy.hpp): a copy is this node's
// (local_copy: its LMDB file and replica actor) or another node's (remote_copy: the typed RPC);
// nothing here asks which. It routes document ids to ranges (shard_map), fans writes out to every
// copy and waits for w of them, reads r copies and repairs the stale ones (CouchDB's quorum), and
// finds, for each range, a copy that answers.
// Thread-safety: all methods may be called from any thread except an actor's or the RPC loop's
// (they wait for copies).
#pragma once
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/db_catalog.hpp"
#include "actors/gather.hpp"
#include "actors/index_readers.hpp"
#include "actors/local_copy.hpp"
#include "actors/remote_shards.hpp"
#include "actors/shard_copy.hpp"
#include "actors/shard_registry.hpp"
#include "node/clock.hpp"

namespace settee {

struct write_outcome {
  std::vector<doc_result> results;  // one per input document, in input order
  bool quorum_met = true;           // every document reached w copies (else: HTTP 202)
};

// Where the copies of a range are. The coordinator's own source gives this node's copy first, then
// the other nodes' in the database's order; tests give fake copies.
class copy_source {
 public:
  virtual ~copy_source() = default;
  virtual std::vector<copy_ptr> copies(const db_meta& db, size_t range) = 0;
};

class coordinator {
 public:
  // `timeout`: what a request waits for copies; `view_timeout`: what a view read waits for each
  // range's copy, whose index may have to be built first (CouchDB's [fabric] view_permsg_timeout).
  coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout, std::string self,
              std::chrono::milliseconds view_timeout = std::chrono::hours(1));
  ~coordinator();

  // Other nodes' copies; null on a single node. Set once, before requests arrive.
  void set_remote(remote_shards* remote) { remote_ = remote; }
  // Replaces where copies come from (tests). Set once, before requests arrive.
  void set_copy_source(copy_source* source) { source_ = source; }
  // What answers view and JSON index reads of this node's copies. Set once, before requests arrive.
  void set_index_readers(index_readers* readers) { readers_ = readers; }
  // This node's copy of range `range` (its name) of `db` as a shard_copy that also reads its
  // indexes; `db` must outlive its calls. errc::not_found when this node holds none.
  result<std::shared_ptr<local_copy>> own_local_copy(const db_meta& db, const std::string& range);
  const std::string& self() const { return self_; }
  // How long a request waits for copies.
  std::chrono::milliseconds timeout() const { return timeout_; }
  std::chrono::milliseconds view_timeout() const { return view_timeout_; }
  db_catalog& catalog() { return catalog_; }

  size_t shard_index(const db_meta& db, std::string_view doc_id) const;
  // The range every document of `partition` of a partitioned database lives in.
  size_t partition_index(const db_meta& db, const std::string& partition) const {
    return shard_index(db, partition + ":");
  }
  // This node's copy of range `index` (errc::not_found when it holds none): for what only runs
  // here (internal replication, system databases).
  result<shard_handle> shard(const db_meta& db, size_t index);
  // This node's copy of range `range` (its name) of `db`, for another node's call: errc::shard_moved
  // when it moved away or was split (the caller's shard map is older than this node's: it retries
  // on the new one), errc::not_found when this node never held it.
  result<shard_handle> own_copy(const db_meta& db, const std::string& range);
  // A read snapshot of this node's copy of the range that holds `doc_id`.
  result<shard_store::snapshot> read_for(const db_meta& db, std::string_view doc_id);

  // Every copy of range `index`, this node's first.
  std::vector<copy_ptr> copies(const db_meta& db, size_t index);
  // The same, the copy on node `prefer` first when it holds one ("": this node's first).
  std::vector<copy_ptr> copies_preferring(const db_meta& db, size_t index, const std::string& prefer);
  // Asks the copies of range `index` in turn (`prefer` first, when it holds one) until one answers;
  // `*answered` is that copy. When none does: the last copy's error (errc::unavailable when there
  // is no copy at all).
  template <class T>
  result<T> first_answer(const db_meta& db, size_t index, const std::function<result<T>(shard_copy&)>& ask,
                         copy_ptr* answered = nullptr, const std::string& prefer = "");

  // The answer of one copy of each range in `ranges`, all ranges asked at once. Range ranges[k]
  // asks first its copy on node prefer[k] (when given and held there), else this node's, then the
  // others in the map's order; a range whose copy fails asks its next one, again all at once,
  // until every range has an answer or no copy left (then: its last copy's error; a copy that did
  // not answer by the request timeout: errc::timeout). Other nodes' copies are started first, so
  // the network works while this node's copies answer on this thread. `ask(copy, k, done)` starts
  // range k's read on `copy`.
  template <class T>
  struct range_answer {
    result<T> value{errc::unavailable, "no copy of the range is reachable"};
    copy_ptr copy;  // the copy that answered, when value is ok
  };
  template <class T>
  using range_ask = std::function<void(shard_copy&, size_t, shard_copy::answer<T>)>;
  // Every range of `db`, for each_range.
  static std::vector<size_t> all_ranges(const db_meta& db);
  template <class T>
  std::vector<range_answer<T>> each_range(const db_meta& db, const std::vector<size_t>& ranges, const range_ask<T>& ask,
                                          const std::vector<std::string>& prefer = {},
                                          std::chrono::milliseconds wait = {});
  // Starts `ask(*copies[k], k, done)` on every copy at once (other nodes' first) and waits for all
  // of them, up to `wait` (zero: the request timeout; errc::timeout for a copy that did not answer
  // by then).
  template <class T>
  std::vector<result<T>> ask_each(const std::vector<copy_ptr>& copies, const range_ask<T>& ask,
                                  std::chrono::milliseconds wait = {}) const;

  // The copies a write waits for: w, or n/2+1 when 0, at most n (1 for a database on every node).
  static size_t write_quorum(const db_meta& db, size_t w);
  // Items grouped by the range of their `id`: range -> their positions, in input order.
  template <class T>
  std::map<size_t, std::vector<size_t>> by_range(const db_meta& db, const std::vector<T>& items) const {
    std::map<size_t, std::vector<size_t>> out;
    for (size_t i = 0; i < items.size(); ++i) out[shard_index(db, items[i].id)].push_back(i);
    return out;
  }
  // A split seals its parent from its last copy pass until the new shard map reaches `_dbs`: while
  // `pending()` (a write was refused by a sealed copy), runs `again` on each newer map of `db` this
  // node sees, until the request timeout. The first error `again` returns ends it.
  status follow_new_maps(const db_meta& db, const std::function<bool()>& pending,
                         const std::function<status(const db_meta&)>& again);

  // Writes documents, each to every copy of its range, all in parallel; returns once w copies of
  // every range answered (or all did, or the request timeout passed). w = 0: n/2+1; w is capped at
  // n. See quorum.hpp for how the copies' answers combine.
  // Documents a split's sealed parent refused are written again on the new shard map.
  result<write_outcome> update_docs(const db_meta& db, std::vector<doc_update> docs, size_t w = 0);
  // Called (on the writer's thread) after update_docs wrote a design document; set before requests.
  void on_design_written(std::function<void()> f) { on_design_written_ = std::move(f); }

  // Document `id` as r copies of its range know it (r = 0: n/2+1; capped at the copies there are),
  // merged; copies that lack a leaf another has are repaired before the answer (written to every
  // copy, so that the next read anywhere sees at least what this one did). With the leaves' bodies,
  // or every stored one (`doc_bodies::all`: a read naming an older revision).
  result<doc_copy> open_doc(const db_meta& db, const std::string& id, size_t r = 1,
                            doc_bodies bodies = doc_bodies::leaves);
  // At most `length` stored bytes of blob `key` from `offset`, from a copy of the range of document
  // `id` (this node's first).
  result<std::string> read_blob(const db_meta& db, const std::string& id, const std::string& key, uint64_t offset = 0,
                                uint64_t length = UINT64_MAX);
  // Stages a piece of large blob `key` on every copy of the range of document `id` that can be
  // reached (one that cannot gets the blob from internal replication later): true when every copy
  // that answered holds the whole blob already. The first refusal is the answer.
  result<bool> stage_blob(const db_meta& db, const std::string& id, const std::string& key, uint64_t offset,
                          const std::string& piece);
  // Forgets staged blob `key` on every copy (an upload that failed); best effort.
  void drop_staged(const db_meta& db, const std::string& id, const std::string& key);
  // Documents `ids` (any ranges) from one copy of each range, in input order, with the stored
  // bodies `bodies` asks for (none: trees only, e.g. for _revs_diff).
  result<std::vector<doc_copy>> open_docs(const db_meta& db, const std::vector<std::string>& ids, doc_bodies bodies);

  // _local documents: on the first copy of their range that answers (CouchDB does not replicate them).
  result<std::optional<local_doc>> open_local(const db_meta& db, const std::string& id);
  // Returns the new revision number (0 after a delete).
  result<uint64_t> write_local(const db_meta& db, const local_update& u);
  // Every _local document of range `index`.
  result<std::vector<local_doc>> list_local(const db_meta& db, size_t index);

  struct range_summary {
    std::string node;  // whose copy
    shard_summary s;
  };
  // One copy of every range: this node's, else the first other copy that answers.
  // errc::unavailable when no copy of some range answers.
  result<std::vector<range_summary>> summaries(const db_meta& db);
  struct copy_time_seq {
    std::string range, node;
    result<time_seq_state> state;  // error: the copy could not answer (down, or an older release)
  };
  // Every copy's time-seq (reset: emptied first), ranges in order, nodes sorted.
  std::vector<copy_time_seq> time_seqs(const db_meta& db, bool reset);
  struct copy_failure {
    std::string range, node, reason;
  };
  struct copies_outcome {
    size_t asked = 0;                  // copies asked
    std::vector<copy_failure> failed;  // those that could not do it (down, or an older release)
  };
  // `set` on every copy of every range; the copies that could not do it are listed.
  copies_outcome on_every_copy(const db_meta& db, const std::function<status(shard_copy&)>& set);
  // Sets revs_limit on every copy of every range. A copy that missed it keeps its limit until it is
  // set again.
  copies_outcome set_revs_limit(const db_meta& db, uint32_t limit);
  // The revs_limit of the first range, from the first copy that reports one.
  result<uint32_t> revs_limit(const db_meta& db);

 private:
  std::function<void()> on_design_written_;
  // update_docs() on the shard map `db`, once.
  result<write_outcome> write_once(const db_meta& db, const std::vector<doc_update>& docs, size_t w);
  class node_copies;

  db_catalog& catalog_;
  shard_registry& shards_;
  std::chrono::milliseconds timeout_;
  std::string self_;
  std::chrono::milliseconds view_timeout_;
  remote_shards* remote_ = nullptr;
  std::unique_ptr<copy_source> own_source_;
  copy_source* source_ = nullptr;
  index_readers* readers_ = nullptr;
};

template <class T>
result<T> coordinator::first_answer(const db_meta& db, size_t index, const std::function<result<T>(shard_copy&)>& ask,
                                    copy_ptr* answered, const std::string& prefer) {
  std::vector<copy_ptr> all = copies_preferring(db, index, prefer);
  if (all.empty()) return status{errc::unavailable, "no copy of range " + db.ranges[index].name() + " is reachable"};
  for (size_t k = 0;; ++k) {  // (the message above only when needed: every read of a document comes here)
    result<T> r = ask(*all[k]);
    if (r) {
      if (answered) *answered = all[k];
      return r;
    }
    if (k + 1 == all.size()) return r.error();
  }
}

template <class T>
std::vector<result<T>> coordinator::ask_each(const std::vector<copy_ptr>& copies, const range_ask<T>& ask,
                                             std::chrono::milliseconds wait) const {
  std::vector<size_t> order(copies.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_partition(order.begin(), order.end(), [&](size_t k) { return !copies[k]->local(); });
  gather<T> g(std::vector<size_t>(copies.size(), 1));
  for (size_t k : order) ask(*copies[k], k, g.slot(k, 0));
  auto answers = g.take(1, mono::now() + (wait.count() > 0 ? wait : timeout_));
  std::vector<result<T>> out;
  out.reserve(copies.size());
  for (size_t k = 0; k < copies.size(); ++k) {
    if (answers[k][0]) {
      out.push_back(std::move(*answers[k][0]));
    } else {
      out.push_back(status{errc::timeout, "node " + copies[k]->node() + " did not answer in time"});
    }
  }
  return out;
}

template <class T>
std::vector<coordinator::range_answer<T>> coordinator::each_range(const db_meta& db, const std::vector<size_t>& ranges,
                                                                  const range_ask<T>& ask,
                                                                  const std::vector<std::string>& prefer,
                                                                  std::chrono::milliseconds wait) {
  std::vector<range_answer<T>> out(ranges.size());
  std::vector<std::vector<copy_ptr>> candidates(ranges.size());  // the next one to ask at the back
  for (size_t k = 0; k < ranges.size(); ++k) {
    auto& all = candidates[k] = copies_preferring(db, ranges[k], k < prefer.size() ? prefer[k] : "");
    std::reverse(all.begin(), all.end());
    out[k].value = status{errc::unavailable, "no copy of range " + db.ranges[ranges[k]].name() + " is reachable"};
  }
  for (;;) {
    std::vector<size_t> round;  // ranges without an answer yet that have a copy left to ask
    std::vector<copy_ptr> asked;
    for (size_t k = 0; k < ranges.size(); ++k) {
      if (out[k].value.ok() || candidates[k].empty()) continue;
      round.push_back(k);
      asked.push_back(std::move(candidates[k].back()));
      candidates[k].pop_back();
    }
    if (round.empty()) break;
    auto answers = ask_each<T>(
        asked, [&](shard_copy& c, size_t j, shard_copy::answer<T> done) { ask(c, round[j], std::move(done)); }, wait);
    SETTEE_CHECK(answers.size() == round.size());  // one answer (or its error) per copy asked
    for (size_t j = 0; j < round.size(); ++j) {
      out[round[j]].value = std::move(answers[j]);
      if (out[round[j]].value.ok()) out[round[j]].copy = asked[j];
    }
  }
  return out;
}

}  // namespace settee
