// What a node tells its operators: GET /_node/{node}/_prometheus (Prometheus text), /_stats (CouchDB's
// shape, whole or one group or metric) and /_system (the process). Counters and histograms come from
// node/metrics.hpp; everything else is read at the request: the process (/proc), the data
// directory's filesystem and shard files, open shards, members, reshard jobs.
//
// Cardinality stays bounded whatever the number of databases: per-database series exist only for
// the [prometheus] per_database_max largest databases of at least per_database_min_bytes on this
// node (`per_database = all` lifts the bounds, `none` drops them); every other figure is one series
// per node, peer, state or running job.
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "actors/js_pool.hpp"
#include "actors/resharder.hpp"
#include "actors/shard_map.hpp"
#include "actors/shard_registry.hpp"
#include "http/handlers.hpp"
#include "node/metrics.hpp"
#include "replicator/replications.hpp"
#include "storage/time_seq.hpp"

namespace settee {

namespace {

constexpr const char* prometheus_type = "text/plain; version=0.0.4; charset=utf-8";

// This process as /proc/self tells it (Prometheus' standard process_* figures).
struct process_reading {
  double cpu_s = 0, start_time_s = 0;
  uint64_t rss_bytes = 0, virtual_bytes = 0, threads = 0, open_fds = 0, max_fds = 0;
};

process_reading read_process() {
  process_reading p;
  std::ifstream stat_file("/proc/self/stat");
  std::string stat((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren != std::string::npos) {
    std::istringstream in(stat.substr(paren + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(in), std::istream_iterator<std::string>()};
    // f[0] is field 3 (state): utime 14, stime 15, num_threads 20, starttime 22, vsize 23, rss 24.
    auto field = [&](size_t n) { return n - 3 < f.size() ? std::strtoull(f[n - 3].c_str(), nullptr, 10) : 0ull; };
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    p.cpu_s = static_cast<double>(field(14) + field(15)) / ticks;
    p.threads = field(20);
    p.virtual_bytes = field(23);
    p.rss_bytes = field(24) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    std::ifstream proc_stat("/proc/stat");
    for (std::string line; std::getline(proc_stat, line);)
      if (line.rfind("btime ", 0) == 0) p.start_time_s = std::stod(line.substr(6)) + field(22) / ticks;
  }
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
    ++p.open_fds;
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) p.max_fds = lim.rlim_cur;
  return p;
}

// The shard files under the data directory, by database: shards/<range>/<db>.<suffix> (a name with
// '/' nests further), their "-lock" files left out.
std::map<std::string, uint64_t> database_file_bytes(const std::string& data_dir) {
  std::map<std::string, uint64_t> out;
  const std::filesystem::path root = std::filesystem::path(data_dir) / "shards";
  std::error_code ec;
  for (auto ranges = std::filesystem::directory_iterator(root, ec);
       !ec && ranges != std::filesystem::directory_iterator(); ranges.increment(ec)) {
    std::error_code ec2;
    for (auto it = std::filesystem::recursive_directory_iterator(ranges->path(), ec2);
         !ec2 && it != std::filesystem::recursive_directory_iterator(); it.increment(ec2)) {
      std::error_code ec3;
      if (!it->is_regular_file(ec3)) continue;
      std::string rel = std::filesystem::relative(it->path(), ranges->path(), ec3).string();
      size_t dot = rel.rfind('.');
      if (ec3 || dot == std::string::npos || (rel.size() >= 5 && rel.compare(rel.size() - 5, 5, "-lock") == 0))
        continue;
      out[rel.substr(0, dot)] += it->file_size(ec3);
    }
  }
  return out;
}

// The databases that get series of their own ([prometheus] per_database, docs/operations.md).
std::set<std::string> detailed_databases(const config& cfg, const std::map<std::string, uint64_t>& bytes) {
  const std::string mode = cfg.get("prometheus", "per_database", "auto");
  std::set<std::string> out;
  if (mode == "none") return out;
  std::vector<std::pair<uint64_t, std::string>> by_size;
  for (auto& [db, b] : bytes) by_size.push_back({b, db});
  if (mode == "all") {
    for (auto& [b, db] : by_size) out.insert(db);
    return out;
  }
  const auto min_bytes = static_cast<uint64_t>(cfg.get_int("prometheus", "per_database_min_bytes", int64_t{1} << 30));
  const auto most = static_cast<size_t>(std::max<int64_t>(0, cfg.get_int("prometheus", "per_database_max", 100)));
  std::sort(by_size.rbegin(), by_size.rend());
  for (auto& [b, db] : by_size)
    if (b >= min_bytes && out.size() < most) out.insert(db);
  return out;
}

// "shards/<range>/<db>.<suffix>" (CouchDB's shard name) of a shard file path, "" for a system
// database's file (_dbs, _nodes).
std::string shard_name(const std::string& path) {
  for (size_t at = path.find("/shards/"); at != std::string::npos; at = path.find("/shards/", at + 1)) {
    const size_t r = at + 8;  // the range: 8 hex digits, '-', 8 hex digits, then '/'
    if (path.size() > r + 18 && path[r + 8] == '-' && path[r + 17] == '/' && shard_range::parse(path.substr(r, 17))) {
      return path.substr(at + 1);
    }
  }
  return "";
}

// The database of a shard name ("shards/<range>/<db>.<suffix>").
std::string db_of_shard(const std::string& name) {
  std::string rest = name.substr(7 + 18);
  return rest.substr(0, rest.rfind('.'));
}

metrics::sample gauge(std::string name, std::string help, double v, bool prefixed = true) {
  return {std::move(name), std::move(help), "gauge", prefixed, {{{}, v}}};
}

std::vector<metrics::sample> process_samples(const process_reading& p) {
  return {
      {"process_cpu_seconds_total", "User and system CPU time spent in seconds.", "counter", false, {{{}, p.cpu_s}}},
      gauge("process_resident_memory_bytes", "Resident memory size in bytes.", double(p.rss_bytes), false),
      gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", double(p.virtual_bytes), false),
      gauge("process_open_fds", "Number of open file descriptors.", double(p.open_fds), false),
      gauge("process_max_fds", "Maximum number of open file descriptors.", double(p.max_fds), false),
      gauge("process_threads", "Number of OS threads in the process.", double(p.threads), false),
      gauge("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", p.start_time_s,
            false)};
}

// The registry's plain counters, each once: its Prometheus name (prefixed settee_), where CouchDB's
// /_stats has it (a JSON pointer: couchdb.*, and for the query engine of issue 53 item 6 mango.*,
// couchdb.mrview.*, couchdb.query_server.*, couch_replicator.*) and what it counts.
struct plain_counter {
  std::atomic<uint64_t> metrics::registry::*field;
  const char* prometheus;
  const char* stats;
  const char* help;
};
using reg = metrics::registry;
const plain_counter plain_counters[] = {
    {&reg::doc_reads, "document_reads_total", "/couchdb/database_reads",
     "Documents read through this node (each row of a bulk read)."},
    {&reg::doc_writes, "document_writes_total", "/couchdb/database_writes",
     "Documents written through this node (each row of _bulk_docs)."},
    {&reg::auth_cache_hits, "auth_cache_hits_total", "/couchdb/auth_cache_hits",
     "Basic credentials answered from memory."},
    {&reg::auth_cache_misses, "auth_cache_misses_total", "/couchdb/auth_cache_misses",
     "Basic credentials checked by a key derivation."},
    {&reg::mango_queries, "mango_queries_total", "/mango/queries", "_find requests answered."},
    {&reg::mango_unindexed_queries, "mango_unindexed_queries_total", "/mango/unindexed_queries",
     "_find requests answered from _all_docs (no index could serve them)."},
    {&reg::mango_invalid_index, "mango_query_invalid_index_total", "/mango/query_invalid_index",
     "_find requests whose use_index was not used."},
    {&reg::mango_too_many_docs_scanned, "mango_too_many_docs_scanned_total", "/mango/too_many_docs_scanned",
     "_find requests that examined many documents per result."},
    {&reg::mango_docs_examined, "mango_docs_examined_total", "/mango/docs_examined",
     "Documents _find read and matched."},
    {&reg::mango_keys_examined, "mango_keys_examined_total", "/mango/keys_examined", "Index rows _find read."},
    {&reg::mango_results_returned, "mango_results_returned_total", "/mango/results_returned",
     "Documents _find answered."},
    {&reg::view_queries, "view_queries_total", "/couchdb/mrview/queries", "View queries answered."},
    {&reg::view_docs_mapped, "view_docs_mapped_total", "/couchdb/mrview/map_doc",
     "Documents the map functions ran on."},
    {&reg::view_index_updates, "view_index_updates_total", "/couchdb/mrview/index_updates",
     "View index updates finished (one copy brought up to date)."},
    {&reg::js_calls, "js_calls_total", "/couchdb/query_server/calls", "Exchanges with the JavaScript workers."},
    {&reg::js_timeouts, "js_timeouts_total", "/couchdb/query_server/timeouts",
     "JavaScript calls stopped at [couchdb] os_process_timeout."},
    {&reg::js_worker_starts, "js_worker_starts_total", "/couchdb/query_server/process_starts",
     "JavaScript workers started."},
    {&reg::js_worker_exits, "js_worker_exits_total", "/couchdb/query_server/process_exits",
     "JavaScript workers stopped (idle, failed, or over their limits)."},
    {&reg::replication_docs_written, "replication_docs_written_total", "/couch_replicator/docs_written",
     "Documents replications run by this node wrote."},
    {&reg::replication_doc_write_failures, "replication_doc_write_failures_total",
     "/couch_replicator/doc_write_failures", "Documents targets refused to replications run by this node."},
    {&reg::replication_checkpoints, "replication_checkpoints_total", "/couch_replicator/checkpoints/success",
     "Replication checkpoints written."},
    {&reg::replication_checkpoint_failures, "replication_checkpoint_failures_total",
     "/couch_replicator/checkpoints/failure", "Replication checkpoints that failed."},
    {&reg::replication_failures, "replication_failures_total", "/couch_replicator/failures",
     "Replication steps that failed (retried, or the replication failed)."},
    {&reg::internal_replication_docs, "internal_replication_docs_total", "/mem3/internal_replication/docs",
     "Documents this node's copies sent to the other copies of their ranges."}};

// The plain counters, and gauges of the JavaScript workers, the view indexers running and the
// replications by state (bounded labels).
void counter_samples(ctx& c, std::vector<metrics::sample>& now) {
  const auto& m = metrics::node();
  for (const plain_counter& p : plain_counters)
    now.push_back({p.prometheus, p.help, "counter", true, {{{}, double((m.*p.field).load())}}});
  now.push_back(gauge("js_workers", "JavaScript workers running.", double(c.node.js ? c.node.js->workers() : 0)));
  now.push_back(
      gauge("js_workers_busy", "JavaScript workers running a call now.", double(c.node.js ? c.node.js->busy() : 0)));
  now.push_back(gauge("http_requests_running", "HTTP requests whose handler runs now.",
                      double(metrics::node().requests_running.load())));
  double indexers = 0;
  if (c.node.tasks)
    for (const json& t : c.node.tasks->all()) indexers += t.value("type", "") == "indexer" ? 1 : 0;
  now.push_back(gauge("view_indexers_running", "View index updates running now.", indexers));
  metrics::sample jobs{"replication_jobs", "Replications on this node, by state.", "gauge", true, {}};
  if (c.node.replicator)
    for (auto& [state, n] : c.node.replicator->states()) jobs.values.push_back({{{"state", state}}, double(n)});
  now.push_back(std::move(jobs));
}

std::string prometheus(ctx& c) {
  using metrics::sample;
  const auto& m = metrics::node();
  std::vector<sample> now = process_samples(read_process());
  now.push_back(
      gauge("uptime_seconds", "Seconds since this node started.", double(c.node.clk.now_s() - c.node.started_s)));
  now.push_back({"build_info", "The running build (always 1).", "gauge", true, {{{{"version", SETTEE_VERSION}}, 1.0}}});
  now.push_back(
      gauge("open_shards", "Shard files open on this node.", double(c.node.shards ? c.node.shards->open_count() : 0)));
  counter_samples(c, now);
  now.push_back(
      gauge("live_feeds", "Longpoll, continuous and eventsource feeds open now.", double(c.node.live_feeds.load())));

  // The disk: the data directory's filesystem, and the shard files on it.
  struct statvfs fs {};
  if (::statvfs(c.node.data_dir.c_str(), &fs) == 0) {
    now.push_back(gauge("data_filesystem_size_bytes", "Size of the filesystem holding the data directory.",
                        double(fs.f_blocks) * double(fs.f_frsize)));
    now.push_back(gauge("data_filesystem_free_bytes", "Bytes free for settee on the data directory's filesystem.",
                        double(fs.f_bavail) * double(fs.f_frsize)));
  }
  auto& catalog = c.node.coord.catalog();
  auto names = catalog.names();
  const std::set<std::string> live(names.begin(), names.end());
  const auto bytes = database_file_bytes(c.node.data_dir);
  const auto detailed = detailed_databases(*c.node.cfg.current(), bytes);
  uint64_t total_bytes = 0;
  for (auto& [db, b] : bytes) total_bytes += b;
  now.push_back(gauge("databases", "Databases in the cluster.", double(names.size())));
  now.push_back(gauge("database_files_bytes", "Bytes of every shard file on this node.", double(total_bytes)));
  now.push_back(gauge("databases_detailed", "Databases with series of their own ([prometheus] per_database).",
                      double(detailed.size())));
  sample db_bytes{
      "database_file_bytes", "Bytes of this node's shard files, by database (the largest only).", "gauge", true, {}};
  for (const std::string& db : detailed) db_bytes.values.push_back({{{"db", db}}, double(bytes.at(db))});
  now.push_back(std::move(db_bytes));

  sample members{"cluster_member_connected", "Cluster members, 1 when connected.", "gauge", true, {}};
  std::set<std::string> peers;
  for (const std::string& n : c.node.cluster->all()) {
    members.values.push_back({{{"node", n}}, c.node.cluster->connected(n) ? 1.0 : 0.0});
    if (n != c.node.node_name) peers.insert(n);
  }
  now.push_back(std::move(members));
  if (c.node.reshard) {
    sample jobs{"reshard_jobs", "Reshard jobs on this node, by state.", "gauge", true, {}};
    sample progress{"reshard_job_changes_copied", "Parent seq a running job's copies hold.", "gauge", true, {}};
    std::map<std::string, double> by_state{{"new", 0}, {"running", 0}, {"stopped", 0}, {"failed", 0}, {"completed", 0}};
    for (const split_job& j : c.node.reshard->jobs()) {
      by_state[j.job_state] += 1;
      if (j.job_state == "running") progress.values.push_back({{{"job", j.id}, {"type", j.type}}, double(j.copied_to)});
    }
    for (auto& [state, n] : by_state) jobs.values.push_back({{{"state", state}}, n});
    now.push_back(std::move(jobs));
    now.push_back(std::move(progress));
  }
  // Internal replication: changes of this node's copies that a peer's copy had not confirmed at
  // the last push (a database deleted since is left out): by peer always, by database when detailed.
  sample by_peer{"internal_replication_peer_pending_changes",
                 "Changes of this node's copies a peer's copies had not confirmed at the last push, by peer.",
                 "gauge",
                 true,
                 {}};
  sample lag{"internal_replication_pending_changes",
             "Changes of this node's copy a peer's copy had not confirmed at the last push, by db, range, peer.",
             "gauge",
             true,
             {}};
  std::map<std::string, double> peer_sum;
  for (const std::string& p : peers) peer_sum[p] = 0;
  for (auto& [k, pending] : metrics::node().replication.read()) {
    auto& [db, range, peer] = k;
    if (db[0] != '_' && !live.count(db)) continue;
    peer_sum[peer] += double(pending);
    if (detailed.count(db)) lag.values.push_back({{{"db", db}, {"range", range}, {"peer", peer}}, double(pending)});
  }
  for (auto& [peer, n] : peer_sum) by_peer.values.push_back({{{"peer", peer}}, n});
  now.push_back(std::move(by_peer));
  now.push_back(std::move(lag));
  // Time-seq and documents of the detailed databases' open shards: the bins in use, and the changes
  // in the newest one (the recent write rate at the bins' resolution). GET /db/_time_seq has every bin.
  sample bins{"time_seq_bins", "Time-seq bins in use, by shard.", "gauge", true, {}};
  sample newest{
      "time_seq_newest_bin_changes", "Changes counted in the newest time-seq bin, by shard.", "gauge", true, {}};
  sample docs{
      "database_docs", "Documents in this node's open copies, by database (the largest only).", "gauge", true, {}};
  if (c.node.shards && !detailed.empty()) {
    std::map<std::string, double> doc_count;
    c.node.shards->for_each_open([&](const std::string& path, const shard_store& store) {
      std::string name = shard_name(path);
      if (name.empty() || !detailed.count(db_of_shard(name))) return;
      shard_header h = store.header();
      auto counts = time_seq::histogram(h.time_seq, h.update_seq);
      std::map<std::string, std::string> labels{{"shard", name}};
      bins.values.push_back({labels, double(h.time_seq.bins.size())});
      newest.values.push_back({labels, counts.empty() ? 0.0 : double(counts.back().second)});
      doc_count[db_of_shard(name)] += double(h.doc_count);
    });
    for (auto& [db, n] : doc_count) docs.values.push_back({{{"db", db}}, n});
  }
  now.push_back(std::move(bins));
  now.push_back(std::move(newest));
  now.push_back(std::move(docs));
  return metrics::prometheus_text(m, now, peers);
}

// GET /_node/{node}/_system: CouchDB's answer describes the Erlang VM; settee's the process, its
// disk and its HTTP totals (docs/api.md).
json system_json(const node_status& s) {
  return json{{"version", s.release},
              {"memory", {{"rss", s.rss_bytes}}},
              {"threads", s.threads},
              {"open_files", s.open_files},
              {"uptime", s.uptime_s},
              {"live_feeds", s.live_feeds},
              {"feed_watches", s.feed_watches},
              {"disk", {{"size", s.fs_size_bytes}, {"free", s.fs_free_bytes}, {"database_files", s.db_files_bytes}}},
              {"requests", s.requests},
              {"server_errors", s.server_errors}};
}

// GET /_node/_local/_stats in CouchDB's shape ({"couchdb":{"httpd_request_methods":{"GET":{"value",
// "type","desc"}},...}}): CouchDB's main entries, with what settee measures alike.
json couch_stats(ctx& c) {
  auto& m = metrics::node();
  auto counters = [](const auto& ctr, const std::string& desc) {
    json out = json::object();
    for (auto& [k, v] : ctr.read()) out[k] = {{"value", v}, {"type", "counter"}, {"desc", desc}};
    return out;
  };
  auto count = [](uint64_t v, const std::string& desc, const char* type = "counter") {
    return json{{"value", v}, {"type", type}, {"desc", desc}};
  };
  // CouchDB's histogram value: n, min, max, mean, median, percentiles (estimated within the bucket
  // that holds them) and the buckets (upper bound, count in it).
  auto hist = [](const metrics::histogram& h, const std::string& unit, double scale, const std::string& desc) {
    auto r = h.read();
    json buckets = json::array();
    uint64_t before = 0;
    for (size_t i = 0; i < r.bounds.size(); ++i) {
      buckets.push_back(json::array({r.bounds[i] * scale, r.cumulative[i] - before}));
      before = r.cumulative[i];
    }
    buckets.push_back(json::array({"+Inf", r.count - before}));
    json percentile = json::array();
    for (auto [label, q] : {std::pair{50, 0.5}, {75, 0.75}, {90, 0.9}, {95, 0.95}, {99, 0.99}, {999, 0.999}})
      percentile.push_back(json::array({label, r.quantile(q) * scale}));
    return json{{"value",
                 {{"n", r.count},
                  {"min", r.min * scale},
                  {"max", r.max * scale},
                  {"arithmetic_mean", r.count ? r.sum * scale / double(r.count) : 0},
                  {"median", r.quantile(0.5) * scale},
                  {"percentile", percentile},
                  {"histogram", buckets}}},
                {"type", "histogram"},
                {"desc", desc + " (" + unit + ")"}};
  };
  const uint64_t requests = [&] {
    uint64_t n = 0;
    for (auto& [k, v] : m.requests_by_method.read()) n += v;
    return n;
  }();
  json out =
      json{{"couchdb",
            {{"httpd_request_methods", counters(m.requests_by_method, "number of HTTP requests by method")},
             {"httpd_status_codes", counters(m.requests_by_status, "number of HTTP responses by status code")},
             {"httpd",
              {{"requests", count(requests, "number of HTTP requests")},
               {"bulk_requests", count(m.bulk_requests.load(), "number of bulk requests")},
               {"clients_requesting_changes",
                count(c.node.live_feeds.load(), "number of clients for continuous _changes", "gauge")}}},
             {"request_time", hist(m.request_seconds, "milliseconds", 1000, "length of a request inside settee")},
             {"open_databases",
              count(c.node.shards ? c.node.shards->open_count() : 0, "number of open shard files", "gauge")},
             {"open_os_files", count(read_process().open_fds, "number of file descriptors settee has open", "gauge")},
             {"commits", hist(m.commit_seconds, "milliseconds", 1000, "shard group commits")},
             {"commit_size", hist(m.commit_ops, "operations", 1, "operations per shard group commit")},
             {"fsync_time", hist(m.fsync_seconds, "milliseconds", 1000, "LMDB commit with fsync")}}}};
  for (const plain_counter& p : plain_counters) out[json::json_pointer(p.stats)] = count((m.*p.field).load(), p.help);
  return out;
}

}  // namespace

node_status read_node_status(const node_services& node) {
  const process_reading p = read_process();
  const auto& m = metrics::node();
  node_status s;
  s.release = SETTEE_VERSION;
  s.uptime_s = node.clk.now_s() - node.started_s;
  s.rss_bytes = p.rss_bytes;
  s.threads = p.threads;
  s.open_files = p.open_fds;
  s.live_feeds = node.live_feeds.load();
  s.feed_watches = node.notifier ? node.notifier->watchers() : 0;
  struct statvfs fs {};
  if (::statvfs(node.data_dir.c_str(), &fs) == 0) {
    s.fs_size_bytes = uint64_t(fs.f_blocks) * fs.f_frsize;
    s.fs_free_bytes = uint64_t(fs.f_bavail) * fs.f_frsize;
  }
  for (auto& [db, b] : database_file_bytes(node.data_dir)) s.db_files_bytes += b;
  for (auto& [method, n] : m.requests_by_method.read()) s.requests += n;
  for (auto& [code, n] : m.requests_by_status.read())
    if (!code.empty() && code[0] == '5') s.server_errors += n;
  return s;
}

void handle_node_metrics(ctx& c) {
  const auto& p = c.path;
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  if (p[2] == "_system" && p.size() == 3) {
    if (p[1] == "_local" || p[1] == c.node.node_name) return c.reply(200, system_json(read_node_status(c.node)));
    // Another member's, asked of it (as CouchDB's /_node/{node}/_system).
    auto m = c.node.cluster->get(p[1]);
    auto other = m ? m->figures() : result<node_status>(status{errc::not_found, "no such node: " + p[1]});
    if (!other) return c.error(other.error().code, other.error().reason);
    return c.reply(200, system_json(*other));
  }
  if (p[2] == "_prometheus" && p.size() == 3) return c.reply_raw(200, prometheus(c), prometheus_type);
  if (p[2] == "_stats") {  // as couch_stats_httpd: a path below picks a group or one metric (null if none)
    json out = couch_stats(c);
    for (size_t i = 3; i < p.size() && !out.is_null(); ++i)
      out = out.is_object() && out.contains(p[i]) ? out[p[i]] : json();
    return c.reply(200, out);
  }
  c.error(errc::not_found, "missing");
}

}  // namespace settee
