// design_doc: what a design document must look like to be saved, as CouchDB's
// couch_mrview:validate checks it (field types, a map function for every view, known built-in
// reduces); JavaScript compilation comes with the JavaScript engine. Pure: unit-tested.
#pragma once
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

// 400 invalid_design_doc with CouchDB's reason for the first field that is wrong.
status validate_design_doc(const json& doc);

}  // namespace settee
