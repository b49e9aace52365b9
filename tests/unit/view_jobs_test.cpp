// The view build job (actors/view_jobs.hpp) on a real runner and pool, with indexes that are
// counters: every copy's seq is read before any update starts (one snapshot), an index is updated
// once per step for all its waiters, parts asked for during a step make another step, and a node
// that stops answers the waiters it did not serve.
#include "actors/view_jobs.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "node/clock.hpp"

namespace settee {
namespace {

// A wait that never came is a failure, not a hang of the whole suite.
constexpr auto test_deadline = std::chrono::seconds(120);

// What the parts did, in order: "seq a", "update a 7" (target 7), "done a ok".
struct journal {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> lines;
  std::map<std::string, uint64_t> seqs;  // each index's copy seq
  bool hold = false;                     // updates wait while set
  int dones = 0;

  void log(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(s);
    cv.notify_all();
  }
  void wait_dones(int n) {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, test_deadline, [&] { return dones >= n; }));
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    hold = false;
    cv.notify_all();
  }
};

view_build_part part(journal& j, const std::string& index) {
  view_build_part p;
  p.index = index;
  p.seq = [&j, index] {
    j.log("seq " + index);
    std::lock_guard<std::mutex> lock(j.mu);
    return j.seqs[index];
  };
  p.update = [&j, index](uint64_t target, const std::function<bool()>& stop) -> status {
    j.log("update " + index + " " + std::to_string(target));
    std::unique_lock<std::mutex> lock(j.mu);
    while (j.hold && !stop()) j.cv.wait_for(lock, std::chrono::milliseconds(1));  // a cancel does not notify
    if (stop()) return status{errc::unavailable, "stopped"};
    return {};
  };
  p.done = [&j, index](const status& st) {
    j.log("done " + index + (st ? " ok" : " " + st.reason));
    std::lock_guard<std::mutex> lock(j.mu);
    ++j.dones;
    j.cv.notify_all();
  };
  return p;
}

job_options indexer_lane() {
  job_options o;
  o.lanes = {{view_build::lane, 1}};
  return o;
}

// A runner with the indexer lane, a pool, and a journal whose updates wait until released.
struct build_fixture {
  journal j;          // first: outlives the threads below
  work_pool pool{4};  // outlives the runner, whose steps wait on it
  task_list tasks;
  manual_clock clk{5000};
  job_runner runner{tasks, clk, "n1", indexer_lane()};
  build_fixture() { j.hold = true; }
  // A build job of `parts` indexes, started.
  std::shared_ptr<view_build> start(
      const std::vector<std::string>& parts, std::function<void()> on_end = [] {}) {
    auto job = std::make_shared<view_build>("view_build/db/sig/1", pool, std::move(on_end));
    for (const auto& p : parts) REQUIRE(job->add(part(j, p)));
    REQUIRE(runner.submit("view_build/db/sig/1", view_build::lane, job));
    return job;
  }
};

}  // namespace

TEST_CASE_FIXTURE(build_fixture, "view build: one snapshot for every index, one update per index for all its waiters") {
  j.seqs = {{"a", 7}, {"b", 9}};
  start({"a", "a", "b"});  // two queries of index a
  {
    std::unique_lock<std::mutex> lock(j.mu);
    REQUIRE(j.cv.wait_for(lock, test_deadline,
                          [&] { return j.lines.size() >= 4; }));  // both seqs read, both updates started
    CHECK(j.lines[0].rfind("seq ", 0) == 0);
    CHECK(j.lines[1].rfind("seq ", 0) == 0);  // the snapshot is whole before any update
  }
  j.release();
  j.wait_dones(3);
  std::lock_guard<std::mutex> lock(j.mu);
  int updates_a = 0;
  for (const auto& l : j.lines) updates_a += l == "update a 7";
  CHECK(updates_a == 1);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "update b 9") == 1);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "done a ok") == 2);
}

TEST_CASE_FIXTURE(build_fixture,
                  "view build: a part asked for during a step makes another step with a newer snapshot") {
  j.seqs = {{"a", 3}};
  bool ended = false;
  auto job = start({"a"}, [&] {
    std::lock_guard<std::mutex> lock(j.mu);
    ended = true;
    j.cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(j.mu);
    REQUIRE(j.cv.wait_for(lock, test_deadline, [&] { return j.lines.size() >= 2; }));  // updating to 3
    j.seqs["a"] = 5;                                                                   // a write, then its query
  }
  REQUIRE(job->add(part(j, "a")));
  j.release();
  std::unique_lock<std::mutex> lock(j.mu);
  REQUIRE(j.cv.wait_for(lock, test_deadline, [&] { return ended; }));  // with nothing left after the second step
  CHECK(j.dones == 2);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "update a 3") == 1);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "update a 5") == 1);
  lock.unlock();
  CHECK_FALSE(job->add(part(j, "a")));  // ended: the next query starts a new build
}

TEST_CASE_FIXTURE(build_fixture, "view build: a stopping node ends the updates and answers every waiter") {
  j.seqs = {{"a", 3}};
  auto job = start({"a"});
  {
    std::unique_lock<std::mutex> lock(j.mu);
    REQUIRE(j.cv.wait_for(lock, test_deadline, [&] { return j.lines.size() >= 2; }));
  }
  REQUIRE(job->add(part(j, "a")));  // waits for the next step, which never comes
  runner.stop();
  j.wait_dones(2);
  std::lock_guard<std::mutex> lock(j.mu);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "done a stopped") == 1);
  CHECK(std::count(j.lines.begin(), j.lines.end(), "done a the node is stopping") == 1);
}

}  // namespace settee
