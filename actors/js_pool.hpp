// js_pool: JavaScript for the node, run by a pool of sandboxed settee-js worker processes
// (js/worker_main.cpp; the protocol is js/query_server.hpp). The node itself never runs
// JavaScript: a function that loops, bombs memory or exploits the engine hurts one worker, which
// is killed and replaced (docs/architecture.md section 43, docs/security.md).
//
// A call borrows an idle worker (starting one when fewer than max_workers run), sends the design
// document when that worker does not hold it yet, sends the request and waits for the answer until
// the function's deadline plus a grace. A worker that misses it, dies or answers garbage is killed
// and the call answers a fault. Thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

struct js_options {
  std::string worker;                       // the settee-js executable
  size_t max_workers = 8;                   // [query_server] max_workers
  std::chrono::milliseconds timeout{5000};  // [couchdb] os_process_timeout: one call's deadline
  size_t heap_mb = 64;                      // [query_server] js_heap_mb: each worker's JS heap
};

// A worker's answer (js/query_server.hpp).
struct js_reply {
  enum class kind { ok, thrown, error, fault };
  kind what = kind::fault;
  json value;                       // ok: the result; thrown: what the function threw
  std::string name, reason;         // error: the Error's name and message; fault: its kind and reason
  std::vector<std::string> log;     // what the function logged
  std::vector<std::string> errors;  // filters: one per document whose call threw
  bool ok() const { return what == kind::ok; }
};

// The name workers know a design document by: its database (`db_key`, db_meta::key: a database
// made again under the same name is another one), id and revision. The same design document in two
// databases is two documents to a worker, in two realms: what a function keeps in its globals
// never reaches another database's calls.
std::string worker_key(const std::string& db_key, const std::string& ddoc_id, const std::string& rev);

class js_pool {
 public:
  explicit js_pool(js_options opts);
  ~js_pool();  // every worker told to stop, killed if it does not
  js_pool(const js_pool&) = delete;
  js_pool& operator=(const js_pool&) = delete;

  // Runs the function at `path` (["validate_doc_update"], ["filters", name], ...) of the design
  // document `ddoc_json` known as `ddoc_key` (its id and revision: a new revision is a new key) on
  // `body` (JSON text). Errors: the pool cannot run a worker (no executable, fork failed) or none
  // was free in time.
  result<js_reply> run(const std::string& ddoc_key, const std::string& ddoc_json, const json& path,
                       const std::string& body);
  // A view's map functions `views` (their names, in the design document's order) over `docs_json`
  // (a JSON array of documents), in one exchange: value per document, per view, the [key, value]
  // pairs emitted; `errors` the documents a function threw on (query_server's "map").
  result<js_reply> map(const std::string& ddoc_key, const std::string& ddoc_json, const std::vector<std::string>& views,
                       const std::string& docs_json, size_t docs);
  // Search index functions (`functions`: [api member, name] pairs, "nouveau" or "indexes") over
  // `docs_json` in one exchange: value per document, per function, the arguments of each index()
  // call (query_server's "index").
  result<js_reply> index(const std::string& ddoc_key, const std::string& ddoc_json, const json& functions,
                         const std::string& docs_json, size_t docs);
  // run() once per argument array of `calls` (JSON texts of arrays), in one exchange with one
  // worker, each call with its own deadline: one reply per call.
  result<std::vector<js_reply>> run_each(const std::string& ddoc_key, const std::string& ddoc_json, const json& path,
                                         const std::vector<std::string>& calls);
  // Compiles every function of a design document about to be saved.
  result<js_reply> compile(const std::string& ddoc_json);
  // Workers running now, and of those the ones running a call.
  size_t workers() const;
  size_t busy() const;
  size_t max_workers() const { return max_workers_; }
  // [query_server] max_workers and [couchdb] os_process_timeout changed while the node runs: idle
  // workers go (new ones start with the new deadline), busy ones leave when they are given back.
  void set_limits(size_t max_workers, std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout_now() const;  // one call's deadline now
  // The worker executable ("" when none was found).
  const std::string& worker_path() const { return opts_.worker; }
  // The settee-js beside `self_exe` (the node's own path) or in ../lib/settee/ (the Debian
  // package), or "" when there is none.
  static std::string worker_beside(const std::string& self_exe);

 private:
  struct worker;
  result<std::unique_ptr<worker>> borrow();
  // One request (`calls` calls) on a worker holding the design document; retried once on a fresh
  // worker when the first had died, or had forgotten the design document.
  result<js_reply> ask(const std::string& ddoc_key, const std::string& ddoc_json, const std::string& header,
                       const std::string& body, size_t calls);
  void give_back(std::unique_ptr<worker> w);
  result<std::unique_ptr<worker>> spawn();
  // One request on `w`; false when the worker must go (it was killed or died).
  bool exchange(worker& w, const std::string& header, const std::string& body, js_reply& out, size_t calls = 1);
  // Sends the design document to `w` unless it holds it; false when the worker must go.
  bool hold(worker& w, const std::string& ddoc_key, const std::string& ddoc_json, js_reply& out);
  void retire(std::unique_ptr<worker> w);

  js_options opts_;
  std::atomic<size_t> max_workers_;  // opts_.max_workers, then set_limits'
  std::atomic<int64_t> timeout_ms_;  // opts_.timeout, then set_limits'
  size_t most_workers_;              // the highest max_workers_ has been (mu_): running_ stays within it
  uint64_t generation_ = 0;          // of the limits (mu_): each worker keeps the one it started under
  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<worker>> idle_;
  size_t running_ = 0;                                         // idle and borrowed
  std::atomic<size_t> exchanging_{0};                          // requests sent, not yet answered
  const bool spin_ = std::thread::hardware_concurrency() > 1;  // one core: the worker needs it
};

// The reply of a worker's answer line; false (a fault in `out`) when it is not a JSON object.
bool parse_js_reply(const std::string& line, js_reply& out);
// The reply of one answer object (already parsed).
js_reply js_reply_of(json answer);

// Documents sent to the workers in one exchange (views' map, search indexes' index()), and a
// batch the worker could not finish (a function that loops, a worker that died) asked again one
// document at a time, so that only a document that fails alone goes without its rows or fields.
struct js_batch {
  std::string where;  // "map of db/_design/d": what the functions logged and threw is logged with it
  // One exchange over `docs_json` (a JSON array of `docs` documents); `alone`: a retry of one.
  std::function<result<js_reply>(const std::string& docs_json, size_t docs, bool alone)> exchange;
  // Document `i`'s answer (the reply's i-th value).
  std::function<status(size_t i, const json& answer)> accept;
  // Document `i` failed on its own (`r`: why).
  std::function<void(size_t i, const js_reply& r)> failed_alone;
};
// Runs `b` over `docs` (JSON texts): accept() for each document, or failed_alone().
status run_batch(const js_batch& b, const std::vector<std::string>& docs);

}  // namespace settee
