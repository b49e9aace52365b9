// The coordinator against fake shard copies: quorum writes and reads, read repair, and copies that
// fail, are slow or never answer. The copies are in memory; nothing here depends on where a copy
// lives, which is the point of shard_copy.
#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "actors/changes_reader.hpp"
#include "actors/coordinator.hpp"
#include "node/clock.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

// A copy held in memory. `mode` decides how it answers: at once, with an error, after `delay` on
// another thread, or never (the callback is dropped, as a node that vanished mid-call).
class fake_copy final : public shard_copy {
 public:
  enum class mode { ok, failing, held, vanishing };
  fake_copy(std::string node, mode m = mode::ok) : node_(std::move(node)), mode_(m) {}
  ~fake_copy() override {
    for (auto& t : threads_) t.join();
  }

  const std::string& node() const override { return node_; }
  bool local() const override { return false; }
  bool hashes_sha256() const override { return sha; }
  bool sha = false;              // as a node of release 0.5+ (rev_hash_feature)
  std::vector<rev_hash> hashes;  // how each update it was given asked to hash

  // Stores `path` (newest first) as a leaf of `id`.
  void put(const std::string& id, std::vector<rev_id> path, const std::string& body = "{}") {
    std::lock_guard<std::mutex> lock(mu_);
    doc_copy& d = docs_[id];
    d.id = d.info.id = id;
    d.found = true;
    bool added = false;
    d.info.tree.merge_path(path, false, added);
    d.bodies.emplace_back(path.front(), body);
  }
  std::vector<std::string> leaves(const std::string& id) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    if (!docs_.count(id)) return out;
    const rev_tree& t = docs_[id].info.tree;
    for (int leaf : t.sorted_leaves()) out.push_back(t.rev(leaf).str());
    return out;
  }
  int reads = 0;   // open_docs calls
  int writes = 0;  // update_docs calls that were applied
  // Set: a started summary answers, from another thread, only once `want` summaries were started
  // on copies sharing it (a caller that waited for each before starting the next would wait for
  // the first until its deadline, and get this copy's error).
  struct rendezvous {
    std::mutex mu;
    std::condition_variable cv;
    int started = 0;
    int want = 0;
  };
  std::shared_ptr<rendezvous> together;
  void start_summary(answer<shard_summary> done) override {
    if (!together) return done(summary());
    {
      std::lock_guard<std::mutex> lock(together->mu);
      ++together->started;
    }
    together->cv.notify_all();
    threads_.emplace_back([this, done = std::move(done), t = together] {
      std::unique_lock<std::mutex> lock(t->mu);
      // Bounded only so that a broken coordinator fails the test instead of hanging it.
      bool all = t->cv.wait_for(lock, std::chrono::seconds(30), [&] { return t->started >= t->want; });
      lock.unlock();
      done(all ? summary() : result<shard_summary>(down()));
    });
  }
  // mode::held: the answers kept back until release() gives them (after the caller returned).
  void release() {
    std::vector<std::function<void()>> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      held.swap(held_);
    }
    for (auto& answer : held) answer();
  }

  result<shard_summary> summary() override { return fail_or(shard_summary{"uuid-" + node_, 1, 1, 0, 0, 0, 1000}); }
  // The rows a changes page gives (once: the next page is empty).
  std::vector<uint64_t> change_seqs;
  result<changes_page> changes(const changes_request&) override {
    changes_page page;
    for (uint64_t seq : change_seqs) {
      change_row r;
      r.e.seq = seq;
      r.e.id = "d" + std::to_string(seq);
      r.e.rev = "1-a";
      page.rows.push_back(r);
    }
    change_seqs.clear();
    return fail_or(page);
  }
  result<resolved_since> resolve_since(const std::string&, uint64_t) override { return fail_or(resolved_since{}); }
  result<all_docs_page> all_docs(const all_docs_request&) override { return fail_or(all_docs_page{}); }
  result<time_seq_state> time_seq(bool) override { return fail_or(time_seq_state{}); }
  result<std::optional<local_doc>> open_local(const std::string&) override {
    return fail_or(std::optional<local_doc>());
  }
  result<uint64_t> write_local(const local_update&) override { return fail_or(uint64_t{1}); }
  result<std::vector<local_doc>> list_local() override { return fail_or(std::vector<local_doc>()); }
  status set_revs_limit(uint32_t) override { return mode_ == mode::failing ? down() : status{}; }
  result<std::string> read_blob(const std::string&, uint64_t, uint64_t) override { return down(); }
  result<bool> stage_blob(const std::string&, uint64_t, const std::string&) override { return down(); }
  status drop_staged(const std::string&) override { return down(); }

  void open_docs(const std::vector<std::string>& ids, doc_bodies, docs_done done) override {
    ++reads;
    answer<std::vector<doc_copy>>(std::move(done), [this, ids]() -> result<std::vector<doc_copy>> {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<doc_copy> out;
      for (auto& id : ids) {
        auto it = docs_.find(id);
        doc_copy d;
        d.id = id;
        out.push_back(it == docs_.end() ? d : it->second);
      }
      return out;
    });
  }
  void update_docs(std::vector<doc_update> docs, write_done done) override {
    answer<std::vector<doc_result>>(std::move(done), [this, docs]() -> result<std::vector<doc_result>> {
      std::vector<doc_result> out;
      for (auto& u : docs) {
        {
          std::lock_guard<std::mutex> lock(mu_);
          hashes.push_back(u.hash);
        }
        put(u.id, u.revs, u.body);
        doc_result r;
        r.rev = u.revs.front();
        r.added = true;
        out.push_back(r);
      }
      std::lock_guard<std::mutex> lock(mu_);
      ++writes;
      return out;
    });
  }

 private:
  status down() const { return {errc::unavailable, "node " + node_ + " is unavailable: down"}; }
  template <class T>
  result<T> fail_or(T v) const {
    if (mode_ == mode::failing) return down();
    return v;
  }
  template <class T, class F>
  void answer(std::function<void(result<T>)> done, F make) {
    switch (mode_) {
      case mode::ok:
        return done(make());
      case mode::failing:
        return done(down());
      case mode::vanishing:
        return;  // never answers
      case mode::held: {
        std::lock_guard<std::mutex> lock(mu_);
        held_.push_back([done = std::move(done), make]() { done(make()); });
      }
    }
  }

  std::string node_;
  mode mode_;
  std::mutex mu_;
  std::map<std::string, doc_copy> docs_;
  std::vector<std::thread> threads_;
  std::vector<std::function<void()>> held_;
};

struct fake_source : copy_source {
  std::vector<std::shared_ptr<fake_copy>> all;
  std::vector<copy_ptr> copies(const db_meta&, size_t) override { return {all.begin(), all.end()}; }
};

struct fixture : registry_fixture {
  db_catalog catalog{shards, clk, dir.path, "a", std::chrono::milliseconds(1000)};
  fake_source source;
  std::unique_ptr<coordinator> coord;
  db_meta db;

  explicit fixture(std::vector<fake_copy::mode> modes, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    const char* names[] = {"a", "b", "c", "d", "e"};
    for (size_t i = 0; i < modes.size(); ++i) source.all.push_back(std::make_shared<fake_copy>(names[i], modes[i]));
    coord = std::make_unique<coordinator>(catalog, shards, timeout, "a");
    coord->set_copy_source(&source);
    db.name = "db";
    db.q = 1;
    db.n = static_cast<uint32_t>(modes.size());
    db.ranges = make_ranges(1);
    db.suffixes = {0};
    db.nodes = {{}};
    for (size_t i = 0; i < modes.size(); ++i) db.nodes[0].push_back(names[i]);
    db.local = {false};
  }
  fake_copy& copy(size_t i) { return *source.all[i]; }
};

using m = fake_copy::mode;

// The monotonic clock of a test: it moves only when the test says (mono::manual). If the code
// under test waits for a time the test never gives, the watchdog moves the clock past every
// deadline after 30 real seconds and says so: rescued() fails the test instead of hanging it.
struct test_clock {
  mono::manual clock;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false, rescue = false;
  std::thread watchdog;
  test_clock() {
    clock.install();
    watchdog = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu);
      if (!cv.wait_for(lock, std::chrono::seconds(30), [this] { return done; })) {
        rescue = true;
        lock.unlock();
        clock.advance(std::chrono::hours(24));
      }
    });
  }
  ~test_clock() {
    {
      std::lock_guard<std::mutex> lock(mu);
      done = true;
    }
    cv.notify_all();
    watchdog.join();
  }
  bool rescued() {
    std::lock_guard<std::mutex> lock(mu);
    return rescue;
  }
  // Once a thread waits on the clock (the caller blocked in the coordinator), moves it by `d`.
  std::thread advance_when_waited(mono::duration d) {
    return std::thread([this, d] {
      while (clock.waiters() == 0) std::this_thread::yield();
      clock.advance(d);
    });
  }
};

doc_update edit(const std::string& id, std::vector<rev_id> revs) {
  doc_update u;
  u.id = id;
  u.body = "{\"v\":1}";
  u.revs = std::move(revs);
  u.new_edits = false;
  return u;
}

}  // namespace

TEST_CASE("a write meets w when w copies commit; fewer is accepted (202); none is the first failure") {
  {
    fixture f({m::ok, m::failing, m::ok});
    auto out = f.coord->update_docs(f.db, {edit("x", {{1, "a"}})}, 2);
    REQUIRE(out);
    CHECK(out->quorum_met);
    CHECK(out->results[0].st);
  }
  {
    fixture f({m::ok, m::failing, m::failing});
    auto out = f.coord->update_docs(f.db, {edit("x", {{1, "a"}})}, 2);
    REQUIRE(out);
    CHECK_FALSE(out->quorum_met);
    CHECK(out->results[0].st);  // written on one copy: internal replication brings it to the others
  }
  {
    fixture f({m::failing, m::failing, m::failing});
    auto out = f.coord->update_docs(f.db, {edit("x", {{1, "a"}})}, 2);
    REQUIRE(out);
    CHECK(out->results[0].st.code == errc::unavailable);
    CHECK(out->results[0].st.reason.find("node a") != std::string::npos);
  }
}

TEST_CASE("a write asks its copies for SHA-256 revisions only when every copy of the range makes them") {
  for (int old_one = -1; old_one < 3; ++old_one) {
    fixture f({m::ok, m::ok, m::ok});
    for (size_t i = 0; i < 3; ++i) f.copy(i).sha = static_cast<int>(i) != old_one;
    auto out = f.coord->update_docs(f.db, {edit("x", {{1, "a"}}), edit("y", {{1, "b"}})}, 3);
    REQUIRE(out);
    const rev_hash want = old_one < 0 ? rev_hash::sha256 : rev_hash::md5;  // one older node: MD5 everywhere
    for (size_t i = 0; i < 3; ++i) CHECK(f.copy(i).hashes == std::vector<rev_hash>{want, want});
  }
}

TEST_CASE("a copy that never answers costs a write w=n the request timeout, and w=2 nothing") {
  test_clock t;
  fixture f({m::ok, m::vanishing, m::ok}, std::chrono::milliseconds(300));
  // The clock does not move: a write that waited for b would wait for ever.
  auto out = f.coord->update_docs(f.db, {edit("x", {{1, "a"}})}, 2);
  REQUIRE(out);
  CHECK(out->quorum_met);
  CHECK_FALSE(t.rescued());
  // w=3 waits for b until the request timeout: the clock gets there once the write waits.
  std::thread mover = t.advance_when_waited(std::chrono::milliseconds(300));
  out = f.coord->update_docs(f.db, {edit("y", {{1, "a"}})}, 3);
  mover.join();
  CHECK_FALSE(t.rescued());
  REQUIRE(out);
  CHECK_FALSE(out->quorum_met);  // b never said: 202, the write stands on a and c
  CHECK(out->results[0].st);
  CHECK(f.copy(2).leaves("y") == std::vector<std::string>{"1-a"});
}

TEST_CASE("a quorum read merges r copies and repairs the stale one before answering") {
  fixture f({m::ok, m::ok, m::ok});
  f.copy(0).put("d", {{1, "a"}});  // stale: missed the second edit
  f.copy(1).put("d", {{2, "b"}, {1, "a"}}, "{\"v\":2}");
  f.copy(2).put("d", {{2, "b"}, {1, "a"}}, "{\"v\":2}");
  auto d = f.coord->open_doc(f.db, "d", 2);
  REQUIRE(d);
  REQUIRE(d->found);
  CHECK(d->info.tree.rev(d->info.tree.winner()).str() == "2-b");
  REQUIRE(d->body({2, "b"}));
  CHECK(*d->body({2, "b"}) == "{\"v\":2}");
  CHECK(f.copy(0).leaves("d") == std::vector<std::string>{"2-b"});  // repaired
  CHECK(f.copy(2).reads == 0);                                      // r=2: the third copy was not asked
}

TEST_CASE("conflicting leaves on two copies: both are kept, the winner is CouchDB's, both copies learn both") {
  fixture f({m::ok, m::ok});
  f.copy(0).put("d", {{2, "b"}, {1, "a"}});
  f.copy(1).put("d", {{2, "c"}, {1, "a"}});
  auto d = f.coord->open_doc(f.db, "d", 2);
  REQUIRE(d);
  CHECK(d->info.tree.rev(d->info.tree.winner()).str() == "2-c");  // the greater hash
  CHECK(d->info.tree.leaves().size() == 2);
  CHECK(f.copy(0).leaves("d") == std::vector<std::string>{"2-c", "2-b"});
  CHECK(f.copy(1).leaves("d") == std::vector<std::string>{"2-c", "2-b"});
}

TEST_CASE("a failing copy makes a quorum read ask the next one") {
  fixture f({m::failing, m::ok, m::ok});
  f.copy(1).put("d", {{1, "a"}});
  f.copy(2).put("d", {{1, "a"}});
  auto d = f.coord->open_doc(f.db, "d", 2);
  REQUIRE(d);
  CHECK(d->found);
  CHECK(f.copy(2).reads == 1);
}

TEST_CASE("a slow copy makes a quorum read ask the next one instead of waiting for it") {
  test_clock t;
  fixture f({m::ok, m::vanishing, m::ok}, std::chrono::seconds(10));
  f.copy(0).put("d", {{1, "a"}});
  f.copy(2).put("d", {{1, "a"}});
  // r=2 asks a and b; b stays silent; the read waits, and 100 ms on (not the 10 s deadline) asks c.
  std::thread mover = t.advance_when_waited(std::chrono::milliseconds(100));
  auto d = f.coord->open_doc(f.db, "d", 2);
  mover.join();
  REQUIRE(d);
  CHECK(d->found);
  CHECK(f.copy(1).reads == 1);
  CHECK(f.copy(2).reads == 1);
  CHECK_FALSE(t.rescued());
}

TEST_CASE("a slow copy's late answer is dropped safely after the read returned") {
  fixture f({m::ok, m::held, m::ok});
  f.copy(0).put("d", {{1, "a"}});
  f.copy(2).put("d", {{1, "a"}});
  auto d = f.coord->open_doc(f.db, "d", 2);
  REQUIRE(d);
  CHECK(d->found);
  CHECK(f.copy(1).reads == 1);  // asked, not answered: the read went on with the third copy
  f.copy(1).release();          // its answer lands in a gather nobody waits for
  auto again = f.coord->open_doc(f.db, "d", 2);
  REQUIRE(again);
  CHECK(again->found);
  f.copy(1).release();
}

TEST_CASE("a document no copy has is not found; every copy down is the copies' error") {
  {
    fixture f({m::ok, m::ok, m::ok});
    auto d = f.coord->open_doc(f.db, "nope", 2);
    REQUIRE(d);
    CHECK_FALSE(d->found);
  }
  {
    fixture f({m::failing, m::failing});
    auto d = f.coord->open_doc(f.db, "d", 1);
    REQUIRE_FALSE(d);
    CHECK(d.error().code == errc::unavailable);
  }
}

TEST_CASE("first_answer skips copies that fail, and prefers the node it is told") {
  fixture f({m::failing, m::ok, m::ok});
  copy_ptr who;
  auto s = f.coord->first_answer<shard_summary>(
      f.db, 0, [](shard_copy& c) { return c.summary(); }, &who);
  REQUIRE(s);
  CHECK(who->node() == "b");
  s = f.coord->first_answer<shard_summary>(
      f.db, 0, [](shard_copy& c) { return c.summary(); }, &who, "c");
  REQUIRE(s);
  CHECK(who->node() == "c");
  auto outcome = f.coord->set_revs_limit(f.db, 10);
  CHECK(outcome.asked == 3);
  REQUIRE(outcome.failed.size() == 1);
  CHECK(outcome.failed[0].node == "a");
}

TEST_CASE("each_range asks one copy of every range at once, the next copy of a range whose copy failed") {
  fixture f({m::ok, m::ok, m::ok}, std::chrono::seconds(5));
  f.db.q = 4;
  f.db.ranges = make_ranges(4);
  f.db.suffixes.assign(4, 0);
  f.db.nodes.assign(4, {"a", "b", "c"});
  f.db.local.assign(4, false);
  std::vector<size_t> all{0, 1, 2, 3};
  auto ask = [](shard_copy& c, size_t, shard_copy::answer<shard_summary> done) { c.start_summary(std::move(done)); };
  SUBCASE("all at once") {
    // Every range's copy is "a" (the fake source gives the same copies to every range): its four
    // summaries answer only once all four were started.
    f.copy(0).together = std::make_shared<fake_copy::rendezvous>();
    f.copy(0).together->want = 4;
    auto answers = f.coord->each_range<shard_summary>(f.db, all, ask);
    REQUIRE(answers.size() == 4);
    for (auto& a : answers) {
      REQUIRE(a.value);
      CHECK(a.copy->node() == "a");
      CHECK(a.value->uuid == "uuid-a");
    }
  }
  SUBCASE("preferred copies, and the next copy after a failure") {
    fixture g({m::failing, m::ok, m::ok});
    g.db = f.db;
    auto answers = g.coord->each_range<shard_summary>(g.db, all, ask, {"", "c", "a", "zz"});
    REQUIRE(answers.size() == 4);
    CHECK(answers[0].copy->node() == "b");  // a failed: the next in the map's order
    CHECK(answers[1].copy->node() == "c");  // preferred
    CHECK(answers[2].copy->node() == "b");  // preferred a failed
    CHECK(answers[3].copy->node() == "b");  // no such node: the map's order
  }
  SUBCASE("no copy answers: the last one's error") {
    fixture g({m::failing, m::failing});
    g.db = f.db;
    auto answers = g.coord->each_range<shard_summary>(g.db, all, ask);
    for (auto& a : answers) {
      REQUIRE_FALSE(a.value);
      CHECK(a.value.error().code == errc::unavailable);
      CHECK(a.value.error().reason.find("node b") != std::string::npos);
      CHECK_FALSE(a.copy);
    }
  }
}

TEST_CASE("a changes reader stops at a page out of seq order instead of repeating or skipping changes") {
  fixture f({m::ok});
  {
    changes_reader in_order(*f.coord, f.db, {});
    REQUIRE(in_order.start("0"));
    f.copy(0).change_seqs = {1, 2, 5};
    change_row row;
    std::vector<uint64_t> got;
    while (in_order.next(row)) got.push_back(row.e.seq);
    CHECK(got == std::vector<uint64_t>{1, 2, 5});
    CHECK(in_order.error());
  }
  changes_reader reader(*f.coord, f.db, {});
  REQUIRE(reader.start("0"));
  f.copy(0).change_seqs = {4, 3};
  change_row row;
  CHECK_FALSE(reader.next(row));
  REQUIRE_FALSE(reader.error());
  CHECK(reader.error().reason.find("out of seq order at seq 3") != std::string::npos);
}
