// json: the one JSON parser every layer uses for text it did not write itself (request bodies,
// query values, selectors, RPC payloads, stored documents).
//
// Documents keep their key order (node/json_members.hpp), as CouchDB does. Parsing never throws
// and is safe against hostile input:
//   - nesting is limited (max_json_depth(), [couchdb] max_json_depth, default 1000) while parsing,
//     so nothing later (rendering, copying, selectors) can recurse deeper than that;
//   - objects are built in O(n) expected time whatever their size (nlohmann's ordered_map looks
//     every key up linearly: 400,000 keys took minutes); a repeated key keeps its last value, as
//     CouchDB's decoder does.
// Thread-safety: parse_json may be called from any thread; set_max_json_depth only at start-up.
#pragma once
#include <nlohmann/json.hpp>

#include "node/json_members.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace settee {

using json = nlohmann::basic_json<json_members>;

constexpr size_t default_max_json_depth = 1000;
void set_max_json_depth(size_t depth);
size_t max_json_depth();

// Parses `text`; std::nullopt when it is not valid JSON or nests deeper than `max_depth` (then
// `why`, when given, says so in words a client can act on; else it is left empty).
std::optional<json> parse_json(std::string_view text, std::string* why = nullptr);
std::optional<json> parse_json(std::string_view text, size_t max_depth, std::string* why);

// `j[key]` for reading: null when `j` is not an object or has no such member. (nlohmann's const
// operator[] on a missing key is undefined behaviour: an assertion in debug builds.)
const json& member(const json& j, const char* key);

// Whether `text` (JSON from a trusted writer, such as a peer's replicated document body) nests no
// deeper than max_json_depth(). One pass, no allocation; does not validate anything else.
bool within_json_depth(std::string_view text);

// `s` as a JSON string literal, quotes included (control characters escaped).
std::string quote(std::string_view s);
void append_quoted(std::string& out, std::string_view s);

// `j` as CouchDB writes a document: compact, keys in their order, strings as quote() writes them,
// floats as Erlang prints them (1e10 is 1.0e10, 100000.0 is 1.0e5, 1.0 stays 1.0).
std::string couch_dump(const json& j);

}  // namespace settee
