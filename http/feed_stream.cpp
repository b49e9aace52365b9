#include "http/feed_stream.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "actors/change_notifier.hpp"
#include "node/crypto.hpp"
#include "node/json.hpp"
#include "node/log.hpp"

namespace settee {

std::string feed_source::token_json() const {
  return quote(token());
}

namespace {

using steady = std::chrono::steady_clock;

// Each pump writes what is ready and then says what to wait for (a commit, the next heartbeat, the
// timeout); it never blocks.
class feed_stream final : public response_stream {
 public:
  feed_stream(node_services& node, std::string key, feed_params params, std::shared_ptr<feed_source> source)
      : node_(node), key_(std::move(key)), q_(params), source_(std::move(source)), feed_(*source_) {}
  ~feed_stream() override {
    if (started_ && live()) {
      node_.live_feeds.fetch_sub(1);
      if (log::enabled(log::level::debug)) log::debug("live feed ended: " + key_);
    }
  }
  bool live() const { return q_.feed != feed_kind::normal; }

  pump_result pump(std::string& out) override {
    if (!started_) {
      started_ = true;
      auto now = steady::now();
      longpoll_deadline_ = now + std::chrono::milliseconds(q_.timeout_ms);
      reset_timers(now);
      if (live()) {
        node_.live_feeds.fetch_add(1);
        if (log::enabled(log::level::debug))
          log::debug("live feed started: " + key_ + " (" + std::to_string(node_.live_feeds.load()) + " open)");
      }
    }
    return q_.feed == feed_kind::normal || q_.feed == feed_kind::longpoll ? pump_batch(out) : pump_live(out);
  }

 private:
  static constexpr size_t chunk_bytes = 64 * 1024;

  bool limit_reached() const { return q_.limit >= 0 && static_cast<int64_t>(feed_.rows_emitted()) >= q_.limit; }
  std::string last_seq_fields() { return "\"last_seq\":" + feed_.token_json() + feed_.end_fields(); }
  void reset_timers(steady::time_point now) {
    idle_deadline_ = now + std::chrono::milliseconds(q_.timeout_ms);
    next_heartbeat_ = now + std::chrono::milliseconds(q_.heartbeat_ms);
  }
  // Another node's commits do not reach our notifier: a feed over remote copies looks again soon. A
  // local one looks every 10 s as well (a deletion learnt from a peer's catalog ends it).
  std::chrono::milliseconds poll_slice() const {
    return feed_.has_remote() ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  }
  pump_result wait_for(uint64_t seen, steady::time_point until) {
    pump_result r;
    r.then = pump_result::next::wait;
    r.wake_key = key_;
    r.seen = seen;
    r.wake_at = std::min(until, steady::now() + poll_slice());
    if (auto at = feed_.finishes_at_ms())  // a time bound: look again once its second is over
      r.wake_at = std::min(r.wake_at,
                           steady::now() + std::chrono::milliseconds(std::max<int64_t>(0, *at - node_.clk.now_ms())));
    return r;
  }
  static pump_result done() { return {pump_result::next::done, {}, 0, {}}; }
  static pump_result abort() { return {pump_result::next::abort, {}, 0, {}}; }
  static pump_result more() { return {pump_result::next::more, {}, 0, {}}; }

  // normal and longpoll: {"results":[\n row,\r\n row \n],\n"last_seq":..,"pending":..}\n
  pump_result pump_batch(std::string& out) {
    if (!rows_started_) {
      if (q_.feed == feed_kind::longpoll && !limit_reached() && q_.limit != 0) {
        uint64_t seen = node_.notifier->version(key_);
        if (!feed_.next(row_)) {
          if (!feed_.error()) return abort();
          if (feed_.paused()) return more();
          // As CouchDB: with a heartbeat, a longpoll waits for a change however long it takes (a
          // newline at each beat); without one, until the timeout.
          auto now = steady::now();
          const bool beats = q_.heartbeat_ms > 0;
          if (feed_.alive() && !feed_.finished() && (beats || now < longpoll_deadline_)) {
            if (beats && now >= next_heartbeat_) {
              next_heartbeat_ = now + std::chrono::milliseconds(q_.heartbeat_ms);
              out = header_sent_ ? "\n" : "{\"results\":[\n\n";
              header_sent_ = true;
              return more();
            }
            return wait_for(seen, beats ? next_heartbeat_ : longpoll_deadline_);
          }
        } else {
          have_row_ = true;
        }
      }
      rows_started_ = true;
      if (!header_sent_) out = "{\"results\":[\n";
      header_sent_ = true;
      if (have_row_) {
        out += row_;
        first_row_ = false;
      }
    }
    while (out.size() < chunk_bytes) {
      if (limit_reached() || !feed_.next(row_)) {
        if (!feed_.error()) return abort();
        if (!limit_reached() && feed_.paused()) return more();
        out += "\n],\n" + last_seq_fields();
        if (std::string res = feed_.since_resolution(); !res.empty()) out += ",\"since_resolution\":" + res;
        out += "}\n";
        return done();
      }
      if (!first_row_) out += ",\r\n";
      first_row_ = false;
      out += row_;
    }
    return more();
  }

  // continuous: one row per line, heartbeat "\n", final {"last_seq":..,"pending":..}
  // eventsource: "data: <row>\nid: <seq>\n\n", heartbeat "event: heartbeat\ndata: \n\n", no final event
  pump_result pump_live(std::string& out) {
    bool es = q_.feed == feed_kind::eventsource;
    uint64_t seen = node_.notifier->version(key_);
    while (out.size() < chunk_bytes && !limit_reached() && feed_.next(row_)) {
      if (es) {
        out += "data: " + row_ + "\nid: " + feed_.token_json() + "\n\n";
      } else {
        out += row_ + "\n";
      }
    }
    if (!feed_.error()) return abort();
    auto now = steady::now();
    if (!out.empty()) reset_timers(now);
    if (feed_.paused() && !limit_reached()) return more();
    // The limit, `until` passed, or the database was deleted: end the feed.
    if (limit_reached() || feed_.finished() || !feed_.alive()) {
      if (!es) out += "{" + last_seq_fields() + "}\n";
      return done();
    }
    if (!out.empty()) return more();
    if (q_.heartbeat_ms > 0 && now >= next_heartbeat_) {
      next_heartbeat_ = now + std::chrono::milliseconds(q_.heartbeat_ms);
      if (es)
        out = "event: heartbeat\ndata: \n\n";
      else if (q_.heartbeat_seq)
        out = "{\"seq\":" + feed_.token_json() + ",\"changes\":[],\"id\":null}\n";
      else
        out = "\n";
      return more();
    }
    if (q_.heartbeat_ms == 0 && now >= idle_deadline_) {
      if (!es) out = "{" + last_seq_fields() + "}\n";
      return done();
    }
    return wait_for(seen, q_.heartbeat_ms > 0 ? next_heartbeat_ : idle_deadline_);
  }

  node_services& node_;
  std::string key_;
  feed_params q_;
  std::shared_ptr<feed_source> source_;
  feed_source& feed_;
  std::string row_;
  bool started_ = false;
  bool header_sent_ = false;
  bool have_row_ = false;
  bool first_row_ = true;
  steady::time_point longpoll_deadline_;
  bool rows_started_ = false;         // a longpoll stopped waiting for its first row
  steady::time_point idle_deadline_;  // timeout: no change for this long ends the feed
  steady::time_point next_heartbeat_;
};

}  // namespace

void reply_feed(ctx& c, std::string wake_key, const feed_params& params, std::shared_ptr<feed_source> source,
                const std::string& state) {
  c.res.status = 200;
  c.res.set_header("Cache-Control", "must-revalidate");
  if (std::string res = source->since_resolution(); !res.empty()) c.res.set_header("X-Settee-Since-Resolution", res);
  if (params.feed == feed_kind::normal) {
    std::string etag = "\"" + crypto::md5_hex(c.req.target + "|" + state) + "\"";
    c.res.set_header("ETag", etag);
    if (c.req.get_header_value("If-None-Match") == etag) {
      c.res.status = 304;
      return;
    }
  }
  bool es = params.feed == feed_kind::eventsource;
  if (es) c.res.set_header("Cache-Control", "no-cache");
  c.res.set_stream(std::make_shared<feed_stream>(c.node, std::move(wake_key), params, std::move(source)),
                   es ? "text/event-stream" : "application/json");
}

}  // namespace settee
