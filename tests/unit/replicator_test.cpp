// The replicator's pure parts: the Erlang external term format of replication ids, endpoints and
// their credentials, replication ids, and CouchDB's replication logs (checkpoints); and the
// scheduler's own tick against a runner on a manual clock.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "actors/jobs.hpp"
#include "actors/task_list.hpp"
#include "node/clock.hpp"
#include "replicator/rep_attachments.hpp"
#include "replicator/rep_checkpoint.hpp"
#include "replicator/rep_request.hpp"
#include "replicator/replications.hpp"
#include "temp_dir.hpp"
#include "wire/external_term.hpp"

using namespace settee;

namespace {
std::string bytes(std::initializer_list<int> b) {
  std::string out;
  for (int x : b) out += static_cast<char>(x);
  return out;
}
const rep_context ctx{
    std::string(32, 'u'), "http://127.0.0.1:5984", {{"Authorization", "Basic YTpi"}}, {}, nullptr, false};
}  // namespace

TEST_CASE("terms encode as CouchDB's term_to_binary(T, [{minor_version, 1}]) writes them") {
  CHECK(term_to_binary(eterm::list({})) == bytes({131, 106}));
  CHECK(term_to_binary(eterm::binary("abc")) == bytes({131, 109, 0, 0, 0, 3, 'a', 'b', 'c'}));
  CHECK(term_to_binary(eterm::string("abc")) == bytes({131, 107, 0, 3, 'a', 'b', 'c'}));
  CHECK(term_to_binary(eterm::string("")) == bytes({131, 106}));
  CHECK(term_to_binary(eterm::integer(1)) == bytes({131, 97, 1}));
  CHECK(term_to_binary(eterm::integer(300)) == bytes({131, 98, 0, 0, 1, 44}));
  CHECK(term_to_binary(eterm::integer(-1)) == bytes({131, 98, 255, 255, 255, 255}));
  CHECK(term_to_binary(eterm::integer(int64_t{1} << 40)) == bytes({131, 110, 6, 0, 0, 0, 0, 0, 0, 1}));
  CHECK(term_to_binary(eterm::integer(-(int64_t{1} << 40))) == bytes({131, 110, 6, 1, 0, 0, 0, 0, 0, 1}));
  CHECK(term_to_binary(eterm::floating(1.5)) == bytes({131, 70, 63, 248, 0, 0, 0, 0, 0, 0}));
  CHECK(term_to_binary(eterm::tuple({eterm::atom("a")})) == bytes({131, 104, 1, 100, 0, 1, 'a'}));  // ATOM_EXT
  CHECK(term_to_binary(eterm::list({eterm::atom("a")})) == bytes({131, 108, 0, 0, 0, 1, 100, 0, 1, 'a', 106}));
  // A list of small integers is a string: [1,2], as a JSON [1,2] decodes.
  CHECK(term_to_binary(ejson(json::parse("[1,2]"))) == bytes({131, 107, 0, 2, 1, 2}));
  // EJSON: {[{<<"k">>, true}]}.
  CHECK(term_to_binary(ejson(json::parse(R"({"k":true})"))) ==
        bytes({131, 104, 1, 108, 0, 0, 0, 1, 104, 2, 109, 0, 0, 0, 1, 'k', 100, 0, 4, 't', 'r', 'u', 'e', 106}));
}

TEST_CASE("endpoints keep credentials apart from their URL, however they come") {
  auto e = parse_endpoint("http://bob:p%40ss@db.example:5985/a%2Fb", "http://127.0.0.1:5984", {});
  REQUIRE(e);
  CHECK(e->url() == "http://db.example:5985/a%2Fb/");
  CHECK(e->user == "bob");
  CHECK(e->password == "p@ss");
  auto h = parse_endpoint(
      json::parse(R"({"url":"https://db.example/x","headers":{"Authorization":"Basic Ym9iOnNlY3JldA==","X-A":"1"}})"),
      "", {});
  REQUIRE(h);
  CHECK(h->url() == "https://db.example/x/");
  CHECK(h->port == 443);
  CHECK(h->user == "bob");
  CHECK(h->password == "secret");
  CHECK(h->headers == std::vector<std::pair<std::string, std::string>>{{"X-A", "1"}});
  auto a = parse_endpoint(
      json::parse(R"({"url":"http://u:old@h/x","auth":{"basic":{"username":"bob","password":"new"}}})"), "", {});
  REQUIRE(a);
  CHECK(a->user == "bob");
  CHECK(a->password == "new");  // auth.basic wins
  auto local = parse_endpoint("my/db", "http://127.0.0.1:5984", {{"Cookie", "AuthSession=x"}});
  REQUIRE(local);
  CHECK(local->local_name == "my/db");
  CHECK(local->url() == "http://127.0.0.1:5984/my%2Fdb/");
  CHECK(local->headers.size() == 1);
  for (const char* bad : {"ftp://h/db", "Not A Name", "http://", "http://h:99999/db", "http://h:x/db"})
    CHECK_MESSAGE(!parse_endpoint(bad, "http://127.0.0.1:5984", {}), bad);
  CHECK(!parse_endpoint(json::parse("3"), "", {}));
  CHECK(!parse_endpoint(json::parse(R"({"url":"http://h/x","auth":{"basic":{"username":1}}})"), "", {}));
  CHECK(strip_url_credentials("http://a:b@h:1/x@y") == "http://h:1/x@y");
}

TEST_CASE("replication ids: passwords and where credentials come from do not count; users and filters do") {
  auto id = [](const char* body) {
    auto r = parse_rep_request(json::parse(body), ctx);
    REQUIRE_MESSAGE(r, body);
    return r->id();
  };
  const std::string base = id(R"({"source":"http://bob:one@h/a","target":"http://h:5984/b"})");
  CHECK(base.size() == 32);
  CHECK(base == id(R"({"source":"http://bob:two@h/a","target":"http://h/b"})"));  // 5984 is a default port
  CHECK(
      base ==
      id(R"({"source":{"url":"http://h/a","auth":{"basic":{"username":"bob","password":"x"}}},"target":"http://h/b"})"));
  CHECK(
      base ==
      id(R"({"source":{"url":"https://h:443/a","headers":{"Authorization":"Basic Ym9iOnk="}},"target":"http://h/b"})"));
  CHECK(base != id(R"({"source":"http://eve:one@h/a","target":"http://h/b"})"));
  CHECK(base != id(R"({"source":"http://bob:one@h:81/a","target":"http://h/b"})"));
  CHECK(base + "+continuous" == id(R"({"source":"http://bob@h/a","target":"http://h/b","continuous":true})"));
  CHECK(base + "+continuous+create_target" ==
        id(R"({"source":"http://bob@h/a","target":"http://h/b","continuous":true,"create_target":true})"));
  const std::string ids = id(R"({"source":"http://bob@h/a","target":"http://h/b","doc_ids":["y","x","x"]})");
  CHECK(ids != base);
  CHECK(ids == id(R"({"source":"http://bob@h/a","target":"http://h/b","doc_ids":["x","y"]})"));  // sorted, unique
  CHECK(ids != id(R"({"source":"http://bob@h/a","target":"http://h/b","selector":{"x":1}})"));
  CHECK(base != id(R"({"source":"http://bob@h/a","target":"http://h/b","since_seq":5})"));
  CHECK(base != id(R"({"source":"http://bob@h/a","target":"http://h/b","winning_revs_only":true})"));
  // Local names: the same id whatever port the node listens on (a restart may move it).
  auto on = [](const char* self) {
    return parse_rep_request(json::parse(R"({"source":"a","target":"b"})"),
                             rep_context{std::string(32, 'u'), self, {}, {}, nullptr, false})
        ->id();
  };
  CHECK(on("http://127.0.0.1:5984") == on("http://127.0.0.1:15984"));
  CHECK(on("http://127.0.0.1:5984") !=
        id(R"({"source":"http://127.0.0.1:5984/a","target":"http://127.0.0.1:5984/b"})"));
  auto other_server = parse_rep_request(json::parse(R"({"source":"http://bob@h/a","target":"http://h/b"})"),
                                        rep_context{std::string(32, 'v'), "", {}, {}, nullptr, false});
  CHECK(other_server->id() != base);
}

// Goldens from a real Erlang (OTP 25, erlang-base): erlang:md5(term_to_binary(T, [{minor_version, 1}]))
// of the term couch_replicator_ids:replication_id(Rep, 4) builds, with U = <<"uuu...">> (32),
// Src = {remote, "bob", "h", default, "/a/", [], undefined}, Tgt = {remote, undefined, "h", default,
// "/b/", [], undefined}; the term of each case is in its comment.
TEST_CASE("replication ids are CouchDB's, byte for byte (issue 51 point 1)") {
  auto id = [](const char* body) {
    auto r = parse_rep_request(json::parse(body), ctx);
    REQUIRE_MESSAGE(r, body);
    return r->base_id;
  };
  const char* ends = R"("source":"http://bob:pw@h/a","target":"http://h/b")";
  auto with = [&](const std::string& more) { return id(("{" + std::string(ends) + more + "}").c_str()); };
  CHECK(with("") == "78bb7062ae3d2f3799b793442c7b8e7a");  // [U, Src, Tgt]
  // [U, {remote, undefined, "db.example", 5985, "/a%2Fb/", [{"Accept-Foo","2"},{"X-A","1"}], undefined}, Tgt]
  CHECK(id(R"({"source":{"url":"http://db.example:5985/a%2Fb","headers":{"X-A":"1","Accept-Foo":"2"}},)"
           R"("target":"http://h/b"})") == "59edde9cbdebb1ae67158a8e1887a0bf");
  CHECK(with(R"(,"doc_ids":["y","x","x"])") == "046f8f02d1fa6cdf070923255cb20fc9");  // [..., [<<"x">>, <<"y">>]]
  // [..., {[{<<"$and">>, [{[{<<"b">>, {[{<<"$eq">>, 1}]}}]}, {[{<<"a">>, {[{<<"$gt">>, 2}]}}]}]}]}]: normalized
  CHECK(with(R"(,"selector":{"b":1,"a":{"$gt":2}})") == "ca943c60ad1d1dcf8c5dad7320244dd2");
  // [..., {[{<<"name">>, {[{<<"$eq">>, <<"x">>}]}}]}] (couch_replicator_filters' own regression test)
  CHECK(with(R"(,"selector":{"name":"x"})") == "9fec971db65bb18b719416826935b2ee");
  // [..., {[{<<"a.b">>, {[{<<"$in">>, [1, 2.5, <<"z">>, null, true]}]}}]}]: a dotted path, a float
  CHECK(with(R"(,"selector":{"a":{"b":{"$in":[1,2.5,"z",null,true]}}})") == "0677364f801b7e08edf8cd15c6a47f74");
  CHECK(with(R"(,"since_seq":5)") == "dfe27acb9b4e696a299b3ee41c785438");              // [..., 5]
  CHECK(with(R"(,"since_seq":"3-g1AAAA")") == "6caabc7318bfd295e720f3623fde8454");     // [..., <<"3-g1AAAA">>]
  CHECK(with(R"(,"winning_revs_only":true)") == "7dfe1727bb50005f6c7741671d497565");   // [..., <<"winning_revs_only">>]
  CHECK(with(R"(,"winning_revs_only":false)") == "78bb7062ae3d2f3799b793442c7b8e7a");  // as none
  CHECK(with(R"(,"since_seq":7,"winning_revs_only":true)") == "ea2bae16f8973fb1101f8812b4993b17");
  // [..., <<"_view">>, {[{<<"view">>, <<"d/v">>}]}] and [..., <<"_design">>, {[]}]
  CHECK(with(R"(,"filter":"_view","query_params":{"view":"d/v"})") == "affd85c909a9fb56dc8b3c1ff57d9820");
  CHECK(with(R"(,"filter":"_design")") == "b4a786985b4d7763ecb7b3c449dc1b64");
  // [..., <<"function(doc, req) { return doc.k == req.query.k; }">>, {[{<<"k">>, <<"v">>}]}]: the code
  // fetched from the source, the spaces around a one-line code dropped as fetch_internal's re:replace does.
  auto r =
      parse_rep_request(json::parse(R"({)" + std::string(ends) + R"(,"filter":"d/f","query_params":{"k":"v"}})"), ctx);
  REQUIRE(r);
  r->filter_code = "  function(doc, req) { return doc.k == req.query.k; }  ";
  CHECK(compute_base_id(*r, std::string(32, 'u')) == "c150c5e50856c9eaebdc7f324acd34b2");
}

TEST_CASE("requests are checked as couch_replicator_utils checks them") {
  auto reason = [](const char* body) {
    auto r = parse_rep_request(json::parse(body), ctx);
    return r ? std::string() : r.error().reason;
  };
  CHECK(reason(R"({"source":"a","target":"b","cancel":"true"})") == "parameter `cancel` must be a boolean");
  CHECK(reason(R"({"source":"a","target":"b","create_target_params":1})") ==
        "parameter `create_target_params` must be a JSON object");
  CHECK(reason(R"({"source":"a","target":"b","filter":"f/x","selector":{}})") ==
        "`doc_ids`,`filter`,`selector` are mutually exclusive");
  CHECK(reason(R"({"source":"a","target":"b","worker_processes":"x"})") ==
        "parameter `worker_processes` must be an integer");
  CHECK(reason(R"({"source":"a","target":"b","worker_batch_size":0})") ==
        "parameter `worker_batch_size` must be between 1 and 10000");
  CHECK(reason(R"({"source":"a"})") == "Missing replicator database");
  CHECK(reason(R"({"source":"a","target":"b","worker_processes":"2"})").empty());
  auto cancel = parse_rep_request(json::parse(R"({"replication_id":"abc continuous","cancel":true})"), ctx);
  REQUIRE(cancel);
  CHECK(cancel->cancel_id == "abc+continuous");  // a '+' unquoted to a space, as couch_replicator_ids:convert
}

TEST_CASE("a replication starts from the newest session both logs share") {
  auto entry = [](const char* session, int seq) { return json{{"session_id", session}, {"recorded_seq", seq}}; };
  json source = {
      {"session_id", "s3"}, {"source_last_seq", 30}, {"history", {entry("s3", 30), entry("s2", 20), entry("s1", 10)}}};
  json target = source;
  auto same = compare_replication_logs(source, target);
  CHECK(same.found);
  CHECK(same.seq == 30);
  CHECK(same.history.size() == 3);
  target = {{"session_id", "t9"}, {"history", {entry("t9", 99), entry("s2", 20), entry("s1", 10)}}};
  auto shared = compare_replication_logs(source, target);
  CHECK(shared.found);
  CHECK(shared.seq == 20);  // s3 is not on the target; s2 is on both
  CHECK(shared.history.size() == 1);
  target = {{"session_id", "t9"}, {"history", {entry("t9", 99), entry("t8", 88)}}};
  CHECK(!compare_replication_logs(source, target).found);
  CHECK(!compare_replication_logs(source, nullptr).found);
  CHECK(compare_replication_logs(nullptr, nullptr).seq == 0);
}

TEST_CASE("a checkpoint's log is CouchDB's, its history capped at 50 entries") {
  json old = json::array();
  for (int i = 0; i < 60; ++i) old.push_back({{"session_id", std::to_string(i)}});
  rep_stats s;
  s.docs_written = 7;
  json log = checkpoint_log("new", 0, "5-abc", "a", "b", s, old);
  CHECK(log["session_id"] == "new");
  CHECK(log["source_last_seq"] == "5-abc");
  CHECK(log["replication_id_version"] == 4);
  CHECK(log["history"].size() == 50);
  CHECK(log["history"][0]["recorded_seq"] == "5-abc");
  CHECK(log["history"][0]["docs_written"] == 7);
  CHECK(log["history"][1]["session_id"] == "0");
  CHECK(rfc1123_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
  CHECK(rfc1123_date(1795750540) == "Fri, 27 Nov 2026 03:35:40 GMT");
}

TEST_CASE("a revision sends only the attachments newer than the target's newest shared ancestor") {
  json doc = json::parse(R"({"_id":"d","_rev":"4-d","_revisions":{"start":4,"ids":["d","c","b","a"]},
    "_attachments":{"old":{"stub":true,"revpos":1,"length":10},
                    "mid":{"stub":true,"revpos":3,"length":100,"encoded_length":40},
                    "new":{"stub":true,"revpos":4,"length":1000,"encoded_length":2000}}})");
  // No ancestor known to the target: everything goes, sized by the larger of its lengths.
  auto all = attachments_to_send(doc, nullptr);
  CHECK(all.count == 3);
  CHECK(all.bytes == 10 + 100 + 2000);
  // The target has 2-b: attachments of revpos 3 and 4 go.
  auto some = attachments_to_send(doc, json::array({"2-b"}));
  CHECK(some.count == 2);
  CHECK(some.bytes == 2100);
  // The newest shared ancestor counts; revisions off the document's path do not.
  CHECK(attachments_to_send(doc, json::array({"2-b", "3-c", "3-zz", "9-d"})).count == 1);
  CHECK(attachments_to_send(doc, json::array({"3-zz", "x-c", "-c", 7})).count == 3);
  CHECK(attachments_to_send(doc, json::array({"4-d"})).count == 0);
  // No revpos: it goes. No attachments, or no _revisions: as nothing shared.
  CHECK(attachments_to_send(json::parse(R"({"_attachments":{"a":{"stub":true}}})"), json::array({"1-a"})).count == 1);
  CHECK(attachments_to_send(json::parse(R"({"_id":"x"})"), nullptr).count == 0);
  CHECK(attachments_to_send(json::parse(R"({"_attachments":{"a":{"revpos":1,"length":5}}})"), json::array({"1-a"}))
            .bytes == 5);
}

namespace {

// The types of a replication's history events, newest first.
std::vector<std::string> events(const replications& reps, const std::string& id) {
  std::vector<std::string> out;
  auto row = reps.job(id);
  if (!row) return out;
  for (const json& e : (*row)["history"]) out.push_back(e["type"].get<std::string>());
  return out;
}

bool crashed(const replications& reps, const std::string& id) {
  auto e = events(reps, id);
  return std::find(e.begin(), e.end(), "crashed") != e.end();
}

// Waits (bounded) for `state`; false when it never came.
template <class State>
bool eventually(State state) {
  for (int i = 0; i < 3000; ++i) {
    if (state()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return state();
}

}  // namespace

TEST_CASE("the scheduler rotates on its own tick, once per interval of the node's clock") {
  temp_dir dir;
  manual_clock clk(1000);
  task_list tasks;
  job_options o;
  o.lanes = {{replication_job::lane, 2}, {replications::control_lane, 2}};
  o.backoff_base = std::chrono::milliseconds(50);
  o.backoff_cap = std::chrono::milliseconds(100);
  job_runner runner(tasks, clk, "n1", o);
  scheduler_limits lim;
  lim.max_jobs = 1;
  lim.interval = std::chrono::milliseconds(60000);
  replications reps(runner, clk, "n1", dir.path, lim);
  REQUIRE(reps.start_scheduler());
  // Two continuous replications whose source refuses connections: one runs (and crashes, retrying),
  // the other waits for a turn.
  rep_context here{std::string(32, 'u'), "http://127.0.0.1:5984", {}, {}, reps.rules(), false};
  auto first = parse_rep_request(
      json{{"source", "http://127.0.0.1:1/a"}, {"target", "http://127.0.0.1:1/b"}, {"continuous", true}}, here);
  auto second = parse_rep_request(
      json{{"source", "http://127.0.0.1:1/c"}, {"target", "http://127.0.0.1:1/d"}, {"continuous", true}}, here);
  REQUIRE(first);
  REQUIRE(second);
  const std::string a = first->id(), b = second->id();
  REQUIRE(reps.replicate(std::move(*first)));
  REQUIRE(reps.replicate(std::move(*second)));
  REQUIRE(eventually([&] { return crashed(reps, a); }));
  CHECK_FALSE(crashed(reps, b));  // pending: it cannot run before the interval passed on the clock
  // No _replicator processor runs here: the scheduler's own tick rotates the crashing one out.
  clk.advance_ms(61000);
  CHECK(eventually([&] { return crashed(reps, b); }));
  reps.stop_all();
  runner.stop();
}
