// search_fields: the fields a document gives a full-text index, from what its index function's
// `index(...)` calls wrote (the settee-js worker records their arguments: js/query_server.hpp
// "index"). Nouveau's index(type, name, value, options) and Clouseau's index(name, value,
// options), checked as CouchDB's share/server/nouveau.js and dreyfus.js check them. Pure code.
#pragma once

#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "search/search_ddoc.hpp"
#include "storage/text_index.hpp"

namespace settee {

// The fields of one document's calls (`calls`: a JSON array of each call's arguments array).
// A call CouchDB's index() would throw on is errc::bad_request with its error's name and message
// ("TypeError: type of value must be a string not number"): the document then indexes nothing
// in that index, as CouchDB's function stops there and its document gets no fields.
result<std::vector<text_field>> fields_of(search_api api, const json& calls);

}  // namespace settee
