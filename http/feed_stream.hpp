// feed_stream: the response of a feed (a database's `_changes`, the cluster's `_db_updates`) in any
// of its forms: normal, longpoll, continuous, eventsource. The HTTP front pumps it (message.hpp);
// between pumps a live feed waits for a commit notification under its wake key, its next heartbeat
// or its timeout, holding no thread. What the rows are comes from a feed_source.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "http/request.hpp"
#include "wire/message.hpp"

namespace settee {

enum class feed_kind { normal, longpoll, continuous, eventsource };

// Longer waits are cut to this (~24.8 days): a time point that far ahead cannot overflow the clock.
constexpr int64_t max_feed_wait_ms = INT32_MAX;

struct feed_params {
  feed_kind feed = feed_kind::normal;
  int64_t limit = -1;        // -1: none
  int64_t heartbeat_ms = 0;  // 0: no heartbeat
  int64_t timeout_ms = 60000;
  bool heartbeat_seq = false;  // heartbeats carry the position (spec 11.5)
};

// Where a feed's rows come from. One request's; not thread-safe.
class feed_source {
 public:
  virtual ~feed_source() = default;
  // The next row as JSON text, or false when there is nothing new right now (or error() is set).
  virtual bool next(std::string& row) = 0;
  // What stopped the feed (the response then ends as failed, never as complete); ok otherwise.
  virtual const status& error() const = 0;
  // True when next() returned false only to give the worker back (it passed over many rows a
  // filter did not want): there may be more right away.
  virtual bool paused() const { return false; }
  // The token of the position after the last row, and as JSON (default: a string).
  virtual std::string token() const = 0;
  virtual std::string token_json() const;
  // The fields of the closing object after "last_seq" (e.g. ",\"pending\":3"), or "".
  virtual std::string end_fields() const { return ""; }
  // {"<part>":"exact"|"translated"|...} when `since` could not be continued exactly; "" otherwise.
  virtual std::string since_resolution() const { return ""; }
  virtual uint64_t rows_emitted() const = 0;
  // False once what the feed follows is gone (a deleted database): a live feed ends.
  virtual bool alive() const { return true; }
  // True once the feed passed the request's `until`: nothing more will come, a live feed ends.
  virtual bool finished() const { return false; }
  // When a feed bounded by a time can be finished without another row (the second after its
  // bound, in milliseconds of the node's clock); none: not bounded by a time.
  virtual std::optional<int64_t> finishes_at_ms() const { return std::nullopt; }
  // True when some rows come from other nodes, whose commits do not reach this node's notifier:
  // a waiting feed then looks again every 100 ms.
  virtual bool has_remote() const { return false; }
};

// Answers `c` with the feed of `source` (started): 200, its since resolution in a header, for
// feed=normal an ETag of the request and `state` (304 when If-None-Match has it), and the stream,
// which wakes on commits announced under `wake_key`.
void reply_feed(ctx& c, std::string wake_key, const feed_params& params, std::shared_ptr<feed_source> source,
                const std::string& state);

}  // namespace settee
