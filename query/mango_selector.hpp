// mango_selector: CouchDB Mango selectors ({"age": {"$gt": 21}, "tags": {"$all": ["a"]}}) compiled
// once, then matched against documents. Operators: $and $or $nor $not, $eq $ne $gt $gte $lt $lte
// $in $nin $exists $type $size $mod $regex $all $elemMatch $allMatch $keyMapMatch $beginsWith;
// dotted paths ("a.b.0.c", "\." escapes a dot). Values compare by CouchDB's view collation (null <
// false < true < numbers < strings < arrays < objects; strings by ICU, node/collation.hpp). A missing field matches
// nothing but
// {"$exists": false}, as in CouchDB. $regex has PCRE's syntax, as CouchDB (node/user_regex.hpp).
// Matching is linear in the sizes of the selector and the document, and bounded: a document that
// would need more steps, or a $regex that reaches its limits, is an error, never a stall.
// Pure: no I/O. A compiled selector is immutable and may be shared between threads.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "wire/json_util.hpp"

namespace settee {

class mango_selector {
 public:
  // Not a valid selector: CouchDB's errors (mango_error): 400 invalid_operator "Invalid operator:
  // $x", 400 bad_arg "Bad argument for operator $in: 5"; not an object: "Selector error: ...".
  static result<mango_selector> compile(const json& selector);
  // A part of a union plan ([selector, [branch, ...]]: the selector's documents that no earlier
  // branch matches, "no" a plain boolean one, so that the parts never share a document; a $nor
  // would be CouchDB's, which needs the branches' fields to exist), or a selector as compile().
  // An array is never a user's selector (compile refuses it).
  static result<mango_selector> compile_part(const json& filter);
  // Whether `doc` matches; errc::bad_request "Selector error: ..." when matching it would pass the
  // evaluation's bounds.
  result<bool> matches(const json& doc) const;

  struct node;

 private:
  std::shared_ptr<const node> root_;
};

// `selector` (valid: compiled) as CouchDB's mango_selector:normalize writes it, for _explain:
// implicit $and and $eq made explicit, field names pushed down to the operators as dotted paths
// ({"a":{"b":{"$gt":1}}} -> {"a.b":{"$gt":1}}), negations pushed to the leaves ($not of $gt is
// $lte, De Morgan through $and/$or, $nor as an $and of negations).
json normalize_selector(const json& selector);

// -1, 0, 1 under CouchDB's JSON collation.
int collate(const json& a, const json& b);

// -1, 0, 1 in Erlang's term order over CouchDB's EJSON (numbers < false < null < true < objects <
// arrays < strings, strings by their bytes): how mango compares `_id` (mango_json:cmp_raw) and how
// couch_mrview orders the values one document emits under one key (lists:sort).
int erlang_compare(const json& a, const json& b);

// A field name's path as mango_util:parse_field splits it: "a.b" -> ["a", "b"], split at the dots
// no backslash escapes, then every backslash dropped ("a\\.b" -> ["a.b"], "\\$x" -> ["$x"]).
std::vector<std::string> split_field(const std::string& field);

// The value at a field path (split_field's) in `doc`: an object's member by name, an array's element
// by its decimal index ("0" to "999999999"); null when the path leads nowhere: `*bad_path` (when
// given) tells a missing member (false: CouchDB's not_found) from a step into a value that has no
// such member or element (true: CouchDB's bad_path). `member(object, name)`
// finds a member (the selector's evaluation counts its steps through its own); the one walker both
// the selector's matching and the JSON index's keys use, so that they never disagree on a path.
template <class Member>
const json* walk_path(const json& doc, const std::vector<std::string>& path, Member&& member,
                      bool* bad_path = nullptr) {
  const json* cur = &doc;
  if (bad_path) *bad_path = false;
  for (const std::string& part : path) {
    if (cur->is_object()) {
      cur = member(*cur, part);
      if (!cur) return nullptr;
      continue;
    }
    if (cur->is_array() && !part.empty() && part.size() < 10 &&
        part.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::stoul(part);
      if (i < cur->size()) {
        cur = &(*cur)[i];
        continue;
      }
    }
    if (bad_path) *bad_path = true;
    return nullptr;
  }
  return cur;
}

// walk_path with plain member lookup.
inline const json* field_at(const json& doc, const std::vector<std::string>& path) {
  return walk_path(doc, path, [](const json& object, const std::string& name) -> const json* {
    auto it = object.find(name);
    return it == object.end() ? nullptr : &*it;
  });
}

}  // namespace settee
