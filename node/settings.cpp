#include "node/settings.hpp"

#include <algorithm>

namespace settee {

namespace {

template <class T>
T clamped(const config& cfg, const char* sec, const char* key, int64_t def, int64_t lo, int64_t hi) {
  return static_cast<T>(std::clamp<int64_t>(cfg.get_int(sec, key, def), lo, hi));
}

status bad(const char* sec, const char* key, const std::string& why) {
  return {errc::bad_request, std::string("[") + sec + "] " + key + " " + why};
}

// [chttpd], [log] access, [cluster], [prometheus].
status read_front_and_cluster(const config& cfg, settings& s) {
  constexpr int64_t big = INT64_MAX / 2;
  s.bind_address = cfg.get("chttpd", "bind_address");
  int64_t port = cfg.get_int("chttpd", "port", 5984);
  if (port < 0 || port > 65535) return bad("chttpd", "port", "must be a port number");
  s.port = static_cast<int>(port);
  s.server_threads = clamped<size_t>(cfg, "chttpd", "server_threads", 128, 8, 100000);
  s.max_request_bytes = clamped<size_t>(cfg, "chttpd", "max_http_request_size", 64 << 20, 1, big);
  s.header_timeout_s = clamped<int>(cfg, "chttpd", "header_timeout", 15, 1, 3600);
  s.body_timeout_s = clamped<int>(cfg, "chttpd", "body_timeout", 300, 1, 86400);
  s.keep_alive_timeout_s = clamped<int>(cfg, "chttpd", "keep_alive_timeout", 30, 1, 86400);
  s.access_log = cfg.get_bool("log", "access", false);

  s.default_q = clamped<uint32_t>(cfg, "cluster", "q", 2, 1, 1 << 20);
  if (!cfg.get("cluster", "rpc_port").empty()) {
    int64_t rpc_port = cfg.get_int("cluster", "rpc_port", -1);
    if (rpc_port < 0 || rpc_port > 65535) return bad("cluster", "rpc_port", "must be a port number");
    s.rpc_port = static_cast<uint16_t>(rpc_port);
  }
  s.rpc_bind = cfg.get("cluster", "rpc_bind", s.bind_address);
  s.seeds = cfg.get("cluster", "seeds");
  s.cluster_secret = cfg.get("cluster", "secret");
  const std::string tls = cfg.get("cluster", "tls", "auto");
  if (tls != "auto" && tls != "on" && tls != "off")
    return bad("cluster", "tls", "must be auto, on or off, not '" + tls + "'");
  s.tls = tls == "on" ? settings::tls_mode::on : tls == "off" ? settings::tls_mode::off : settings::tls_mode::automatic;
  s.accept_legacy_peers = cfg.get_bool("cluster", "accept_legacy_peers", false);
  s.sync_interval = std::chrono::milliseconds(clamped<int64_t>(cfg, "cluster", "sync_interval_ms", 5000, 0, big));
  s.push_timeout = std::chrono::milliseconds(clamped<int64_t>(cfg, "cluster", "push_timeout_ms", 30000, 1, big));
  s.catalog_push_timeout =
      std::chrono::milliseconds(clamped<int64_t>(cfg, "cluster", "catalog_push_timeout_ms", 5000, 1, big));

  s.metrics_port = cfg.get_bool("prometheus", "additional_port", false);
  s.metrics_bind = cfg.get("prometheus", "bind_address", "127.0.0.1");
  s.metrics_port_number = clamped<int>(cfg, "prometheus", "port", 17986, 0, 65535);
  return {};
}

}  // namespace

result<settings> read_settings(const config& cfg) {
  settings s;
  constexpr int64_t big = INT64_MAX / 2;
  s.node_name = cfg.get("node", "name");
  s.idle_release_s = clamped<int64_t>(cfg, "node", "idle_release_s", 30, 1, 3600);

  s.server_uuid = cfg.get("couchdb", "uuid");
  s.request_timeout = std::chrono::milliseconds(clamped<int64_t>(cfg, "couchdb", "request_timeout_ms", 60000, 1, big));
  s.view_timeout =
      std::chrono::milliseconds(clamped<int64_t>(cfg, "fabric", "view_permsg_timeout", 3600000, 1, INT32_MAX));
  s.map_size_bytes = clamped<uint64_t>(cfg, "couchdb", "map_size_mb", 65536, 1, 1 << 30) << 20;
  s.batch_max_docs = clamped<size_t>(cfg, "couchdb", "batch_max_docs", 5000, 1, big);
  s.batch_max_bytes = clamped<size_t>(cfg, "couchdb", "batch_max_bytes", 32 << 20, 1, big);
  s.max_dbs_open_asked = clamped<size_t>(cfg, "couchdb", "max_dbs_open", 500, 1, big);
  s.max_dbs_open =
      std::min(s.max_dbs_open_asked, std::max<size_t>(1, settings::shard_address_budget / s.map_size_bytes));
  // CouchDB's default: no limit ("infinity"); a request still bounds an id (64 KB in a URL,
  // max_http_request_size in a body).
  const std::string id_length = cfg.get("couchdb", "max_document_id_length", "infinity");
  if (!id_length.empty() && id_length != "infinity")
    s.max_document_id_length = clamped<size_t>(cfg, "couchdb", "max_document_id_length", 1, 1, big);
  s.max_document_size_bytes = clamped<size_t>(cfg, "couchdb", "max_document_size", 8000000, 1, big);
  s.max_attachment_bytes = clamped<size_t>(cfg, "couchdb", "max_attachment_size", 1 << 30, 0, big);
  s.max_json_depth = clamped<size_t>(cfg, "couchdb", "max_json_depth", default_max_json_depth, 1, 10000);
  s.bulk_docs_max = clamped<size_t>(cfg, "couchdb", "bulk_docs_max", 100000, 1, big);
  const std::string security = cfg.get("couchdb", "default_security", "admin_only");
  if (security != "admin_only" && security != "everyone")
    return bad("couchdb", "default_security", "must be admin_only or everyone, not '" + security + "'");
  s.everyone_may_read_new_dbs = security == "everyone";

  if (!cfg.get("time_seq", "min_time").empty()) s.time_seq_min_time_s = cfg.get_int("time_seq", "min_time", 0);
  s.time_seq_enabled = cfg.get_bool("time_seq", "enabled", true);

  s.db_updates_enabled = cfg.get_bool("db_updates", "enabled", true);
  s.db_updates_gather = std::chrono::milliseconds(clamped<int64_t>(cfg, "db_updates", "gather_ms", 5, 0, 3600000));
  s.db_updates_min_interval =
      std::chrono::milliseconds(clamped<int64_t>(cfg, "db_updates", "min_interval_ms", 40, 0, 3600000));

  s.attachment_compression_level = clamped<int>(cfg, "attachments", "compression_level", 8, 0, 9);
  s.compressible_types = cfg.get("attachments", "compressible_types", s.compressible_types);
  s.uuids_max_count = clamped<size_t>(cfg, "uuids", "max_count", 1000, 1, big);
  s.jobs_retry_base = std::chrono::milliseconds(clamped<int64_t>(cfg, "jobs", "retry_base_ms", 1000, 1, 3600000));
  s.jobs_retry_cap = std::chrono::milliseconds(clamped<int64_t>(cfg, "jobs", "retry_cap_ms", 30000, 1, 86400000));
  s.replicator_max_jobs = clamped<size_t>(cfg, "replicator", "max_jobs", 500, 1, 100000);
  s.replicator_interval =
      std::chrono::milliseconds(clamped<int64_t>(cfg, "replicator", "interval", 60000, 1000, 86400000));
  s.replicator_max_churn = clamped<size_t>(cfg, "replicator", "max_churn", 20, 0, 100000);
  s.replicator_worker_threads = clamped<size_t>(cfg, "replicator", "worker_threads", 16, 0, 1024);
  s.replicator_max_inflate_ratio = clamped<uint64_t>(cfg, "replicator", "max_inflate_ratio", 100, 2, 1000000);
  s.replicator_denied_networks = cfg.get("replicator", "denied_networks", "<default>");
  s.replicator_allowed_hosts = cfg.get("replicator", "allowed_hosts");
  s.replicator_verify_certificates = cfg.get_bool("replicator", "verify_ssl_certificates", false);
  s.replicator_ca_file = cfg.get("replicator", "ssl_trusted_certificates_file");
  s.compaction_docs_per_step = clamped<size_t>(cfg, "database_compaction", "docs_per_step", 1000, 1, big);

  s.js_timeout = std::chrono::milliseconds(clamped<int64_t>(cfg, "couchdb", "os_process_timeout", 5000, 1, 3600000));
  s.js_max_workers = clamped<size_t>(cfg, "query_server", "max_workers", 8, 1, 1024);
  s.js_heap_mb = clamped<size_t>(cfg, "query_server", "js_heap_mb", 64, 8, 4096);
  s.js_worker = cfg.get("query_server", "worker");
  s.reduce_limit = cfg.get("query_server_config", "reduce_limit", "true");
  if (s.reduce_limit != "true" && s.reduce_limit != "false" && s.reduce_limit != "log")
    return status{errc::bad_request, "[query_server_config] reduce_limit must be true, false or log"};

  if (status st = read_front_and_cluster(cfg, s); !st) return st;
  return s;
}

}  // namespace settee
