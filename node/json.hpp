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
#include <vector>

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

// Documents taken apart as they are parsed, for writes (a DOM per document member costs more
// than the rest of a _bulk_docs request's handling): the members the caller reads become a small
// DOM, the others go straight from the parsed text to the document's body as couch_dump() writes
// it, with no DOM in between.
//
// Where a member of a document goes: `doc` (the caller reads it), `body`, or `whole` (the caller
// needs the whole document as a DOM: then nothing is split).
enum class member_use { doc, body, whole };
using member_picker = member_use (*)(std::string_view name);

struct split_doc {
  // Split: only the members picked `doc`; whole (body empty): the document as parse_json makes it.
  json doc;
  // couch_dump() of the members picked `body` (those of `doc` left out), in their order.
  std::optional<std::string> body;
};

// The document `d` whole again: its body parsed, the members of `doc` put back (after the others).
// couch_dump() of the result without the `doc` members is the body again, byte for byte.
json rejoin(split_doc d);

// A request body `{..., "<array>": [document, ...], ...}` (_bulk_docs) parsed as parse_json would,
// the documents of `array` split by `pick` (each whole where splitting could differ from
// couch_dump() of the DOM: an object with a repeated key, a member picked `whole`, an element that
// is not an object, or text only nlohmann's parser takes, such as integers beyond 64 bits).
struct docs_body {
  json top;                     // the request without `array` when that is an array
  bool listed = false;          // `array` was there, an array: its elements are in `docs`
  std::vector<split_doc> docs;  // in their order
};
std::optional<docs_body> parse_docs_body(std::string_view text, std::string_view array, member_picker pick,
                                         size_t max_depth, std::string* why = nullptr);
// One document (PUT) as parse_docs_body splits each of its documents.
std::optional<split_doc> parse_split_doc(std::string_view text, member_picker pick, size_t max_depth,
                                         std::string* why = nullptr);

}  // namespace settee
