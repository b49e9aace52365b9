// replicator_docs: runs the documents of `_replicator` (couch_replicator_doc_processor). A job of
// the jobs framework (lane `replication`) that reads the database's documents every second; each
// document whose owner is this node (CouchDB's mem3:owner: the live members, sorted, rotated by the
// crc32 of term_to_binary({<<"_replicator">>, DocId})) starts its replication; a changed document
// restarts it, a deleted one (or one another member owns now) stops it. A one-shot replication's
// end is written back into its document as CouchDB 3 does (`_replication_state` "completed" with
// `_replication_stats`, or "failed" with `_replication_state_reason`), so it does not run again.
// Documents name their endpoints by URL with credentials (local names are refused, as CouchDB 3:
// nothing would authenticate them).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/jobs.hpp"
#include "node/clock.hpp"
#include "replicator/replications.hpp"

namespace settee {

// A `_replicator` document's write is refused (403 forbidden, with the reason) when it does not
// describe a replication this node could run, as CouchDB's _replicator validation function does.
status validate_replicator_doc(const json& body, const std::string& server_uuid, const std::string& self_url);

class change_notifier;
class cluster_members;

// What the document processor uses of the node (app/node_process builds it; the replicator knows
// nothing of the HTTP server).
struct replicator_host {
  const clock& clk;
  coordinator& coord;
  std::string node_name;
  std::string server_uuid;
  const std::string& self_url;  // the node's own URL, known once its HTTP port is bound
  change_notifier* notifier;
  cluster_members* const& cluster;  // set when the node starts (null: started alone)
  // Whether `name` is a server admin (a document of anyone else runs restricted).
  std::function<bool(const std::string& name)> is_server_admin;
  // A document body as a storage update, under the rules an HTTP write follows (to_doc_update).
  std::function<result<doc_update>(const db_meta& db, json body, const std::string& id)> to_update;
};

class replicator_docs final : public job {
 public:
  static constexpr const char* job_id = "replicator documents";
  static constexpr const char* db_name = "_replicator";

  replicator_docs(replicator_host host, replications& reps);
  job_next step(job_context& ctx) override;

  // GET /_scheduler/docs rows by id (couch_replicator_fabric:docs): documents that ended from what
  // they recorded, the others as this node's processor sees them (one it has not taken yet, or
  // another member runs, is left out); `states` (empty: all) keeps those in one of them.
  result<std::vector<json>> rows(const std::vector<std::string>& states = {}) const;
  // GET /_scheduler/docs/_replicator/<id> (couch_replicator:doc): as a row, or from the document
  // itself (state null) when the processor has not taken it; nullopt when there is no such document.
  result<std::optional<json>> row(const std::string& doc_id) const;
  // couch_replicator:info_from_doc: the row of document `id` from its body alone.
  static json info_from_doc(const std::string& id, const json& doc);
  // The states a `states=` filter may name (couch_replicator's REPLICATION_STATES), in its order.
  static const std::vector<std::string>& replication_states();

 private:
  struct entry {
    std::string rev;
    json body;            // the document as last read (with _id and _rev)
    std::string rep_id;   // "" when it never became a replication
    json source, target;  // their URLs without credentials (null: not a valid request)
    std::shared_ptr<replication_job> job;
    std::string state;  // when there is no job: completed, failed
    std::string error;
    int64_t updated_s = 0;
  };
  // Document `id`'s row as this node's processor sees it (nullopt: it has no entry).
  std::optional<json> processor_row(const std::string& id) const;
  // The row of a document (`body` with _id): recorded end, else the processor's, else (`undecided`
  // given) from the body with state null.
  std::optional<json> row_of(const std::string& id, const json& body, bool undecided) const;
  // Whether this node runs document `id` (its owner among the live members must_read() saw).
  bool owns(const std::string& id) const;
  // What a new or changed document becomes (a started job, or a failed entry). Called with mu_ held.
  entry start(const std::string& id, const std::string& rev, json body);
  // Writes `fields` into document `id` at `rev` (a later edit wins: nothing is written then).
  void write_back(const std::string& id, json body, const json& fields);
  void ended(const std::string& id, job_next::kind how, const result<json>& out);

  // Whether `_replicator` must be read again: its documents changed here (the change notifier's
  // version of its key), the live members changed, or (in a cluster, where another member's
  // writes reach this node's copy later or not at all) a while passed. Reading it every second
  // would keep the node from ever being idle (its memory would never go back).
  bool must_read(const std::string& key);

  replicator_host node_;
  replications& reps_;
  uint64_t seen_version_ = UINT64_MAX;
  std::vector<std::string> seen_live_;
  int64_t read_at_ms_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, entry> docs_;
};

}  // namespace settee
