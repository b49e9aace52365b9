// external_term: the few Erlang terms CouchDB hashes into ids, and their external term
// format as CouchDB writes them: `term_to_binary(T, [{minor_version, 1}])` (atoms as latin-1
// ATOM_EXT, floats as NEW_FLOAT_EXT, on every OTP release). Pure; used to compute ids
// (replicator/rep_request.hpp), generated Mango index names (query/mango_index.hpp) and which node
// owns a `_replicator` document.
//
//   auto t = eterm::tuple({eterm::atom("remote"), eterm::string("host"), eterm::integer(5985)});
//   std::string bytes = term_to_binary(t);  // "\x83h\x03d\x00\x06remote..."
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "node/json.hpp"

namespace settee {

struct eterm {
  enum class kind { atom, binary, integer, floating, string, list, tuple };
  kind k = kind::atom;
  std::string text;  // atom name, binary bytes, string (an Erlang list of bytes)
  int64_t number = 0;
  double real = 0;
  std::vector<eterm> items;  // list, tuple

  static eterm atom(std::string name) { return {kind::atom, std::move(name), 0, 0, {}}; }
  static eterm binary(std::string bytes) { return {kind::binary, std::move(bytes), 0, 0, {}}; }
  static eterm integer(int64_t n) { return {kind::integer, {}, n, 0, {}}; }
  static eterm string(std::string s) { return {kind::string, std::move(s), 0, 0, {}}; }
  static eterm list(std::vector<eterm> items) { return {kind::list, {}, 0, 0, std::move(items)}; }
  static eterm tuple(std::vector<eterm> items) { return {kind::tuple, {}, 0, 0, std::move(items)}; }
  static eterm floating(double d) { return {kind::floating, {}, 0, d, {}}; }
};

// The term as CouchDB's jiffy decodes JSON ("EJSON"): an object is {[{Key, Value}, ...]} with binary
// keys in document order, an array a list, a string a binary, true/false/null atoms.
eterm ejson(const json& value);

// External term format, version 131, no compression.
std::string term_to_binary(const eterm& t);

}  // namespace settee
