// settee_loadgen: an HTTP load generator for settee and any CouchDB-compatible server.
// Keep-alive connections only; every loop is bounded in count and time. Prints one line per run:
//   workload=<w> <metric>=<value> ... errors=<n>
//
//   settee_loadgen --url http://127.0.0.1:5984 [--auth admin:pw] --db bench --workload W [options]
// Workloads:
//   put       c threads PUT ~doc-bytes documents with random ids for --seconds: rate (req/s), p50, p99
//   get       loads --docs documents, then c threads GET random ones for --seconds: rate, p50, p99
//   bulk      writes --docs documents with _bulk_docs, 1000 per request, c clients: rate (docs/s)
//   changes   loads --docs documents, then times _changes since=0 (a full read), since=now and the
//             tail of the last 100 changes: seconds for each, rows/s for the full read
//   alldocs   loads --docs documents, then times a full _all_docs read: seconds, rows/s
//   att_put   c threads PUT an --att-bytes attachment by name to new documents: rate, mb_s, p50, p99
//   att_get   puts --docs attachments of --att-bytes, then c threads GET random ones: rate, mb_s, ...
//   path      c threads GET --path for --seconds, "%K" in it replaced by a random number below
//             --docs each time (e.g. a view's key=): rate, p50, p99
//   longpoll  --listeners feeds wait with feed=longpoll&since=now; one write; ms from the write's
//             acknowledgement until the last listener has its response
// Options: --concurrency 32 --seconds 10 --doc-bytes 1000 --docs 10000 --listeners 200
//          --query Q (get): appended to every document URL, e.g. r=1
//          --cpu-pid P (put, get): also print the CPU process P (a server) used in the timed window,
//          per request (server_cpu_us) and as a share of one core (server_cpu_pct)
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

using steady = std::chrono::steady_clock;

struct options {
  std::string host = "127.0.0.1";
  int port = 5984;
  std::string user, password, db = "bench", workload = "put";
  int concurrency = 32;
  double seconds = 10;
  size_t doc_bytes = 1000;
  size_t att_bytes = 1024;
  size_t docs = 10000;
  int listeners = 200;
  int cpu_pid = 0;
  bool anonymous = false;  // --public 1: the database is opened to readers; timed requests send no credentials
  std::string query;       // get: appended to each document's URL, e.g. "r=1"
  std::string path;        // path: the URL path and query to GET, "%K" a random number below docs
  std::string header;      // --header "Name: value": sent with every timed request (a cookie, a bearer token)
  bool fresh = false;      // --fresh 1: a new connection for every request
};

// User + system CPU seconds process `pid` has used so far (/proc/<pid>/stat), or -1.
double process_cpu_s(int pid) {
  if (pid <= 0) return -1;
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return -1;
  char buf[1024];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  unsigned long long utime = 0, stime = 0;
  if (!p || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) return -1;
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}

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
    } else if (k == "--db") {
      o.db = v;
    } else if (k == "--workload") {
      o.workload = v;
    } else if (k == "--concurrency") {
      o.concurrency = std::clamp(std::stoi(v), 1, 1000);
    } else if (k == "--seconds") {
      o.seconds = std::clamp(std::stod(v), 0.1, 300.0);
    } else if (k == "--doc-bytes") {
      o.doc_bytes = std::min<size_t>(std::stoul(v), 1 << 20);
    } else if (k == "--att-bytes") {
      o.att_bytes = std::min<size_t>(std::stoul(v), 64u << 20);
    } else if (k == "--docs") {
      o.docs = std::min<size_t>(std::stoul(v), 100'000'000);  // bounded (10,000,000 for bench/growth.py)
    } else if (k == "--query") {
      o.query = v;
    } else if (k == "--path") {
      o.path = v;
    } else if (k == "--cpu-pid") {
      o.cpu_pid = std::stoi(v);
    } else if (k == "--public") {
      o.anonymous = v == "1";
    } else if (k == "--header") {
      if (v.find(':') == std::string::npos) return false;
      o.header = v;
    } else if (k == "--fresh") {
      o.fresh = v == "1";
    } else if (k == "--listeners") {
      o.listeners = std::clamp(std::stoi(v), 1, 2000);
    } else {
      return false;
    }
  }
  for (const char* w : {"put", "get", "bulk", "changes", "alldocs", "pages", "longpoll", "att_put", "att_get", "path"})
    if (o.workload == w) return true;
  return false;
}

httplib::Client client(const options& o, bool setup = false) {
  httplib::Client c(o.host, o.port);
  c.set_keep_alive(setup || !o.fresh);
  c.set_tcp_nodelay(true);
  if (!o.user.empty() && (setup || !o.anonymous)) c.set_basic_auth(o.user.c_str(), o.password.c_str());
  if (!setup && !o.header.empty()) {
    const size_t colon = o.header.find(':');
    const size_t value = o.header.find_first_not_of(' ', colon + 1);
    c.set_default_headers({{o.header.substr(0, colon), value == std::string::npos ? "" : o.header.substr(value)}});
  }
  c.set_read_timeout(120, 0);
  return c;
}

// `bytes` bytes that do not compress to nothing (a server may gzip what it stores).
std::string attachment(size_t bytes, uint64_t seed) {
  std::string out(bytes, '\0');
  std::mt19937_64 rng(seed);
  for (char& ch : out) ch = static_cast<char>(rng());
  return out;
}

std::string doc_body(size_t bytes, uint64_t n) {
  return "{\"n\":" + std::to_string(n) + ",\"pad\":\"" + std::string(bytes, 'x') + "\"}";
}

double seconds_since(steady::time_point t0) {
  return std::chrono::duration<double>(steady::now() - t0).count();
}

// Writes documents doc<first>..doc<first+count-1> with _bulk_docs; returns false on any error.
bool load(httplib::Client& c, const options& o, size_t first, size_t count) {
  for (size_t start = first; start < first + count; start += 1000) {
    std::string body = "{\"docs\":[";
    for (size_t i = start; i < std::min(first + count, start + 1000); ++i) {
      char id[32];
      std::snprintf(id, sizeof id, "doc%09zu", i);
      body += (i > start ? "," : "") + std::string("{\"_id\":\"") + id + "\",\"n\":" + std::to_string(i) +
              ",\"pad\":\"" + std::string(o.doc_bytes, 'x') + "\"}";
    }
    body += "]}";
    auto r = c.Post(("/" + o.db + "/_bulk_docs").c_str(), body, "application/json");
    if (!r || r->status != 201) {
      std::fprintf(stderr, "loading failed: %d %s\n", r ? r->status : -1, r ? r->body.substr(0, 200).c_str() : "");
      return false;
    }
  }
  return true;
}

size_t count_of(const std::string& body, const std::string& needle) {
  size_t n = 0;
  for (size_t at = body.find(needle); at != std::string::npos; at = body.find(needle, at + needle.size())) ++n;
  return n;
}

// Extracts "last_seq" (a JSON string or number) from a _changes body.
std::string last_seq(const std::string& body) {
  size_t at = body.rfind("\"last_seq\":");
  if (at == std::string::npos) return "0";
  at += 11;
  size_t end = body[at] == '"' ? body.find('"', at + 1) + 1 : body.find_first_of(",}", at);
  std::string v = body.substr(at, end - at);
  if (!v.empty() && v.front() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    }
  }
  return out;
}

int timed_requests(const options& o) {
  std::atomic<uint64_t> errors{0};
  std::vector<std::vector<double>> latencies(o.concurrency);
  double cpu0 = process_cpu_s(o.cpu_pid);
  auto deadline = steady::now() + std::chrono::duration<double>(o.seconds);
  std::vector<std::thread> threads;
  uint64_t run_id = std::random_device{}();
  for (int t = 0; t < o.concurrency; ++t) {
    threads.emplace_back([&, t] {
      auto c = client(o);
      std::mt19937_64 rng(run_id + t);
      std::string body = o.workload == "att_put" ? attachment(o.att_bytes, t) : doc_body(o.doc_bytes, t);
      auto& lat = latencies[t];
      for (uint64_t i = 0; steady::now() < deadline && i < 10'000'000; ++i) {
        auto t0 = steady::now();
        if (o.workload == "put") {
          std::string id = std::to_string(run_id) + "-" + std::to_string(t) + "-" + std::to_string(i);
          auto r = c.Put(("/" + o.db + "/" + id).c_str(), body, "application/json");
          if (!r || r->status != 201) {
            if (errors++ < 3)  // say what went wrong, a few times
              std::fprintf(stderr, "PUT %s: %d %s\n", id.c_str(), r ? r->status : -1,
                           r ? r->body.substr(0, 200).c_str() : httplib::to_string(r.error()).c_str());
          }
        } else if (o.workload == "att_put") {
          std::string id = std::to_string(run_id) + "-" + std::to_string(t) + "-" + std::to_string(i);
          auto r = c.Put(("/" + o.db + "/" + id + "/a.bin").c_str(), body, "application/octet-stream");
          if (!r || r->status != 201) {
            if (errors++ < 3)
              std::fprintf(stderr, "PUT %s/a.bin: %d %s\n", id.c_str(), r ? r->status : -1,
                           r ? r->body.substr(0, 200).c_str() : httplib::to_string(r.error()).c_str());
          }
        } else if (o.workload == "path") {
          std::string url = o.path;
          if (size_t at = url.find("%K"); at != std::string::npos)
            url.replace(at, 2, std::to_string(rng() % std::max<size_t>(o.docs, 1)));
          auto r = c.Get(url.c_str());
          if (!r || r->status != 200) {
            if (errors++ < 3)
              std::fprintf(stderr, "GET %s: %d %s\n", url.c_str(), r ? r->status : -1,
                           r ? r->body.substr(0, 200).c_str() : httplib::to_string(r.error()).c_str());
          }
        } else if (o.workload == "att_get") {
          auto r = c.Get(("/" + o.db + "/att" + std::to_string(rng() % o.docs) + "/a.bin").c_str());
          if (!r || r->status != 200 || r->body.size() != o.att_bytes) ++errors;
        } else {
          char id[32];
          std::snprintf(id, sizeof id, "doc%09zu", static_cast<size_t>(rng() % o.docs));
          auto r = c.Get(("/" + o.db + "/" + id + (o.query.empty() ? "" : "?" + o.query)).c_str());
          if (!r || r->status != 200) ++errors;
        }
        lat.push_back(std::chrono::duration<double, std::milli>(steady::now() - t0).count());
      }
    });
  }
  auto start = steady::now();
  for (auto& th : threads) th.join();
  double elapsed = seconds_since(start);
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, size_t(p * all.size()))]; };
  double cpu = process_cpu_s(o.cpu_pid) - cpu0;
  std::string server;
  if (cpu0 >= 0 && !all.empty()) {
    char b[128];
    std::snprintf(b, sizeof b, " server_cpu_us=%.1f server_cpu_pct=%.0f", cpu * 1e6 / all.size(), cpu * 100 / elapsed);
    server = b;
  }
  if (o.workload.rfind("att_", 0) == 0) {
    char b[64];
    std::snprintf(b, sizeof b, " mb_s=%.1f", all.size() * static_cast<double>(o.att_bytes) / elapsed / 1e6);
    server += b;
  }
  std::printf(
      "workload=%s concurrency=%d requests=%zu rate=%.0f p50_ms=%.2f p95_ms=%.2f p99_ms=%.2f max_ms=%.1f%s "
      "errors=%llu\n",
      o.workload.c_str(), o.concurrency, all.size(), all.size() / elapsed, pct(0.5), pct(0.95), pct(0.99),
      all.empty() ? 0.0 : all.back(), server.c_str(), static_cast<unsigned long long>(errors.load()));
  return errors.load() == 0 ? 0 : 1;
}

int bulk(const options& o) {
  std::atomic<bool> ok{true};
  std::vector<std::thread> threads;
  size_t per = (o.docs + o.concurrency - 1) / o.concurrency;
  auto t0 = steady::now();
  for (int t = 0; t < o.concurrency; ++t) {
    threads.emplace_back([&, t] {
      auto c = client(o);
      size_t first = t * per, count = std::min(per, o.docs > first ? o.docs - first : 0);
      if (count && !load(c, o, 1'000'000'000 + first, count)) ok = false;
    });
  }
  for (auto& th : threads) th.join();
  double s = seconds_since(t0);
  std::printf("workload=bulk concurrency=%d docs=%zu seconds=%.3f rate=%.0f errors=%d\n", o.concurrency, o.docs, s,
              o.docs / s, ok ? 0 : 1);
  return ok ? 0 : 1;
}

int changes(const options& o, httplib::Client& c) {
  std::string base = "/" + o.db + "/_changes";
  auto t0 = steady::now();
  auto full = c.Get(base.c_str());
  double full_s = seconds_since(t0);
  if (!full || full->status != 200) return 1;
  size_t rows = count_of(full->body, "\"changes\":");
  t0 = steady::now();
  auto now = c.Get((base + "?since=now").c_str());
  double now_s = seconds_since(t0);
  auto head = c.Get((base + "?limit=" + std::to_string(o.docs > 100 ? o.docs - 100 : 0)).c_str());
  if (!now || !head) return 1;
  std::string since = url_encode(last_seq(head->body));
  t0 = steady::now();
  auto tail = c.Get((base + "?since=" + since).c_str());
  double tail_s = seconds_since(t0);
  if (!tail || tail->status != 200) return 1;
  std::printf("workload=changes docs=%zu rows=%zu full_s=%.3f rate=%.0f now_ms=%.2f tail100_ms=%.2f errors=0\n", o.docs,
              rows, full_s, rows / full_s, now_s * 1000, tail_s * 1000);
  return 0;
}

int alldocs(const options& o, httplib::Client& c) {
  auto t0 = steady::now();
  auto r = c.Get(("/" + o.db + "/_all_docs").c_str());
  double s = seconds_since(t0);
  if (!r || r->status != 200) return 1;
  size_t rows = count_of(r->body, "\"key\":");
  std::printf("workload=alldocs docs=%zu rows=%zu seconds=%.3f rate=%.0f errors=0\n", o.docs, rows, s, rows / s);
  return 0;
}

// Pages through _all_docs as clients do (startkey = the last id seen, skip=1, limit=1000), checking
// that each page's offset is exact; reports rows/s over the whole walk and the first/last page time.
int pages(const options& o, httplib::Client& c) {
  std::string start;
  size_t rows = 0, page_count = 0;
  double first_ms = 0, last_ms = 0;
  auto t0 = steady::now();
  for (;;) {
    std::string path = "/" + o.db + "/_all_docs?limit=1000";
    if (!start.empty()) path += "&skip=1&startkey=" + url_encode("\"" + start + "\"");
    auto t = steady::now();
    auto r = c.Get(path.c_str());
    double ms = seconds_since(t) * 1000;
    if (!r || r->status != 200) return 1;
    size_t offset_at = r->body.find("\"offset\":");
    size_t offset = offset_at == std::string::npos ? 0 : std::stoull(r->body.substr(offset_at + 9));
    if (offset != rows) {  // the rows before the start key, plus the skipped one: all seen so far
      std::fprintf(stderr, "page %zu: offset %zu, expected %zu\n", page_count, offset, rows);
      return 1;
    }
    size_t n = count_of(r->body, "\"key\":");
    if (page_count == 0) first_ms = ms;
    last_ms = ms;
    ++page_count;
    rows += n;
    if (n < 1000) break;
    size_t last = r->body.rfind("{\"id\":\"");
    start = r->body.substr(last + 7, r->body.find('"', last + 7) - last - 7);
  }
  double s = seconds_since(t0);
  std::printf(
      "workload=pages docs=%zu rows=%zu pages=%zu seconds=%.3f rate=%.0f first_page_ms=%.2f last_page_ms=%.2f "
      "errors=0\n",
      o.docs, rows, page_count, s, rows / s, first_ms, last_ms);
  return 0;
}

int longpoll(const options& o) {
  std::atomic<int> ready{0}, answered{0}, errors{0};
  std::atomic<int64_t> last_answer_ns{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < o.listeners; ++t) {
    threads.emplace_back([&] {
      auto c = client(o);
      c.set_read_timeout(60, 0);
      auto since = c.Get(("/" + o.db + "/_changes?since=now").c_str());
      std::string seq = since ? url_encode(last_seq(since->body)) : "now";
      ++ready;
      auto r = c.Get(("/" + o.db + "/_changes?feed=longpoll&timeout=30000&since=" + seq).c_str());
      if (!r || r->status != 200 || r->body.find("longpoll-write") == std::string::npos) ++errors;
      int64_t ns = steady::now().time_since_epoch().count();
      int64_t prev = last_answer_ns.load();
      while (ns > prev && !last_answer_ns.compare_exchange_weak(prev, ns)) {
      }
      ++answered;
    });
  }
  for (int i = 0; ready < o.listeners && i < 3000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // let every request reach the server
  auto c = client(o);
  auto w = c.Put(("/" + o.db + "/longpoll-write-" + std::to_string(std::random_device{}())).c_str(), "{}",
                 "application/json");
  int64_t acked = steady::now().time_since_epoch().count();
  for (auto& th : threads) th.join();
  double ms = (last_answer_ns.load() - acked) / 1e6;
  std::printf("workload=longpoll listeners=%d answered=%d all_notified_ms=%.2f errors=%d\n", o.listeners,
              answered.load(), std::max(0.0, ms), errors.load() + (w && w->status == 201 ? 0 : 1));
  return errors.load() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::fprintf(stderr,
                 "usage: settee_loadgen --url URL [--auth user:pw] --db DB "
                 "--workload put|get|bulk|changes|alldocs|pages|longpoll|att_put|att_get|path [--concurrency N] "
                 "[--seconds S] [--doc-bytes B] [--att-bytes B] [--docs N] [--listeners N] [--query Q] [--path P] "
                 "[--cpu-pid P] "
                 "[--public 1] [--header \"Name: value\"] [--fresh 1]\n");
    return 2;
  }
  auto c = client(o, true);
  c.Put(("/" + o.db).c_str(), "", "application/json");  // 412 when it exists: fine
  if (o.anonymous) c.Put(("/" + o.db + "/_security").c_str(), R"({"members":{},"admins":{}})", "application/json");
  bool needs_docs = o.workload == "get" || o.workload == "changes" || o.workload == "alldocs" || o.workload == "pages";
  if (needs_docs) {
    auto info = c.Get(("/" + o.db).c_str());
    bool loaded = info && info->body.find("\"doc_count\":" + std::to_string(o.docs) + ",") != std::string::npos;
    if (!loaded && !load(c, o, 0, o.docs)) return 1;
  }
  if (o.workload == "att_get") {  // the attachments it reads, once (409: already there)
    std::string body = attachment(o.att_bytes, 1);
    for (size_t i = 0; i < o.docs; ++i) {
      auto r = c.Put(("/" + o.db + "/att" + std::to_string(i) + "/a.bin").c_str(), body, "application/octet-stream");
      if (!r || (r->status != 201 && r->status != 409)) {
        std::fprintf(stderr, "loading attachments failed: %d\n", r ? r->status : -1);
        return 1;
      }
    }
  }
  if (o.workload == "put" || o.workload == "get" || o.workload == "att_put" || o.workload == "att_get" ||
      o.workload == "path")
    return timed_requests(o);
  if (o.workload == "bulk") return bulk(o);
  if (o.workload == "changes") return changes(o, c);
  if (o.workload == "alldocs") return alldocs(o, c);
  if (o.workload == "pages") return pages(o, c);
  return longpoll(o);
}
