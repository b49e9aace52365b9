// json_util: JSON helpers for the HTTP layer. Document bodies keep their key order
// (nlohmann::ordered_json), as CouchDB does. Parsing never throws.
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace settee {

using json = nlohmann::ordered_json;

// Parses `text`; std::nullopt when it is not valid JSON.
std::optional<json> parse_json(std::string_view text);
// `s` as a JSON string literal, quotes included.
std::string quote(std::string_view s);
bool valid_utf8(std::string_view s);

}  // namespace settee
