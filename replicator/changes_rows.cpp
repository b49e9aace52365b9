#include "replicator/changes_rows.hpp"
#include "node/check.hpp"

namespace settee {
namespace {
constexpr size_t max_rest_bytes = 1u << 20;
bool space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
}  // namespace

changes_rows::changes_rows(uint64_t max_row_bytes, std::function<bool(std::string_view)> on_row)
    : max_row_(max_row_bytes), on_row_(std::move(on_row)) {}

void changes_rows::reset() {
  mode_ = mode::outer;
  depth_ = 0;
  in_string_ = escape_ = scalar_row_ = whole_ = stopped_ = false;
  rest_.clear();
  row_.clear();
  error_ = {};
}

bool changes_rows::fail(std::string reason) {
  if (error_) error_ = status{errc::internal, std::move(reason)};
  return false;
}

// Whether rest_ ends with `"results"` and a colon (the key of the array that begins now).
bool changes_rows::results_key_before() const {
  size_t end = rest_.size();
  while (end > 0 && space(rest_[end - 1])) --end;
  if (end == 0 || rest_[end - 1] != ':') return false;
  --end;
  while (end > 0 && space(rest_[end - 1])) --end;
  static const std::string key = "\"results\"";
  return end >= key.size() && rest_.compare(end - key.size(), key.size(), key) == 0;
}

bool changes_rows::end_row() {
  mode_ = mode::between;
  bool more = on_row_(row_);
  row_.clear();
  if (!more) stopped_ = true;
  return more;
}

void changes_rows::string_char(char c) {
  if (escape_)
    escape_ = false;
  else if (c == '\\')
    escape_ = true;
  else if (c == '"')
    in_string_ = false;
}

bool changes_rows::step(char c) {
  if (mode_ == mode::between) {
    if (space(c) || c == ',') return true;
    if (c == ']') {
      rest_ += ']';
      depth_ = 1;
      mode_ = mode::outer;
      return true;
    }
    mode_ = mode::row;
    scalar_row_ = c != '{' && c != '[' && c != '"';
  }
  return mode_ == mode::row ? step_row(c) : step_outer(c);
}

bool changes_rows::step_row(char c) {
  SETTEE_CHECK(depth_ >= 2);  // a row is inside `results`, inside the answer
  if (in_string_) {
    row_ += c;
    string_char(c);
    if (!in_string_ && depth_ == 2) return end_row();  // a string row
  } else if (scalar_row_ && (space(c) || c == ',' || c == ']')) {
    return end_row() && step(c);
  } else {
    row_ += c;
    if (c == '"')
      in_string_ = true;
    else if (c == '{' || c == '[')
      ++depth_;
    else if ((c == '}' || c == ']') && --depth_ == 2)
      return end_row();
  }
  if (row_.size() > max_row_)
    return fail("a row of the source's _changes is larger than " + std::to_string(max_row_) +
                " bytes ([couchdb] max_document_size)");
  return true;
}

bool changes_rows::step_outer(char c) {
  if (whole_) return space(c) || fail("the source's _changes answer goes on after its end");
  if (in_string_) {
    string_char(c);
  } else if (c == '"') {
    in_string_ = true;
  } else if (c == '[' && depth_ == 1 && results_key_before()) {
    rest_ += '[';
    depth_ = 2;
    mode_ = mode::between;
    return true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if ((c == '}' || c == ']') && --depth_ <= 0) {
    whole_ = true;
  }
  rest_ += c;
  if (rest_.size() > max_rest_bytes)
    return fail("the source's _changes answer has more than " + std::to_string(max_rest_bytes) +
                " bytes besides its rows");
  return true;
}

bool changes_rows::feed(std::string_view bytes) {
  if (!error_ || stopped_) return false;
  for (char c : bytes)
    if (!step(c)) return false;
  return true;
}

}  // namespace settee
