// json_parse: the hardened parser (node/json: simdjson's validation and split, then a depth limit
// and indexed keys while building the document) against nlohmann's own DOM parser (what settee
// used before simdjson), on document shapes settee sees. Rounds alternate the two parsers; the
// median of the per-round ratios is printed (docs/BENCHMARKS.md).
//   build/settee_json_bench [rounds]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "node/json.hpp"

namespace {

std::string small_doc() {
  return R"({"_id":"user-0042","type":"order","customer":{"name":"Ada Lovelace","email":"ada@example.org",)"
         R"("address":{"street":"12 Analytical Way","city":"London","zip":"N1 7AA"}},"items":[)"
         R"({"sku":"A-1","qty":2,"price":19.99},{"sku":"B-7","qty":1,"price":5.5},{"sku":"C-3","qty":4,"price":1.25}],)"
         R"("paid":true,"total":50.48,"tags":["priority","gift"],"created":"2026-11-22T10:00:00Z"})";
}

std::string wide_doc(int keys) {
  std::string s = "{";
  for (int i = 0; i < keys; ++i)
    s += (i ? ",\"" : "\"") + std::string("field") + std::to_string(i) + "\":" + std::to_string(i);
  return s + "}";
}

std::string array_doc(int n) {
  std::string s = "{\"rows\":[";
  for (int i = 0; i < n; ++i) s += (i ? "," : "") + small_doc();
  return s + "]}";
}

std::string bulk_body(int n) {  // a _bulk_docs request of n ~1 KB documents, settee_loadgen's shape
  std::string s = "{\"docs\":[";
  for (int i = 0; i < n; ++i) {
    s += (i ? "," : "") + std::string("{\"_id\":\"doc-") + std::to_string(i) +
         "\",\"type\":\"bench\",\"n\":" + std::to_string(i) + ",\"pad\":\"" + std::string(940, 'x') + "\"}";
  }
  return s + "]}";
}

template <class F>
double seconds(F&& f, int reps) {
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 11;
  struct shape {
    const char* name;
    std::string text;
    int reps;
  };
  std::vector<shape> shapes = {
      {"small doc (0.4 KB)", small_doc(), 20000},      {"100 docs in an array (40 KB)", array_doc(100), 200},
      {"object with 10 keys", wide_doc(10), 50000},    {"object with 1,000 keys", wide_doc(1000), 500},
      {"object with 20,000 keys", wide_doc(20000), 3}, {"_bulk_docs of 1,000 1 KB docs", bulk_body(1000), 20}};
  std::printf("%-30s %12s %12s %8s\n", "shape", "nlohmann us", "settee us", "ratio");
  for (auto& s : shapes) {
    std::vector<double> ratios, a_us, b_us;
    for (int r = 0; r < rounds; ++r) {
      volatile size_t sink = 0;
      double a = seconds([&] { sink += settee::json::parse(s.text, nullptr, false).size(); }, s.reps);
      double b = seconds([&] { sink += settee::parse_json(s.text)->size(); }, s.reps);
      ratios.push_back(b / a);
      a_us.push_back(a / s.reps * 1e6);
      b_us.push_back(b / s.reps * 1e6);
    }
    auto median = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::printf("%-30s %12.1f %12.1f %8.2f\n", s.name, median(a_us), median(b_us), median(ratios));
  }
}
