// members: the node-level operations of the cluster's members, asked by name whether the member
// is this node or another. http/ asks a cluster_members for a member and calls it; this node's
// member runs the operation here (local_member), another node's asks it over the typed RPC
// (cluster/cluster_members.hpp). The operation is declared once, here; nothing above asks which
// node is which. Operations move here from the handlers' "this node or another" branches one by
// one (docs/architecture.md section 36).
// Thread-safety: a member may be called from any thread except the RPC loop's (calls block up to
// the call timeout).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/reshard_job.hpp"
#include "node/error.hpp"

namespace settee {

class compactor;
class coordinator;
struct db_meta;
class resharder;
class task_list;
class view_reader;

// A node's figures for its operators (GET /_node/<name>/_system), read by it.
struct node_status {
  std::string release;
  int64_t uptime_s = 0;
  uint64_t rss_bytes = 0, threads = 0, open_files = 0, live_feeds = 0, feed_watches = 0;
  uint64_t fs_size_bytes = 0, fs_free_bytes = 0, db_files_bytes = 0;
  uint64_t requests = 0, server_errors = 0;
};

// One range of a database pushed to another node's copy (internal replication, POST
// /db/_sync_shards).
struct copy_sync {
  std::string node;
  std::string range;
  size_t docs = 0;     // documents sent
  size_t applied = 0;  // leaves the target did not have yet
  uint64_t seq = 0;    // the source seq the target has now
  status st;
};

// A request of /_node/<name>/_config, for the member it names (docs/api.md): `path` is what follows
// `_config` (empty, [section], [section, key] or ["_reload"]).
struct config_call {
  std::string method;
  std::vector<std::string> path;
  std::string body;
  bool persist = true;  // X-Couch-Persist
};
// Its answer as that member's own /_node/_local/_config gives it: status, JSON body, and whether
// the change waits for a restart.
struct config_reply {
  int code = 200;
  std::string body;
  bool restart = false;
};

class cluster_member {
 public:
  virtual ~cluster_member() = default;
  virtual const std::string& name() const = 0;
  // This member's resharding state; setting it stops (or resumes) its jobs.
  virtual result<reshard_state> get_reshard_state() = 0;
  virtual status set_reshard_state(const reshard_state& s) = 0;
  // This member's figures (not_implemented from a release before 0.4).
  virtual result<node_status> figures() = 0;
  // This member's background tasks as GET /_active_tasks lists them (JSON objects' text; an older
  // release that cannot tell: none).
  virtual result<std::vector<std::string>> active_tasks() = 0;
  // Queues the compaction of this member's copies of database `db` (answered once queued).
  virtual status compact(const std::string& db) = 0;
  // Removes the view index files of this member's copies of `db` whose signature is not in `keep`
  // (POST /db/_view_cleanup; not_implemented from a release without views).
  virtual status view_cleanup(const std::string& db, const std::vector<std::string>& keep) = 0;
  // Queues the compaction of the index files of design document `ddoc_id` (revision `rev`, its
  // JSON `ddoc`) on this member's copies of `db` (POST /db/_compact/ddoc; not_implemented from a
  // release without views).
  virtual status view_compact(const std::string& db, const std::string& ddoc_id, const std::string& rev,
                              const std::string& ddoc) = 0;
  // Whether this member stores attachments as blobs and carries them (release 0.3+), and whether
  // it reads a split database's lineage (release 0.3+: it may reshard).
  virtual bool stores_attachments() const = 0;
  virtual bool reshards() const = 0;
  // Whether this member runs validate_doc_update functions on the writes it coordinates (release
  // 0.4+: javascript_feature); a member that cannot be asked now counts as one that does not.
  virtual bool runs_javascript() const = 0;
  // Whether it places a partitioned database's documents by partition (0.4+: partitions_feature).
  virtual bool places_partitions() const = 0;
  // Whether its copies keep and apply purge requests (0.4+: purges_feature).
  virtual bool purges() const = 0;
  // This member's reshard jobs (a release 0.3 member's as it shows them: split_job::from_api).
  virtual result<std::vector<split_job>> reshard_jobs() = 0;
  // Stops or resumes its job `id`, or removes it (undone when it had not switched the map);
  // errc::not_found when this member has no such job.
  virtual status set_reshard_job_state(const std::string& id, const reshard_state& s) = 0;
  virtual status remove_reshard_job(const std::string& id) = 0;
  // Makes a job on this member for a request another node resolved (its copy's split, following
  // a leader, or a move of a copy to it).
  virtual result<split_job> create_reshard_job(const new_job& j) = 0;
  // What a move's job asks of the member its copy leaves, and a split's leader of each copy's
  // member (resharder.hpp says what each does).
  virtual result<std::string> export_copy(const std::string& db, const std::string& range, uint64_t since,
                                          bool with_local) = 0;
  virtual result<uint64_t> seal_copy(const std::string& db, const std::string& range, bool seal) = 0;
  virtual status retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove) = 0;
  virtual result<std::pair<uint64_t, std::string>> split_seal(const std::string& db, const std::string& shard) = 0;
  // Its runtime configuration, read or changed (release 0.5; an older member: not_implemented).
  virtual result<config_reply> configure(const config_call& call) = 0;
};

class cluster_members {
 public:
  virtual ~cluster_members() = default;
  // Every member of the cluster connected now, this node included, by name (_membership's
  // all_nodes; on a single node: this node).
  virtual std::vector<std::string> live() const = 0;
  // Every member, connected or not (_membership's cluster_nodes).
  virtual std::vector<std::string> all() const = 0;
  // Whether `name` is this node or a member connected now.
  virtual bool connected(const std::string& name) const = 0;
  // The member `name` (this node's own services, or another node's over RPC); null when it is not
  // a member.
  virtual std::shared_ptr<cluster_member> get(const std::string& name) = 0;
  // Whether this node is a cluster member (RPC on); the rest answers bad_request when not.
  virtual bool clustered() const = 0;
  // Adds a member (in `_nodes`, which reaches every node) or removes one.
  virtual status add_member(const std::string& name, const std::string& host, uint16_t rpc_port) = 0;
  virtual status remove_member(const std::string& name) = 0;
  // Pushes every range of `db` from this node's copies to every connected member's copy now, and
  // says how each went (waiting up to `timeout` for each). Nothing on a single node.
  virtual std::vector<copy_sync> sync(const db_meta& db, std::chrono::milliseconds timeout) = 0;
};

// This node as a member: the operations run here, on the services given (null: not here).
struct local_services {
  coordinator* coord = nullptr;
  resharder* reshard = nullptr;
  task_list* tasks = nullptr;
  compactor* compaction = nullptr;
  view_reader* views = nullptr;
  // This node's figures; the HTTP layer, which counts requests, reads them (set once, before
  // requests arrive).
  std::function<node_status()> figures;
  // Drops the JSON indexes of this node's copies of a database whose signatures are not kept
  // (actors/find_reader's cleanup, which _view_cleanup runs too); how many went.
  std::function<size_t(const db_meta&, const std::set<std::string>&)> drop_json_indexes;
  // The same for the full-text indexes (actors/search_reader's cleanup).
  std::function<size_t(const db_meta&, const std::set<std::string>&)> drop_search_indexes;
  // This node's /_node/_local/_config (set once, before requests arrive).
  std::function<config_reply(const config_call&)> configure;
};

class local_member final : public cluster_member {
 public:
  local_member(std::string name, local_services s) : name_(std::move(name)), s_(std::move(s)) {}
  void set_figures(std::function<node_status()> f) { s_.figures = std::move(f); }
  void set_configure(std::function<config_reply(const config_call&)> f) { s_.configure = std::move(f); }
  const std::string& name() const override { return name_; }
  result<reshard_state> get_reshard_state() override;
  status set_reshard_state(const reshard_state& s) override;
  result<node_status> figures() override;
  result<std::vector<std::string>> active_tasks() override;
  status compact(const std::string& db) override;
  status view_cleanup(const std::string& db, const std::vector<std::string>& keep) override;
  status view_compact(const std::string& db, const std::string& ddoc_id, const std::string& rev,
                      const std::string& ddoc) override;
  bool stores_attachments() const override { return true; }
  bool runs_javascript() const override { return true; }
  bool places_partitions() const override { return true; }
  bool purges() const override { return true; }
  bool reshards() const override { return true; }
  result<std::vector<split_job>> reshard_jobs() override;
  status set_reshard_job_state(const std::string& id, const reshard_state& s) override;
  status remove_reshard_job(const std::string& id) override;
  result<split_job> create_reshard_job(const new_job& j) override;
  result<std::string> export_copy(const std::string& db, const std::string& range, uint64_t since,
                                  bool with_local) override;
  result<uint64_t> seal_copy(const std::string& db, const std::string& range, bool seal) override;
  status retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove) override;
  result<std::pair<uint64_t, std::string>> split_seal(const std::string& db, const std::string& shard) override;
  result<config_reply> configure(const config_call& call) override;

 private:
  std::string name_;
  local_services s_;
};

}  // namespace settee
