#include "app/node_process.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <set>

#include "actors/messages.hpp"
#include "actors/node_updates.hpp"
#include "actors/scheduler_caches.hpp"
#include "cluster/cluster_tls.hpp"
#include "cluster/peer_auth.hpp"
#include "cluster/shard_sync.hpp"
#include "http/changes_feed.hpp"
#include "http/handlers.hpp"
#include "node/json.hpp"
#include "node/log.hpp"
#include "replicator/net_policy.hpp"

namespace settee {
namespace {

store_options storage_options(const settings& set) {
  store_options o;
  o.node_name = set.node_name;
  o.map_size_bytes = set.map_size_bytes;
  o.time_seq_min_time = set.time_seq_min_time_s.value_or(time_seq::default_min_time);
  o.time_seq_enabled = set.time_seq_enabled;
  o.keys_of_indexes = mango_keys::shared();
  return o;
}

// max_dbs_open as read_settings lowered it to the address space, said once in the log.
size_t open_shard_limit(const settings& set) {
  if (set.max_dbs_open < set.max_dbs_open_asked)
    log::warning("[couchdb] max_dbs_open = " + std::to_string(set.max_dbs_open_asked) + " lowered to " +
                 std::to_string(set.max_dbs_open) +
                 ": each open shard maps map_size_mb = " + std::to_string(set.map_size_bytes >> 20) +
                 " of address space, and more would not fit (lower map_size_mb to keep more open)");
  return set.max_dbs_open;
}

replica_limits writer_limits(const settings& set) {
  replica_limits l;
  l.batch_max_docs = set.batch_max_docs;
  l.batch_max_bytes = set.batch_max_bytes;
  return l;
}

update_log_options db_updates_options(const settings& set) {
  update_log_options o;
  o.gather = set.db_updates_gather;
  o.min_interval = set.db_updates_min_interval;
  return o;
}

// Replications step on this many workers at once; each step is one read of the source's feed and
// its batches (a caught-up continuous replication waits between polls without a worker).
constexpr size_t replication_threads = 8;

job_options runner_options(const settings& set) {
  job_options o;
  // Index builds: a database's ranges update at once on the view reader's pool; up to 4 databases'
  // builds at a time.
  o.lanes = {{compactor::lane, 1},           {resharder::lane, 1},  {shard_syncer::lane, 1},
             {update_log::lane, 1},          {view_build::lane, 4}, {replication_job::lane, replication_threads},
             {replications::control_lane, 2}};
  o.backoff_base = set.jobs_retry_base;
  o.backoff_cap = set.jobs_retry_cap;
  return o;
}

// The JavaScript workers: settee-js from [query_server] worker, else beside this executable.
js_options javascript_options(const settings& set) {
  js_options o;
  o.worker = set.js_worker;
  if (o.worker.empty()) {
    char self[4096];
    ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) o.worker = js_pool::worker_beside(std::string(self, static_cast<size_t>(n)));
  }
  o.max_workers = set.js_max_workers;
  o.timeout = set.js_timeout;
  o.heap_mb = set.js_heap_mb;
  return o;
}

// The limits a node's handlers enforce, from the settings.
void apply_limits(node_services& node, const settings& set) {
  node.default_q = set.default_q;
  node.max_document_id_length = set.max_document_id_length;
  node.max_document_size = set.max_document_size_bytes;
  node.attachment_policy.max_bytes = set.max_attachment_bytes;
  node.attachment_policy.compression_level = set.attachment_compression_level;
  node.attachment_policy.compressible = attachments::policy::parse_types(set.compressible_types);
  node.uuids_max_count = set.uuids_max_count;
  node.bulk_docs_max = set.bulk_docs_max;
  node.push_timeout = set.push_timeout;
  node.catalog_push_timeout = set.catalog_push_timeout;
  if (set.everyone_may_read_new_dbs) node.new_db_security = "{}";
}

// The HTTP front's options, from the settings.
http_options front_options(const settings& set, const std::string& data_dir) {
  http_options http;
  http.bind = set.bind_address;
  http.port = set.port;
  http.threads = set.server_threads;
  http.max_request_bytes = set.max_request_bytes;
  http.spool_dir = data_dir;
  http.header_timeout_s = set.header_timeout_s;
  http.body_timeout_s = set.body_timeout_s;
  http.idle_release_s = static_cast<int>(set.idle_release_s);
  http.keep_alive_timeout_s = set.keep_alive_timeout_s;
  http.max_attachment_bytes = set.max_attachment_bytes;
  return http;
}

// Cluster RPC's options from the settings: bad seeds or a short secret are errors.
result<rpc_options> cluster_options(const settings& set, const clock& clk, int http_port) {
  auto seeds = parse_seeds(set.seeds);
  if (!seeds) return seeds.error();
  rpc_options ro;
  ro.bind = set.rpc_bind;
  ro.port = *set.rpc_port;
  ro.advertised_host = ro.bind == "0.0.0.0" ? "127.0.0.1" : ro.bind;
  ro.http_port = static_cast<uint16_t>(http_port);
  ro.release = SETTEE_VERSION;
  ro.features = {"changes",           "clustered-seq-v1", "selector",         typed_feature,       db_updates_feature,
                 attachments_feature, tasks_feature,      reshard_feature,    node_status_feature, members_feature,
                 javascript_feature,  views_feature,      partitions_feature, purges_feature,      config_feature,
                 search_feature,      mango_text_feature, rev_hash_feature};
  ro.seeds = std::move(*seeds);
  ro.secret = set.cluster_secret;
  if (ro.secret.size() < peer_auth::min_secret_bytes) {
    return status{errc::bad_request,
                  "[cluster] secret must be at least " + std::to_string(peer_auth::min_secret_bytes) + " bytes"};
  }
  ro.accept_legacy_peers = set.accept_legacy_peers;
  // TLS between hosts: on by default unless RPC listens on loopback only (docs/security.md).
  ro.tls =
      set.tls == settings::tls_mode::on || (set.tls == settings::tls_mode::automatic && !is_loopback_host(ro.bind));
  if (ro.tls) {
    auto material = make_tls_material(ro.secret, clk.now_s());
    if (!material) return material.error();
    ro.tls_ca_pem = material->ca_cert_pem;
    ro.tls_cert_pem = material->node_cert_pem;
    ro.tls_key_pem = material->node_key_pem;
  }
  if (ro.accept_legacy_peers) {
    log::warning(
        "[cluster] accept_legacy_peers = true: nodes that cannot prove the cluster secret may call "
        "this node (only for an upgrade from or downgrade to release 0.2 or older)");
  }
  ro.call_timeout_ms = static_cast<int>(std::min<int64_t>(set.request_timeout.count(), INT32_MAX));
  ro.view_call_timeout_ms = static_cast<int>(set.view_timeout.count());
  return ro;
}

// [prometheus] additional_port (CouchDB's): GET /_node/_local/_prometheus without credentials on
// a port of its own, for a scraper that should not hold an admin password.
result<std::unique_ptr<http_server>> metrics_front(node_services& node, const http_options& http, const settings& set) {
  http_options m = http;
  m.metrics_only = true;
  m.threads = 2;
  m.bind = set.metrics_bind;
  m.port = set.metrics_port_number;
  m.max_request_bytes = 64 << 10;
  auto server = std::make_unique<http_server>(node, m);
  if (auto st = server->bind(); !st) return status{st.code, "[prometheus] port: " + st.reason};
  log::info("metrics listening on http://" + m.bind + ":" + std::to_string(server->port()) +
            "/_node/_local/_prometheus (no credentials)");
  return server;
}

// Every connection and every open shard costs a file descriptor; the common soft limit of 1024
// would cap a node at a few hundred clients. Raise the soft limit to the hard one, and both to
// `wanted` when the process may (root, or CAP_SYS_RESOURCE).
void raise_fd_limit(rlim_t wanted) {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) != 0) return;
  if (lim.rlim_max < wanted) {
    rlimit more{wanted, wanted};
    if (::setrlimit(RLIMIT_NOFILE, &more) == 0) return;
  }
  if (lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
  if (lim.rlim_cur < 4096) {
    log::warning("open file limit is " + std::to_string(lim.rlim_cur) +
                 ": each client connection and each open shard needs one (raise `ulimit -n`)");
  }
}

}  // namespace

caf::actor_system_config node_process::scheduler_config() {
  caf::actor_system_config c;
  c.set("scheduler.policy", caf::atom("sharing"));  // 2-4x lower latency on 2 cores (stack.md)
  c.set("scheduler.max-threads", scheduler_threads);
  c.set("logger.verbosity", caf::atom("quiet"));
  return c;
}

node_process::node_process(live_config& cfg, settings set, const clock& clk, std::string data_dir)
    : cfg_(cfg),
      set_(std::move(set)),
      clk_(clk),
      data_dir_(std::move(data_dir)),
      caf_cfg_(scheduler_config()),
      sys_(caf_cfg_),
      shards_(sys_, clk_, storage_options(set_), writer_limits(set_), open_shard_limit(set_), &notifier_),
      catalog_(shards_, clk_, data_dir_, set_.node_name, set_.request_timeout),
      updates_(shards_, catalog_, clk_, data_dir_, db_updates_options(set_)),
      coord_(catalog_, shards_, set_.request_timeout, set_.node_name, set_.view_timeout),
      auth_(cfg_, clk_, coord_),
      node_{cfg_, clk_, coord_, auth_, set_.node_name, set_.server_uuid},
      jobs_(tasks_, clk_, set_.node_name, runner_options(set_)),
      job_states_([this] { return catalog_.catalog_file(); }),
      compaction_(jobs_, &job_states_, set_.compaction_docs_per_step),
      reshard_(coord_, shards_, jobs_, job_states_, clk_, set_.node_name, data_dir_),
      self_member_(std::make_shared<local_member>(
          set_.node_name,
          local_services{
              &coord_, &reshard_, &tasks_, &compaction_, &views_, [this] { return read_node_status(node_); },
              [this](const db_meta& db, const std::set<std::string>& keep) { return mango_.cleanup(db, keep); },
              [this](const db_meta& db, const std::set<std::string>& keep) {
                return search_.cleanup(db, std::vector<std::string>(keep.begin(), keep.end()));
              },
              nullptr})),
      js_(javascript_options(set_)),
      validator_(coord_, js_, &notifier_),
      views_(coord_, js_, jobs_, data_dir_ + "/.shard_views", js_reduce_options{reduce_limit_of(set_.reduce_limit)}),
      mango_(coord_, jobs_, mango_keys::shared(), &notifier_),
      search_(coord_, js_, jobs_, data_dir_ + "/.shard_views"),
      replicator_(jobs_, clk_, set_.node_name, data_dir_,
                  scheduler_limits{set_.replicator_max_jobs, set_.replicator_interval, set_.replicator_max_churn,
                                   set_.replicator_worker_threads},
                  make_remote_rules()),
      http_(front_options(set_, data_dir_)),
      members_(set_.node_name) {
  // `updated` rows of _db_updates: every commit to a database's copy marks it (architecture 28);
  // [db_updates] enabled = false: no bookkeeping at all (only to measure what it costs).
  if (set_.db_updates_enabled) notifier_.set_observer([this](const std::string& key) { updates_.mark(key); });
  apply_limits(node_, set_);
  coord_.on_design_written([this] { notifier_.design_changed(); });
  node_.notifier = &notifier_;
  node_.updates = &updates_;
  node_.tasks = &tasks_;
  node_.compaction = &compaction_;
  node_.reshard = &reshard_;
  node_.shards = &shards_;
  node_.js = &js_;
  node_.validator = &validator_;
  node_.views = &views_;
  node_.mango = &mango_;
  node_.search = &search_;
  node_.replicator = &replicator_;
  replicator_docs_ = document_processor();
  node_.rep_docs = replicator_docs_.get();
  serve_indexes();
  if (js_.worker_path().empty())
    log::warning(
        "settee-js was not found beside settee ([query_server] worker): design documents with "
        "JavaScript cannot be saved");
  node_.on_idle = [this] { release_scheduler_caches(sys_, scheduler_threads, std::chrono::milliseconds(100)); };
  node_.spool_dir = node_.data_dir = data_dir_;
  node_.started_s = clk_.now_s();
  node_.max_request_bytes = http_.max_request_bytes;
  set_max_json_depth(set_.max_json_depth);
}

// The secondary indexes' readers: their tasks listed, their files gone with their copy.
void node_process::serve_indexes() {
  coord_.set_index_readers(&index_readers_);
  views_.set_tasks(tasks_, clk_, set_.node_name);
  search_.set_tasks(tasks_, clk_, set_.node_name);
  shards_.set_on_removed([this](const std::string& path) {
    if (path.compare(0, data_dir_.size() + 1, data_dir_ + "/") != 0) return;
    search_.forget_copy(path.substr(data_dir_.size() + 1));  // closed before their directory goes
    views_.forget_copy(path.substr(data_dir_.size() + 1));
  });
}

node_process::~node_process() {
  if (!stopped_) stop_all();
}

// The _replicator document processor: it writes state into documents as an HTTP write would.
std::shared_ptr<replicator_docs> node_process::document_processor() {
  return std::make_shared<replicator_docs>(
      replicator_host{clk_, coord_, node_.node_name, node_.server_uuid, node_.self_url, &notifier_, node_.cluster,
                      [this](const std::string& name) { return node_.auth.is_server_admin(name); },
                      [this](const db_meta& db, json body, const std::string& id) {
                        return to_doc_update(db, std::move(body), id, true, nullptr, node_.attachment_policy);
                      }},
      replicator_);
}

status node_process::open_storage() {
  if (auto st = catalog_.load(); !st) return st;
  for (const char* system_db : {"_users", "_replicator"}) {
    if (auto st = catalog_.create_system(system_db); !st) return st;
  }
  return updates_.open();
}

// What this node's RPC server answers from: its own copies, the update log, its member.
void node_process::answer_from_here(rpc_options& ro) {
  ro.find_shard = [this](const std::string& db, const std::string& range) -> result<shard_handle> {
    auto m = catalog_.lookup_internal(db);
    if (!m) return m.error();
    return coord_.own_copy(*m, range);
  };
  ro.on_applied = [this](const std::string& db) {
    if (db == "_dbs") catalog_.mark_stale();
  };
  ro.read_updates = [this](const std::string& uuid, uint64_t seq, size_t limit) -> result<log_page> {
    auto log = updates_.record();
    if (!log) return log.error();
    return read_update_log(*log, uuid, seq, limit);
  };
  ro.self = self_member_.get();
  ro.read_doc = [this](local_copy& copy, const doc_request& req) {
    return serve_legacy_read(copy, req, node_.max_document_id_length);
  };
  ro.with_copy = [this](const std::string& db, const std::string& range,
                        const std::function<void(result<shard_copy*>)>& use) {
    auto m = catalog_.lookup_internal(db);
    if (!m) return use(m.error());
    auto copy = coord_.own_local_copy(*m, range);
    if (!copy) return use(copy.error());
    use(copy->get());
  };
}

status node_process::start_cluster() {
  auto options = cluster_options(set_, clk_, http_.port);
  if (!options) return options.error();
  answer_from_here(*options);
  rpc_ = std::make_unique<rpc_node>(members_, *options);
  if (auto st = rpc_->start(); !st) return st;
  node_.remote = rpc_.get();
  coord_.set_remote(rpc_.get());
  // A split's new shard map reaches the other nodes at once, not at the next sweep: their
  // coordinators retry the writes a sealed parent refused until they see it.
  reshard_.set_after_switch([this] {
    for (auto& row : sync_database(coord_, *rpc_, members_, coord_.catalog().dbs_meta(), set_.catalog_push_timeout))
      if (!row.st) log::warning("pushing _dbs to " + row.node + " after a split failed: " + row.st.reason);
  });
  // `_nodes`: this node and the seeds are members; the database spreads them to every node.
  nodes_ = std::make_unique<nodes_db>(shards_, clk_, data_dir_, members_, *rpc_, set_.request_timeout);
  catalog_.add_internal("_nodes", [this] { return nodes_->meta(); });
  for (const auto& s : options->seeds) {
    if (auto st = nodes_->add(s, true); !st) return status{st.code, "cannot record seed " + s.name + ": " + st.reason};
  }
  if (auto st = nodes_->add({set_.node_name, options->advertised_host, rpc_->port()}); !st) return st;
  if (auto st = nodes_->reload(); !st) return st;  // members removed earlier stay removed
  if (set_.sync_interval.count() > 0) {
    jobs_.submit("sync", shard_syncer::lane,
                 std::make_shared<shard_syncer>(coord_, *rpc_, members_, set_.sync_interval, set_.push_timeout,
                                                nodes_.get(), &tasks_));
  }
  log::info("cluster RPC listening on " + options->bind + ":" + std::to_string(rpc_->port()) +
            (options->tls ? " (TLS)" : " (plain TCP)"));
  return {};
}

std::shared_ptr<remote_rules> node_process::make_remote_rules() {
  auto rules = std::make_shared<remote_rules>();
  rules->max_response_bytes = set_.max_request_bytes;
  rules->max_row_bytes = set_.max_document_size_bytes;
  rules->max_spool_bytes = set_.max_attachment_bytes + set_.max_document_size_bytes;
  rules->max_inflate_ratio = set_.replicator_max_inflate_ratio;
  rules->verify_certificates = set_.replicator_verify_certificates;
  rules->ca_file = set_.replicator_ca_file;
  const std::string denied =
      set_.replicator_denied_networks == "<default>" ? default_denied_networks : set_.replicator_denied_networks;
  auto policy = net_policy::parse(denied, set_.replicator_allowed_hosts);
  if (!policy) {
    rules_error_ = policy.error();
    return rules;
  }
  // This node's own ports and the members' hosts are known once it listens: asked at each check.
  policy->set_own_ports([this] {
    std::vector<int> ports;
    if (server_) ports.push_back(server_->port());
    if (metrics_server_) ports.push_back(metrics_server_->port());
    if (rpc_) ports.push_back(rpc_->port());
    return ports;
  });
  policy->set_member_hosts([this] {
    std::vector<std::string> hosts;
    if (node_.cluster)
      for (const std::string& name : node_.cluster->all())
        if (auto at = name.find('@'); at != std::string::npos) hosts.push_back(name.substr(at + 1));
    return hosts;
  });
  rules->policy = std::make_shared<const net_policy>(std::move(*policy));
  return rules;
}

namespace {

// The settings a running node takes at once: sections whose every key is read at use, and single
// keys the watcher applies. Anything else is read at start-up only.
bool applies_live(const std::string& sec, const std::string& key) {
  static const std::set<std::string> whole = {"log", "admins", "cors", "jwt_auth", "jwt_keys", "prometheus"};
  static const std::set<std::string> keys = {"couchdb/max_document_size",
                                             "couchdb/max_document_id_length",
                                             "couchdb/bulk_docs_max",
                                             "uuids/max_count",
                                             "cluster/q",
                                             "replicator/interval",
                                             "replicator/max_churn",
                                             "query_server/max_workers",
                                             "couchdb/os_process_timeout",
                                             "query_server_config/reduce_limit",
                                             "chttpd/enable_cors",
                                             "httpd/enable_cors",
                                             "chttpd/authentication_handlers",
                                             "chttpd_auth/timeout",
                                             "chttpd_auth/secret",
                                             "couch_httpd_auth/secret",
                                             "chttpd_auth/proxy_use_secret",
                                             "couch_httpd_auth/proxy_use_secret",
                                             "chttpd_auth/x_auth_username",
                                             "chttpd_auth/x_auth_roles",
                                             "chttpd_auth/x_auth_token"};
  return whole.count(sec) > 0 || keys.count(sec + "/" + key) > 0;
}

}  // namespace

void node_process::watch_config() {
  node_.applies_live = applies_live;
  self_member_->set_configure([this](const config_call& call) { return answer_config(node_, call); });
  node_.access_log = set_.access_log;
  cfg_.watch([this](const config& c, const std::string&, const std::string&) {
    auto now = read_settings(c);  // checked before the change was published
    if (!now) return;
    node_.default_q = now->default_q;
    node_.max_document_id_length = now->max_document_id_length;
    node_.max_document_size = now->max_document_size_bytes;
    node_.uuids_max_count = now->uuids_max_count;
    node_.bulk_docs_max = now->bulk_docs_max;
    node_.access_log = now->access_log;
    replicator_.set_schedule(now->replicator_interval, now->replicator_max_churn);
    if (js_.max_workers() != now->js_max_workers || js_.timeout_now() != now->js_timeout)
      js_.set_limits(now->js_max_workers, now->js_timeout);
    views_.set_reduce_limit(reduce_limit_of(now->reduce_limit));
  });
}

status node_process::start() {
  if (!rules_error_) return rules_error_;
  watch_config();
  if (auto st = open_storage(); !st) return st;
  if (set_.rpc_port) {
    if (auto st = start_cluster(); !st) return st;
  }
  cluster_ = std::make_unique<rpc_cluster_members>(self_member_, coord_, members_, rpc_.get(), nodes_.get(), &tasks_,
                                                   set_.request_timeout);
  node_.cluster = cluster_.get();
  reshard_.set_members(cluster_.get());
  raise_fd_limit(65536);
  server_ = std::make_unique<http_server>(node_, http_);
  if (auto st = server_->bind(); !st) return st;
  const bool any = http_.bind == "0.0.0.0" || http_.bind == "::" || http_.bind.empty();
  const std::string host = any                                         ? "127.0.0.1"
                           : http_.bind.find(':') != std::string::npos ? "[" + http_.bind + "]"
                                                                       : http_.bind;
  node_.self_url = "http://" + host + ":" + std::to_string(server_->port());
  if (set_.metrics_port) {
    auto metrics = metrics_front(node_, http_, set_);
    if (!metrics) return metrics.error();
    metrics_server_ = std::move(*metrics);
  }
  if (auto st = reshard_.start(); !st) return status{st.code, "cannot resume reshard jobs: " + st.reason};
  if (auto st = compaction_.resume(coord_); !st) return status{st.code, "cannot resume compactions: " + st.reason};
  jobs_.submit(replicator_docs::job_id, replications::control_lane, replicator_docs_);  // after bind: it needs self_url
  replicator_.start_scheduler();
  if (set_.db_updates_enabled) updates_.start(jobs_);  // last: a failed start() exits, which must not race its steps
  stopped_ = false;
  return {};
}

void node_process::serve(sigset_t signals) {
  if (metrics_server_) metrics_thread_ = std::thread([this] { metrics_server_->run(); });
  std::thread signal_thread([this, &signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
    replicator_.stop_all();  // a one-shot _replicate holds a request thread until its job ends
    server_->stop();
  });
  std::printf("settee %s listening on http://%s:%d (data: %s)\n", SETTEE_VERSION, http_.bind.c_str(), server_->port(),
              data_dir_.c_str());
  std::fflush(stdout);
  server_->run();
  pthread_kill(signal_thread.native_handle(), SIGTERM);  // wake it if the server stopped by itself
  signal_thread.join();
  stop_all();
}

// The shutdown order: no new request, then jobs end their current step, then RPC, then every
// queued write commits and marks its database, the update log records the marks.
void node_process::stop_all() {
  stopped_ = true;
  if (metrics_server_) {
    metrics_server_->stop();
    if (metrics_thread_.joinable()) metrics_thread_.join();
  }
  log::info("http server stopped");
  reshard_.stop();  // its current copy step commits whole; before the RPC it pushes _dbs with
  jobs_.stop();     // every job's current step commits whole (compactions save where they were)
  if (rpc_) rpc_->stop();
  shards_.close_all();              // queued writes finish, and mark their databases
  updates_.stop();                  // records them, syncs the record and notes the clean stop
  shards_.close_all();              // the record itself
  notifier_.set_observer(nullptr);  // no commit is left to observe
  log::info("all shards closed");
}

}  // namespace settee
