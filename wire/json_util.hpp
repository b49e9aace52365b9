// json_util: JSON helpers for the HTTP layer. Document bodies keep their key order
// (node/json_members.hpp), as CouchDB does. Parsing never throws.
#pragma once
#include <string>
#include <string_view>

#include "node/error.hpp"
#include "node/json.hpp"

namespace settee {

// parse_json for text a client sent: `refusal` when it is not JSON, its reason replaced by the
// nesting limit's when that was the trouble.
// `wrapping`: levels a body adds around the documents it carries ({"docs":[...]}: 2), so that any
// document [couchdb] max_json_depth lets in also comes in through it.
result<json> parse_client_json(std::string_view text, status refusal, size_t wrapping = 0);
// The same for a written document (PUT, POST) and a body of documents (_bulk_docs), taken apart
// as they are parsed (node/json's parse_split_doc, parse_docs_body).
result<split_doc> parse_client_doc(std::string_view text, member_picker pick, status refusal);
result<docs_body> parse_client_docs(std::string_view text, std::string_view array, member_picker pick, status refusal,
                                    size_t wrapping);
bool valid_utf8(std::string_view s);

// Appends CouchDB's "error" (the table's name for st.code, node/errc.def) and "reason" to `obj`:
// the one way an error is rendered, in a response body or in a row of one.
void add_error(json& obj, const status& st);
json error_json(const status& st);

// The JSON CouchDB decoded into an Erlang term (binaries, objects {[{K,V}]}, lists, atoms) as
// io_lib prints it, for error texts that quote a bad value as CouchDB's do (mango_error's):
// ~w writes a binary as its bytes (<<"x">> is <<120>>), ~p as text (<<"x">>).
std::string erlang_w(const json& v);
std::string erlang_p(const json& v);

}  // namespace settee
