// The composition root: one running node, every service a member, declared in the order it is
// built (each takes references to the ones above it). main() parses the command line, loads the
// configuration and hands it here.
//
//   node_process n(cfg, set, clk, data_dir);
//   if (auto st = n.start(); !st) die(st.reason);  // storage, cluster RPC, HTTP bound, jobs resumed
//   n.serve(signals);                               // until SIGINT/SIGTERM, then the shutdown order
#pragma once

#include <signal.h>

#include <caf/all.hpp>
#include <memory>
#include <string>
#include <thread>

#include "actors/change_notifier.hpp"
#include "actors/compactor.hpp"
#include "actors/coordinator.hpp"
#include "actors/db_catalog.hpp"
#include "actors/doc_validator.hpp"
#include "actors/find_reader.hpp"
#include "actors/job_store.hpp"
#include "actors/jobs.hpp"
#include "actors/js_pool.hpp"
#include "actors/members.hpp"
#include "actors/resharder.hpp"
#include "actors/search_reader.hpp"
#include "actors/shard_registry.hpp"
#include "actors/update_log.hpp"
#include "actors/view_reader.hpp"
#include "cluster/cluster_members.hpp"
#include "cluster/membership.hpp"
#include "cluster/nodes_db.hpp"
#include "cluster/rpc_node.hpp"
#include "http/auth.hpp"
#include "http/request.hpp"
#include "http/server.hpp"
#include "node/clock.hpp"
#include "node/error.hpp"
#include "node/live_config.hpp"
#include "node/settings.hpp"
#include "replicator/replications.hpp"
#include "replicator/replicator_docs.hpp"

namespace settee {

// What reads this node's copies' views, JSON indexes and full-text indexes (actors/index_readers.hpp).
class node_index_readers final : public index_readers {
 public:
  node_index_readers(view_reader& views, find_reader& mango, search_reader& search)
      : views_(views), mango_(mango), search_(search) {}
  void view_rows(const db_meta& db, size_t range, const shard_handle& shard, const view_copy_request& req,
                 shard_copy::answer<view_page> done) override {
    views_.copy_rows(db, range, shard, req, std::move(done));
  }
  void mango_rows(const db_meta& db, size_t range, const shard_handle& shard, const mango_copy_request& req,
                  shard_copy::answer<mango_page> done) override {
    mango_.copy_rows(db, range, shard, req, std::move(done));
  }
  void search_rows(const db_meta& db, size_t range, const shard_handle& shard, const search_copy_request& req,
                   shard_copy::answer<search_copy_page> done) override {
    search_.copy_search(db, range, shard, req, std::move(done));
  }

 private:
  view_reader& views_;
  find_reader& mango_;
  search_reader& search_;
};

class node_process {
 public:
  // Builds every service (nothing is read from disk or bound yet). `cfg` and `clk` outlive it.
  node_process(live_config& cfg, settings set, const clock& clk, std::string data_dir);
  node_process(const node_process&) = delete;
  node_process& operator=(const node_process&) = delete;
  ~node_process();

  // Opens the catalog and the update log, starts cluster RPC when [cluster] rpc_port is set, binds
  // the HTTP front(s) and resumes jobs. An error is fatal: the caller exits.
  status start();
  // Serves HTTP until one of `signals` arrives, then stops everything in the order that keeps
  // every acknowledged write (see stop_all()).
  void serve(sigset_t signals);

 private:
  static caf::actor_system_config scheduler_config();
  std::shared_ptr<replicator_docs> document_processor();
  status open_storage();
  status start_cluster();  // [cluster] rpc_port set
  void answer_from_here(rpc_options& ro);
  void serve_indexes();
  // Applies configuration changes that can take effect while the node runs (live_keys); the
  // others wait for a restart (node_services::applies_live says which).
  void watch_config();
  void stop_all();

  // Shard writers run on this scheduler (architecture.md section 1): a commit's fsync holds a
  // thread, so 16 of them let 16 shards commit at once; idle threads sleep.
  static constexpr size_t scheduler_threads = 16;

  live_config& cfg_;
  const settings set_;
  const clock& clk_;
  const std::string data_dir_;
  caf::actor_system_config caf_cfg_;
  caf::actor_system sys_;
  change_notifier notifier_;
  shard_registry shards_;
  db_catalog catalog_;
  update_log updates_;
  coordinator coord_;
  authenticator auth_;
  node_services node_;
  task_list tasks_;
  job_runner jobs_;  // long-running work (actors/jobs.hpp): a worker per lane slot
  job_store job_states_;
  compactor compaction_;
  resharder reshard_;
  std::shared_ptr<local_member> self_member_;
  js_pool js_;  // design documents' JavaScript, in sandboxed worker processes
  doc_validator validator_;
  view_reader views_;
  find_reader mango_;
  search_reader search_;  // full-text indexes (issue 54)
  node_index_readers index_readers_{views_, mango_, search_};
  // How replications read from endpoints ([replicator], [couchdb] limits); rules_error_: a bad setting.
  std::shared_ptr<remote_rules> make_remote_rules();
  status rules_error_;
  replications replicator_;                           // POST /_replicate's jobs
  std::shared_ptr<replicator_docs> replicator_docs_;  // _replicator's documents, a job once started
  http_options http_;
  membership members_;
  std::unique_ptr<rpc_node> rpc_;    // null on a single node
  std::unique_ptr<nodes_db> nodes_;  // `_nodes`, with RPC
  std::unique_ptr<rpc_cluster_members> cluster_;
  std::unique_ptr<http_server> server_;
  std::unique_ptr<http_server> metrics_server_;  // [prometheus] additional_port
  std::thread metrics_thread_;
  bool stopped_ = true;  // until start() has gone as far as jobs
};

}  // namespace settee
