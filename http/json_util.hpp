// json_util: JSON helpers for the HTTP layer. Document bodies keep their key order
// (nlohmann::ordered_json), as CouchDB does. Parsing never throws.
#pragma once
#include <string>
#include <string_view>

#include "node/json.hpp"

namespace settee {

// The reason to give a client for text parse_json refused: `why` (too deep) when set, else `fallback`.
inline std::string json_refusal(const std::string& why, std::string fallback) {
  return why.empty() ? std::move(fallback) : why;
}
// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);
bool valid_utf8(std::string_view s);

}  // namespace settee
