// coordinator: turns a database-level request into shard-level work. It routes document ids to
// ranges (shard_map), sends writes to the owning shard replica actors in parallel (bridge) and
// hands out shard handles for reads, which run as LMDB snapshots on the caller's thread.
// Thread-safety: all methods may be called from any HTTP worker thread.
#pragma once
#include <caf/fwd.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "actors/db_catalog.hpp"
#include "actors/remote_shards.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

struct write_outcome {
  std::vector<doc_result> results;  // one per input document, in input order
  bool quorum_met = true;           // every document reached w copies (else: HTTP 202)
};

class coordinator {
 public:
  coordinator(db_catalog& catalog, shard_registry& shards, std::chrono::milliseconds timeout, std::string self);

  // Other nodes' copies; null on a single node. Set once, before requests arrive.
  void set_remote(remote_shards* remote) { remote_ = remote; }
  const std::string& self() const { return self_; }
  remote_shards* remote() const { return remote_; }
  // Asks other nodes' copies of range `index`, in `nodes` order, until one answers:
  // `ask(remote, node)` makes the call. Sets `*answered` to that node. errc::unavailable (with the
  // last failure's reason) when none does.
  template <class T, class Ask>
  result<T> first_answer(const db_meta& db, size_t index, const std::vector<std::string>& nodes, Ask ask,
                         std::string* answered = nullptr) const {
    status last{errc::unavailable, "no copy of range " + db.ranges[index].name() + " is reachable"};
    for (const std::string& node : nodes) {
      if (!remote_) break;
      result<T> r = ask(*remote_, node);
      if (r) {
        if (answered) *answered = node;
        return r;
      }
      last = r.error();
    }
    return status{errc::unavailable, last.reason};
  }
  // The nodes holding range `index` of `db` (this node alone for a system database).
  std::vector<std::string> copies(const db_meta& db, size_t index) const;

  db_catalog& catalog() { return catalog_; }

  result<shard_handle> shard(const db_meta& db, size_t index);
  result<shard_handle> shard_for(const db_meta& db, std::string_view doc_id);
  size_t shard_index(const db_meta& db, std::string_view doc_id) const;
  // A read snapshot of the shard that holds `doc_id`.
  result<shard_store::snapshot> read_for(const db_meta& db, std::string_view doc_id);

  // Writes documents, each to every copy of its range (this node's through its replica actor,
  // others' over RPC), all in parallel; returns once w copies of every range answered (or all did,
  // or the request timeout passed). w = 0: n/2+1; w is capped at n. See quorum.hpp for how the
  // copies' answers combine.
  result<write_outcome> update_docs(const db_meta& db, std::vector<doc_update> docs, size_t w = 0);
  // Writes a _local document; returns the new revision number (0 after a delete).
  result<uint64_t> write_local(const db_meta& db, local_update u);
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
  // Sets revs_limit on every copy of every range (others' over RPC). A copy that missed it keeps its
  // limit until it is set again.
  copies_outcome set_revs_limit(const db_meta& db, uint32_t limit);
  // The revs_limit of the first range: this node's copy, else the first other copy that answers.
  result<uint32_t> revs_limit(const db_meta& db);
  // Sets revs_limit on this node's copy of one range.
  status set_copy_revs_limit(const db_meta& db, size_t range, uint32_t limit);

  db_catalog& catalog_;
  shard_registry& shards_;
  std::chrono::milliseconds timeout_;
  std::string self_;
  remote_shards* remote_ = nullptr;
};

}  // namespace settee
