// settee: one node of a clustered, CouchDB-compatible database.
//   settee --data-dir DIR [--bind ADDR] [--port N] [--config FILE]
// Configuration layers, lowest first: built-in defaults, DIR/local.ini (written by settee itself:
// server uuid, cookie secret, hashed admins), then --config FILE (the operator's), then flags.
#include <malloc.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "app/node_process.hpp"
#include "app/time_seq_tool.hpp"
#include "node/clock.hpp"
#include "node/config.hpp"
#include "node/crypto.hpp"
#include "node/dir_lock.hpp"
#include "node/files.hpp"
#include "node/jwt.hpp"
#include "node/live_config.hpp"
#include "node/log.hpp"
#include "node/settings.hpp"
#include "wire/cors.hpp"

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
    updated = config::edited(updated, "admins", name, &hash);
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
void prepare_local_config(const std::string& local_path, config& local, config& operator_cfg) {
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
  for (const config* source : {static_cast<const config*>(&local), static_cast<const config*>(&operator_cfg)}) {
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
  // Operator admins given in plain text (a file settee could not rewrite) are used through their hashes.
  if (auto it = local.sections().find("admins"); it != local.sections().end())
    for (auto& [name, value] : it->second)
      if (!crypto::is_hashed(operator_cfg.get("admins", name, value))) operator_cfg.set("admins", name, value);
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

// The configuration's layers: defaults, the data directory's local.ini, the environment, the
// operator's file (admins hashed in it), then the command line (node/live_config.hpp).
std::vector<live_config::layer> load_config(const cli& args, std::string& local_path) {
  config operator_cfg;
  if (!args.config_file.empty()) {
    auto c = config::load_file(args.config_file);
    if (!c) die(c.error().reason);
    operator_cfg = std::move(*c);
  }
  local_path = args.data_dir + "/local.ini";
  config local;
  if (auto c = config::load_file(local_path)) local = std::move(*c);
  if (!args.config_file.empty()) hash_operator_admins(args.config_file, operator_cfg);
  prepare_local_config(local_path, local, operator_cfg);
  config environment, command_line;
  if (const char* env = std::getenv("SETTEE_CLUSTER_SECRET"); env && *env) environment.set("cluster", "secret", env);
  if (!args.bind.empty()) command_line.set("chttpd", "bind_address", args.bind);
  if (args.port >= 0) command_line.set("chttpd", "port", std::to_string(args.port));
  std::vector<live_config::layer> layers;
  layers.push_back({"defaults", "", defaults()});
  layers.push_back({"local.ini", local_path, std::move(local)});
  layers.push_back({"the environment", "", std::move(environment)});
  if (!args.config_file.empty()) layers.push_back({args.config_file, args.config_file, std::move(operator_cfg)});
  layers.push_back({"the command line", "", std::move(command_line)});
  return layers;
}

// [log] level, at start and whenever it changes.
void apply_log_level(const config& cfg) {
  log::level lvl;
  if (log::parse_level(cfg.get("log", "level"), lvl))
    log::set_level(lvl);
  else
    log::warning("unknown [log] level '" + cfg.get("log", "level") + "', using info");
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
  // The data directory, and this process's hold on it before anything in it is read or written.
  if (::mkdir(args.data_dir.c_str(), 0755) != 0 && errno != EEXIST)
    die("cannot create data directory " + args.data_dir + ": " + std::strerror(errno));
  auto held = dir_lock::acquire(args.data_dir);
  if (!held) die(held.error().reason);
  std::string local_path;
  auto layers = load_config(args, local_path);
  live_config cfg(std::move(layers), local_path, [](const config& c) {
    auto s = read_settings(c);
    if (!s) return s.error();
    auto cors = cors_policy::read(c);
    if (!cors) return cors.error();
    return jwt::check_config(c);
  });
  apply_log_level(*cfg.current());
  // Read from files at start: what a change over HTTP would be refused for is said here (CORS
  // then stays off, such a JWT key matches no token), and the node starts all the same.
  if (auto cors = cors_policy::read(*cfg.current()); !cors) log::warning(cors.error().reason + ": CORS is off");
  if (auto st = jwt::check_config(*cfg.current()); !st) log::warning(st.reason);
  cfg.watch([](const config& c, const std::string& sec, const std::string&) {
    if (sec == "log" || sec.empty()) apply_log_level(c);
  });
  sigset_t sigs = block_signals();
  std::unique_ptr<settee::clock> clk = make_clock();
  auto set = read_settings(*cfg.current());
  if (!set) die(set.error().reason);
  log::set_context(clk.get(), set->node_name);
  log::install_crash_handler();
  {
    node_process node(cfg, std::move(*set), *clk, args.data_dir);
    if (auto st = node.start(); !st) die(st.reason);
    node.serve(sigs);
  }
  log::set_context(nullptr, "");  // the clock goes with main's scope
  return 0;
}
