#include "replicator/feed_watches.hpp"

#include <vector>

#include "node/clock.hpp"

namespace settee {
namespace {
// A watch whose read failed wakes its replication no sooner than this after it began (a source
// that refuses longpoll is then read once a second, not in a loop).
constexpr std::chrono::milliseconds failed_watch_floor{1000};
}  // namespace

feed_watches::feed_watches(std::function<void(const std::string&)> wake) : wake_(std::move(wake)) {}

feed_watches::~feed_watches() {
  stop_all();
}

void feed_watches::watch(const std::string& id, const rep_endpoint& source, std::chrono::milliseconds timeout,
                         const std::string& rest, json body) {
  std::lock_guard<std::mutex> lock(mu_);
  reap_locked();
  if (stopped_) return;
  auto it = live_.find(id);
  if (it != live_.end()) {
    if (!it->second->finished) return;
    done_.push_back(std::move(it->second));
    live_.erase(it);
  }
  auto e = std::make_unique<entry>();
  e->client = std::make_unique<rep_client>(source, timeout, 0, &e->ended);
  entry& ref = *e;
  e->thread = std::thread([this, id, &ref, rest, body = std::move(body)]() mutable { run(id, ref, rest, body); });
  live_.emplace(id, std::move(e));
}

void feed_watches::run(const std::string& id, entry& e, std::string rest, json body) {
  const deadline floor = deadline::in(failed_watch_floor);
  if (e.ended) {  // ended before it began (stop_all's abort finds no request to close)
    e.finished = true;
    return;
  }
  // The answer's first byte says a change came (or the longpoll's time ran out): nothing of it is kept.
  const std::string text = body.is_null() ? std::string() : request_text(body);
  http_reply r =
      e.client->stream(rest, body.is_null() ? nullptr : &text, e.client->endpoint().rules->max_response_bytes,
                       "[chttpd] max_http_request_size", nullptr, [](std::string_view) { return false; });
  if (!r.ok()) {
    std::unique_lock<std::mutex> lock(mu_);  // end() and stop_all() notify
    ended_cv_.wait_for(lock, floor.left(), [&] { return e.ended.load(); });
  }
  if (!e.ended) wake_(id);
  e.finished = true;
}

void feed_watches::end(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(id);
  if (it == live_.end()) return;
  it->second->ended = true;
  it->second->client->abort();
  ended_cv_.notify_all();
  done_.push_back(std::move(it->second));
  live_.erase(it);
}

void feed_watches::reap_locked() {
  for (auto it = done_.begin(); it != done_.end();) {
    if ((*it)->finished) {
      (*it)->thread.join();
      it = done_.erase(it);
    } else {
      ++it;
    }
  }
}

void feed_watches::stop_all() {
  std::vector<std::unique_ptr<entry>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto& [id, e] : live_) all.push_back(std::move(e));
    live_.clear();
    for (auto& e : done_) all.push_back(std::move(e));
    done_.clear();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);  // a watch waiting out its floor sees `ended` under it
    for (auto& e : all) {
      e->ended = true;
      e->client->abort();
    }
  }
  ended_cv_.notify_all();
  for (auto& e : all) e->thread.join();
}

}  // namespace settee
