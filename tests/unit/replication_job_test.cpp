// The replication job against a fake CouchDB (issue 50 point 6): a few endpoints of CouchDB's
// replication protocol, held in memory and served over real HTTP on loopback by cpp-httplib. A
// one-shot replication copies every leaf with its revision, writes its checkpoint on both sides and
// a second run starts from it; a target that refuses writes fails the replication with its reason;
// and the `_replicator` document processor over a real `_replicator` database drives it.
#include <doctest/doctest.h>

#include <httplib.h>

#include <map>
#include <mutex>
#include <thread>

#include "actors/all_docs_reader.hpp"
#include "actors/coordinator.hpp"
#include "actors/db_catalog.hpp"
#include "actors/jobs.hpp"
#include "actors/task_list.hpp"
#include "coordinator_writes.hpp"
#include "node/clock.hpp"
#include "registry_fixture.hpp"
#include "replicator/rep_request.hpp"
#include "replicator/replications.hpp"
#include "replicator/replicator_docs.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

// Two databases, `src` and `tgt`: documents with one revision each, `_local` documents, the
// changes of each in order.
class fake_couch {
 public:
  fake_couch() {
    // With `password` set, a request without it is refused as CouchDB refuses a wrong one.
    server_.set_pre_routing_handler([this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      if (password.empty() || q.get_header_value("Authorization") == "Basic " + password) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
      ++refused_logins;
      reply(r, 401, json{{"error", "unauthorized"}, {"reason", "Name or password is incorrect."}});
      return httplib::Server::HandlerResponse::Handled;
    });
    server_.Get(R"(/(\w+)/?)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      reply(r, 200,
            json{{"db_name", q.matches[1].str()},
                 {"update_seq", std::to_string(seqs(q.matches[1]))},
                 {"instance_start_time", "0"}});
    });
    server_.Get(R"(/(\w+)/_changes)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      ++changes_reads;
      const std::string db = q.matches[1];
      const uint64_t since = q.has_param("since") ? std::stoull(q.get_param_value("since")) : 0;
      sinces.push_back(since);
      json rows = json::array();
      uint64_t seq = 0;
      for (const auto& [id, doc] : dbs_[db]) {
        ++seq;
        if (seq <= since) continue;
        rows.push_back(json{{"seq", seq}, {"id", id}, {"changes", json::array({json{{"rev", doc["_rev"]}}})}});
      }
      reply(r, 200, json{{"results", rows}, {"last_seq", seq}, {"pending", 0}});
    });
    server_.Get(R"(/(\w+)/_local/(.+))", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& locals = locals_[q.matches[1]];
      auto it = locals.find(q.matches[2]);
      if (it == locals.end()) return reply(r, 404, json{{"error", "not_found"}, {"reason", "missing"}});
      reply(r, 200, it->second);
    });
    server_.Put(R"(/(\w+)/_local/(.+))", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      json doc = json::parse(q.body);
      const int n = doc.contains("_rev") ? std::stoi(doc["_rev"].get<std::string>().substr(2)) + 1 : 1;
      doc["_rev"] = "0-" + std::to_string(n);
      locals_[q.matches[1]][q.matches[2]] = doc;
      reply(r, 201, json{{"ok", true}, {"id", "_local/" + q.matches[2].str()}, {"rev", doc["_rev"]}});
    });
    server_.Post(R"(/(\w+)/_revs_diff)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      json out = json::object();
      auto& db = dbs_[q.matches[1]];
      const json asked = json::parse(q.body);
      for (auto& [id, revs] : asked.items()) {
        json missing = json::array();
        for (const json& rev : revs)
          if (!db.count(id) || db[id]["_rev"] != rev) missing.push_back(rev);
        if (!missing.empty()) out[id] = json{{"missing", missing}};
      }
      reply(r, 200, out);
    });
    server_.Post(R"(/(\w+)/_bulk_get)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      json results = json::array();
      const json asked = json::parse(q.body);
      for (const json& ask : asked["docs"]) {
        json doc = dbs_[q.matches[1]][ask["id"].get<std::string>()];
        const std::string rev = doc["_rev"];
        doc["_revisions"] = json{{"start", std::stoi(rev)}, {"ids", json::array({rev.substr(rev.find('-') + 1)})}};
        results.push_back(json{{"id", ask["id"]}, {"docs", json::array({json{{"ok", doc}}})}});
      }
      reply(r, 200, json{{"results", results}});
    });
    server_.Post(R"(/(\w+)/_bulk_docs)", [this](const httplib::Request& q, httplib::Response& r) {
      std::lock_guard<std::mutex> lock(mu_);
      if (refuse_writes) return reply(r, 500, json{{"error", "unknown_error"}, {"reason", "disk on fire"}});
      const json written = json::parse(q.body);
      for (json doc : written["docs"]) {
        doc.erase("_revisions");
        dbs_[q.matches[1]][doc["_id"].get<std::string>()] = doc;
      }
      reply(r, 201, json::array());
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });  // the socket listens already
  }
  ~fake_couch() {
    server_.stop();
    thread_.join();
  }

  std::string url(const std::string& db) const { return "http://127.0.0.1:" + std::to_string(port_) + "/" + db; }
  void put(const std::string& db, const std::string& id, const std::string& rev, json body) {
    std::lock_guard<std::mutex> lock(mu_);
    body["_id"] = id;
    body["_rev"] = rev;
    dbs_[db][id] = body;
  }
  std::map<std::string, json> docs(const std::string& db) {
    std::lock_guard<std::mutex> lock(mu_);
    return dbs_[db];
  }
  void put_local(const std::string& db, const std::string& id, json body) {
    std::lock_guard<std::mutex> lock(mu_);
    body["_rev"] = "0-1";
    locals_[db][id] = body;
  }
  json local(const std::string& db, const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    return locals_[db].count(id) ? locals_[db][id] : json();
  }
  size_t locals(const std::string& db) {
    std::lock_guard<std::mutex> lock(mu_);
    return locals_[db].size();
  }

  bool refuse_writes = false;
  int changes_reads = 0;
  std::vector<uint64_t> sinces;  // of each _changes read
  std::string password;          // base64 of user:password, when one is asked
  int refused_logins = 0;
  int refused() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_logins;
  }

 private:
  static void reply(httplib::Response& r, int status, const json& body) {
    r.status = status;
    r.set_content(body.dump(), "application/json");
  }
  uint64_t seqs(const std::string& db) { return dbs_[db].size(); }

  std::mutex mu_;
  std::map<std::string, std::map<std::string, json>> dbs_, locals_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

struct runner_fixture {
  temp_dir dir;
  manual_clock clk{1700000000000};
  task_list tasks;
  job_runner runner{tasks, clk, "n1", [] {
                      job_options o;
                      o.lanes = {{replication_job::lane, 2}, {replications::control_lane, 2}};
                      o.backoff_base = std::chrono::milliseconds(10);  // a failing one-shot retries 5 times
                      o.backoff_cap = std::chrono::milliseconds(20);
                      return o;
                    }()};
  replications reps{runner, clk, "n1", dir.path};
  ~runner_fixture() {
    reps.stop_all();
    runner.stop();
  }
  result<json> replicate(const json& body) {
    rep_context here{std::string(32, 'u'), "http://127.0.0.1:5984", {}, {}, reps.rules(), false};
    auto r = parse_rep_request(body, here);
    REQUIRE(r);
    return reps.replicate(std::move(*r));
  }
};

}  // namespace

TEST_CASE("replication job: a one-shot replication copies every revision, checkpoints both sides, and resumes") {
  fake_couch couch;
  for (int i = 0; i < 25; ++i) couch.put("src", "d" + std::to_string(i), "1-a" + std::to_string(i), json{{"n", i}});
  runner_fixture f;
  const json body = {{"source", couch.url("src")}, {"target", couch.url("tgt")}};
  auto first = f.replicate(body);
  REQUIRE_MESSAGE(first, (first ? "" : first.error().reason));
  CHECK((*first)["ok"] == true);
  CHECK((*first)["history"][0]["docs_written"] == 25);
  auto copied = couch.docs("tgt");
  REQUIRE(copied.size() == 25);
  CHECK(copied["d7"]["_rev"] == "1-a7");
  CHECK(copied["d7"]["n"] == 7);
  CHECK(couch.locals("src") == 1);  // the checkpoint, on both sides
  CHECK(couch.locals("tgt") == 1);

  // A new document: the next run starts from the checkpoint and writes only it.
  couch.put("src", "z", "1-zz", json{{"n", 99}});
  auto second = f.replicate(body);
  REQUIRE(second);
  // Its figures count on from the checkpoint's, as CouchDB's (couch_replicator_stats:max_stats).
  CHECK((*second)["history"][0]["docs_written"] == 26);
  CHECK((*second)["history"][0]["missing_checked"] == 26);
  CHECK((*second)["history"][1]["docs_written"] == 25);
  CHECK(couch.docs("tgt").size() == 26);
}

TEST_CASE("replication job: resumes from a checkpoint CouchDB's replicator wrote (issue 51 point 1)") {
  fake_couch couch;
  for (int i = 0; i < 25; ++i) {
    const std::string id = "d" + std::string(i < 10 ? "0" : "") + std::to_string(i);
    couch.put("src", id, "1-a" + std::to_string(i), json{{"n", i}});
    if (i < 20) couch.put("tgt", id, "1-a" + std::to_string(i), json{{"n", i}});
  }
  runner_fixture f;
  const json body = {{"source", couch.url("src")}, {"target", couch.url("tgt")}};
  rep_context here{std::string(32, 'u'), "http://127.0.0.1:5984", {}, {}, f.reps.rules(), false};
  const std::string id = parse_rep_request(body, here)->base_id;  // CouchDB's (replicator_test's goldens)
  // do_checkpoint's document, as CouchDB 3.5 writes it on both sides after copying 20 documents.
  const json entry = {{"session_id", "d6a5b1e8c0f24b6e9f1a2b3c4d5e6f70"},
                      {"start_time", "Sat, 28 Nov 2026 10:00:00 GMT"},
                      {"end_time", "Sat, 28 Nov 2026 10:00:05 GMT"},
                      {"start_last_seq", 0},
                      {"end_last_seq", 20},
                      {"recorded_seq", 20},
                      {"missing_checked", 20},
                      {"missing_found", 20},
                      {"docs_read", 20},
                      {"docs_written", 20},
                      {"doc_write_failures", 0},
                      {"bulk_get_docs", 20},
                      {"bulk_get_attempts", 20}};
  const json log = {{"session_id", entry["session_id"]},
                    {"source_last_seq", 20},
                    {"replication_id_version", 4},
                    {"history", json::array({entry})}};
  couch.put_local("src", id, log);
  couch.put_local("tgt", id, log);
  auto got = f.replicate(body);
  REQUIRE(got);
  CHECK(couch.sinces.front() == 20);  // from the checkpoint, not from 0
  CHECK(couch.docs("tgt").size() == 25);
  const json written = couch.local("tgt", id);
  REQUIRE(written.is_object());
  CHECK(written["source_last_seq"] == 25);
  CHECK(written["replication_id_version"] == 4);
  CHECK(written["history"][0]["start_last_seq"] == 20);
  CHECK(written["history"][0]["docs_written"] == 25);  // 20 before, 5 now
  CHECK(written["history"][0]["missing_checked"] == 25);
  CHECK(written["history"][1] == entry);  // CouchDB's session kept below
  CHECK(couch.local("src", id)["session_id"] == written["session_id"]);
}

TEST_CASE("replication job: a target that refuses writes fails the replication with its reason") {
  fake_couch couch;
  couch.put("src", "a", "1-x", json{{"n", 1}});
  couch.refuse_writes = true;
  runner_fixture f;
  auto got = f.replicate(json{{"source", couch.url("src")}, {"target", couch.url("tgt")}, {"retries_per_request", 0}});
  REQUIRE_FALSE(got);
  CHECK(got.error().reason.find("disk on fire") != std::string::npos);
  CHECK(couch.docs("tgt").empty());
  CHECK(couch.locals("tgt") == 0);  // no checkpoint past what the target never took
}

TEST_CASE("replication job: a refused login is not retried like a network error (issue 51 point 2)") {
  mono::manual mclock;  // the backoffs wait on it: the test moves it
  mclock.install();
  fake_couch couch;
  couch.put("src", "a", "1-x", json{{"n", 1}});
  couch.password = "YWRtaW46cmlnaHQ=";  // admin:right
  runner_fixture f;                     // its network backoff: 10 ms, capped at 20 ms
  const std::string wrong = "http://admin:wrong@" + couch.url("src").substr(7);

  // One-shot: fails at once with CouchDB's reason, after one refused login.
  auto once = f.replicate(json{{"source", wrong}, {"target", couch.url("tgt")}});
  REQUIRE_FALSE(once);
  CHECK(once.error().reason.find("unauthorized") != std::string::npos);
  CHECK(couch.refused() == 1);

  // Continuous: waits CouchDB's crash backoff (30 s, then 60 s), not the network one.
  auto cont = f.replicate(json{{"source", wrong}, {"target", couch.url("tgt")}, {"continuous", true}});
  REQUIRE(cont);
  const std::string id = "replication " + (*cont)["_local_id"].get<std::string>();
  auto next = [&] {
    std::optional<mono::time_point> at;
    while (!(at = f.runner.next_step(id))) std::this_thread::yield();
    return *at;
  };
  CHECK(next() == mclock.now() + std::chrono::seconds(30));
  CHECK(couch.refused() == 2);
  mclock.advance(std::chrono::seconds(29));
  CHECK(f.runner.next_step(id) == mclock.now() + std::chrono::seconds(1));  // still waiting
  CHECK(couch.refused() == 2);
  mclock.advance(std::chrono::seconds(1));
  while (couch.refused() < 3) std::this_thread::yield();
  CHECK(next() == mclock.now() + std::chrono::seconds(60));
  CHECK(couch.refused() == 3);
}

namespace {

// A node's `_replicator` database (real shard files through a real coordinator) and its processor.
struct processor_fixture : registry_fixture {
  db_catalog catalog{shards, clk, dir.path, "n1@h", std::chrono::seconds(10)};
  coordinator coord{catalog, shards, std::chrono::seconds(10), "n1@h"};
  task_list tasks;
  job_runner runner{tasks, clk, "n1@h", [] {
                      job_options o;
                      o.lanes = {{replication_job::lane, 2}, {replications::control_lane, 2}};
                      return o;
                    }()};
  replications reps{runner, clk, "n1@h", dir.path};
  std::string self_url = "http://127.0.0.1:5984";
  cluster_members* no_cluster = nullptr;
  std::shared_ptr<replicator_docs> processor;
  db_meta db;

  processor_fixture() {
    REQUIRE(catalog.load());
    REQUIRE(catalog.create_system(replicator_docs::db_name));
    db = *catalog.lookup(replicator_docs::db_name);
    // As an HTTP write makes one (to_doc_update): the body without _id and _rev, extending _rev.
    auto to_update = [](const db_meta&, json body, const std::string& id) -> result<doc_update> {
      doc_update u;
      u.id = id;
      if (body.contains("_rev")) {
        rev_id rev;
        REQUIRE(parse_rev(body["_rev"].get<std::string>(), rev));
        u.revs = {rev};
      }
      body.erase("_id");
      body.erase("_rev");
      u.body = body.dump();
      return u;
    };
    processor = std::make_shared<replicator_docs>(
        replicator_host{clk, coord, "n1@h", std::string(32, 'u'), self_url, nullptr, no_cluster,
                        [](const std::string&) { return true; }, to_update},
        reps);
  }
  ~processor_fixture() {
    reps.stop_all();
    runner.stop();
  }
  void put(const std::string& id, const json& body) { put_doc(coord, db, id, body); }
  json doc(const std::string& id) {
    all_docs_query q;
    q.range.include_docs = true;
    auto listing = list_all_docs(coord, db, q);
    REQUIRE(listing);
    for (const auto& row : listing->rows)
      if (row.doc.id == id && !row.doc.doc.empty()) return json::parse(row.doc.doc);
    return nullptr;
  }
};

}  // namespace

TEST_CASE("_replicator processor: a document starts its replication, and its end is written back into it") {
  fake_couch couch;
  for (int i = 0; i < 5; ++i) couch.put("src", "d" + std::to_string(i), "1-b" + std::to_string(i), json{{"n", i}});
  processor_fixture f;
  f.put("rep1", {{"source", couch.url("src")}, {"target", couch.url("tgt")}});
  f.put("bad", {{"source", "not a url"}, {"target", couch.url("tgt")}});
  REQUIRE(f.runner.submit(replicator_docs::job_id, replications::control_lane, f.processor));
  bool completed = false;
  for (int i = 0; i < 3000 && !completed; ++i) {  // bounded: the state it waits for, not a time
    completed = f.doc("rep1").value("_replication_state", "") == "completed";
    if (!completed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(completed);
  CHECK(couch.docs("tgt").size() == 5);
  const json done = f.doc("rep1");
  CHECK(done["_replication_stats"]["docs_written"] == 5);
  // A document that does not describe a replication fails, with CouchDB's reason, written back.
  const json bad = f.doc("bad");
  CHECK(bad["_replication_state"] == "failed");
  CHECK_FALSE(bad.value("_replication_state_reason", "").empty());
  auto rows = f.processor->rows();
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  // Both ended: answered from what they recorded (couch_replicator:info_from_doc).
  CHECK((*rows)[0]["state"] == "failed");
  CHECK((*rows)[0]["info"]["error"] == bad["_replication_state_reason"]);
  CHECK((*rows)[1]["state"] == "completed");
  CHECK((*rows)[1]["info"]["docs_written"] == 5);
  CHECK((*rows)[1]["id"].is_null());
  auto none = f.processor->row("nope");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}
