// In-process SpiderMonkey or a pool of settee-js worker processes (issue 30): the same engine code
// (js/engine) called directly, and through js_pool's pipes, side by side in one run.
//   settee_js_bench <path of settee-js> [rounds]
// Prints, for each: a typical 10-line validate_doc_update (one call per document, as a write
// makes it) and a filter over 200,000 documents in pages of 512 (as _changes makes it).
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

struct figures {
  double vdu_us, filter_rows_s;
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
  std::vector<double> a_vdu, a_filter, b_vdu, b_filter;
  for (int r = 0; r < rounds; ++r) {
    figures a = in_process(), b = pooled(argv[1]);
    a_vdu.push_back(a.vdu_us);
    a_filter.push_back(a.filter_rows_s);
    b_vdu.push_back(b.vdu_us);
    b_filter.push_back(b.filter_rows_s);
    std::printf("round %d: in-process vdu %.1f us, filter %.0f rows/s | worker vdu %.1f us, filter %.0f rows/s\n",
                r + 1, a.vdu_us, a.filter_rows_s, b.vdu_us, b.filter_rows_s);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("median: in-process vdu %.1f us, filter %.0f rows/s | worker vdu %.1f us, filter %.0f rows/s\n",
              median(a_vdu), median(a_filter), median(b_vdu), median(b_filter));
  std::fflush(stdout);
  std::_Exit(0);
}
