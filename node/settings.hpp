// settings: every setting a node runs with, read once from its configuration (the defaults,
// local.ini, the operator's file and the command line, merged into one `config` by main), checked,
// with the unit last in each name (_ms, _s, _bytes). main builds its services from it; a limit is
// read here and nowhere else. CouchDB's section and key are named next to each field.
// Pure: no I/O, so tests read it from a config they build.
#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "node/config.hpp"
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

struct settings {
  // [node]
  std::string node_name;        // name
  int64_t idle_release_s = 30;  // idle_release_s: an idle spell after which caches are given back

  // [couchdb]
  std::string server_uuid;                           // uuid
  std::chrono::milliseconds request_timeout{60000};  // request_timeout_ms: what a request waits for copies
  // [fabric] view_permsg_timeout (CouchDB's name and default, ms): what a view query waits for each
  // range's copy, its index build included (CouchDB: for each worker's next message; view_timeout
  // is infinity).
  std::chrono::milliseconds view_timeout{3600000};
  uint64_t map_size_bytes = 64ull << 30;  // map_size_mb: each shard file's LMDB map
  size_t batch_max_docs = 5000;           // batch_max_docs: one group commit
  size_t batch_max_bytes = 32u << 20;     // batch_max_bytes
  // max_dbs_open, lowered to what the address space holds: every open shard maps map_size_mb at
  // once (LMDB), a process has 128 TiB, and past it every other open fails ("Cannot allocate
  // memory": ~2,000 shards of 64 GiB). Open shards get 96 TiB (the rest: view indexes, heap).
  size_t max_dbs_open = 500;
  size_t max_dbs_open_asked = 500;  // as configured, for the warning when lowered
  static constexpr uint64_t shard_address_budget = 96ull << 40;
  size_t max_document_id_length = SIZE_MAX;        // max_document_id_length ("infinity")
  size_t max_document_size_bytes = 8000000;        // max_document_size
  size_t max_attachment_bytes = 1u << 30;          // max_attachment_size
  size_t max_json_depth = default_max_json_depth;  // max_json_depth, 1-10000
  size_t bulk_docs_max = 100000;                   // bulk_docs_max
  bool everyone_may_read_new_dbs = false;          // default_security: admin_only | everyone

  // [time_seq]
  std::optional<int64_t> time_seq_min_time_s;  // min_time (unset: time-seq's own)
  bool time_seq_enabled = true;                // enabled

  // [db_updates]
  bool db_updates_enabled = true;                         // enabled
  std::chrono::milliseconds db_updates_gather{5};         // gather_ms
  std::chrono::milliseconds db_updates_min_interval{40};  // min_interval_ms

  // [attachments], [uuids], [database_compaction]
  int attachment_compression_level = 8;  // compression_level, 0-9
  std::string compressible_types = "text/*, application/javascript, application/json, application/xml";
  size_t uuids_max_count = 1000;           // [uuids] max_count
  size_t compaction_docs_per_step = 1000;  // [database_compaction] docs_per_step

  // [jobs]: a job that asks to be retried waits retry_base_ms, doubling at each attempt up to retry_cap_ms.
  std::chrono::milliseconds jobs_retry_base{1000};  // retry_base_ms
  std::chrono::milliseconds jobs_retry_cap{30000};  // retry_cap_ms
  // [replicator]: the scheduler's max_jobs, interval (ms) and max_churn, as CouchDB's.
  size_t replicator_max_jobs = 500;
  std::chrono::milliseconds replicator_interval{60000};
  size_t replicator_max_churn = 20;
  size_t replicator_worker_threads = 16;        // worker_threads: batch threads all replications share
  uint64_t replicator_max_inflate_ratio = 100;  // max_inflate_ratio: decoded bytes per byte received
  std::string replicator_denied_networks;       // denied_networks (default: net_policy's)
  std::string replicator_allowed_hosts;         // allowed_hosts
  bool replicator_verify_certificates = false;  // verify_ssl_certificates
  std::string replicator_ca_file;               // ssl_trusted_certificates_file

  // JavaScript (a pool of sandboxed settee-js workers; docs/security.md "JavaScript").
  std::chrono::milliseconds js_timeout{5000};  // [couchdb] os_process_timeout: one function call
  size_t js_max_workers = 8;                   // [query_server] max_workers
  size_t js_heap_mb = 64;                      // [query_server] js_heap_mb: each worker's JS heap
  std::string js_worker;                       // [query_server] worker (default: settee-js beside settee)
  std::string reduce_limit = "true";           // [query_server_config] reduce_limit: true, false or log

  // [chttpd], [log]
  std::string bind_address;              // bind_address
  int port = 5984;                       // port
  size_t server_threads = 128;           // server_threads (at least 8)
  size_t max_request_bytes = 64u << 20;  // max_http_request_size
  int header_timeout_s = 15;             // header_timeout
  int body_timeout_s = 300;              // body_timeout
  int keep_alive_timeout_s = 30;         // keep_alive_timeout
  bool access_log = false;               // [log] access

  // [cluster]
  uint32_t default_q = 2;            // q
  std::optional<uint16_t> rpc_port;  // rpc_port (unset: no cluster RPC; 0: any free port)
  std::string rpc_bind;              // rpc_bind (default: bind_address)
  std::string seeds;                 // seeds, "name@host:port, ..."
  std::string cluster_secret;        // secret
  enum class tls_mode { automatic, on, off } tls = tls_mode::automatic;  // tls: auto | on | off
  bool accept_legacy_peers = false;                                      // accept_legacy_peers
  std::chrono::milliseconds sync_interval{5000};                         // sync_interval_ms (0: no periodic sync)
  // push_timeout_ms: what a push of a database to another node's copies (internal replication,
  // POST /db/_sync_shards) and a page of its update log (_db_updates) may wait for it.
  std::chrono::milliseconds push_timeout{30000};
  // catalog_push_timeout_ms: pushing `_dbs` right after a database was created, deleted or split
  // (the periodic sync retries what did not arrive).
  std::chrono::milliseconds catalog_push_timeout{5000};

  // [prometheus]
  bool metrics_port = false;               // additional_port
  std::string metrics_bind = "127.0.0.1";  // bind_address
  int metrics_port_number = 17986;         // port
};

// The settings of `cfg`; a value that cannot be taken is an error naming its section and key.
result<settings> read_settings(const config& cfg);

}  // namespace settee
