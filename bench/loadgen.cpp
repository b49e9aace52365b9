// settee_loadgen: a closed-loop HTTP load generator for settee (and any CouchDB).
// Each of `c` threads holds one keep-alive connection and issues requests back to back for a
// bounded time. Prints one line: workload, concurrency, requests, errors, req/s, p50/p99 latency.
//
//   settee_loadgen --url http://127.0.0.1:5984 --auth admin:pw --db bench --workload put|get
//                  [--concurrency 32] [--seconds 10] [--doc-bytes 1000] [--docs 10000]
// `get` first loads --docs documents with _bulk_docs, then reads random ones.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

struct options {
  std::string host = "127.0.0.1";
  int port = 5984;
  std::string user, password, db = "bench", workload = "put";
  int concurrency = 32;
  double seconds = 10;
  size_t doc_bytes = 1000;
  size_t docs = 10000;
};

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--url") {
      auto hp = v.substr(v.find("//") + 2);
      o.host = hp.substr(0, hp.find(':'));
      o.port = std::stoi(hp.substr(hp.find(':') + 1));
    } else if (k == "--auth") {
      o.user = v.substr(0, v.find(':'));
      o.password = v.substr(v.find(':') + 1);
    } else if (k == "--db")
      o.db = v;
    else if (k == "--workload")
      o.workload = v;
    else if (k == "--concurrency")
      o.concurrency = std::stoi(v);
    else if (k == "--seconds")
      o.seconds = std::min(300.0, std::stod(v));  // bounded
    else if (k == "--doc-bytes")
      o.doc_bytes = std::stoul(v);
    else if (k == "--docs")
      o.docs = std::stoul(v);
    else
      return false;
  }
  return o.workload == "put" || o.workload == "get";
}

httplib::Client client(const options& o) {
  httplib::Client c(o.host, o.port);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
  if (!o.user.empty()) c.set_basic_auth(o.user.c_str(), o.password.c_str());
  c.set_read_timeout(60, 0);
  return c;
}

std::string doc_body(size_t bytes, uint64_t n) {
  return "{\"n\":" + std::to_string(n) + ",\"pad\":\"" + std::string(bytes, 'x') + "\"}";
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: settee_loadgen --url URL --auth user:pw --db DB --workload put|get "
                 "[--concurrency N] [--seconds S] [--doc-bytes B] [--docs N]\n");
    return 2;
  }
  {
    auto c = client(o);
    c.Put(("/" + o.db + "?q=2").c_str(), "", "application/json");  // 412 if it exists: fine
    if (o.workload == "get") {
      for (size_t start = 0; start < o.docs; start += 1000) {
        std::string body = "{\"docs\":[";
        for (size_t i = start; i < std::min(o.docs, start + 1000); ++i) {
          body += (i > start ? "," : "") + std::string("{\"_id\":\"doc") + std::to_string(i) +
                  "\",\"n\":" + std::to_string(i) + ",\"pad\":\"" + std::string(o.doc_bytes, 'x') + "\"}";
        }
        body += "]}";
        auto r = c.Post(("/" + o.db + "/_bulk_docs").c_str(), body, "application/json");
        if (!r || r->status != 201) {
          std::fprintf(stderr, "loading failed: %d\n", r ? r->status : -1);
          return 1;
        }
      }
    }
  }
  std::atomic<uint64_t> errors{0};
  std::vector<std::vector<double>> latencies(o.concurrency);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.seconds);
  std::vector<std::thread> threads;
  uint64_t run_id = std::random_device{}();
  for (int t = 0; t < o.concurrency; ++t) {
    threads.emplace_back([&, t] {
      auto c = client(o);
      std::mt19937_64 rng(run_id + t);
      std::string body = doc_body(o.doc_bytes, t);
      auto& lat = latencies[t];
      for (uint64_t i = 0; std::chrono::steady_clock::now() < deadline && i < 10'000'000; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        if (o.workload == "put") {
          std::string id = std::to_string(run_id) + "-" + std::to_string(t) + "-" + std::to_string(i);
          auto r = c.Put(("/" + o.db + "/" + id).c_str(), body, "application/json");
          if (!r || r->status != 201) ++errors;
        } else {
          auto r = c.Get(("/" + o.db + "/doc" + std::to_string(rng() % o.docs)).c_str());
          if (!r || r->status != 200) ++errors;
        }
        lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
    });
  }
  auto start = std::chrono::steady_clock::now();
  for (auto& th : threads) th.join();
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, size_t(p * all.size()))]; };
  std::printf("workload=%s concurrency=%d requests=%zu errors=%llu rate=%.0f/s p50=%.2fms p99=%.2fms\n",
              o.workload.c_str(), o.concurrency, all.size(), static_cast<unsigned long long>(errors.load()),
              all.size() / elapsed, pct(0.5), pct(0.99));
  return errors.load() == 0 ? 0 : 1;
}
