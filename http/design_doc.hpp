// design_doc: what a design document must look like to be saved, as CouchDB's
// couch_mrview:validate checks it (field types, a map function for every view, known built-in
// reduces; pure, unit-tested), and that its JavaScript compiles (in a worker).
#pragma once
#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {
class js_pool;
class cluster_members;
}  // namespace settee

namespace settee {

// 400 invalid_design_doc with CouchDB's reason for the first field that is wrong.
status validate_design_doc(const json& doc);

// Compiles the JavaScript functions of a design document about to be saved (views' map and
// reduce, validate_doc_update, filters, updates) in a worker of `js`: 400 compilation_error with
// CouchDB's reason for the first that does not compile. A document of another language (Mango's
// "query") or without functions is not sent.
status compile_design_doc(const json& doc, js_pool* js);

// A design document with a validate_doc_update is saved only when every member of the cluster
// runs it on the writes it coordinates (release 0.4+): an older member would let writes past it.
// 501 naming the first member that does not (or cannot be asked now). Null: a single node.
status validation_runs_everywhere(const json& doc, cluster_members* cluster);

}  // namespace settee
