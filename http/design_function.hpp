// A design document's function as the HTTP handlers run it (filters, update handlers): the
// design document it lives in, checked as CouchDB checks it, and CouchDB's request object.
#pragma once

#include <string>
#include <vector>

#include "http/handlers.hpp"

namespace settee {

// A design document's winning revision, parsed.
struct design_doc {
  rev_id rev;
  std::string text;  // as stored
  json doc;
};

// Design document `ddoc_id` of `db`: 404 "missing" when there is none (or it is deleted).
result<design_doc> open_design_doc(ctx& c, const db_meta& db, const std::string& ddoc_id);

struct design_function {
  std::string key;   // js_pool::worker_key: the workers' name for this revision of the design document
  std::string ddoc;  // the design document's JSON, as the workers are given it
};

// Design document `ddoc_id` of `db`, which must hold `path` (["filters", name], ...): 404 as
// CouchDB's couch_util:get_nested_json_value ("missing", then "missing json key: <key>"); 501 when
// this node runs no JavaScript.
result<design_function> open_design_function(ctx& c, const db_meta& db, const std::string& ddoc_id,
                                             const std::vector<std::string>& path);

// CouchDB's request object for a function (chttpd_external:json_req_obj): `id` is the document
// the path names (null: none); `form` holds an application/x-www-form-urlencoded body's fields,
// `cookie` the Cookie header's. `info` carries the database's name only (docs/api.md).
json js_request_object(ctx& c, const db_meta& db, const json& id = nullptr);

}  // namespace settee
