#include "js/engine.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

// SpiderMonkey's headers (stack.md section 9: never define DEBUG; C++17).
#include <js/Array.h>
#include <js/CompilationAndEvaluation.h>
#include <js/Context.h>
#include <js/Conversions.h>
#include <js/Exception.h>
#include <js/GlobalObject.h>
#include <js/Initialization.h>
#include <js/Interrupt.h>
#include <js/JSON.h>
#include <js/MemoryCallbacks.h>
#include <js/Principals.h>
#include <js/PropertyAndElement.h>
#include <js/SourceText.h>
#include <js/Stack.h>
#include <js/String.h>
#include <js/ValueArray.h>
#include <jsapi.h>

#include "js/json_text.hpp"
#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"

namespace settee::js {
namespace {

// CouchDB's environment around the natives (emit, log): written for settee, run once per realm.
// require() resolves CommonJS modules inside the design document: `require('lib/a')` from its
// root, `./b` and `../c` from the requiring module's place; a module runs once per realm.
const char* prelude = R"JS((function (global, ddoc, compileModule) {
  "use strict";
  var stringify = JSON.stringify, isArr = Array.isArray;
  var fail = function (name, reason) { return ["error", name, reason]; };
  global.toJSON = function (v) { return stringify(v); };
  global.isArray = function (v) { return isArr(v); };
  global.sum = function (values) {
    var s = 0;
    for (var i = 0; i < values.length; i++) s += values[i];
    return s;
  };
  var types = {};
  global.registerType = function (name) { types[name] = Array.prototype.slice.call(arguments, 1); };
  global.provides = function (type, fun) { return undefined; };
  var modules = {};
  function lookup(path, name) {
    var at = ddoc;
    for (var i = 0; i < path.length; i++) {
      if (at === null || typeof at !== "object" || !Object.prototype.hasOwnProperty.call(at, path[i]))
        throw fail("invalid_require_path", "Object has no property \"" + path[i] + "\". " + stringify(at));
      at = at[path[i]];
    }
    if (typeof at !== "string")
      throw fail("invalid_require_path", "Must require a JavaScript string, not: " + typeof at);
    return at;
  }
  function makeRequire(base) {
    return function require(name) {
      name = String(name);
      var path = name.charAt(0) === "." ? base.slice() : [];
      var parts = name.split("/");
      for (var i = 0; i < parts.length; i++) {
        var p = parts[i];
        if (p === "..") {
          if (path.length === 0) throw fail("invalid_require_path", "Object has no parent " + stringify(ddoc));
          path.pop();
        } else if (p !== "." && p !== "") {
          path.push(p);
        }
      }
      var id = path.join("/");
      if (Object.prototype.hasOwnProperty.call(modules, id)) return modules[id].exports;
      var source = lookup(path, name);
      var module = { id: id, exports: {} };
      modules[id] = module;
      try {
        compileModule(source, id).call(ddoc, module, module.exports, makeRequire(path.slice(0, -1)));
      } catch (e) {
        delete modules[id];
        if (isArr(e)) throw e;
        throw fail("compilation_error", "Module require('" + name + "') raised error " + String(e));
      }
      return module.exports;
    };
  }
  global.require = makeRequire([]);
}))JS";

JSClass global_class = {"global", JSCLASS_GLOBAL_FLAGS, &JS::DefaultGlobalClassOps, nullptr, nullptr, nullptr};

// eval() and new Function() are refused, as CouchDB's couchjs does by default: a function's code
// is what its design document says.
bool no_eval(JSContext*, JS::RuntimeCode, JS::HandleString) {
  return false;
}
const JSSecurityCallbacks security = {no_eval, nullptr};

size_t resident_bytes(int statm_fd) {
  char buf[128];
  ssize_t n = statm_fd >= 0 ? ::pread(statm_fd, buf, sizeof buf - 1, 0) : -1;
  if (n <= 0) return 0;
  buf[n] = 0;
  unsigned long size = 0, resident = 0;
  if (std::sscanf(buf, "%lu %lu", &size, &resident) != 2) return 0;
  return resident * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

}  // namespace

bool process_init(bool jit) {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [jit] {
    if (!jit) JS::DisableJitBackend();
    ok = JS_Init();
  });
  return ok;
}

struct engine::impl {
  struct scope {
    std::unique_ptr<JS::PersistentRootedObject> global, ddoc;
  };
  struct function {
    scope_id scope;
    std::unique_ptr<JS::PersistentRootedObject> fn;
  };

  limits lim;
  JSContext* cx = nullptr;
  std::map<scope_id, scope> scopes;
  std::map<fn_id, function> functions;
  scope_id next_scope = 1;
  fn_id next_fn = 1;
  int statm_fd = -1;

  // The command under way, as the watchdog sees it.
  std::mutex run_mu;
  std::condition_variable work;  // a command began (wakes a parked watchdog)
  bool running = false;
  bool watchdog_stop = false;
  mono::time_point deadline{};
  size_t rss_limit = 0;
  mono::time_point measured{};  // when rss_limit was set
  static constexpr std::chrono::milliseconds remeasure_every{20};
  std::atomic<bool> stop_timeout{false}, stop_memory{false};

  // What natives collect during a command.
  std::vector<std::string> logs;
  size_t logs_dropped = 0;
  bool emitted = false;
  std::string* emit_rows = nullptr;  // map_docs: where emit() writes "[k,v]" pairs, comma-separated
  bool emit_failed = false;          // a pair that could not be written (stringify failed)

  ~impl() {
    functions.clear();
    scopes.clear();
    if (cx) JS_DestroyContext(cx);
    if (statm_fd >= 0) ::close(statm_fd);
  }

  static impl* of(JSContext* cx) { return static_cast<impl*>(JS_GetContextPrivate(cx)); }

  const function* function_of(fn_id f) const {
    auto it = functions.find(f);
    return it == functions.end() ? nullptr : &it->second;
  }
  static outcome no_such_function() {
    outcome r;
    r.what = fault::internal;
    r.message = "no such function";
    return r;
  }

  // A command: armed for the watchdog from begin() to end(). The memory cap counts from the
  // resident size measured at the start of a command at most `remeasure_every` after the last
  // measure (reading /proc/self/statm took a tenth of a short call's time); the calls of one
  // command (call_each) keep it (`remeasure` false); a command after one that hit it measures again.
  void begin(bool remeasure = true) {
    {
      std::lock_guard<std::mutex> lock(run_mu);
      const auto now = mono::now();
      if ((remeasure && now - measured >= remeasure_every) || stop_memory || !rss_limit) {
        const size_t extra = lim.extra_rss_bytes ? lim.extra_rss_bytes : 4 * lim.heap_bytes;
        rss_limit = resident_bytes(statm_fd) + lim.heap_bytes + extra;
        measured = now;
      }
      stop_timeout = false;
      stop_memory = false;
      logs.clear();
      logs_dropped = 0;
      deadline = now + lim.timeout;
      running = true;
    }
    work.notify_one();
  }
  void end() {
    {
      std::lock_guard<std::mutex> lock(run_mu);
      running = false;
    }
    if (logs_dropped) logs.push_back(std::to_string(logs_dropped) + " more log lines dropped");
    // What a memory bomb left is given back now, or the next command would start out of memory.
    if (stop_memory) JS::NonIncrementalGC(cx, JS::GCOptions::Shrink, JS::GCReason::API);
  }

  // Text of a JS string (UTF-8); lone surrogates become U+FFFD.
  std::string utf8_of(JS::HandleString s) {
    JS::UniqueChars chars = JS_EncodeStringToUTF8(cx, s);
    return chars ? std::string(chars.get()) : std::string();
  }

  bool parse(const std::string& text, JS::MutableHandleValue out) {
    JS::RootedString s(cx, JS_NewStringCopyUTF8N(cx, JS::UTF8Chars(text.data(), text.size())));
    return s && JS_ParseJSON(cx, s, out);
  }

  // JSON text of `v` ("null" for undefined or a function); false when it cannot be converted
  // (a cycle, a BigInt) or grows past the heap cap.
  bool stringify(JS::MutableHandleValue v, std::string& out) {
    struct sink {
      std::u16string text;
      size_t cap;
    } s{{}, lim.heap_bytes};
    auto write = [](const char16_t* buf, uint32_t len, void* data) {
      auto* to = static_cast<sink*>(data);
      if (to->text.size() + len > to->cap) return false;
      to->text.append(buf, len);
      return true;
    };
    if (!JS_Stringify(cx, v, nullptr, JS::NullHandleValue, write, &s)) return false;
    out = s.text.empty() ? "null" : utf16_to_utf8_json(s.text);
    return true;
  }

  // The pending exception (or the stop that ended the run) as an outcome.
  outcome failure() {
    outcome r;
    if (stop_timeout || stop_memory) {
      JS_ClearPendingException(cx);
      r.what = stop_timeout ? fault::timeout : fault::memory;
      r.message = stop_timeout ? "the function ran longer than " + std::to_string(lim.timeout.count()) + " ms"
                               : "the function used more memory than allowed";
      return r;
    }
    JS::RootedValue exc(cx);
    if (!JS_IsExceptionPending(cx) || !JS_GetPendingException(cx, &exc)) {
      r.what = fault::internal;
      r.message = "the function stopped with an uncatchable error";
      return r;
    }
    JS_ClearPendingException(cx);
    r.what = fault::thrown;
    if (exc.isObject()) {
      JS::RootedObject obj(cx, &exc.toObject());
      if (JSErrorReport* report = JS_ErrorFromException(cx, obj)) {
        JS::RootedValue name(cx);
        if (JS_GetProperty(cx, obj, "name", &name) && name.isString()) {
          JS::RootedString ns(cx, name.toString());
          r.name = utf8_of(ns);
        }
        if (r.name.empty()) r.name = "Error";
        r.message = report->message() ? report->message().c_str() : "";
        JS_ClearPendingException(cx);
        return r;
      }
    }
    if (!stringify(&exc, r.value)) {
      JS_ClearPendingException(cx);
      JS::RootedString s(cx, JS::ToString(cx, exc));
      r.value = s ? quote(utf8_of(s)) : "null";
      JS_ClearPendingException(cx);
    }
    return r;
  }

  static bool on_interrupt(JSContext* cx) {
    impl* d = of(cx);
    return !(d->stop_timeout || d->stop_memory);  // false ends the run, uncatchably
  }
  static void on_oom(JSContext* cx, void*) {
    impl* d = of(cx);
    d->stop_memory = true;  // even if the function catches the exception, the command fails
    JS_RequestInterruptCallback(cx);
  }

  // `row` (an array emit() or index() made) as JSON after the rows written so far, comma-separated;
  // false when it could not be made or stringified (a cycle, a throwing toJSON: the call throws).
  static bool append_row(JSContext* cx, impl* d, JSObject* row) {
    if (!row) return false;
    JS::RootedValue v(cx, JS::ObjectValue(*row));
    std::string text;
    if (!d->stringify(&v, text)) return false;
    if (!d->emit_rows->empty()) d->emit_rows->push_back(',');
    d->emit_rows->append(text);
    return true;
  }
  static bool native_emit(JSContext* cx, unsigned argc, JS::Value* vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    impl* d = of(cx);
    d->emitted = true;
    args.rval().setUndefined();
    if (!d->emit_rows) return true;
    // [key, value] as JSON (undefined in an array is null, as CouchDB's JSON.stringify of it).
    JS::RootedValueArray<2> pair(cx);
    pair[0].set(args.get(0));
    pair[1].set(args.get(1));
    return append_row(cx, d, JS::NewArrayObject(cx, pair));
  }
  // index(...) of a search index function (Nouveau's index(type, name, value, options), Clouseau's
  // index(name, value, options)): its arguments as one JSON array, written where emit() writes.
  static bool native_index(JSContext* cx, unsigned argc, JS::Value* vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    impl* d = of(cx);
    d->emitted = true;
    args.rval().setUndefined();
    if (!d->emit_rows) return true;
    JS::RootedValueVector given(cx);
    for (unsigned i = 0; i < std::min(argc, 4u); ++i)
      if (!given.append(args.get(i))) return false;
    return append_row(cx, d, JS::NewArrayObject(cx, given));
  }
  static bool native_log(JSContext* cx, unsigned argc, JS::Value* vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    impl* d = of(cx);
    args.rval().setUndefined();
    if (d->logs.size() >= d->lim.max_log_lines) {
      ++d->logs_dropped;
      return true;
    }
    std::string line;
    JS::RootedValue v(cx, args.get(0));
    if (v.isString()) {
      JS::RootedString s(cx, v.toString());
      line = d->utf8_of(s);
    } else if (!d->stringify(&v, line)) {
      return false;
    }
    if (line.size() > 64 * 1024) line.resize(64 * 1024);
    d->logs.push_back(std::move(line));
    return true;
  }
  // compileModule(source, id): a CommonJS module's body as function (module, exports, require).
  static bool native_compile_module(JSContext* cx, unsigned argc, JS::Value* vp) {
    JS::CallArgs args = JS::CallArgsFromVp(argc, vp);
    impl* d = of(cx);
    if (!args.get(0).isString()) {
      JS_ReportErrorASCII(cx, "a module must be a string");
      return false;
    }
    JS::RootedString src(cx, args[0].toString());
    std::string text = d->utf8_of(src), id = "require";
    if (args.get(1).isString()) {
      JS::RootedString ids(cx, args[1].toString());
      id = d->utf8_of(ids);
    }
    JS::SourceText<mozilla::Utf8Unit> source;
    if (!source.init(cx, text.data(), text.size(), JS::SourceOwnership::Borrowed)) return false;
    JS::CompileOptions opts(cx);
    opts.setFileAndLine(id.c_str(), 1);
    const char* names[] = {"module", "exports", "require"};
    JS::RootedObjectVector env(cx);
    JSFunction* fn = JS::CompileFunction(cx, env, opts, "module", 3, names, source);
    if (!fn) return false;
    args.rval().setObject(*JS_GetFunctionObject(fn));
    return true;
  }
};

engine::engine(const limits& lim) : d_(std::make_unique<impl>()) {
  d_->lim = lim;
  d_->statm_fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  JSContext* cx = JS_NewContext(static_cast<uint32_t>(lim.heap_bytes));
  if (!cx) return;
  d_->cx = cx;
  // Below the worker thread's stack (js/worker_main.cpp gives it stack_bytes): deep recursion is a
  // catchable "too much recursion", never a SIGSEGV.
  JS_SetNativeStackQuota(cx, stack_bytes - (1u << 20));
  if (!JS::InitSelfHostedCode(cx)) {
    JS_DestroyContext(cx);
    d_->cx = nullptr;
    return;
  }
  JS_SetContextPrivate(cx, d_.get());
  JS_SetGCParameter(cx, JSGC_MAX_BYTES, static_cast<uint32_t>(lim.heap_bytes));
  JS_AddInterruptCallback(cx, &impl::on_interrupt);
  JS::SetOutOfMemoryCallback(cx, &impl::on_oom, nullptr);
  JS_SetSecurityCallbacks(cx, &security);
}

engine::~engine() = default;

bool engine::ready() const {
  return d_->cx != nullptr;
}

outcome engine::open_scope(const std::string& ddoc_json, scope_id& out) {
  JSContext* cx = d_->cx;
  JS::RealmOptions options;
  options.creationOptions().setNewCompartmentAndZone();
  options.creationOptions().setToSourceEnabled(true);  // uneval()/toSource(), as CouchDB has them
  JS::RootedObject global(cx, JS_NewGlobalObject(cx, &global_class, nullptr, JS::FireOnNewGlobalHook, options));
  outcome r;
  if (!global) {
    r.what = fault::internal;
    r.message = "cannot make a realm";
    return r;
  }
  JSAutoRealm realm(cx, global);
  d_->begin();
  JS::RootedValue ddoc(cx);
  bool ok = JS::InitRealmStandardClasses(cx) && JS_DefineFunction(cx, global, "emit", &impl::native_emit, 2, 0) &&
            JS_DefineFunction(cx, global, "index", &impl::native_index, 4, 0) &&
            JS_DefineFunction(cx, global, "log", &impl::native_log, 1, 0) && d_->parse(ddoc_json, &ddoc) &&
            ddoc.isObject();
  if (ok) {
    JS::CompileOptions opts(cx);
    opts.setFileAndLine("settee:prelude", 1);
    JS::SourceText<mozilla::Utf8Unit> src;
    JS::RootedValue fn(cx), ignored(cx);
    ok = src.init(cx, prelude, std::strlen(prelude), JS::SourceOwnership::Borrowed) && JS::Evaluate(cx, opts, src, &fn);
    JSFunction* compile_module = ok ? JS_NewFunction(cx, &impl::native_compile_module, 2, 0, "compileModule") : nullptr;
    if (compile_module) {
      JS::RootedValueArray<3> argv(cx);
      argv[0].setObject(*global);
      argv[1].set(ddoc);
      argv[2].setObject(*JS_GetFunctionObject(compile_module));
      ok = JS::Call(cx, JS::UndefinedHandleValue, fn, argv, &ignored);
    } else {
      ok = false;
    }
  }
  if (!ok) {
    r = d_->failure();
    if (r.what == fault::internal && !ddoc.isObject()) r.message = "the design document is not a JSON object";
    d_->end();
    return r;
  }
  d_->end();
  impl::scope s;
  s.global = std::make_unique<JS::PersistentRootedObject>(cx, global);
  s.ddoc = std::make_unique<JS::PersistentRootedObject>(cx, &ddoc.toObject());
  out = d_->next_scope++;
  d_->scopes.emplace(out, std::move(s));
  return r;
}

void engine::close_scope(scope_id s) {
  for (auto it = d_->functions.begin(); it != d_->functions.end();)
    it = it->second.scope == s ? d_->functions.erase(it) : std::next(it);
  d_->scopes.erase(s);
  JS_MaybeGC(d_->cx);
}

namespace {

bool compiles(JSContext* cx, const std::string& text, const char* where) {
  JS::SourceText<mozilla::Utf8Unit> src;
  JS::CompileOptions opts(cx);
  opts.setFileAndLine(where, 1);
  const bool ok =
      src.init(cx, text.data(), text.size(), JS::SourceOwnership::Borrowed) && JS::Compile(cx, opts, src) != nullptr;
  JS_ClearPendingException(cx);
  return ok;
}

// A source that is no expression, as couchjs takes it (share/server/60/rewrite_fun.js): a program
// whose last function declaration is made an expression, evaluated for its value. So
// "function(doc) {...};", statements before the function, or comments after it; a named one too
// (couchjs leaves a named declaration alone, so its program has no value: refused there). The
// function is found by trying each `function` from the last with each `}` after it (at most 256
// parses, only for sources the expression form refused); else the source as it is; nullopt when
// no form parses.
std::optional<std::string> program_form(JSContext* cx, const std::string& source, const char* where) {
  size_t tries = 0;
  for (size_t i = source.rfind("function"); i != std::string::npos;
       i = i == 0 ? std::string::npos : source.rfind("function", i - 1)) {
    for (size_t j = source.rfind('}'); j != std::string::npos && j > i;
         j = j == 0 ? std::string::npos : source.rfind('}', j - 1)) {
      if (++tries > 256) return std::nullopt;
      std::string text = source.substr(0, i) + "(" + source.substr(i, j + 1 - i) + ")" + source.substr(j + 1);
      if (compiles(cx, text, where)) return text;
    }
  }
  if (compiles(cx, source, where)) return source;  // a program without one: its value, if any
  return std::nullopt;
}

}  // namespace

outcome engine::compile(scope_id s, const std::string& source, const std::string& where, fn_id& out) {
  JSContext* cx = d_->cx;
  outcome r;
  auto sc = d_->scopes.find(s);
  if (sc == d_->scopes.end()) {
    r.what = fault::internal;
    r.message = "no such scope";
    return r;
  }
  JSAutoRealm realm(cx, *sc->second.global);
  // A bare function expression is not a script: evaluated in parentheses, with newlines so that a
  // trailing `//` comment cannot swallow the `)`, and line 1 is the source's first line.
  const std::string wrapped = "(\n" + source + "\n)";
  JS::CompileOptions opts(cx);
  opts.setFileAndLine(where.c_str(), 0);
  JS::SourceText<mozilla::Utf8Unit> src;
  JS::RootedValue fn(cx);
  d_->begin();
  bool ok =
      src.init(cx, wrapped.data(), wrapped.size(), JS::SourceOwnership::Borrowed) && JS::Evaluate(cx, opts, src, &fn);
  if (!ok) r = d_->failure();
  if (!ok && r.what == fault::thrown && r.name == "SyntaxError") {
    // Not an expression: the program couchjs would run instead, if there is one.
    if (auto text = program_form(cx, source, where.c_str())) {
      JS::SourceText<mozilla::Utf8Unit> program;
      JS::CompileOptions popts(cx);
      popts.setFileAndLine(where.c_str(), 1);
      ok = program.init(cx, text->data(), text->size(), JS::SourceOwnership::Borrowed) &&
           JS::Evaluate(cx, popts, program, &fn);
      r = ok ? outcome{} : d_->failure();  // its value, or what running it threw, or its deadline
    }
  }
  if (!ok) {
    if (r.what == fault::thrown) {
      // A source that is a program but no expression (only a comment, statements) is CouchDB's
      // "does not eval to a function"; anything else, the syntax error.
      const bool program = compiles(cx, source, where.c_str());
      r.what = fault::compilation;
      r.message = program ? "Expression does not eval to a function. (" + source + ")"
                          : (r.name.empty() ? std::string() : r.name + ": ") + r.message + " (" + source + ")";
      r.name.clear();
    }
    d_->end();
    return r;
  }
  d_->end();
  if (!fn.isObject() || !JS_ObjectIsFunction(&fn.toObject())) {
    r.what = fault::compilation;
    r.message = "Expression does not eval to a function. (" + source + ")";
    return r;
  }
  impl::function f;
  f.scope = s;
  f.fn = std::make_unique<JS::PersistentRootedObject>(cx, &fn.toObject());
  out = d_->next_fn++;
  d_->functions.emplace(out, std::move(f));
  return r;
}

outcome engine::call(fn_id f, const std::string& args_json) {
  JSContext* cx = d_->cx;
  outcome r;
  const impl::function* fi = d_->function_of(f);
  if (!fi) return impl::no_such_function();
  const auto& sc = d_->scopes.at(fi->scope);
  JSAutoRealm realm(cx, *sc.global);
  d_->begin();
  JS::RootedValue args(cx), fn(cx, JS::ObjectValue(**fi->fn)), rval(cx);
  JS::RootedObject self(cx, *sc.ddoc);
  bool is_array = false;
  bool ok = d_->parse(args_json, &args) && args.isObject() && JS::IsArrayObject(cx, args, &is_array) && is_array;
  if (ok) {
    JS::RootedObject arr(cx, &args.toObject());
    uint32_t n = 0;
    JS::RootedValueVector argv(cx);
    ok = JS::GetArrayLength(cx, arr, &n);
    for (uint32_t i = 0; ok && i < n; ++i) {
      JS::RootedValue a(cx);
      ok = JS_GetElement(cx, arr, i, &a) && argv.append(a);
    }
    ok = ok && JS::Call(cx, self, fn, JS::HandleValueArray(argv), &rval) && d_->stringify(&rval, r.value);
  }
  // Out of memory fails the call even when the function caught the exception and returned.
  if (!ok || d_->stop_memory || d_->stop_timeout) r = d_->failure();
  d_->end();
  return r;
}

std::vector<outcome> engine::call_each(fn_id f, const std::string& calls_json) {
  JSContext* cx = d_->cx;
  std::vector<outcome> out;
  const impl::function* fi = d_->function_of(f);
  if (!fi) return {impl::no_such_function()};
  const auto& sc = d_->scopes.at(fi->scope);
  JSAutoRealm realm(cx, *sc.global);
  JS::RootedValue calls(cx), fn(cx, JS::ObjectValue(**fi->fn)), one(cx), rval(cx);
  JS::RootedObject self(cx, *sc.ddoc), list(cx), args(cx);
  bool is_array = false;
  uint32_t n = 0;
  d_->begin();
  bool ok = d_->parse(calls_json, &calls) && calls.isObject() && JS::IsArrayObject(cx, calls, &is_array) && is_array;
  if (ok) {
    list = &calls.toObject();
    ok = JS::GetArrayLength(cx, list, &n);
  }
  if (!ok) {
    out.push_back(d_->failure());
    if (out.back().what == fault::internal) out.back().message = "the body is not an array of argument arrays";
    d_->end();
    return out;
  }
  d_->end();
  for (uint32_t i = 0; i < n; ++i) {
    d_->begin(false);  // each call its own deadline
    outcome r;
    uint32_t count = 0;
    JS::RootedValueVector argv(cx);
    bool good = JS_GetElement(cx, list, i, &one) && one.isObject() && JS::IsArrayObject(cx, one, &is_array) && is_array;
    if (good) {
      args = &one.toObject();
      good = JS::GetArrayLength(cx, args, &count);
      for (uint32_t k = 0; good && k < count; ++k) {
        JS::RootedValue a(cx);
        good = JS_GetElement(cx, args, k, &a) && argv.append(a);
      }
      good = good && JS::Call(cx, self, fn, JS::HandleValueArray(argv), &rval) && d_->stringify(&rval, r.value);
    }
    if (!good || d_->stop_memory || d_->stop_timeout) r = d_->failure();
    d_->end();
    r.logs = take_logs();
    out.push_back(std::move(r));
  }
  return out;
}

outcome engine::each_doc(fn_id f, const std::string& body_json, bool emitted, std::vector<bool>& passed,
                         std::vector<std::string>& errors) {
  JSContext* cx = d_->cx;
  outcome r;
  passed.clear();
  errors.clear();
  const impl::function* fi = d_->function_of(f);
  if (!fi) return impl::no_such_function();
  const auto& sc = d_->scopes.at(fi->scope);
  JSAutoRealm realm(cx, *sc.global);
  d_->begin();
  JS::RootedValue body(cx), docs(cx), fn(cx, JS::ObjectValue(**fi->fn)), rval(cx);
  JS::RootedObject self(cx, *sc.ddoc), parts(cx), arr(cx);
  JS::RootedValueVector argv(cx);
  bool is_array = false;
  uint32_t n = 0, count = 0;
  bool ok = d_->parse(body_json, &body) && body.isObject() && JS::IsArrayObject(cx, body, &is_array) && is_array;
  if (ok) {
    parts = &body.toObject();
    ok = JS::GetArrayLength(cx, parts, &count) && count >= 1 && JS_GetElement(cx, parts, 0, &docs) && docs.isObject() &&
         JS::IsArrayObject(cx, docs, &is_array) && is_array && argv.resize(count);
    for (uint32_t i = 1; ok && i < count; ++i) ok = JS_GetElement(cx, parts, i, argv[i]);
  }
  if (ok) {
    arr = &docs.toObject();
    ok = JS::GetArrayLength(cx, arr, &n);
  }
  for (uint32_t i = 0; ok && i < n; ++i) {
    if (!JS_GetElement(cx, arr, i, argv[0])) {
      ok = false;
      break;
    }
    d_->emitted = false;
    if (JS::Call(cx, self, fn, JS::HandleValueArray(argv), &rval)) {
      passed.push_back(emitted ? d_->emitted : JS::ToBoolean(rval));
      continue;
    }
    outcome one = d_->failure();
    if (one.what == fault::timeout || one.what == fault::memory || one.what == fault::internal) {
      r = one;
      break;
    }
    passed.push_back(false);
    errors.push_back(one.name.empty() ? one.value : one.name + ": " + one.message);
  }
  if (!ok || d_->stop_memory || d_->stop_timeout) {
    r = d_->failure();
    if (r.what == fault::internal) r.message = "the body is not [docs, ...]";
  }
  SETTEE_CHECK(!r.ok() || passed.size() == n);  // the worker answers the call it was given: one per document
  d_->end();
  return r;
}

outcome engine::map_docs(const std::vector<fn_id>& fns, const std::string& docs_json, std::string& rows,
                         std::vector<std::string>& errors) {
  JSContext* cx = d_->cx;
  outcome r;
  rows = "[";
  errors.clear();
  std::vector<const impl::function*> fs;
  for (fn_id f : fns) {
    fs.push_back(d_->function_of(f));
    if (!fs.back()) return impl::no_such_function();
  }
  if (fs.empty()) return impl::no_such_function();
  const auto& sc = d_->scopes.at(fs.front()->scope);
  JSAutoRealm realm(cx, *sc.global);
  d_->begin();
  JS::RootedValue body(cx), doc(cx), rval(cx), fn(cx), id(cx);
  JS::RootedObject self(cx, *sc.ddoc), arr(cx), doc_obj(cx);
  bool is_array = false;
  uint32_t n = 0;
  bool ok = d_->parse(docs_json, &body) && body.isObject() && JS::IsArrayObject(cx, body, &is_array) && is_array;
  if (ok) {
    arr = &body.toObject();
    ok = JS::GetArrayLength(cx, arr, &n);
  }
  d_->end();
  std::string emitted;
  for (uint32_t i = 0; ok && i < n; ++i) {
    d_->begin(false);  // each document its own deadline
    ok = JS_GetElement(cx, arr, i, &doc) && doc.isObject();
    if (ok) {
      doc_obj = &doc.toObject();
      ok = JS_DeepFreezeObject(cx, doc_obj);
    }
    std::string doc_id = "?";
    if (ok && JS_GetProperty(cx, doc_obj, "_id", &id) && id.isString()) {
      JS::RootedString ids(cx, id.toString());
      doc_id = d_->utf8_of(ids);
    }
    rows += i ? ",[" : "[";
    for (size_t k = 0; ok && k < fs.size(); ++k) {
      fn.setObject(**fs[k]->fn);
      emitted.clear();
      d_->emit_rows = &emitted;
      const bool called = JS::Call(cx, self, fn, JS::HandleValueArray(doc), &rval);
      d_->emit_rows = nullptr;
      if (!called) {
        outcome one = d_->failure();
        if (one.what == fault::timeout || one.what == fault::memory || one.what == fault::internal) {
          r = one;
          ok = false;
          break;
        }
        errors.push_back(doc_id + ": " + (one.name.empty() ? one.value : one.name + ": " + one.message));
        emitted.clear();  // as couchjs: a document a function threw on emitted nothing
      }
      rows += (k ? ",[" : "[") + emitted + "]";
    }
    rows += "]";
    if (d_->stop_memory || d_->stop_timeout) ok = false;
    d_->end();
  }
  rows += "]";
  if (!ok) {
    if (r.ok()) r = d_->failure();
    if (r.what == fault::internal) r.message = "the body is not an array of documents";
    rows.clear();
  }
  return r;
}

std::vector<std::string> engine::take_logs() {
  return std::move(d_->logs);
}

void engine::shrink() {
  JS::NonIncrementalGC(d_->cx, JS::GCOptions::Shrink, JS::GCReason::API);
}

bool engine::watchdog_tick() {
  std::lock_guard<std::mutex> lock(d_->run_mu);
  if (!d_->running || !d_->cx) return false;
  if (mono::now() >= d_->deadline) {
    d_->stop_timeout = true;
  } else if (d_->rss_limit && resident_bytes(d_->statm_fd) > d_->rss_limit) {
    d_->stop_memory = true;
  } else {
    return true;
  }
  JS_RequestInterruptCallback(d_->cx);
  return true;
}

watchdog::watchdog(engine& e) : e_(e) {
  thread_ = std::thread([this] {
    constexpr auto tick = std::chrono::milliseconds(2);
    constexpr auto park_after = std::chrono::milliseconds(200);  // of idleness
    engine::impl& d = *e_.d_;
    auto busy = mono::now();
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(d.run_mu);
        if (!d.running && mono::now() - busy > park_after)
          d.work.wait(lock, [&] { return d.running || d.watchdog_stop; });
        if (d.watchdog_stop) return;
      }
      std::this_thread::sleep_for(tick);
      if (e_.watchdog_tick()) busy = mono::now();
    }
  });
}

watchdog::~watchdog() {
  {
    std::lock_guard<std::mutex> lock(e_.d_->run_mu);
    e_.d_->watchdog_stop = true;
  }
  e_.d_->work.notify_all();
  thread_.join();
}

}  // namespace settee::js
