// collation: CouchDB's view collation (couch_ejson_compare) as byte strings whose memcmp order is
// the collation order, so that an LMDB index sorts view keys with its default comparator:
//   null < false < true < numbers < strings < arrays < objects
// Numbers by value (1 == 1.0; integers up to 64 bits exactly, beside doubles); strings by ICU's
// root collator at its default (tertiary) strength, as CouchDB's ucol_strcollIter ("a" < "A" <
// "aa" < "b"; symbols before digits before letters); arrays element by element, a prefix first;
// objects member by member in their stored order (key, then value), a prefix first.
// Pure: no I/O. Thread-safe (the collator is opened once and only read).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "node/json.hpp"

namespace settee::collation {

// The sort key of `v`: for any a and b, sort_key(a) < sort_key(b) (as bytes) exactly when CouchDB
// orders a before b, and the keys are equal exactly when CouchDB holds a and b equal. Invalid
// UTF-8 in a string counts as U+FFFD.
std::string sort_key(const json& v);

// -1, 0 or 1: a before, equal to, or after b in the collation order.
int compare(const json& a, const json& b);

// The length of the one value's sort key at the start of `key` (sort keys end themselves);
// npos when `key` is cut short or is not a sort key.
size_t value_length(std::string_view key);

// The bytes at the start of `key` (a value's sort key) that name its group under CouchDB's
// group_level: all of it for `level` < 0 (group=true) or a value that is not an array; 0 for level
// 0; else the array's tag and its first `level` elements (all of them when it has fewer), its end
// mark left out, so that [a,b] and [a,b,c] are one group [a,b] at level 2 and [a] another. Keys of
// one group are consecutive in the collation order. npos as value_length.
size_t group_length(std::string_view key, int64_t level);

// The ICU collator's version ("153.112"): an index records it, since another ICU may order
// strings differently (CouchDB's collator_versions in _design/d/_info).
std::string collator_version();

}  // namespace settee::collation
