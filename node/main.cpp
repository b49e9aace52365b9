// settee: one node of a clustered, CouchDB-compatible database.
//   settee --data-dir DIR [--bind ADDR] [--port N] [--config FILE]
// Configuration layers, lowest first: built-in defaults, DIR/local.ini (written by settee itself:
// server uuid, cookie secret, hashed admins), then --config FILE (the operator's), then flags.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <caf/all.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "actors/change_notifier.hpp"
#include "actors/compactor.hpp"
#include "actors/coordinator.hpp"
#include "actors/db_catalog.hpp"
#include "actors/job_store.hpp"
#include "actors/jobs.hpp"
#include "actors/messages.hpp"
#include "actors/resharder.hpp"
#include "actors/scheduler_caches.hpp"
#include "actors/shard_registry.hpp"
#include "actors/update_log.hpp"
#include "cluster/cluster_members.hpp"
#include "cluster/cluster_tls.hpp"
#include "cluster/membership.hpp"
#include "cluster/nodes_db.hpp"
#include "cluster/peer_auth.hpp"
#include "cluster/rpc_node.hpp"
#include "cluster/shard_sync.hpp"
#include "http/auth.hpp"
#include "http/changes_feed.hpp"
#include "http/handlers.hpp"
#include "http/server.hpp"
#include "node/clock.hpp"
#include "node/config.hpp"
#include "node/crypto.hpp"
#include "node/files.hpp"
#include "node/log.hpp"
#include "node/settings.hpp"
#include "node/time_seq_tool.hpp"

using namespace settee;

namespace {

const char* usage =
    "usage: settee [--data-dir DIR] [--bind ADDR] [--port N] [--config FILE]\n"
    "       settee time-seq simulate --start <YYYY-MM-DDTHH:MM:SSZ> --step <seconds> --count <N>\n"
    "       settee --help | --version\n"
    "\n"
    "Runs one settee node: CouchDB's HTTP API on ADDR:N (default 127.0.0.1:5984), data in DIR\n"
    "(default ./data). FILE is an ini file with CouchDB-style sections, e.g. [log] level = warning.\n"
    "Server admins come from [admins] in FILE, or from SETTEE_ADMIN=name:password (applied at every\n"
    "start); with neither, a password is generated, printed once and stored only as a PBKDF2 hash.\n";

struct cli {
  std::string data_dir = "./data";
  std::string bind, config_file;
  int port = -1;
};

int parse_cli(int argc, char** argv, cli& out) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "settee: %s needs a value\n%s", name, usage);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(usage, stdout);
      return 0;
    } else if (a == "--version") {
      std::printf("settee %s\n", SETTEE_VERSION);
      return 0;
    } else if (a == "--data-dir") {
      out.data_dir = value("--data-dir");
    } else if (a == "--bind") {
      out.bind = value("--bind");
    } else if (a == "--config") {
      out.config_file = value("--config");
    } else if (a == "--port") {
      std::string v = value("--port");
      char* end = nullptr;
      long p = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || p < 0 || p > 65535) {
        std::fprintf(stderr, "settee: --port must be a number from 0 to 65535, not '%s'\n", v.c_str());
        std::exit(2);
      }
      out.port = static_cast<int>(p);
    } else {
      std::fprintf(stderr, "settee: unknown argument '%s'\n%s", a.c_str(), usage);
      return 2;
    }
  }
  return -1;  // go on
}

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "settee: %s\n", msg.c_str());
  std::exit(1);
}

// Plain-text admins in the operator's file are replaced there by their hashes (as CouchDB rewrites
// its ini files), so no password stays readable on disk; a file settee cannot write keeps it, with
// a warning that says what to put there instead.
void hash_operator_admins(const std::string& path, config& operator_cfg) {
  auto it = operator_cfg.sections().find("admins");
  if (it == operator_cfg.sections().end()) return;
  std::vector<std::pair<std::string, std::string>> hashed;
  for (auto& [name, value] : it->second)
    if (!crypto::is_hashed(value)) hashed.push_back({name, crypto::hash(value)});
  if (hashed.empty()) return;
  auto text = read_file(path);
  std::string updated = text ? *text : "";
  for (auto& [name, hash] : hashed) {
    operator_cfg.set("admins", name, hash);
    updated = config::with_value(updated, "admins", name, hash);
  }
  struct stat before {};
  const int mode = ::stat(path.c_str(), &before) == 0 ? static_cast<int>(before.st_mode & 07777) : 0600;
  status st = text ? replace_file(path, updated, mode) : status{errc::not_found, std::strerror(errno)};
  for (auto& [name, hash] : hashed) {
    if (st) {
      log::info("server admin '" + name + "': its plain-text password in " + path + " was replaced by its hash");
    } else {
      log::warning("server admin '" + name + "': the plain-text password stays in " + path + " (" + st.reason +
                   "); replace it there by " + hash);
    }
  }
}

// Fills in what the node generates for itself and keeps in DIR/local.ini, and makes sure every
// admin password is stored hashed.
void prepare_local_config(const std::string& local_path, config& local, config& cfg, const config& operator_cfg) {
  bool dirty = false;
  if (local.get("couchdb", "uuid").empty()) {
    local.set("couchdb", "uuid", crypto::random_hex(16));
    dirty = true;
  }
  if (local.get("chttpd_auth", "secret").empty()) {
    local.set("chttpd_auth", "secret", crypto::random_hex(32));
    dirty = true;
  }
  // The cluster secret nodes prove to each other (docs/security.md), from one source: the
  // operator's [cluster] secret, else SETTEE_CLUSTER_SECRET, else one generated on the first start
  // into local.ini (copy it to the other nodes). When one of the first two is set, local.ini holds
  // none (a copied local.ini secret was then one the node did not use).
  const char* env_secret = std::getenv("SETTEE_CLUSTER_SECRET");
  const bool given = (env_secret && *env_secret) || !operator_cfg.get("cluster", "secret").empty();
  if (given && !local.get("cluster", "secret").empty()) {
    local.erase("cluster", "secret");
    dirty = true;
  } else if (!given && local.get("cluster", "secret").empty()) {
    local.set("cluster", "secret", crypto::random_hex(32));
    dirty = true;
  }
  // Plain-text admins (CouchDB hashes them at start-up too): keep only the hash in local.ini.
  for (const config* source : {static_cast<const config*>(&local), &operator_cfg}) {
    auto it = source->sections().find("admins");
    if (it == source->sections().end()) continue;
    for (auto& [name, value] : it->second) {
      if (crypto::is_hashed(value)) continue;
      local.set("admins", name, crypto::hash(value));
      dirty = true;
    }
  }
  // SETTEE_ADMIN=name:password sets that admin's password at every start, an existing data dir's
  // too (README: the first `make run` may have generated one). Without it and without any admin,
  // a password is generated and printed once.
  const char* env = std::getenv("SETTEE_ADMIN");
  if (env && *env) {
    std::string e = env;
    size_t colon = e.find(':');
    std::string name = colon == std::string::npos ? "" : e.substr(0, colon);
    std::string password = colon == std::string::npos ? "" : e.substr(colon + 1);
    if (name.empty() || password.empty()) die("SETTEE_ADMIN must be name:password");
    if (!crypto::verify(password, local.get("admins", name))) {
      local.set("admins", name, crypto::hash(password));
      dirty = true;
      std::printf("settee: server admin '%s' set from SETTEE_ADMIN (its PBKDF2 hash is in %s)\n", name.c_str(),
                  local_path.c_str());
      std::fflush(stdout);
    }
  }
  bool has_admin = local.sections().count("admins") || operator_cfg.sections().count("admins");
  if (!has_admin) {
    std::string name = "admin", password = crypto::random_hex(12);
    std::printf(
        "settee: created server admin '%s' with password '%s'\n"
        "        (shown once; only its PBKDF2 hash is stored in %s; SETTEE_ADMIN=name:password sets one)\n",
        name.c_str(), password.c_str(), local_path.c_str());
    std::fflush(stdout);
    local.set("admins", name, crypto::hash(password));
    dirty = true;
  }
  if (dirty) {
    if (auto st = local.save_file(local_path); !st) die(st.reason);
  }
  cfg.merge(local);
  if (const char* env = std::getenv("SETTEE_CLUSTER_SECRET"); env && *env) cfg.set("cluster", "secret", env);
  cfg.merge(operator_cfg);
  // Operator admins given in plain text are used through their hashes.
  auto it = local.sections().find("admins");
  if (it != local.sections().end())
    for (auto& [name, value] : it->second)
      if (!crypto::is_hashed(cfg.get("admins", name))) cfg.set("admins", name, value);
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

config defaults() {
  config c;
  c.set("chttpd", "bind_address", "127.0.0.1");
  c.set("chttpd", "port", "5984");
  c.set("chttpd", "server_threads", "128");
  c.set("chttpd", "max_http_request_size", std::to_string(64u << 20));
  c.set("couchdb", "max_document_id_length", "infinity");
  c.set("couchdb", "max_attachment_size", std::to_string(1u << 30));
  c.set("couchdb", "max_document_size", "8000000");
  c.set("database_compaction", "docs_per_step", "1000");
  c.set("attachments", "compression_level", "8");
  c.set("attachments", "compressible_types", "text/*, application/javascript, application/json, application/xml");
  c.set("couchdb", "max_dbs_open", "500");
  c.set("couchdb", "map_size_mb", "65536");
  c.set("couchdb", "request_timeout_ms", "60000");
  c.set("couchdb", "batch_max_docs", "5000");
  c.set("couchdb", "batch_max_bytes", std::to_string(32u << 20));
  c.set("couchdb", "bulk_docs_max", "100000");
  c.set("cluster", "q", "2");
  c.set("log", "level", "info");
  c.set("log", "access", "false");
  c.set("uuids", "max_count", "1000");
  c.set("node", "name", "settee@127.0.0.1");
  return c;
}

// The configuration: defaults, the data directory's local.ini, the operator's file (admins hashed
// in it), then the command line. Creates the data directory.
config load_config(const cli& args) {
  config operator_cfg;
  if (!args.config_file.empty()) {
    auto c = config::load_file(args.config_file);
    if (!c) die(c.error().reason);
    operator_cfg = std::move(*c);
  }
  if (::mkdir(args.data_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    die("cannot create data directory " + args.data_dir + ": " + std::strerror(errno));
  }
  std::string local_path = args.data_dir + "/local.ini";
  config local;
  if (auto c = config::load_file(local_path)) local = std::move(*c);
  config cfg = defaults();
  if (!args.config_file.empty()) hash_operator_admins(args.config_file, operator_cfg);
  prepare_local_config(local_path, local, cfg, operator_cfg);
  if (!args.bind.empty()) cfg.set("chttpd", "bind_address", args.bind);
  if (args.port >= 0) cfg.set("chttpd", "port", std::to_string(args.port));
  log::level lvl;
  if (log::parse_level(cfg.get("log", "level"), lvl))
    log::set_level(lvl);
  else
    log::warning("unknown [log] level '" + cfg.get("log", "level") + "', using info");
  return cfg;
}

// Signals are taken by one thread with sigwait, so no handler runs inside library code.
sigset_t block_signals() {
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return sigs;
}

// Tests of whole processes set the time through a file (node/clock.hpp); everything else: the system.
std::unique_ptr<settee::clock> make_clock() {
  if (const char* f = std::getenv("SETTEE_CLOCK_FILE"); f && *f) return std::make_unique<file_clock>(f);
  return std::make_unique<system_clock>();
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
  http.access_log = set.access_log;
  http.body_timeout_s = set.body_timeout_s;
  http.idle_release_s = static_cast<int>(set.idle_release_s);
  http.keep_alive_timeout_s = set.keep_alive_timeout_s;
  return http;
}

// Cluster RPC's options from the settings (dies on bad seeds or a short secret).
rpc_options cluster_options(const settings& set, const settee::clock& clk, int http_port) {
  auto seeds = parse_seeds(set.seeds);
  if (!seeds) die(seeds.error().reason);
  rpc_options ro;
  ro.bind = set.rpc_bind;
  ro.port = *set.rpc_port;
  ro.advertised_host = ro.bind == "0.0.0.0" ? "127.0.0.1" : ro.bind;
  ro.http_port = static_cast<uint16_t>(http_port);
  ro.release = SETTEE_VERSION;
  ro.features = {"changes",           "clustered-seq-v1", "selector",      typed_feature,       db_updates_feature,
                 attachments_feature, tasks_feature,      reshard_feature, node_status_feature, members_feature};
  ro.seeds = std::move(*seeds);
  ro.secret = set.cluster_secret;
  if (ro.secret.size() < peer_auth::min_secret_bytes) {
    die("[cluster] secret must be at least " + std::to_string(peer_auth::min_secret_bytes) + " bytes");
  }
  ro.accept_legacy_peers = set.accept_legacy_peers;
  // TLS between hosts: on by default unless RPC listens on loopback only (docs/security.md).
  ro.tls =
      set.tls == settings::tls_mode::on || (set.tls == settings::tls_mode::automatic && !is_loopback_host(ro.bind));
  if (ro.tls) {
    auto material = make_tls_material(ro.secret, clk.now_s());
    if (!material) die(material.error().reason);
    ro.tls_ca_pem = material->ca_cert_pem;
    ro.tls_cert_pem = material->node_cert_pem;
    ro.tls_key_pem = material->node_key_pem;
  }
  if (ro.accept_legacy_peers) {
    log::warning(
        "[cluster] accept_legacy_peers = true: nodes that cannot prove the cluster secret may call "
        "this node (only for an upgrade from or downgrade to release 0.2 or older)");
  }
  ro.call_timeout_ms = static_cast<int>(set.request_timeout.count());
  return ro;
}

// [prometheus] additional_port (CouchDB's): GET /_node/_local/_prometheus without credentials on
// a port of its own, for a scraper that should not hold an admin password. Null when off.
std::unique_ptr<http_server> metrics_front(node_services& node, const http_options& http, const settings& set) {
  if (!set.metrics_port) return nullptr;
  http_options m = http;
  m.metrics_only = true;
  m.threads = 2;
  m.access_log = false;
  m.bind = set.metrics_bind;
  m.port = set.metrics_port_number;
  m.max_request_bytes = 64 << 10;
  auto server = std::make_unique<http_server>(node, m);
  if (auto st = server->bind(); !st) die("[prometheus] port: " + st.reason);
  log::info("metrics listening on http://" + m.bind + ":" + std::to_string(server->port()) +
            "/_node/_local/_prometheus (no credentials)");
  return server;
}

}  // namespace

int main(int argc, char** argv) {
  // Large blocks (LMDB allocates 2.5 MB of page lists per open shard) come from mmap and go back to
  // the system when freed. glibc's default raises this threshold after the first such free, and
  // then serves them from the heap, zeroed page by page: 500 open shards held 1.6 GB resident that
  // stayed after they closed (docs/architecture.md section 24). Freed heap tops are given back by
  // explicit trims (database deleted, idle workers gone, a crowd of clients gone, once a minute)
  // rather than on every free: with the 128 KB default a busy node shrank and regrew its arenas
  // constantly, each shrink a madvise and a TLB shootdown on every core (~5% of a clustered GET).
  ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  ::mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
  ::mallopt(M_ARENA_MAX, 4);
  if (argc >= 2 && std::string(argv[1]) == "time-seq") return run_time_seq_tool(argc - 2, argv + 2);
  cli args;
  if (int rc = parse_cli(argc, argv, args); rc >= 0) return rc;

  config cfg = load_config(args);

  sigset_t sigs = block_signals();
  std::unique_ptr<settee::clock> clock_impl = make_clock();
  const settee::clock& clk = *clock_impl;
  caf::actor_system_config caf_cfg;
  caf_cfg.set("scheduler.policy", caf::atom("sharing"));  // 2-4x lower latency on 2 cores (stack.md)
  // Shard writers run here (architecture.md section 1): a commit's fsync holds a thread, so 16 of them
  // let 16 shards commit at once; idle threads sleep (sharing policy: no work stealing, no spinning).
  constexpr size_t scheduler_threads = 16;
  caf_cfg.set("scheduler.max-threads", scheduler_threads);
  caf_cfg.set("logger.verbosity", caf::atom("quiet"));
  caf::actor_system sys{caf_cfg};

  auto read = read_settings(cfg);
  if (!read) die(read.error().reason);
  const settings& set = *read;
  store_options store_opts;
  store_opts.node_name = set.node_name;
  log::set_context(&clk, store_opts.node_name);
  log::install_crash_handler();
  store_opts.map_size_bytes = set.map_size_bytes;
  store_opts.time_seq_min_time = set.time_seq_min_time_s.value_or(time_seq::default_min_time);
  store_opts.time_seq_enabled = set.time_seq_enabled;
  replica_limits limits;
  limits.batch_max_docs = set.batch_max_docs;
  limits.batch_max_bytes = set.batch_max_bytes;
  const auto timeout = set.request_timeout;
  {
    change_notifier notifier;
    shard_registry shards(sys, clk, store_opts, limits, set.max_dbs_open, &notifier);
    db_catalog catalog(shards, clk, args.data_dir, store_opts.node_name, timeout);
    if (auto st = catalog.load(); !st) die(st.reason);
    for (const char* system_db : {"_users", "_replicator"}) {
      if (auto st = catalog.create_system(system_db); !st) die(st.reason);
    }
    // `updated` rows of _db_updates: every commit to a database's copy marks it (architecture 28).
    update_log_options update_opts;
    update_opts.gather = set.db_updates_gather;
    update_opts.min_interval = set.db_updates_min_interval;
    update_log updates(shards, catalog, clk, args.data_dir, update_opts);
    if (auto st = updates.open(); !st) die(st.reason);
    // [db_updates] enabled = false: no bookkeeping at all (only to measure what it costs).
    if (set.db_updates_enabled) notifier.set_observer([&updates](const std::string& key) { updates.mark(key); });
    coordinator coord(catalog, shards, timeout, store_opts.node_name);
    authenticator auth(cfg, clk, coord);
    node_services node{cfg, clk, coord, auth, store_opts.node_name, set.server_uuid};
    apply_limits(node, set);
    node.notifier = &notifier;
    node.updates = &updates;
    task_list tasks;
    // Long-running work, one runner (actors/jobs.hpp): a worker per lane slot.
    job_options job_opts;
    job_opts.lanes = {{compactor::lane, 1}, {resharder::lane, 1}, {shard_syncer::lane, 1}, {update_log::lane, 1}};
    job_opts.backoff_base = set.jobs_retry_base;
    job_opts.backoff_cap = set.jobs_retry_cap;
    job_runner jobs(tasks, clk, store_opts.node_name, job_opts);
    job_store job_states([&catalog] { return catalog.catalog_file(); });
    compactor compaction(jobs, &job_states, set.compaction_docs_per_step);
    node.tasks = &tasks;
    node.compaction = &compaction;
    resharder reshard(coord, shards, jobs, job_states, clk, store_opts.node_name, args.data_dir);
    node.reshard = &reshard;
    auto self_member = std::make_shared<local_member>(
        store_opts.node_name,
        local_services{&coord, &reshard, &tasks, &compaction, [&node] { return read_node_status(node); }});
    node.shards = &shards;
    node.on_idle = [&sys] { release_scheduler_caches(sys, scheduler_threads, std::chrono::milliseconds(100)); };
    set_max_json_depth(set.max_json_depth);

    http_options http = front_options(set, args.data_dir);
    http.max_attachment_bytes = node.attachment_policy.max_bytes;
    node.spool_dir = node.data_dir = args.data_dir;
    node.started_s = clk.now_s();
    node.max_request_bytes = http.max_request_bytes;
    // Cluster RPC: on when [cluster] rpc_port is set (0 = any free port).
    membership members(store_opts.node_name);
    std::unique_ptr<rpc_node> rpc;
    std::unique_ptr<nodes_db> nodes;
    if (set.rpc_port) {
      rpc_options ro = cluster_options(set, clk, http.port);
      ro.find_shard = [&catalog, &coord](const std::string& db, const std::string& range) -> result<shard_handle> {
        auto m = catalog.lookup_internal(db);
        if (!m) return m.error();
        return coord.own_copy(*m, range);
      };
      ro.on_applied = [&catalog](const std::string& db) {
        if (db == "_dbs") catalog.mark_stale();
      };
      ro.read_updates = [&updates](const std::string& uuid, uint64_t seq, size_t limit) -> result<log_page> {
        auto log = updates.record();
        if (!log) return log.error();
        return read_update_log(*log, uuid, seq, limit);
      };
      ro.self = self_member.get();
      ro.read_doc = [&node](local_copy& copy, const doc_request& req) {
        return serve_legacy_read(copy, req, node.max_document_id_length);
      };
      rpc = std::make_unique<rpc_node>(members, ro);
      if (auto st = rpc->start(); !st) die(st.reason);
      node.remote = rpc.get();
      coord.set_remote(rpc.get());
      // A split's new shard map reaches the other nodes at once, not at the next sweep: their
      // coordinators retry the writes a sealed parent refused until they see it.
      reshard.set_after_switch([&coord, &rpc_ref = *rpc, &members, &set] {
        for (auto& row : sync_database(coord, rpc_ref, members, coord.catalog().dbs_meta(), set.catalog_push_timeout))
          if (!row.st) log::warning("pushing _dbs to " + row.node + " after a split failed: " + row.st.reason);
      });
      // `_nodes`: this node and the seeds are members; the database spreads them to every node.
      nodes = std::make_unique<nodes_db>(shards, clk, args.data_dir, members, *rpc, timeout);
      catalog.add_internal("_nodes", [&nodes] { return nodes->meta(); });
      for (const auto& s : ro.seeds) {
        if (auto st = nodes->add(s, true); !st) die("cannot record seed " + s.name + ": " + st.reason);
      }
      if (auto st = nodes->add({store_opts.node_name, ro.advertised_host, rpc->port()}); !st) die(st.reason);
      if (auto st = nodes->reload(); !st) die(st.reason);  // members removed earlier stay removed
      if (set.sync_interval.count() > 0) {
        jobs.submit("sync", shard_syncer::lane,
                    std::make_shared<shard_syncer>(coord, *rpc, members, set.sync_interval, set.push_timeout,
                                                   nodes.get(), &tasks));
      }
      log::info("cluster RPC listening on " + ro.bind + ":" + std::to_string(rpc->port()) +
                (ro.tls ? " (TLS)" : " (plain TCP)"));
    }
    rpc_cluster_members cluster(self_member, coord, members, rpc.get(), nodes.get(), &tasks, timeout);
    node.cluster = &cluster;
    reshard.set_members(&cluster);
    raise_fd_limit(65536);
    http_server server(node, http);
    if (auto st = server.bind(); !st) die(st.reason);
    // [prometheus] additional_port (CouchDB's): GET /_node/_local/_prometheus without credentials on
    // a port of its own, for a scraper that should not hold an admin password.
    std::unique_ptr<http_server> metrics_server = metrics_front(node, http, set);
    std::thread metrics_thread;
    if (metrics_server) metrics_thread = std::thread([&] { metrics_server->run(); });
    if (auto st = reshard.start(); !st) die("cannot resume reshard jobs: " + st.reason);
    if (auto st = compaction.resume(coord); !st) die("cannot resume compactions: " + st.reason);
    if (set.db_updates_enabled) updates.start(jobs);  // after the last die(): exit() must not race its steps

    std::thread signal_thread([&] {
      int sig = 0;
      sigwait(&sigs, &sig);
      log::info(std::string("received ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") + ", shutting down");
      server.stop();
    });
    std::printf("settee %s listening on http://%s:%d (data: %s)\n", SETTEE_VERSION, http.bind.c_str(), server.port(),
                args.data_dir.c_str());
    std::fflush(stdout);
    server.run();
    if (signal_thread.joinable()) {
      pthread_kill(signal_thread.native_handle(), SIGTERM);  // wake it if the server stopped by itself
      signal_thread.join();
    }
    if (metrics_server) {
      metrics_server->stop();
      metrics_thread.join();
    }
    log::info("http server stopped");
    reshard.stop();  // its current copy step commits whole; before the RPC it pushes _dbs with
    jobs.stop();     // every job's current step commits whole (compactions save where they were)
    if (rpc) rpc->stop();
    shards.close_all();              // queued writes finish, and mark their databases
    updates.stop();                  // records them, syncs the record and notes the clean stop
    shards.close_all();              // the record itself
    notifier.set_observer(nullptr);  // no commit is left to observe
    log::info("all shards closed");
  }
  log::set_context(nullptr, store_opts.node_name);  // the clock goes with main's scope
  return 0;
}
