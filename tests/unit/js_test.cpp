// The JavaScript worker's parts, in their own test binary (js_tests: it links SpiderMonkey, which
// the node and unit_tests never do): the engine's environment and limits, the protocol, the sandbox.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "js/engine.hpp"
#include "js/json_text.hpp"
#include "js/query_server.hpp"
#include "js/sandbox.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"

using namespace settee::js;
using nlohmann::json;

namespace {

// Runs `body` on a thread with the stack an engine needs (js/worker_main.cpp does the same).
void on_engine_thread(const std::function<void()>& body) {
  struct arg {
    const std::function<void()>* body;
  } a{&body};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack_bytes);
  pthread_t t;
  REQUIRE(pthread_create(
              &t, &attr,
              [](void* p) -> void* {
                try {
                  (*static_cast<arg*>(p)->body)();
                } catch (...) {  // a REQUIRE that failed: doctest recorded it already
                }
                return nullptr;
              },
              &a) == 0);
  pthread_join(t, nullptr);
}

// An engine with its watchdog, as the worker runs it.
struct harness {
  engine e;
  watchdog guard{e};
  explicit harness(limits lim = {}) : e(lim) {}
  engine::scope_id scope(const std::string& ddoc = "{}") {
    engine::scope_id s = 0;
    auto r = e.open_scope(ddoc, s);
    REQUIRE_MESSAGE(r.ok(), r.message);
    return s;
  }
  outcome run(engine::scope_id s, const std::string& src, const std::string& args = "[]") {
    engine::fn_id f = 0;
    outcome c = e.compile(s, src, "test", f);
    if (!c.ok()) return c;
    return e.call(f, args);
  }
};

limits quick() {
  limits l;
  l.timeout = std::chrono::milliseconds(300);
  l.heap_bytes = 32u << 20;
  return l;
}

}  // namespace

TEST_CASE("UTF-16 JSON text becomes strict UTF-8: lone surrogates, raw or escaped, are U+FFFD") {
  CHECK(utf16_to_utf8_json(u"\"abc\"") == "\"abc\"");
  CHECK(utf16_to_utf8_json(u"\"\u00e9\u4e2d\"") == "\"\xc3\xa9\xe4\xb8\xad\"");
  CHECK(utf16_to_utf8_json(u"\"\U0001F600\"") == "\"\xf0\x9f\x98\x80\"");
  std::u16string lone = u"\"x";
  lone += static_cast<char16_t>(0xD800);
  lone += u"\"";
  CHECK(utf16_to_utf8_json(lone) == "\"x\xef\xbf\xbd\"");
  CHECK(utf16_to_utf8_json(u"\"\\ud800x\"") == "\"\\ufffdx\"");
  CHECK(utf16_to_utf8_json(u"\"\\udc00\"") == "\"\\ufffd\"");
  CHECK(utf16_to_utf8_json(u"\"\\ud83d\\ude00\"") == "\"\\ud83d\\ude00\"");  // a pair stays
  CHECK(utf16_to_utf8_json(u"\"\\\\ud800\"") == "\"\\\\ud800\"");            // an escaped backslash
  CHECK(json::parse(utf16_to_utf8_json(u"[\"\\ud800\",\"\\\\\\udfff\"]")) ==
        json::array({"\xef\xbf\xbd", "\\\xef\xbf\xbd"}));
  CHECK(settee::quote("a\"b\\\n\x01") == "\"a\\\"b\\\\\\n\\u0001\"");
}

TEST_CASE("CouchDB's environment: bare functions, this is the design document, emit/log/sum/toJSON/isArray") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope(R"({"_id":"_design/d","answer":42})");
    CHECK(h.run(s, "function(){ return this.answer; }").value == "42");
    CHECK(h.run(s, "function(a, b) { return [a, b]; } // trailing comment", "[1,\"x\"]").value == "[1,\"x\"]");
    CHECK(h.run(s, "(doc) => doc.n * 2", "[{\"n\":21}]").value == "42");
    CHECK(h.run(s, "function(){ return sum([1,2,3.5]); }").value == "6.5");
    CHECK(h.run(s, "function(){ return toJSON({a:[1]}); }").value == "\"{\\\"a\\\":[1]}\"");
    CHECK(h.run(s, "function(){ return [isArray([]), isArray({})]; }").value == "[true,false]");
    CHECK(h.run(s, "function(){ return undefined; }").value == "null");
    CHECK(h.run(s, "function(){ var m = /(\\d+)/.exec('ab12'); return RegExp.$1; }").value == "\"12\"");
    CHECK(h.run(s, "function(){ return new Date('2025-07-21T22:00:00Z').getTime(); }").value == "1753135200000");
    outcome r = h.run(s, "function(){ log('one'); log({two: 2}); return 1; }");
    CHECK(r.value == "1");
    CHECK(h.e.take_logs() == std::vector<std::string>{"one", "{\"two\":2}"});
  });
}

TEST_CASE("compilation errors: CouchDB's texts; eval and new Function are refused") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope();
    engine::fn_id f = 0;
    outcome r = h.e.compile(s, "function(doc) { emit(doc._id ", "views.v.map", f);
    CHECK(r.what == fault::compilation);
    CHECK(r.message.find("SyntaxError") == 0);
    CHECK(r.message.find("(function(doc) { emit(doc._id )") != std::string::npos);
    r = h.e.compile(s, "// Invalid function", "x", f);  // CouchDB's text for a program that is no expression
    CHECK(r.message == "Expression does not eval to a function. (// Invalid function)");
    r = h.e.compile(s, "42", "x", f);
    CHECK(r.what == fault::compilation);
    CHECK(r.message == "Expression does not eval to a function. (42)");
    // What couchjs takes besides an expression (issue 51): a program whose last anonymous function
    // is its value.
    for (const char* ok :
         {"function(doc) { return 7; };", "function(doc) { return 7; }  ;  // the end\n",
          "var seven = 7;\nfunction(doc) { return seven; }",
          "function(doc) { var f = function(x) { return x; }; return f(7); };",
          "/* a comment */ function named(doc) { return 7; };",
          "function(doc) { if (doc) { return 7; } return 7; }\n;\n", "var f = function(doc) { return 7; }; f"}) {
      r = h.e.compile(s, ok, "x", f);
      const std::string what = std::string(ok) + " -> " + r.message;
      INFO(what);
      REQUIRE(r.what == fault::none);
      CHECK(h.e.call(f, "[{}]").value == "7");
    }
    for (const char* bad : {"function(doc) { return 7; };;}", "var x = 1;", "function(doc) {"}) {
      const std::string what = bad;
      INFO(what);
      CHECK(h.e.compile(s, bad, "x", f).what == fault::compilation);
    }
    CHECK(h.e.compile(s, "var x = 1;", "x", f).message == "Expression does not eval to a function. (var x = 1;)");
    r = h.run(s, "function(){ return eval('1+1'); }");
    CHECK(r.what == fault::thrown);
    CHECK(r.name == "EvalError");
    r = h.run(s, "function(){ return new Function('return 1')(); }");
    CHECK(r.what == fault::thrown);
  });
}

TEST_CASE("what a function throws: objects as JSON, Errors by name and message") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope();
    outcome r = h.run(s, "function(){ throw({forbidden: 'no'}); }");
    CHECK(r.what == fault::thrown);
    CHECK(r.value == "{\"forbidden\":\"no\"}");
    r = h.run(s, "function(){ throw 'boom'; }");
    CHECK(r.value == "\"boom\"");
    r = h.run(s, "function(){ throw undefined; }");
    CHECK(r.what == fault::thrown);
    r = h.run(s, "function(doc){ return doc.a.b; }", "[{}]");
    CHECK(r.name == "TypeError");
    CHECK(r.message == "doc.a is undefined");
    r = h.run(s, "function(){ var o = {}; o.o = o; throw o; }");  // cannot be JSON: its text
    CHECK(r.value == "\"[object Object]\"");
  });
}

TEST_CASE("require(): CommonJS modules of the design document, relative paths, once per realm") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope(R"({"lib":{"a":"exports.n = (exports.n || 0) + 1; exports.b = require('./b').v;",
                        "b":"exports.v = require('../top').t;"},
                  "top":"exports.t = 'top';", "views":{"lib":{"c":"module.exports = 'c';"}},
                  "bad":"exports.x = ;", "num": 5})");
    CHECK(h.run(s, "function(){ var a = require('lib/a'); return [a.n, a.b, require('lib/a').n]; }").value ==
          "[1,\"top\",1]");
    CHECK(h.run(s, "function(){ return require('views/lib/c'); }").value == "\"c\"");
    outcome r = h.run(s, "function(){ return require('lib/missing'); }");
    CHECK(r.what == fault::thrown);
    CHECK(r.value.find("[\"error\",\"invalid_require_path\",\"Object has no property \\\"missing\\\"") == 0);
    r = h.run(s, "function(){ return require('num'); }");
    CHECK(r.value == "[\"error\",\"invalid_require_path\",\"Must require a JavaScript string, not: number\"]");
    r = h.run(s, "function(){ return require('bad'); }");
    CHECK(r.value.find("[\"error\",\"compilation_error\",\"Module require('bad') raised error SyntaxError") == 0);
    r = h.run(s, "function(){ return require('../x'); }");
    CHECK(r.value.find("invalid_require_path") != std::string::npos);
  });
}

TEST_CASE("hostile functions are stopped and the engine goes on") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope();
    CHECK(h.run(s, "function(){ while(true){} }").what == fault::timeout);
    CHECK(h.run(s, "function(){ for(;;){ try { for(;;){} } catch(e) {} finally { continue; } } }").what ==
          fault::timeout);
    CHECK(h.run(s, "function(){ return /(a+)+$/.test('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'); }").what ==
          fault::timeout);
    outcome r = h.run(s, "function f(){ return f() + 1; }");
    CHECK(r.name == "InternalError");  // too much recursion: an error, never a crash
    r = h.run(s, "function(){ var s = 'x'; for(;;) s += s; }");
    CHECK(!r.ok());
    r = h.run(s, "function(){ var n = 0; for (var i = 0; i < 20000; i++) { log(i); n++; } return n; }");
    CHECK_MESSAGE(r.value == "20000", static_cast<int>(r.what), " ", r.name, " ", r.message);
    auto logs = h.e.take_logs();
    CHECK(logs.size() == 101);  // max_log_lines, then how many were dropped
    CHECK((!logs.empty() && logs.back() == "19900 more log lines dropped"));
    h.e.shrink();
    CHECK(h.run(s, "function(){ return 'still here'; }").value == "\"still here\"");
  });
}

// Context switches of this process's threads other than the caller (/proc/self/task).
long other_threads_switches() {
  long total = 0;
  const std::string self = std::to_string(gettid());
  for (const auto& t : std::filesystem::directory_iterator("/proc/self/task")) {
    if (t.path().filename() == self) continue;
    std::ifstream status(t.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) total += std::stol(line.substr(24));
  }
  return total;
}

TEST_CASE("the watchdog parks while the engine is idle, and wakes for the next command") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope();
    CHECK(h.run(s, "function(){ return 1; }").value == "1");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // idle longer than it waits to park
    const long before = other_threads_switches();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    // A watchdog ticking every 2 ms would have switched ~150 times.
    CHECK(other_threads_switches() - before < 20);
    CHECK(h.run(s, "function(){ while(true){} }").what == fault::timeout);
    CHECK(h.run(s, "function(){ return 2; }").value == "2");
  });
}

TEST_CASE("memory bombs are stopped by the heap cap or the resident-set watchdog, and memory comes back") {
  on_engine_thread([] {
    // The caps must stop these, whatever the machine's load: the monotonic clock stands still, so
    // the call's deadline never comes (the test waits for the state it checks, not for a time).
    settee::mono::manual frozen;
    frozen.install();
    limits roomy = quick();
    roomy.extra_rss_bytes = 16u << 20;
    harness h(roomy);
    auto s = h.scope();
    CHECK(h.run(s, "function(){ var a = []; for(;;) a.push([1,2,3,{x:'y'}]); }").what == fault::memory);
    outcome r =
        h.run(s, "function(){ var a = []; try { for(;;) a.push([1,2,3,{x:'y'}]); } catch (e) { return 'caught'; } }");
    CHECK(r.what == fault::memory);  // out of memory fails the call even when the function catches it
    // Outside the GC heap (array elements are malloc'd): the resident-set watchdog stops it.
    r = h.run(s, "function(){ var a = []; for(;;) a.push(new Array(100000).fill(1.5)); }");
    CHECK(r.what == fault::memory);
    CHECK(h.run(s, "function(){ var a = []; for (var i = 0; i < 1000; i++) a.push({i: i}); return a.length; }").value ==
          "1000");
  });
}

TEST_CASE("a design document's realm is its own: tampering and globals do not reach another one") {
  on_engine_thread([] {
    harness h(quick());
    auto a = h.scope(), b = h.scope();
    CHECK(h.run(a, "function(){ Object.prototype.evil = 1; JSON.stringify = null; counter = 1; return 1; }").ok());
    CHECK(h.run(a, "function(){ counter++; return counter; }").value == "2");  // state kept within a realm
    CHECK(h.run(b, "function(){ return [({}).evil === undefined, typeof JSON.stringify, typeof counter]; }").value ==
          "[true,\"function\",\"undefined\"]");
  });
}

TEST_CASE("filters over documents: truthiness, a throwing document counts as false, emit for views") {
  on_engine_thread([] {
    harness h(quick());
    auto s = h.scope();
    engine::fn_id f = 0, m = 0;
    REQUIRE(h.e.compile(s, "function(doc, req){ return doc.t === req.query.t ? 1 : doc.x.y; }", "f", f).ok());
    std::vector<bool> passed;
    std::vector<std::string> errors;
    outcome r =
        h.e.each_doc(f, R"([[{"t":"a"},{"t":"b","x":{"y":0}},{"t":"c"}],{"query":{"t":"a"}}])", false, passed, errors);
    CHECK(r.ok());
    CHECK(passed == std::vector<bool>{true, false, false});
    CHECK(errors == std::vector<std::string>{"TypeError: doc.x is undefined"});
    REQUIRE(h.e.compile(s, "function(doc){ if (doc.t === 'a') emit(doc.t, null); }", "m", m).ok());
    r = h.e.each_doc(m, R"([[{"t":"a"},{"t":"b"}]])", true, passed, errors);
    CHECK(passed == std::vector<bool>{true, false});
    r = h.e.each_doc(m, R"({"not":"an array"})", true, passed, errors);
    CHECK(r.what == fault::internal);
  });
}

TEST_CASE("map: every view's emits per document, frozen documents, errors skip only that document") {
  on_engine_thread([] {
    harness h(quick());
    query_server qs(h.e, 4);
    const std::string ddoc = R"({"_id":"_design/v","views":{
        "by_type":{"map":"function(doc){ if (doc.type) emit(doc.type, 1); }"},
        "pairs":{"map":"function(doc){ emit([doc._id, 0], null); emit([doc._id, 1], {n: doc.n}); }"},
        "mutate":{"map":"function(doc){ doc.type = 'changed'; emit(doc.type, null); }"},
        "throws":{"map":"function(doc){ if (doc.n === 2) throw({error: 'bad'}); emit(doc.n, undefined); }"},
        "odd":{"map":"function(doc){ emit(undefined, function(){}); emit(doc.n / 0, -0); }"}}})";
    CHECK(qs.handle(R"(["ddoc","new","v@1"])", ddoc) == R"({"ok":true})");
    const std::string docs = R"([{"_id":"a","type":"x","n":1},{"_id":"b","n":2}])";
    CHECK(qs.handle(R"(["map","v@1",["by_type","pairs"]])", docs) ==
          R"({"ok":[[[["x",1]],[[["a",0],null],[["a",1],{"n":1}]]],[[],[[["b",0],null],[["b",1],{"n":2}]]]]})");
    // A document is sealed: the assignment is ignored (sloppy code; a TypeError in strict code),
    // and the next function sees the original.
    std::string r = qs.handle(R"(["map","v@1",["mutate","by_type"]])", R"([{"_id":"a","type":"x"}])");
    CHECK(r == R"({"ok":[[[["x",null]],[["x",1]]]]})");
    // A throw skips that function for that document only, and is reported with the doc's id.
    r = qs.handle(R"(["map","v@1",["throws","by_type"]])", docs);
    CHECK(r == R"({"ok":[[[[1,null]],[["x",1]]],[[],[]]],"errors":["b: {\"error\":\"bad\"}"]})");
    // undefined and functions are null, as JSON.stringify makes them in an array; Infinity too.
    CHECK(qs.handle(R"(["map","v@1",["odd"]])", R"([{"_id":"c","n":1}])") == R"({"ok":[[[[null,null],[null,0]]]]})");
    CHECK(qs.handle(R"(["map","v@1",["nope"]])", docs) ==
          R"({"thrown":["error","not_found","missing views function map"]})");
    CHECK(qs.handle(R"(["map","v@1",["by_type"]])", "{}").find("fault") != std::string::npos);
  });
}

TEST_CASE("search indexes: index() calls per document and function, Nouveau's four arguments, Clouseau's three") {
  on_engine_thread([] {
    harness h(quick());
    query_server qs(h.e, 4);
    const std::string ddoc = R"({"_id":"_design/s",
        "nouveau":{"books":{"index":"function(doc){ if (!doc.title) return; index('text', 'title', doc.title, {store: true}); index('double', 'year', doc.year); }"},
                   "broken":{"index":"function(doc){ index('string', 'x', doc.missing.field); }"}},
        "indexes":{"body":{"index":"function(doc){ index('default', doc.body); index('tag', doc.tag, {facet: true}); }"}}})";
    CHECK(qs.handle(R"(["ddoc","new","s@1"])", ddoc) == R"({"ok":true})");
    const std::string docs =
        R"([{"_id":"a","title":"Dune","year":1965,"body":"sand","tag":"sf"},{"_id":"b","body":"rain"}])";
    CHECK(
        qs.handle(R"(["index","s@1",[["nouveau","books"],["indexes","body"]]])", docs) ==
        R"({"ok":[[[["text","title","Dune",{"store":true}],["double","year",1965]],[["default","sand"],["tag","sf",{"facet":true}]]],)"
        R"([[],[["default","rain"],["tag",null,{"facet":true}]]]]})");
    // A function that throws indexes nothing for that document, reported with its id.
    std::string r = qs.handle(R"(["index","s@1",[["nouveau","broken"]]])", R"([{"_id":"c"}])");
    CHECK(r.find(R"("ok":[[[]]])") != std::string::npos);
    CHECK(r.find("c: TypeError") != std::string::npos);
    CHECK(qs.handle(R"(["index","s@1",[["nouveau","nope"]]])", docs) ==
          R"({"thrown":["error","not_found","missing nouveau function index"]})");
    CHECK(qs.handle(R"(["index","s@1",[["views","x"]]])", docs).find("fault") != std::string::npos);  // not an index
  });
}

TEST_CASE("map: a function that loops or emits without end is stopped, and the engine goes on") {
  on_engine_thread([] {
    harness h(quick());
    query_server qs(h.e, 4);
    const std::string ddoc = R"({"views":{"loop":{"map":"function(doc){ while (true) {} }"},
        "flood":{"map":"function(doc){ for (;;) emit(doc._id, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'); }"},
        "ok":{"map":"function(doc){ emit(doc._id, null); }"}}})";
    CHECK(qs.handle(R"(["ddoc","new","w@1"])", ddoc) == R"({"ok":true})");
    CHECK(qs.handle(R"(["map","w@1",["loop"]])", R"([{"_id":"a"}])").find(R"({"fault":"timeout")") == 0);
    std::string r = qs.handle(R"(["map","w@1",["flood"]])", R"([{"_id":"a"}])");
    CHECK((r.find(R"({"fault":"memory")") == 0 || r.find(R"({"fault":"timeout")") == 0));
    h.e.shrink();
    CHECK(qs.handle(R"(["map","w@1",["ok"]])", R"([{"_id":"a"}])") == R"({"ok":[[[["a",null]]]]})");
  });
}

TEST_CASE("the protocol: design documents by key, compile on save, unknown keys, updates") {
  on_engine_thread([] {
    harness h(quick());
    query_server qs(h.e, 2);
    const std::string ddoc =
        R"({"_id":"_design/d","validate_doc_update":"function(n, o, u, s){ if (!u.roles.length) throw({unauthorized: 'log in'}); }",
            "updates":{"u":"function(doc, req){ return [{_id: req.id, n: 1}, 'made']; }"},
            "filters":{"f":"function(doc){ return doc.ok; }"}})";
    CHECK(qs.handle(R"(["ddoc","new","d@1"])", ddoc) == R"({"ok":true})");
    CHECK(qs.handle(R"(["ddoc","d@1",["validate_doc_update"]])", R"([{"_id":"x"},null,{"roles":[]},{}])") ==
          R"({"thrown":{"unauthorized":"log in"}})");
    CHECK(qs.handle(R"(["ddoc","d@1",["validate_doc_update"]])", R"([{"_id":"x"},null,{"roles":["a"]},{}])") ==
          R"({"ok":null})");
    CHECK(qs.handle(R"(["ddoc","d@1",["updates","u"]])", R"([null,{"id":"x"}])") ==
          R"({"ok":[{"_id":"x","n":1},"made"]})");
    CHECK(qs.handle(R"(["ddoc","d@1",["filters","f"]])", R"([[{"ok":1},{}],{}])") == R"({"ok":[true,false]})");
    CHECK(qs.handle(R"(["ddoc","d@1",["filters","nope"]])", "[[{}],{}]") ==
          R"({"thrown":["error","not_found","missing filters function nope"]})");
    CHECK(qs.handle(R"(["ddoc","d@2",["filters","f"]])", "[[{}],{}]") ==
          R"({"fault":"internal","reason":"unknown design document"})");
    // At most 2 held: the least recently used goes.
    CHECK(qs.handle(R"(["ddoc","new","e@1"])", "{}") == R"({"ok":true})");
    CHECK(qs.handle(R"(["ddoc","new","f@1"])", "{}") == R"({"ok":true})");
    CHECK(qs.handle(R"(["ddoc","d@1",["filters","f"]])", "[[{}],{}]").find("unknown design document") !=
          std::string::npos);
    CHECK(qs.handle(R"(["compile"])", R"({"views":{"v":{"map":"function(doc){ emit(1) }","reduce":"_count"}},
                                         "filters":{"f":"function(doc) { return 1 }"}})") == R"({"ok":true})");
    CHECK(
        qs.handle(R"(["compile"])", R"({"validate_doc_update":"function(){ nope( }"})")
            .find(
                R"({"fault":"compilation_error","reason":"Compilation of the validate_doc_update function failed: SyntaxError)") ==
        0);
    CHECK(
        qs.handle(R"(["compile"])", R"({"views":{"v":{"map":"1"}}})") ==
        R"X({"fault":"compilation_error","reason":"Compilation of the map function in the 'v' view failed: Expression does not eval to a function. (1)"})X");
    CHECK(qs.handle("not json", "").find("fault") != std::string::npos);
  });
}

TEST_CASE("the sandbox: after confine() a worker can compute and talk, but open no file, socket or process") {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!confine(0).empty()) ::_exit(10);
    if (::open("/etc/hostname", O_RDONLY) >= 0 || errno != EPERM) ::_exit(11);
    if (::socket(AF_INET, SOCK_STREAM, 0) >= 0 || errno != EPERM) ::_exit(12);
    if (::fork() >= 0) ::_exit(13);  // no new process (a fork is a clone without CLONE_THREAD)
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    ::execv("/bin/true", argv);
    std::atomic<int> ran{0};
    std::thread t([&] { ran = 1; });  // threads still work
    t.join();
    if (ran != 1) ::_exit(14);
    if (::write(1, "", 0) != 0) ::_exit(15);
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}

int main(int argc, char** argv) {
  if (!process_init(false)) return 1;
  doctest::Context ctx(argc, argv);
  int rc = ctx.run();
  std::fflush(stdout);
  std::_Exit(rc);  // as settee-js: no JS_ShutDown, no static destructors racing the engine's threads
}
