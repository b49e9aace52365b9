// js_pool against the real settee-js worker (built beside the tests; SETTEE_JS names it).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <thread>
#include <vector>

#include "actors/js_pool.hpp"
#include "js_worker.hpp"

using namespace settee;
using settee::testing::worker_options;

namespace {

const std::string ddoc = R"({"_id":"_design/app",
  "validate_doc_update":"function(newDoc, oldDoc, userCtx, secObj){ if (!newDoc.owner) throw({forbidden: 'owner required'}); }",
  "filters":{"mine":"function(doc, req){ return doc.owner === req.userCtx.name; }",
             "spin":"function(doc){ while(true){} }"}})";

}  // namespace

TEST_CASE("js_pool: validate_doc_update and filters through a worker, answers as values") {
  js_pool pool(worker_options());
  auto r = pool.run("_design/app@1-a", ddoc, json::array({"validate_doc_update"}),
                    R"([{"_id":"x"},null,{"db":"d","name":null,"roles":[]},{}])");
  REQUIRE(r);
  CHECK(r->what == js_reply::kind::thrown);
  CHECK(r->value == json{{"forbidden", "owner required"}});
  r = pool.run("_design/app@1-a", ddoc, json::array({"validate_doc_update"}),
               R"([{"_id":"x","owner":"bob"},null,{"db":"d","name":"bob","roles":[]},{}])");
  REQUIRE(r);
  CHECK(r->ok());
  r = pool.run("_design/app@1-a", ddoc, json::array({"filters", "mine"}),
               R"([[{"owner":"bob"},{"owner":"ann"},{}],{"userCtx":{"name":"bob"}}])");
  REQUIRE(r);
  CHECK(r->value == json::array({true, false, false}));
  CHECK(pool.workers() == 1);  // one worker served them all, in turn
}

TEST_CASE("js_pool: a function past its deadline is a timeout fault, and the next call works") {
  js_pool pool(worker_options(1, 300));
  auto r = pool.run("_design/app@1-a", ddoc, json::array({"filters", "spin"}), "[[{}],{}]");
  REQUIRE(r);
  CHECK(r->what == js_reply::kind::fault);
  CHECK(r->name == "timeout");
  r = pool.run("_design/app@1-a", ddoc, json::array({"filters", "mine"}),
               R"([[{"owner":"a"}],{"userCtx":{"name":"a"}}])");
  REQUIRE(r);
  CHECK(r->value == json::array({true}));
}

TEST_CASE("js_pool: many callers share max_workers workers; a new revision is a new design document") {
  js_pool pool(worker_options(2));
  std::atomic<int> ok{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        const std::string key = "_design/app@" + std::to_string(1 + (t + i) % 3) + "-a";
        auto r = pool.run(key, ddoc, json::array({"filters", "mine"}), R"([[{"owner":"a"}],{"userCtx":{"name":"a"}}])");
        if (r && r->ok() && r->value == json::array({true})) ++ok;
      }
    });
  }
  for (auto& t : callers) t.join();
  CHECK(ok == 160);
  CHECK(pool.workers() <= 2);
}

TEST_CASE("js_pool: compile on save, and a missing worker is an error, not a crash") {
  js_pool pool(worker_options());
  auto r = pool.compile(R"({"views":{"v":{"map":"function(doc) { emit(doc.x"}}})");
  REQUIRE(r);
  CHECK(r->what == js_reply::kind::fault);
  CHECK(r->name == "compilation_error");
  CHECK(r->reason.find("Compilation of the map function in the 'v' view failed: SyntaxError") == 0);
  r = pool.compile(R"({"views":{"v":{"map":"function(doc) { emit(doc.x) }"}}})");
  REQUIRE(r);
  CHECK(r->ok());
  // A filter is compiled when it is called (as CouchDB), with the same kind of reason.
  r = pool.compile(R"({"filters":{"f":"function(doc) { return doc.x"}})");
  REQUIRE(r);
  CHECK(r->ok());
  r = pool.run("bad", R"({"_id":"_design/b","filters":{"f":"function(doc) { return doc.x"}})",
               json::array({"filters", "f"}), "[[{}],{}]");
  REQUIRE(r);
  CHECK(r->name == "compilation_error");
  CHECK(r->reason.find("Compilation of the filter 'f' function failed: SyntaxError") == 0);
  js_options none = worker_options();
  none.worker = "/nonexistent/settee-js";
  js_pool broken(none);
  auto b = broken.run("k", "{}", json::array({"filters", "f"}), "[[],{}]");
  CHECK(!b);
  CHECK(broken.workers() == 0);
}

TEST_CASE("js_pool: the reply of an answer line") {
  js_reply r;
  CHECK(parse_js_reply(R"({"ok":[true],"errors":["TypeError: x"],"log":["hi"]})", r));
  CHECK(r.ok());
  CHECK(r.errors == std::vector<std::string>{"TypeError: x"});
  CHECK(r.log == std::vector<std::string>{"hi"});
  CHECK(parse_js_reply(R"({"error":"TypeError","reason":"doc.a is undefined"})", r));
  CHECK((r.what == js_reply::kind::error && r.name == "TypeError"));
  CHECK(parse_js_reply(R"({"fault":"memory","reason":"too much"})", r));
  CHECK((r.what == js_reply::kind::fault && r.name == "memory"));
  CHECK(!parse_js_reply("garbage", r));
  CHECK(!parse_js_reply("[1]", r));
}
