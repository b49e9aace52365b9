#include "actors/js_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "node/scoped_count.hpp"

namespace settee {

// The worker stops a function at its deadline itself; this is how much longer the node waits
// before it kills the worker (a native call that overran, a worker that hangs).
constexpr std::chrono::milliseconds kill_grace{1000};
// How many design documents a worker holds (js/query_server.hpp keeps as many).
constexpr size_t worker_ddocs = 64;
// How long the only exchange under way polls for its answer before it sleeps: a short call
// answers within it (a wake-up of a sleeping thread costs ~20 us on a virtual machine, a tenth
// of a write). Never when another exchange or another request runs: then the cores have other
// work (validated PUTs at c=32: 1.06x without the poll, bench/durable_writes.sh VDU=1).
constexpr std::chrono::microseconds answer_spin{60};

struct js_pool::worker {
  pid_t pid = -1;
  int to = -1;                    // its stdin
  int from = -1;                  // its stdout
  std::string pending;            // bytes read after the last answer line
  std::set<std::string> holds;    // design documents sent to it
  std::vector<std::string> sent;  // in the order sent (the worker forgets the oldest first)
  uint64_t generation = 0;        // of the limits it was started with (set_limits)

  ~worker() {
    if (to >= 0) ::close(to);
    if (from >= 0) ::close(from);
  }
};

js_reply js_reply_of(json a) {
  js_reply r;
  if (!a.is_object()) {
    r.name = "internal";
    r.reason = "the JavaScript worker answered something that is not a JSON object";
    return r;
  }
  auto text = [&](const char* k) {
    auto it = a.find(k);
    return it != a.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto lines = [&](const char* k, std::vector<std::string>& out) {
    auto it = a.find(k);
    if (it == a.end() || !it->is_array()) return;
    for (auto& l : *it)
      if (l.is_string()) out.push_back(l.get<std::string>());
  };
  lines("log", r.log);
  lines("errors", r.errors);
  if (a.contains("ok")) {
    r.what = js_reply::kind::ok;
    r.value = std::move(a["ok"]);
  } else if (a.contains("each")) {  // run_each: the answers, one per call
    r.what = js_reply::kind::ok;
    r.value = std::move(a["each"]);
  } else if (a.contains("thrown")) {
    r.what = js_reply::kind::thrown;
    r.value = std::move(a["thrown"]);
  } else if (a.contains("error")) {
    r.what = js_reply::kind::error;
    r.name = text("error");
    r.reason = text("reason");
  } else {
    r.name = a.contains("fault") ? text("fault") : "internal";
    r.reason = text("reason");
  }
  return r;
}

bool parse_js_reply(const std::string& line, js_reply& r) {
  json a = json::parse(line, nullptr, false);
  const bool understood = a.is_object();
  r = js_reply_of(std::move(a));
  return understood;
}

std::string worker_key(const std::string& db_key, const std::string& ddoc_id, const std::string& rev) {
  return db_key + "/" + ddoc_id + "@" + rev;
}

js_pool::js_pool(js_options opts)
    : opts_(std::move(opts)),
      max_workers_(std::max<size_t>(1, opts_.max_workers)),
      timeout_ms_(opts_.timeout.count()),
      most_workers_(max_workers_) {}

void js_pool::set_limits(size_t max_workers, std::chrono::milliseconds timeout) {
  std::vector<std::unique_ptr<worker>> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    max_workers_ = std::max<size_t>(1, max_workers);
    most_workers_ = std::max(most_workers_, max_workers_.load());
    timeout_ms_ = timeout.count();
    ++generation_;
    old.swap(idle_);  // they run with the old deadline: new ones start with the new
    freed_.notify_all();
  }
  for (auto& w : old) retire(std::move(w));
}

std::chrono::milliseconds js_pool::timeout_now() const {
  return std::chrono::milliseconds(timeout_ms_.load());
}

js_pool::~js_pool() {
  std::vector<std::unique_ptr<worker>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    all.swap(idle_);
  }
  for (auto& w : all) retire(std::move(w));
}

size_t js_pool::workers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_;
}

size_t js_pool::busy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_ - std::min(running_, idle_.size());
}

std::string js_pool::worker_beside(const std::string& self_exe) {
  const size_t slash = self_exe.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string(".") : self_exe.substr(0, slash);
  // A build tree has it beside settee; the Debian package in /usr/lib/settee (settee in /usr/bin).
  for (const std::string& path : {dir + "/settee-js", dir + "/../lib/settee/settee-js"})
    if (::access(path.c_str(), X_OK) == 0) return path;
  return {};
}

result<std::unique_ptr<js_pool::worker>> js_pool::spawn() {
  if (opts_.worker.empty()) return status{errc::internal, "JavaScript is not available: settee-js was not found"};
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return status{errc::internal, std::string("pipe: ") + std::strerror(errno)};
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return status{errc::internal, std::string("pipe: ") + std::strerror(errno)};
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);  // nothing of the node's (files, sockets) leaks
  const std::string timeout = std::to_string(timeout_ms_.load()), heap = std::to_string(opts_.heap_mb);
  std::vector<char*> argv = {const_cast<char*>(opts_.worker.c_str()), const_cast<char*>("--timeout-ms"),
                             const_cast<char*>(timeout.c_str()),      const_cast<char*>("--heap-mb"),
                             const_cast<char*>(heap.c_str()),         nullptr};
  char* envp[] = {nullptr};  // the worker needs no environment
  auto w = std::make_unique<worker>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    w->generation = generation_;
  }
  int rc = ::posix_spawn(&w->pid, opts_.worker.c_str(), &fa, nullptr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  ::close(in[0]);
  ::close(out[1]);
  w->to = in[1];
  w->from = out[0];
  if (rc != 0) {
    w->pid = -1;
    return status{errc::internal, "cannot start " + opts_.worker + ": " + std::strerror(rc)};
  }
  ++metrics::node().js_worker_starts;
  return w;
}

result<std::unique_ptr<js_pool::worker>> js_pool::borrow() {
  std::unique_lock<std::mutex> lock(mu_);
  const auto until = mono::now() + timeout_now();
  for (;;) {
    if (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      SETTEE_CHECK(w && running_ <= most_workers_);  // a lowered limit: the busy ones above it leave when given back
      return w;
    }
    if (running_ < max_workers_) {
      ++running_;
      lock.unlock();
      auto w = spawn();
      if (!w) {
        lock.lock();
        --running_;
        freed_.notify_one();
      }
      return w;
    }
    if (!mono::wait_until(freed_, lock, until, [&] { return !idle_.empty() || running_ < max_workers_; }))
      return status{errc::timeout, "no JavaScript worker was free within " + std::to_string(timeout_now().count()) +
                                       " ms ([query_server] max_workers = " + std::to_string(max_workers_) + ")"};
  }
}

void js_pool::give_back(std::unique_ptr<worker> w) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    SETTEE_CHECK(w && idle_.size() < running_);  // only a borrowed worker comes back, once
    if (w->generation == generation_ && running_ <= max_workers_) {
      idle_.push_back(std::move(w));
      freed_.notify_one();
      return;
    }
  }
  retire(std::move(w));  // started under older limits, or above a lowered max_workers
}

void js_pool::retire(std::unique_ptr<worker> w) {
  if (w->pid > 0) {
    ++metrics::node().js_worker_exits;
    ::close(w->to);  // a worker that is alive reads EOF and exits; one that is stuck is killed
    w->to = -1;
    ::kill(w->pid, SIGKILL);
    ::waitpid(w->pid, nullptr, 0);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) --running_;
  freed_.notify_one();
}

bool js_pool::exchange(worker& w, const std::string& header, const std::string& body, js_reply& out, size_t calls) {
  // One line each: a raw newline in JSON text can only be whitespace (in strings it is escaped).
  std::string request = header + "\n" + body;
  for (size_t i = header.size() + 1; i < request.size(); ++i)
    if (request[i] == '\n' || request[i] == '\r') request[i] = ' ';
  request += "\n";
  ++metrics::node().js_calls;
  for (size_t off = 0; off < request.size();) {
    ssize_t n = ::write(w.to, request.data() + off, request.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out = js_reply{};
      out.name = "internal";
      out.reason = "the JavaScript worker went away";
      return false;
    }
    off += static_cast<size_t>(n);
  }
  const auto until = mono::now() + timeout_now() * static_cast<int64_t>(std::max<size_t>(calls, 1)) + kill_grace;
  const scoped_count<size_t> under_way(exchanging_);
  const bool idle_node = metrics::node().requests_running.load(std::memory_order_relaxed) <= 1;
  const auto spin_until =
      under_way.before() == 0 && idle_node && spin_ ? mono::now() + answer_spin : mono::time_point{};
  for (;;) {
    if (size_t nl = w.pending.find('\n'); nl != std::string::npos) {
      const bool understood = parse_js_reply(w.pending.substr(0, nl), out);
      w.pending.erase(0, nl + 1);
      if (out.name == "timeout") ++metrics::node().js_timeouts;  // the worker's own deadline
      return understood;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - mono::now()).count();
    pollfd p{w.from, POLLIN, 0};
    const bool spinning = mono::now() < spin_until;
    int rc = left > 0 ? ::poll(&p, 1, spinning ? 0 : static_cast<int>(left)) : 0;
    if (rc < 0 && errno == EINTR) continue;
    if (rc == 0 && spinning) continue;
    if (rc == 0) {
      ++metrics::node().js_timeouts;
      out = js_reply{};
      out.name = "timeout";
      out.reason = "the function ran longer than " + std::to_string(timeout_now().count()) + " ms";
      return false;
    }
    char chunk[1 << 16];
    ssize_t n = ::read(w.from, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      out = js_reply{};
      out.name = "internal";
      out.reason = "the JavaScript worker died";
      return false;
    }
    w.pending.append(chunk, static_cast<size_t>(n));
    // An answer larger than a worker's heap could hold as a value is a function's memory bomb
    // aimed at the node: the worker goes, and the node never holds more of it.
    if (w.pending.size() > opts_.heap_mb << 20) {
      out = js_reply{};
      out.name = "memory";
      out.reason =
          "the function's answer is larger than " + std::to_string(opts_.heap_mb) + " MiB ([query_server] js_heap_mb)";
      return false;
    }
  }
}

result<js_reply> js_pool::ask(const std::string& ddoc_key, const std::string& ddoc_json, const std::string& header,
                              const std::string& body, size_t calls) {
  for (int attempt = 0;; ++attempt) {
    auto w = borrow();
    if (!w) return w.error();
    worker& wk = **w;
    js_reply r;
    bool keep = hold(wk, ddoc_key, ddoc_json, r);
    if (keep && wk.holds.count(ddoc_key)) keep = exchange(wk, header, body, r, calls);
    if (!keep) {
      log::warning("JavaScript worker " + std::to_string(wk.pid) + " stopped (" + r.name + ": " + r.reason +
                   ") running " + header);
      retire(std::move(*w));
      if (r.name == "internal" && attempt == 0) continue;  // a worker that died before the call: once more
      return r;
    }
    // A worker that forgot the design document (it holds 64): sent again, once.
    if (r.what == js_reply::kind::fault && r.reason == "unknown design document" && attempt == 0) {
      wk.holds.clear();
      wk.sent.clear();
      give_back(std::move(*w));
      continue;
    }
    give_back(std::move(*w));
    return r;
  }
}

result<js_reply> js_pool::run(const std::string& ddoc_key, const std::string& ddoc_json, const json& path,
                              const std::string& body) {
  return ask(ddoc_key, ddoc_json, json::array({"ddoc", ddoc_key, path}).dump(), body, 1);
}

bool js_pool::hold(worker& w, const std::string& ddoc_key, const std::string& ddoc_json, js_reply& r) {
  if (w.holds.count(ddoc_key)) return true;
  if (!exchange(w, json::array({"ddoc", "new", ddoc_key}).dump(), ddoc_json, r)) return false;
  if (r.ok()) {
    w.holds.insert(ddoc_key);
    w.sent.push_back(ddoc_key);
    if (w.sent.size() > worker_ddocs) {  // the worker forgot its oldest: so does the pool
      w.holds.erase(w.sent.front());
      w.sent.erase(w.sent.begin());
    }
  }
  return true;
}

result<js_reply> js_pool::map(const std::string& ddoc_key, const std::string& ddoc_json,
                              const std::vector<std::string>& views, const std::string& docs_json, size_t docs) {
  return ask(ddoc_key, ddoc_json, json::array({"map", ddoc_key, views}).dump(), docs_json, docs);
}

result<js_reply> js_pool::index(const std::string& ddoc_key, const std::string& ddoc_json, const json& functions,
                                const std::string& docs_json, size_t docs) {
  return ask(ddoc_key, ddoc_json, json::array({"index", ddoc_key, functions}).dump(), docs_json, docs);
}

result<std::vector<js_reply>> js_pool::run_each(const std::string& ddoc_key, const std::string& ddoc_json,
                                                const json& path, const std::vector<std::string>& calls) {
  std::string body = "[";
  for (size_t i = 0; i < calls.size(); ++i) body += (i ? "," : "") + calls[i];
  body += "]";
  auto r = ask(ddoc_key, ddoc_json, json::array({"each", ddoc_key, path}).dump(), body, calls.size());
  if (!r) return r.error();
  if (!r->ok() || !r->value.is_array() || r->value.size() != calls.size()) {
    if (r->ok()) *r = js_reply{}, r->name = "internal", r->reason = "the JavaScript worker answered the wrong count";
    return std::vector<js_reply>(calls.size(), *r);
  }
  std::vector<js_reply> out;
  out.reserve(calls.size());
  for (auto& a : r->value) out.push_back(js_reply_of(std::move(a)));
  return out;
}

result<js_reply> js_pool::compile(const std::string& ddoc_json) {
  auto w = borrow();
  if (!w) return w.error();
  js_reply r;
  if (!exchange(**w, "[\"compile\"]", ddoc_json, r)) {
    retire(std::move(*w));
    return r;
  }
  give_back(std::move(*w));
  return r;
}

namespace {

status run_batch_of(const js_batch& b, const std::vector<std::string>& docs, const std::vector<size_t>& at,
                    bool alone) {
  std::string body = "[";
  for (size_t k = 0; k < at.size(); ++k) body += (k ? "," : "") + docs[at[k]];
  body += "]";
  auto r = b.exchange(body, at.size(), alone);
  if (!r) return r.error();
  for (const auto& line : r->log) log::info(b.where + " logged: " + line);
  for (const auto& e : r->errors) log::warning(b.where + " failed on document " + e);
  if (r->ok() && r->value.is_array() && r->value.size() == at.size()) {
    for (size_t k = 0; k < at.size(); ++k)
      if (auto st = b.accept(at[k], r->value[k]); !st) return st;
    return {};
  }
  if (alone) {
    b.failed_alone(at.front(), *r);
    return {};
  }
  for (size_t i : at)
    if (auto st = run_batch_of(b, docs, {i}, true); !st) return st;
  return {};
}

}  // namespace

status run_batch(const js_batch& b, const std::vector<std::string>& docs) {
  std::vector<size_t> all(docs.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return run_batch_of(b, docs, all, false);
}

}  // namespace settee
