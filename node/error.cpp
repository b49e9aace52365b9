#include "node/error.hpp"

namespace settee {

int http_status_of(errc e) {
  switch (e) {
#define X(code, http, name) \
  case errc::code:          \
    return http;
#include "node/errc.def"
#undef X
  }
  return 500;
}

const char* error_name_of(errc e) {
  switch (e) {
#define X(code, http, name) \
  case errc::code:          \
    return name;
#include "node/errc.def"
#undef X
  }
  return "unknown_error";
}

const char* code_name_of(errc e) {
  switch (e) {
#define X(code, http, name) \
  case errc::code:          \
    return #code;
#include "node/errc.def"
#undef X
  }
  return "internal";
}

errc errc_from_code_name(std::string_view name) {
#define X(code, http, name_) \
  if (name == #code) return errc::code;
#include "node/errc.def"
#undef X
  return errc::internal;
}

}  // namespace settee
