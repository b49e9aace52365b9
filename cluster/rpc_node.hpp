// rpc_node: this node's Cap'n Proto endpoint. One dedicated thread runs a KJ event loop with the
// RPC server and one client per peer; no KJ object is touched from any other thread (the only
// cross-thread call is stop(), through the loop's executor).
//
// Each peer connection: connect, handshake (exchanging release and features) within
// `handshake_timeout_ms`, then a ping every `ping_interval_ms` that must answer within
// `ping_timeout_ms`. Any failure marks the peer disconnected and retries after a backoff that
// doubles from 100 ms to `max_backoff_ms`. A node that introduces itself in a handshake becomes a
// member and is dialled back.
//
// No method runs for a connection until its handshake proved the cluster secret (`secret`;
// cluster/peer_auth.hpp): the server refuses every call before that, closes a connection whose
// proof is wrong, and closes one that has not proved itself within `handshake_timeout_ms`. The
// dialling node checks the server's proof too before it sends anything else. Older releases
// cannot prove anything; they are accepted (both ways) only with `accept_legacy_peers`.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actors/internal_replication.hpp"
#include "actors/local_copy.hpp"
#include "actors/members.hpp"
#include "actors/remote_shards.hpp"
#include "actors/shard_registry.hpp"
#include "cluster/membership.hpp"
#include "node/error.hpp"

namespace settee {

struct rpc_options {
  std::string bind = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port
  std::string advertised_host = "127.0.0.1";
  uint16_t http_port = 0;
  std::string release;
  std::vector<std::string> features;
  std::vector<peer_address> seeds;
  std::string secret;  // the cluster secret every member holds
  // Mutual TLS with certificates under the cluster CA (cluster/cluster_tls.hpp); every node of a
  // cluster must agree on it. Empty PEMs: plain TCP.
  bool tls = false;
  std::string tls_ca_pem, tls_cert_pem, tls_key_pem;
  bool accept_legacy_peers = false;  // let nodes of releases before 0.3 (no proof) in: upgrades only
  int handshake_timeout_ms = 2000;
  int ping_interval_ms = 500;
  int ping_timeout_ms = 2000;
  int max_backoff_ms = 2000;
  int call_timeout_ms = 60000;         // no call to a peer is waited for longer
  int view_call_timeout_ms = 3600000;  // but a view read (viewRows), which may wait for an index build
  // This node's copy of a shard range ("00000000-7fffffff") of a database, for calls from peers.
  std::function<result<shard_handle>(const std::string& db, const std::string& range)> find_shard;
  // Called on the RPC thread after replicated changes to `db` were committed (must not block).
  std::function<void(const std::string& db)> on_applied;
  // Release 0.2's readDoc, answered from this node's copy (`copy`) as 0.2's HTTP layer would: only
  // for 0.2 coordinators during an upgrade or downgrade. Runs on a pool thread; may wait for a commit.
  std::function<result<doc_read>(local_copy& copy, const doc_request& req)> read_doc;
  // This node's update log after (uuid, seq), for dbUpdates (runs on a pool thread).
  std::function<result<log_page>(const std::string& uuid, uint64_t seq, size_t limit)> read_updates;
  // This node as a member (actors/members.hpp): the node-level calls another node makes of it
  // (compactDb, activeTasks, nodeStatus, reshardState, the reshard jobs' calls, a move's and a
  // split's calls; run on a pool thread). Null: they answer not_implemented.
  cluster_member* self = nullptr;
  // Runs `use` with this node's copy of `range` of `db` as a shard_copy that reads its indexes too
  // (coordinator::own_local_copy), or with why there is none; the copy is valid during `use`
  // (viewRows and mangoRows start their reads in it, on a pool thread). Null: they answer
  // not_implemented.
  std::function<void(const std::string& db, const std::string& range,
                     const std::function<void(result<shard_copy*>)>& use)>
      with_copy;
};

using remote_shard_info = shard_summary;

class rpc_node final : public remote_shards {
 public:
  rpc_node(membership& members, rpc_options opts);
  ~rpc_node() override;
  rpc_node(const rpc_node&) = delete;
  rpc_node& operator=(const rpc_node&) = delete;

  // Starts the thread and binds the port; returns once listening (or with the bind error).
  status start();
  uint16_t port() const { return port_; }
  // Stops the loop and joins the thread. Idempotent.
  void stop();

  // Starts dialling a peer (no-op when it is already known). Any thread but the RPC thread.
  status add_peer(const peer_address& peer);
  // A member removed from the cluster: no longer dialled, its connection closed, its calls to this
  // node refused. add_peer() of the same name makes it a peer again.
  status remove_peer(const std::string& name);

  // Blocking calls to a connected peer, for plain threads (never from the RPC thread itself).
  // errc::unavailable when the peer is not connected or the transport failed, errc::timeout after
  // the deadline; errors the peer reports come back as they were.
  result<remote_shard_info> shard_info(const std::string& peer, const std::string& db, const std::string& range,
                                       std::chrono::milliseconds timeout);
  // Merges replicated leaves into the peer's copy.
  result<apply_result> apply_changes(const std::string& peer, const std::string& db, const std::string& range,
                                     const std::vector<doc_update>& updates, std::chrono::milliseconds timeout);

  // remote_shards' started reads (they answer on the RPC thread).
  void summary(const std::string& node, const std::string& db, const std::string& range,
               answer<shard_summary> done) override;
  void changes(const std::string& node, const std::string& db, const std::string& range, const changes_request& req,
               answer<changes_page> done) override;
  void resolve_since(const std::string& node, const std::string& db, const std::string& range,
                     const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) override;
  void all_docs(const std::string& node, const std::string& db, const std::string& range, const all_docs_request& req,
                answer<all_docs_page> done) override;
  void time_seq(const std::string& node, const std::string& db, const std::string& range, bool reset,
                answer<time_seq_state> done) override;
  void view_rows(const std::string& node, const std::string& db, const std::string& range, const view_copy_request& req,
                 answer<view_page> done) override;
  void mango_rows(const std::string& node, const std::string& db, const std::string& range,
                  const mango_copy_request& req, answer<mango_page> done) override;
  void search_rows(const std::string& node, const std::string& db, const std::string& range,
                   const search_copy_request& req, answer<search_copy_page> done) override;
  result<doc_read> read_doc(const std::string& node, const std::string& db, const std::string& range,
                            const doc_request& req, std::chrono::milliseconds timeout) override;
  // remote_shards: a coordinator's write to a peer's copy (does not block).
  void update_docs(const std::string& node, const std::string& db, const std::string& range,
                   const std::vector<doc_update>& docs, write_done done) override;
  bool typed(const std::string& node) const override;
  bool hashes_sha256(const std::string& node) const override;
  // Answers through `done` on the RPC thread: it must not block.
  void open_docs(const std::string& node, const std::string& db, const std::string& range,
                 const std::vector<std::string>& ids, doc_bodies bodies, shard_copy::docs_done done) override;
  result<std::optional<local_doc>> open_local(const std::string& node, const std::string& db, const std::string& range,
                                              const std::string& id, std::chrono::milliseconds timeout) override;
  result<uint64_t> write_local(const std::string& node, const std::string& db, const std::string& range,
                               const local_update& u, std::chrono::milliseconds timeout) override;
  result<std::vector<local_doc>> list_local(const std::string& node, const std::string& db, const std::string& range,
                                            std::chrono::milliseconds timeout) override;
  status set_revs_limit(const std::string& node, const std::string& db, const std::string& range, uint32_t limit,
                        std::chrono::milliseconds timeout) override;
  bool serves_db_updates(const std::string& node) const override;
  void purge_docs(const std::string& node, const std::string& db, const std::string& range,
                  const std::vector<purge_info>& reqs, shard_copy::purge_done done) override;
  result<purge_page> purge_infos(const std::string& node, const std::string& db, const std::string& range,
                                 uint64_t since, uint32_t limit, std::chrono::milliseconds timeout) override;
  status set_purged_infos_limit(const std::string& node, const std::string& db, const std::string& range,
                                uint32_t limit, std::chrono::milliseconds timeout) override;
  // Whether `node` announced `feature` in its handshake.
  bool has_feature(const std::string& node, const std::string& feature) const {
    return members_.has_feature(node, feature);
  }
  // Whether `node` announced tasks_feature; then compactDb and activeTasks on it.
  bool runs_tasks(const std::string& node) const;
  status compact_db(const std::string& node, const std::string& db, std::chrono::milliseconds timeout);
  // `node`'s _view_cleanup of its copies of `db` (views_feature).
  status view_cleanup(const std::string& node, const std::string& db, const std::vector<std::string>& keep,
                      std::chrono::milliseconds timeout);
  // `node`'s compaction of its index files of a design document on its copies of `db` (views_feature).
  status view_compact(const std::string& node, const std::string& db, const std::string& ddoc_id,
                      const std::string& rev, const std::string& ddoc, std::chrono::milliseconds timeout);
  result<std::vector<std::string>> active_tasks(const std::string& node, std::chrono::milliseconds timeout);
  // `node`'s figures (not_implemented when it did not announce node_status_feature).
  result<node_status> status_of_node(const std::string& node, std::chrono::milliseconds timeout);
  // `node`'s resharding state, set first when `set` (not_implemented when it did not announce
  // members_feature).
  result<reshard_state> reshard_state_of(const std::string& node, const std::optional<reshard_state>& set,
                                         std::chrono::milliseconds timeout);
  // `node`'s reshard jobs (members_feature): the list, one stopped/resumed or removed, one made.
  result<std::vector<split_job>> reshard_jobs(const std::string& node, std::chrono::milliseconds timeout);
  status edit_reshard_job(const std::string& node, const std::string& id, bool remove, const reshard_state& s,
                          std::chrono::milliseconds timeout);
  result<split_job> new_reshard_job(const std::string& node, const new_job& j, std::chrono::milliseconds timeout);
  // A shard move's calls to the node a copy leaves, a job's creation on another node, and a split
  // leader's seal of another node's copy.
  result<std::string> export_changes(const std::string& node, const std::string& db, const std::string& range,
                                     uint64_t since, bool with_local, std::chrono::milliseconds timeout);
  result<uint64_t> seal_copy(const std::string& node, const std::string& db, const std::string& range, bool seal,
                             std::chrono::milliseconds timeout);
  status retire_copy(const std::string& node, const std::string& db, const std::string& shard, uint64_t end_seq,
                     bool remove, std::chrono::milliseconds timeout);
  result<std::string> create_job(const std::string& node, const std::string& body, std::chrono::milliseconds timeout);
  result<std::pair<uint64_t, std::string>> split_seal(const std::string& node, const std::string& db,
                                                      const std::string& shard, std::chrono::milliseconds timeout);
  // A /_reshard/jobs request answered by `node` from its own jobs: (HTTP status, JSON body).
  // /_node/<node>/_config on that node (release 0.5).
  result<config_reply> configure(const std::string& node, const config_call& call, std::chrono::milliseconds timeout);
  result<std::pair<int, std::string>> reshard_request(const std::string& node, const std::string& method,
                                                      const std::string& id, bool state, const std::string& body,
                                                      std::chrono::milliseconds timeout);
  bool stores_attachments(const std::string& node) const override;
  result<std::string> read_blob(const std::string& node, const std::string& db, const std::string& range,
                                const std::string& key, uint64_t offset, uint64_t length,
                                std::chrono::milliseconds timeout) override;
  result<bool> stage_blob(const std::string& node, const std::string& db, const std::string& range,
                          const std::string& key, uint64_t offset, const std::string& piece,
                          std::chrono::milliseconds timeout) override;
  status drop_staged(const std::string& node, const std::string& db, const std::string& range, const std::string& key,
                     std::chrono::milliseconds timeout) override;
  result<log_page> db_updates(const std::string& node, const std::string& uuid, uint64_t seq, size_t limit,
                              std::chrono::milliseconds timeout) override;

  struct loop;  // the KJ side, defined in rpc_node.cpp

 private:
  membership& members_;
  rpc_options opts_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::function<void()> stop_;  // wakes the loop thread through its executor
  // Runs `start` on the loop thread and waits until it ran; it must only start work (never wait).
  status on_loop(const std::function<void(loop&)>& start);
  // Hands `work` to the loop thread without waiting: it runs there soon, with the loop, or (the RPC
  // stopped) right away with null. The one way other threads start calls to peers.
  void post(std::function<void(loop*)> work);
  // Send one batch of queued reads (open_docs) or writes (update_docs); on the loop.
  void send_reads(loop& l, struct pending_reads& r);
  void send_writes(loop& l, struct pending_writes& w);
  // The shape of every client call: on the loop thread, find the connected peer, start the request
  // (`send` gets the peer's capability and returns a promise of the answer; it runs later, on the
  // loop, so it must hold copies of what it sends), and hand the answer or the transport failure to
  // the waiting caller, up to `timeout`. Defined in rpc_node.cpp.
  // The same, answering through `done` (exactly once, on the loop thread or this one) instead.
  template <class T, class Send>
  void start_call(const std::string& peer, Send send, std::function<void(result<T>)> done, int timeout_ms = 0);
  template <class T, class Send>
  result<T> call(const std::string& peer, std::chrono::milliseconds timeout, Send send);
  // A call answered by a status only: `fill` gets the peer's capability and returns the filled
  // request (holding copies of what it sends).
  template <class Fill>
  status call_status(const std::string& peer, std::chrono::milliseconds timeout, Fill fill);
  std::shared_ptr<struct loop_control> control_;
};

}  // namespace settee
