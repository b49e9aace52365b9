// status and result<T>: errors travel as values up to the one place (http/) that renders
// them as {"error":..., "reason":...}. The codes and their HTTP mapping live in errc.def.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace settee {

enum class errc {
#define X(code, http, name) code,
#include "node/errc.def"
#undef X
};

int http_status_of(errc e);
const char* error_name_of(errc e);
// The code's identifier ("db_not_found"), and back (errc::internal when unknown): for the wire.
const char* code_name_of(errc e);
errc errc_from_code_name(std::string_view name);

// An outcome: ok, or an error code with a reason a person can act on.
struct status {
  errc code = errc::ok;
  std::string reason;

  status() = default;
  status(errc c, std::string r) : code(c), reason(std::move(r)) {}
  bool is_ok() const { return code == errc::ok; }
  explicit operator bool() const { return is_ok(); }
};

// A value or an error status.
template <class T>
class result {
 public:
  result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  result(status s) : v_(std::move(s)) {}     // NOLINT
  result(errc c, std::string reason) : v_(status{c, std::move(reason)}) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const status& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, status> v_;
};

}  // namespace settee
