// metrics: this process's counters and histograms, read by GET /_node/_local/_stats (CouchDB's
// shape) and /_node/_local/_prometheus (Prometheus text format 0.0.4). Recording is lock-free
// (histograms, fixed counters) or one short mutex (counters by label), so hot paths can afford it.
#pragma once
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace settee::metrics {

// Counts of observations by upper bound (seconds, or a size), their number and their sum.
class histogram {
 public:
  explicit histogram(std::vector<double> bounds);
  void observe(double v);
  struct reading {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // observations <= bounds[i]
    uint64_t count = 0;
    double sum = 0;
    double min = 0, max = 0;  // of the observations (0 without any)
    // The value below which a fraction `q` of the observations fall, interpolated linearly within
    // the bucket that holds it (the bucket above the last bound: up to max); 0 without any.
    double quantile(double q) const;
  };
  reading read() const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket, the last for +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
  std::atomic<uint64_t> min_micros_{UINT64_MAX};
  std::atomic<uint64_t> max_micros_{0};
};

// Monotonic counters keyed by a label value (e.g. a method, a status).
class labelled_counter {
 public:
  void add(const std::string& label, uint64_t by = 1);
  std::map<std::string, uint64_t> read() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> values_;
};

// Histograms keyed by a label value (e.g. a peer), all with the same bounds.
class labelled_histogram {
 public:
  explicit labelled_histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {}
  void observe(const std::string& label, double v);
  std::map<std::string, histogram::reading> read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<histogram>> values_;
};

// Counters for a fixed set of labels (HTTP methods, status codes): one atomic each, no lock, for
// the per-request path. A label outside the set counts as `other` (a status: its number, < 1000).
class fixed_counter {
 public:
  explicit fixed_counter(std::vector<std::string> labels) : labels_(std::move(labels)) {}
  void add(const std::string& label);
  void add_status(int code);
  std::map<std::string, uint64_t> read() const;

 private:
  std::vector<std::string> labels_;  // empty: status codes
  std::atomic<uint64_t> counts_[1000] = {};
};

// Internal replication of this node's copies, per (database, range, peer): the changes the peer's
// copy had not confirmed at the last push (this copy's update seq then, minus the seq pushed). A
// peer that cannot be reached keeps the seq it last confirmed while this copy's grows.
class replication_lag {
 public:
  using key = std::tuple<std::string, std::string, std::string>;  // db, range, peer
  // This copy is at `source_seq`; `pushed_seq`: what the peer now holds (nullopt: not reached).
  void update(const key& k, uint64_t source_seq, std::optional<uint64_t> pushed_seq);
  // Forgets the entries of `db` not in `keep` (a range split or moved away, a peer removed).
  void retain(const std::string& db, const std::set<key>& keep);
  std::map<key, uint64_t> read() const;  // pending changes

 private:
  mutable std::mutex mu_;
  std::map<key, std::pair<uint64_t, uint64_t>> values_;  // source seq, pushed seq
};

// What this node measures (one per process).
struct registry {
  fixed_counter requests_by_method{{"GET", "HEAD", "POST", "PUT", "DELETE", "COPY", "OPTIONS", "other"}};
  fixed_counter requests_by_status{{}};  // by status code
  histogram request_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}};
  // Shard commits (group commit: every op the writer gathered, one LMDB transaction and fsync).
  histogram commit_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};
  histogram commit_ops{{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}};
  histogram fsync_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}};  // txn commit
  labelled_counter rpc_calls;   // calls to peers, by peer
  labelled_counter rpc_errors;  // of which failed (transport or timeout), by peer
  labelled_histogram rpc_seconds{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5}};  // answered
  replication_lag replication;
  // Documents asked of the coordinator on this node (each row of a bulk request counts), as
  // CouchDB's database_reads and database_writes count them at its coordinator.
  std::atomic<uint64_t> doc_reads{0};
  std::atomic<uint64_t> doc_writes{0};
  std::atomic<uint64_t> bulk_requests{0};  // _bulk_docs
  // Requests whose handler runs now (the HTTP front; a feed streaming its rows does not). Also
  // how busy the node is: a thread may wait for an answer by polling only when it runs alone.
  std::atomic<int64_t> requests_running{0};
  // Basic credentials answered from memory (http/auth.hpp), or by a key derivation.
  std::atomic<uint64_t> auth_cache_hits{0};
  std::atomic<uint64_t> auth_cache_misses{0};
  // The query engine, as CouchDB's mango.*, couchdb.mrview.*, couchdb.query_server.* and
  // couch_replicator.* statistics count it (issue 53 item 6). Mango: _find requests answered, those
  // answered from _all_docs, those whose use_index was not used, those that examined many documents
  // per result; documents and index rows examined, results returned.
  std::atomic<uint64_t> mango_queries{0};
  std::atomic<uint64_t> mango_unindexed_queries{0};
  std::atomic<uint64_t> mango_invalid_index{0};
  std::atomic<uint64_t> mango_too_many_docs_scanned{0};
  std::atomic<uint64_t> mango_docs_examined{0};
  std::atomic<uint64_t> mango_keys_examined{0};
  std::atomic<uint64_t> mango_results_returned{0};
  // Views: queries answered, documents the map functions ran on, index updates finished.
  std::atomic<uint64_t> view_queries{0};
  std::atomic<uint64_t> view_docs_mapped{0};
  std::atomic<uint64_t> view_index_updates{0};
  // JavaScript workers: exchanges, calls stopped at their deadline, workers started and stopped.
  std::atomic<uint64_t> js_calls{0};
  std::atomic<uint64_t> js_timeouts{0};
  std::atomic<uint64_t> js_worker_starts{0};
  std::atomic<uint64_t> js_worker_exits{0};
  // Replications run by this node: documents written and refused by targets, checkpoints made and
  // failed, steps that failed (retried or given up).
  std::atomic<uint64_t> replication_docs_written{0};
  std::atomic<uint64_t> replication_doc_write_failures{0};
  std::atomic<uint64_t> replication_checkpoints{0};
  std::atomic<uint64_t> replication_checkpoint_failures{0};
  std::atomic<uint64_t> replication_failures{0};
  // Internal replication between the copies of a range: documents sent (each a whole revision tree).
  std::atomic<uint64_t> internal_replication_docs{0};
};
registry& node();

// One gauge or counter read at scrape time (open shards, live feeds, ...), with optional labels.
struct sample {
  std::string name, help, type;  // type: gauge or counter
  bool prefixed = true;          // false: a standard name kept as is (process_cpu_seconds_total)
  std::vector<std::pair<std::map<std::string, std::string>, double>> values;
};

// The Prometheus text of `r` and `extra`, every name prefixed "settee_" (unless a sample says not);
// the per-peer series of every node in `peers` are there from the start, at zero.
std::string prometheus_text(const registry& r, const std::vector<sample>& extra,
                            const std::set<std::string>& peers = {});

}  // namespace settee::metrics
