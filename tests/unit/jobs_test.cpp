// The jobs framework (actors/jobs.hpp): lanes bound what runs at once, retries back off on the
// monotonic clock (a manual one here: no sleeps), cancels end a job between steps, task rows live
// as long as the job.
#include "actors/jobs.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace settee {
namespace {

// A wait that never came is a failure, not a hang of the whole suite.
constexpr auto test_deadline = std::chrono::seconds(120);

using namespace std::chrono_literals;

// A job whose steps the test scripts: `next(n)` gives step n's answer.
struct scripted : job {
  std::function<job_next(job_context&, int)> next;
  json row = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int steps = 0;
  std::vector<int> attempts;
  bool ended_ = false;
  job_next::kind how{};
  std::string reason;

  job_next step(job_context& ctx) override {
    int n;
    {
      std::lock_guard<std::mutex> lock(mu);
      n = steps++;
      attempts.push_back(ctx.attempts());
    }
    cv.notify_all();
    return next(ctx, n);
  }
  json task() const override { return row; }
  void ended(job_next::kind k, const std::string& r) override {
    std::lock_guard<std::mutex> lock(mu);
    ended_ = true;
    how = k;
    reason = r;
    cv.notify_all();
  }
  void wait_steps(int n) {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, test_deadline, [&] { return steps >= n; }));
  }
  // The fields the job's threads write, read under their lock.
  job_next::kind ended_how() {
    std::lock_guard<std::mutex> lock(mu);
    return how;
  }
  bool is_ended() {
    std::lock_guard<std::mutex> lock(mu);
    return ended_;
  }
  int step_count() {
    std::lock_guard<std::mutex> lock(mu);
    return steps;
  }
  std::string ended_reason() {
    std::lock_guard<std::mutex> lock(mu);
    return reason;
  }
  void wait_ended() {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, test_deadline, [&] { return ended_; }));
  }
};

// A gate a step waits at until the test opens it.
struct gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;
  void pass() {
    std::unique_lock<std::mutex> lock(mu);
    ++waiting;
    cv.notify_all();
    cv.wait_for(lock, test_deadline, [&] { return open; });  // on a runner thread: no REQUIRE here
  }
  void wait_for(int n) {
    std::unique_lock<std::mutex> lock(mu);
    REQUIRE(cv.wait_for(lock, test_deadline, [&] { return waiting >= n; }));
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

job_options lanes(std::map<std::string, size_t> l) {
  job_options o;
  o.lanes = std::move(l);
  o.backoff_base = 1000ms;
  o.backoff_cap = 4000ms;
  return o;
}

}  // namespace

TEST_CASE("jobs: a lane runs at most its limit at once, other lanes go on beside it") {
  task_list tasks;
  manual_clock clk(5000);
  job_runner runner(tasks, clk, "n1", lanes({{"one", 1}, {"two", 2}}));
  gate g;
  std::atomic<int> running{0}, most{0};
  auto blocking = [&] {
    auto j = std::make_shared<scripted>();
    j->next = [&](job_context&, int) {
      int now = ++running;
      for (int m = most.load(); now > m && !most.compare_exchange_weak(m, now);) {
      }
      g.pass();
      --running;
      return job_next::done();
    };
    return j;
  };
  auto a1 = blocking(), a2 = blocking();
  REQUIRE(runner.submit("a1", "one", a1));
  REQUIRE(runner.submit("a2", "one", a2));
  CHECK_FALSE(runner.submit("a2", "one", blocking()));  // one job per id
  CHECK_FALSE(runner.submit("x", "nope", blocking()));  // unknown lane
  auto b1 = blocking(), b2 = blocking();
  REQUIRE(runner.submit("b1", "two", b1));
  REQUIRE(runner.submit("b2", "two", b2));
  g.wait_for(3);  // one of lane one and both of lane two
  CHECK(most.load() == 3);
  CHECK(runner.ids("a").size() == 2);
  g.release();
  for (auto& j : {a1, a2, b1, b2}) j->wait_ended();
  CHECK(most.load() == 3);
  CHECK(a1->ended_how() == job_next::kind::done);
  CHECK(runner.ids().empty());
}

TEST_CASE("jobs: a task row while the job is in the runner, with its progress") {
  task_list tasks;
  manual_clock clk(5000);
  job_runner runner(tasks, clk, "n1", lanes({{"one", 1}}));
  gate g;
  auto j = std::make_shared<scripted>();
  j->row = json{{"type", "database_compaction"}, {"changes_done", 0}};
  j->next = [&](job_context& ctx, int n) {
    if (n == 0) return job_next::more();
    ctx.progress(json{{"changes_done", 7}});
    g.pass();
    return job_next::done();
  };
  REQUIRE(runner.submit("c", "one", j));
  g.wait_for(1);
  json rows = tasks.all();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["type"] == "database_compaction");
  CHECK(rows[0]["node"] == "n1");
  CHECK(rows[0]["changes_done"] == 7);
  CHECK(rows[0]["started_on"] == 5);
  CHECK(rows[0].contains("pid"));
  g.release();
  j->wait_ended();
  CHECK(tasks.all().empty());
}

TEST_CASE("jobs: retries back off on the monotonic clock, doubling up to the cap") {
  mono::manual mclock;
  mclock.install();
  task_list tasks;
  manual_clock clk;
  job_runner runner(tasks, clk, "n1", lanes({{"one", 1}}));
  auto j = std::make_shared<scripted>();
  j->next = [](job_context&, int n) { return n < 4 ? job_next::retry("peer away") : job_next::done(); };
  REQUIRE(runner.submit("r", "one", j));
  // Step n waits 1 s, 2 s, 4 s, then the cap (4 s), from the moment it asked.
  const std::chrono::milliseconds waits[] = {1000ms, 2000ms, 4000ms, 4000ms};
  for (int n = 0; n < 4; ++n) {
    j->wait_steps(n + 1);
    std::optional<mono::time_point> at;
    while (!(at = runner.next_step("r"))) std::this_thread::yield();
    CHECK(*at == mclock.now() + waits[n]);
    mclock.advance(waits[n] - 1ms);
    CHECK(runner.next_step("r") == at);  // still waiting
    mclock.advance(1ms);
  }
  j->wait_ended();
  CHECK(j->attempts == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(j->ended_how() == job_next::kind::done);
}

TEST_CASE("jobs: a job that failed shows retrying, and why, until a step of it succeeds") {
  mono::manual mclock;
  mclock.install();
  task_list tasks;
  manual_clock clk;
  job_runner runner(tasks, clk, "n1", lanes({{"one", 1}}));
  gate during_retry, after_success;
  auto j = std::make_shared<scripted>();
  j->row = json{{"type", "replication"}};
  j->next = [&](job_context&, int n) {
    if (n == 0) return job_next::retry("could not connect");
    if (n == 1) {
      during_retry.pass();  // the attempt after the failure: still retrying (it may fail again)
      return job_next::more();
    }
    after_success.pass();
    return job_next::done();
  };
  REQUIRE(runner.submit("r", "one", j));
  j->wait_steps(1);
  while (!runner.next_step("r")) std::this_thread::yield();
  mclock.advance(1000ms);
  during_retry.wait_for(1);
  json rows = tasks.all();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["state"] == "retrying");
  CHECK(rows[0]["reason"] == "could not connect");
  during_retry.release();
  after_success.wait_for(1);
  rows = tasks.all();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0]["state"] == "running");
  CHECK(rows[0]["reason"].is_null());
  after_success.release();
  j->wait_ended();
}

TEST_CASE("jobs: cancel ends a waiting job at once and a running one after its step") {
  task_list tasks;
  manual_clock clk;
  job_runner runner(tasks, clk, "n1", lanes({{"one", 2}}));
  auto idle = std::make_shared<scripted>();
  idle->row = json{{"type", "t"}};
  idle->next = [](job_context&, int) { return job_next::idle(); };
  REQUIRE(runner.submit("idle", "one", idle));
  while (!runner.next_step("idle")) std::this_thread::yield();  // its step returned: it waits
  CHECK(tasks.all().size() == 1);
  CHECK(runner.cancel("idle"));
  CHECK(idle->is_ended());
  CHECK(idle->ended_how() == job_next::kind::cancelled);
  CHECK(tasks.all().empty());
  CHECK_FALSE(runner.cancel("idle"));

  gate g;
  std::atomic<bool> saw_cancel{false};
  auto busy = std::make_shared<scripted>();
  busy->next = [&](job_context& ctx, int) {
    g.pass();
    saw_cancel = ctx.cancelled();
    return job_next::more();  // would go on, but the cancel wins
  };
  REQUIRE(runner.submit("busy", "one", busy));
  g.wait_for(1);
  CHECK(runner.cancel("busy"));                                 // asked while its step runs
  std::thread canceller([&] { runner.cancel("busy", true); });  // returns once it left
  g.release();
  canceller.join();
  CHECK(saw_cancel.load());
  CHECK(busy->ended_how() == job_next::kind::cancelled);
  CHECK(busy->step_count() == 1);
  CHECK_FALSE(runner.has("busy"));
}

TEST_CASE("jobs: wake runs a pausing job now; a step that throws fails its job; stop ends all") {
  mono::manual mclock;
  mclock.install();
  task_list tasks;
  manual_clock clk;
  job_runner runner(tasks, clk, "n1", lanes({{"one", 1}, {"two", 1}}));
  auto periodic = std::make_shared<scripted>();
  periodic->next = [](job_context&, int) { return job_next::pause(std::chrono::hours(1)); };
  REQUIRE(runner.submit("p", "one", periodic));
  auto paused = [&] {
    while (!runner.next_step("p")) std::this_thread::yield();
  };
  paused();
  runner.wake("p");
  periodic->wait_steps(2);  // the clock never moved
  paused();
  mclock.advance(std::chrono::hours(1));
  periodic->wait_steps(3);

  auto thrower = std::make_shared<scripted>();
  thrower->next = [](job_context&, int) -> job_next { throw std::runtime_error("boom"); };
  REQUIRE(runner.submit("t", "two", thrower));
  thrower->wait_ended();
  CHECK(thrower->ended_how() == job_next::kind::failed);
  CHECK(thrower->ended_reason() == "boom");

  runner.stop();
  CHECK(periodic->is_ended());
  CHECK(periodic->ended_how() == job_next::kind::cancelled);
  CHECK_FALSE(runner.submit("late", "one", periodic));
}

}  // namespace settee
