// In-process SpiderMonkey or a pool of settee-js worker processes (issue 30): the same engine code
// (js/engine) called directly, and through js_pool's pipes, side by side in one run.
//   settee_js_bench <path of settee-js> [rounds]
// Prints, for each: a typical 10-line validate_doc_update (one call per document, as a write
// makes it), the first call after a design-document change (a new revision: its functions
// compiled in a new realm, then called), and a filter over 200,000 documents in pages of 512 (as
// _changes makes it); for the worker also the compile-on-save check (js_pool::compile).
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "actors/js_pool.hpp"
#include "js/engine.hpp"
#include "js/query_server.hpp"

using namespace settee;
using steady = std::chrono::steady_clock;

namespace {

const std::string vdu = R"(function(newDoc, oldDoc, userCtx, secObj) {
  if (newDoc._deleted) return;
  if (!newDoc.type) throw({forbidden: 'every document needs a type'});
  if (newDoc.type === 'post') {
    if (!newDoc.title || typeof newDoc.title !== 'string') throw({forbidden: 'a post needs a title'});
    if (newDoc.title.length > 200) throw({forbidden: 'title too long'});
  }
  if (oldDoc && oldDoc.author !== newDoc.author) throw({unauthorized: 'only the author may edit'});
  if (userCtx.roles.indexOf('_admin') === -1 && newDoc.author !== userCtx.name)
    throw({unauthorized: 'you are not the author'});
})";
const std::string filter = "function(doc, req) { return doc.type === req.query.type && doc.n % 2 === 0; }";

std::string ddoc_json() {
  nlohmann::json d = {{"_id", "_design/bench"}, {"validate_doc_update", vdu}, {"filters", {{"f", filter}}}};
  return d.dump();
}

std::string vdu_args(int i) {
  return R"([{"_id":"doc)" + std::to_string(i) +
         R"(","_rev":"1-abc","type":"post","title":"hello world","author":"bob","n":)" + std::to_string(i) +
         R"(,"_revisions":{"start":1,"ids":["abc"]}},null,{"db":"bench","name":"bob","roles":[]},{"members":{"names":["bob"]}}])";
}

std::string docs_page(int from, int n) {
  std::string s = "[[";
  for (int i = 0; i < n; ++i) {
    if (i) s += ",";
    s += R"({"_id":"d)" + std::to_string(from + i) + R"(","_rev":"1-abcdef","type":")" + ((from + i) % 3 ? "a" : "b") +
         R"(","n":)" + std::to_string(from + i) + R"(,"body":"lorem ipsum dolor sit amet"})";
  }
  return s + R"(],{"query":{"type":"a"},"userCtx":{"name":"bob","roles":[]}}])";
}

double seconds_since(steady::time_point t) {
  return std::chrono::duration<double>(steady::now() - t).count();
}

constexpr int vdu_calls = 20000;
constexpr int filter_docs = 200000, page = 512;

constexpr int changes = 300;  // design-document revisions, each called once

struct figures {
  double vdu_us, first_us, filter_rows_s, compile_us;
};

figures in_process() {
  figures f{};
  std::thread t([&] {
    js::limits lim;
    js::engine e(lim);
    js::query_server qs(e);
    js::watchdog guard(e);
    qs.handle(R"(["ddoc","new","b"])", ddoc_json());
    auto t0 = steady::now();
    for (int i = 0; i < vdu_calls; ++i) qs.handle(R"(["ddoc","b",["validate_doc_update"]])", vdu_args(i));
    f.vdu_us = seconds_since(t0) * 1e6 / vdu_calls;
    std::vector<std::string> pages;
    for (int i = 0; i < filter_docs; i += page) pages.push_back(docs_page(i, page));
    t0 = steady::now();
    for (auto& p : pages) qs.handle(R"(["ddoc","b",["filters","f"]])", p);
    f.filter_rows_s = filter_docs / seconds_since(t0);
    t0 = steady::now();
    for (int i = 0; i < changes; ++i) {
      const std::string key = "\"b" + std::to_string(i) + "\"";
      qs.handle(R"(["ddoc","new",)" + key + "]", ddoc_json());
      qs.handle(R"(["ddoc",)" + key + R"(,["validate_doc_update"]])", vdu_args(i));
    }
    f.first_us = seconds_since(t0) * 1e6 / changes;
  });
  t.join();
  return f;
}

figures pooled(const std::string& worker) {
  figures f{};
  js_options o;
  o.worker = worker;
  o.max_workers = 1;
  js_pool pool(o);
  const std::string d = ddoc_json();
  pool.run("b", d, json::array({"validate_doc_update"}), vdu_args(0));  // started, ddoc sent
  auto t0 = steady::now();
  for (int i = 0; i < vdu_calls; ++i) pool.run("b", d, json::array({"validate_doc_update"}), vdu_args(i));
  f.vdu_us = seconds_since(t0) * 1e6 / vdu_calls;
  std::vector<std::string> pages;
  for (int i = 0; i < filter_docs; i += page) pages.push_back(docs_page(i, page));
  t0 = steady::now();
  for (auto& p : pages) pool.run("b", d, json::array({"filters", "f"}), p);
  f.filter_rows_s = filter_docs / seconds_since(t0);
  t0 = steady::now();
  for (int i = 0; i < changes; ++i)
    pool.run("b" + std::to_string(i), d, json::array({"validate_doc_update"}), vdu_args(i));
  f.first_us = seconds_since(t0) * 1e6 / changes;
  t0 = steady::now();
  for (int i = 0; i < changes; ++i) pool.compile(d);
  f.compile_us = seconds_since(t0) * 1e6 / changes;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: settee_js_bench <settee-js> [rounds]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
  if (!js::process_init(false)) return 1;
  std::vector<figures> a, b;
  for (int r = 0; r < rounds; ++r) {
    a.push_back(in_process());
    b.push_back(pooled(argv[1]));
    std::printf(
        "round %d: in-process vdu %.1f us, first call %.0f us, filter %.0f rows/s | worker vdu %.1f us, "
        "first call %.0f us, compile %.0f us, filter %.0f rows/s\n",
        r + 1, a.back().vdu_us, a.back().first_us, a.back().filter_rows_s, b.back().vdu_us, b.back().first_us,
        b.back().compile_us, b.back().filter_rows_s);
  }
  auto median = [](const std::vector<figures>& v, double figures::*field) {
    std::vector<double> x;
    for (const auto& f : v) x.push_back(f.*field);
    std::sort(x.begin(), x.end());
    return x[x.size() / 2];
  };
  std::printf(
      "median: in-process vdu %.1f us, first call %.0f us, filter %.0f rows/s | worker vdu %.1f us, "
      "first call %.0f us, compile %.0f us, filter %.0f rows/s\n",
      median(a, &figures::vdu_us), median(a, &figures::first_us), median(a, &figures::filter_rows_s),
      median(b, &figures::vdu_us), median(b, &figures::first_us), median(b, &figures::compile_us),
      median(b, &figures::filter_rows_s));
  std::fflush(stdout);
  std::_Exit(0);
}
