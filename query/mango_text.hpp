// mango_text: Mango's `"type": "text"` indexes (issue 54) on the node's full-text engine, as
// CouchDB's mango_idx_text, mango_native_proc (a document's text entries) and mango_selector_text
// make them. A document gives the index each of its values under the name "<path>:<type>"
// escaped for Lucene ("a.b" holding a string: "a.b_3astring"; an array's elements under "[]",
// its length under "[]:length"), every string once more under "$default" (the standard analyzer:
// what $text searches) and every name under "$fieldnames"; a selector becomes a Lucene query over
// those names, and what it finds is matched against the selector again. Pure: no I/O.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "query/mango_selector.hpp"
#include "storage/text_index.hpp"

namespace settee {

// POST /db/_index's `index` of a text index, checked as mango_idx_text's options with their
// errors, its defaults filled in: default_analyzer ("keyword"), default_field ({}: enabled with
// the standard analyzer; false; or {"enabled", "analyzer"}), selector and partial_filter_selector
// ({}), fields ("all_fields" when absent or [], else [{"name": n, "type": "string"|"number"|
// "boolean"}]), index_array_lengths (true).
result<json> parse_text_index(const json& index);

// What design document member `indexes.<name>` holds for definition `def`: {"index": def,
// "analyzer": ...} (mango_idx_text:make_text: "keyword", or a perfield analyzer whose
// "$default" field has default_field's analyzer).
json text_index_entry(const json& def);

// `ddoc` (its body; null: none yet, a new `language: "query"` one with id `ddoc_id`) with text
// index `name` of definition `def` in its `indexes`; `changed` false when it has that already.
json with_text_index(const json& ddoc, const std::string& ddoc_id, const std::string& name, const json& def,
                     bool& changed);

// The Mango text indexes of a design document (`language: "query"`, `indexes` entries whose
// `index` is a definition, not a function): name and definition, in its order.
std::vector<std::pair<std::string, json>> text_indexes_of(const json& ddoc);

// GET /db/_index's `def` of a text index (mango_idx_text:def_to_json): fields as [{name: type}].
json text_index_def_json(const json& def);

// The fields a document (its body with _id and _rev) gives the index of definition `def`: none
// when the partial filter refuses it or it is a design document. The definition is read once
// (its filter compiled, the fields it names), then applied to each document. Immutable.
class text_document_fields {
 public:
  explicit text_document_fields(const json& def);
  std::vector<text_field> operator()(const json& doc) const;

 private:
  bool indexed(const json& doc) const;
  std::optional<mango_selector> filter_;
  bool refuses_all_ = false;      // a partial filter that does not compile indexes nothing
  std::set<std::string> wanted_;  // the escaped names of the fields named (empty: all fields)
  bool lengths_, keyword_, with_default_;
};
// The same for one document.
std::vector<text_field> text_fields_of(const json& def, const json& doc);

// The Lucene query of a selector (normalize_selector's form), as mango_selector_text:convert
// writes it; "" when it asks nothing of the index. invalid_operator for an operator it cannot
// translate ($keyMapMatch).
result<std::string> text_query_of(const json& normal);

// The index fields the query needs ("a:string", "$default"): an index of only some fields serves
// a selector whose fields it has (mango_idx_text:indexable_fields and is_usable).
std::vector<std::string> text_indexable_fields(const json& normal);
bool text_index_usable(const json& def, const json& normal);

// A _find sort as the index's sort keys ("-a_3astring"): each field's type from its ":string" or
// ":number" suffix, or from the selector's conditions on it; text_sort_error when neither tells.
result<std::vector<std::string>> text_sort(const std::vector<std::pair<std::string, bool>>& sort, const json& normal);

}  // namespace settee
