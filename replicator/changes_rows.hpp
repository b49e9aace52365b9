// changes_rows: a `_changes` answer (feed=normal or longpoll) read as it arrives, one row at a
// time, so that memory holds a row, not the answer: each element of the top-level `results` array
// goes to `on_row` as its own text as soon as it ends (at most `max_row_bytes`), and the rest of the
// object (`last_seq`, `pending`) is kept apart with the rows left out (at most 1 MiB), to be parsed
// once whole. Whatever the endpoint sends (one row per line or all on one line, a million rows
// when a hundred were asked for), the reader holds one row and the envelope. Pure.
//
//   changes_rows feed(max_row, [&](std::string_view row) { ...; return more_wanted; });
//   body.feed(...) -> feed.feed(bytes);  then feed.whole(), feed.rest()  // {"results":[],"last_seq":..}
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "node/error.hpp"

namespace settee {

class changes_rows {
 public:
  // `on_row` returns false when it has rows enough: reading stops there (no error).
  changes_rows(uint64_t max_row_bytes, std::function<bool(std::string_view)> on_row);

  // The next bytes; false: stop (an error, or on_row had enough).
  bool feed(std::string_view bytes);
  // The top-level value ended.
  bool whole() const { return whole_; }
  // The answer without its rows: `{"results":[],"last_seq":...}` once whole.
  const std::string& rest() const { return rest_; }
  const status& error() const { return error_; }
  // Called again for a new answer (a retried request).
  void reset();

 private:
  enum class mode { outer, between, row };
  bool step(char c);
  bool step_row(char c);     // inside a row
  bool step_outer(char c);   // the object around the rows
  void string_char(char c);  // a character inside a string
  bool end_row();
  bool fail(std::string reason);
  bool results_key_before() const;

  uint64_t max_row_;
  std::function<bool(std::string_view)> on_row_;
  mode mode_ = mode::outer;
  int depth_ = 0;
  bool in_string_ = false, escape_ = false, scalar_row_ = false, whole_ = false, stopped_ = false;
  std::string rest_, row_;
  status error_;
};

}  // namespace settee
