// engine: one SpiderMonkey 102 context on the thread that made it, running design-document
// functions with CouchDB's environment (emit, log, sum, toJSON, isArray, require, provides,
// registerType) under a deadline and a memory cap. It lives only in the sandboxed worker process
// (js/worker_main.cpp); the node never links SpiderMonkey (docs/architecture.md section 43).
//
//   js::process_init();                       // once per process, before any engine
//   js::engine e(limits);                     // on the thread that will use it
//   auto s = e.open_scope(ddoc_json);         // a realm of its own per design document
//   auto f = e.compile(*s, "function(doc){ return doc.ok; }", "filters.ok");
//   js::outcome r = e.call(*f, "[{\"ok\":true}]");   // r.value == "true"
//
// Every function runs in the realm of its design document, so prototype tampering or globals kept
// by one design document's functions never reach another's. Data enters as JSON text (parsed in the
// realm) and leaves as JSON text.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace settee::js {

struct limits {
  std::chrono::milliseconds timeout{5000};  // a command's deadline ([couchdb] os_process_timeout)
  size_t heap_bytes = 64u << 20;            // the context's GC heap ([query_server] js_heap_mb)
  // Memory outside the GC heap (strings and arrays grown by natives) a command may add to the
  // process's resident set before it is stopped as out of memory; 0: 4 x heap_bytes.
  size_t extra_rss_bytes = 0;
  size_t max_log_lines = 100;  // per command; more are counted and dropped
};

// What a call came to.
enum class fault {
  none,         // returned normally: `value`
  thrown,       // the function threw: `value` is what it threw (JSON), or name/message of an Error
  compilation,  // the source is not a function (compile only)
  timeout,      // stopped at the deadline
  memory,       // stopped: heap or resident-set cap
  internal,     // the engine failed (a value that cannot be converted, ...)
};

struct outcome {
  fault what = fault::none;
  std::string value;              // JSON text (fault::none: the result; fault::thrown: a thrown non-Error)
  std::string name;               // an Error's name ("TypeError"), else empty
  std::string message;            // an Error's message, or the reason of compilation/timeout/memory/internal
  std::vector<std::string> logs;  // call_each: what this call logged (other calls: take_logs())
  bool ok() const { return what == fault::none; }
};

// The stack of the thread an engine runs on (js/worker_main.cpp makes it); the engine keeps deep
// recursion 1 MiB below it.
constexpr size_t stack_bytes = 16u << 20;

// Once per process, before any engine (and JS_ShutDown at exit is not needed: the worker exits).
// `jit`: false makes the engine interpret only (no executable memory is ever mapped).
bool process_init(bool jit);

// One context. Not thread-safe: every call on the thread that constructed it.
class engine {
 public:
  explicit engine(const limits& lim);
  ~engine();
  engine(const engine&) = delete;
  engine& operator=(const engine&) = delete;
  bool ready() const;  // false when the context could not be made

  using scope_id = uint32_t;
  using fn_id = uint32_t;
  // A realm for one design document (JSON text of the whole document: require() reads modules from
  // it, and functions run with it as `this`). Fails (fault::internal) on bad JSON.
  outcome open_scope(const std::string& ddoc_json, scope_id& out);
  void close_scope(scope_id s);
  // Compiles a function source (CouchDB's: a bare `function(...){...}` expression) in scope `s`.
  // `where` names it in errors ("validate_doc_update", "filters.by_type").
  outcome compile(scope_id s, const std::string& source, const std::string& where, fn_id& out);

  // Calls f with the arguments in `args_json` (a JSON array), `this` the scope's design document;
  // value: the returned value as JSON ("null" for undefined).
  outcome call(fn_id f, const std::string& args_json);
  // Calls f once per argument array of `calls_json` (a JSON array of arrays), each with its own
  // deadline: one outcome per call (a timeout or memory fault ends the rest with the same fault).
  std::vector<outcome> call_each(fn_id f, const std::string& calls_json);
  // Calls f(doc, extra...) for every document of `body_json` = [docs, extra...] and keeps whether
  // the answer was truthy; a document whose call threw counts as false and its error is in
  // `errors` (CouchDB's filters skip such a document). `emitted`: instead of the answer, whether f
  // called emit() (a view's map as a changes filter).
  outcome each_doc(fn_id f, const std::string& body_json, bool emitted, std::vector<bool>& passed,
                   std::vector<std::string>& errors);

  // A view's map functions `fns` (of one scope) over every document of `docs_json` (a JSON array),
  // each document deep-frozen first as CouchDB's couchjs seals it (one function cannot change
  // what the next sees), each document its own deadline. `rows`: JSON text, per document, per
  // function, of the [key, value] pairs it emitted: [[[[k,v],...],...],...]. A function that
  // throws on a document emitted nothing for it: "<id>: <error>" in `errors` (CouchDB logs it and
  // goes on). A timeout or memory fault ends the command.
  outcome map_docs(const std::vector<fn_id>& fns, const std::string& docs_json, std::string& rows,
                   std::vector<std::string>& errors);

  // log() lines of the last command (at most max_log_lines, then a line saying how many were
  // dropped); taken by the caller.
  std::vector<std::string> take_logs();
  // Frees what the last commands left (a shrinking GC): after a fault of memory.
  void shrink();
  // The watchdog's tick: stops the current command once it passed its deadline or the memory cap.
  // Called from another thread (the only call that may be). Whether a command is under way.
  bool watchdog_tick();

 private:
  friend class watchdog;
  struct impl;
  std::unique_ptr<impl> d_;
};

// The thread that watches an engine for as long as it lives: a tick every 2 ms while a command
// runs; parked, with no wake-ups at all, once the engine has been idle for a while.
class watchdog {
 public:
  explicit watchdog(engine& e);
  ~watchdog();
  watchdog(const watchdog&) = delete;
  watchdog& operator=(const watchdog&) = delete;

 private:
  engine& e_;
  std::thread thread_;
};

}  // namespace settee::js
