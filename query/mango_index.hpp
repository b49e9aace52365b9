// mango_index: JSON indexes as CouchDB's mango keeps them (mango_idx, mango_idx_view): defined by
// POST /db/_index, stored as views of design documents with `language: "query"` (so CouchDB's
// tools see them), and what a document is in one: the array of its values of the index's fields
// (by collation sort key), when it has them all and the partial filter accepts it. The shard
// copies keep the rows (storage/json_index.hpp) through mango_keys.
// Pure: no I/O.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "query/mango_selector.hpp"
#include "storage/json_index.hpp"

namespace settee {

// An index's definition: its fields (path as written, descending) and partial filter.
struct index_def {
  std::vector<std::pair<std::string, bool>> fields;
  json partial_filter = json::object();  // {} when none
  // {"fields":[{"a":"asc"},...],"partial_filter_selector":{...}}: what the copies keep (opaque
  // to them), and its hash, which names the index's rows on every copy.
  // Parsed definitions (parse_index_request, indexes_of) carry both made once (sealed); one
  // built by hand makes them at each call.
  std::string definition() const;
  std::string signature() const;
  // As GET /db/_index shows it: fields as [{"a":"asc"}], the partial filter only when set.
  json to_json() const;
  void seal();

 private:
  std::string definition_, signature_;
};

// A Mango index of a design document: a JSON index (`def`), or a text index (`text`, its
// definition: query/mango_text; served by the full-text engine, whose copies read the definition
// from the design document: `ddoc_rev` and `ddoc_json`).
struct query_index {
  std::string ddoc;  // "_design/..."
  std::string name;
  index_def def;
  bool partitioned = false;
  json text;  // null: a JSON index
  std::string ddoc_rev, ddoc_json;
};

// POST /db/_index's body checked as mango_opts checks it (its error names and texts): the index,
// and the design document's id and the index's name (generated from the definition when not
// given, as CouchDB names them: the same definition gets the same name).
struct index_request {
  query_index index;   // a text index: index.text set (its definition checked, defaults filled)
  bool named = false;  // the body gave a name
};
result<index_request> parse_index_request(const json& body);

// The JSON indexes of a design document (`language: "query"`; views that are not valid index
// definitions are left out, as CouchDB's from_ddoc leaves them).
std::vector<query_index> indexes_of(const std::string& ddoc_id, const json& ddoc);
// `ddoc` (an existing design document, or null) with index `ix` added; false in `changed` when it
// has it already.
json with_index(const json& ddoc, const query_index& ix, bool& changed);
// `ddoc` without index `name` of `type` ("json": a view; "text": an `indexes` entry, query/mango_text);
// nullopt when it has none of that name. `empty` tells that no index of either kind is left
// (CouchDB deletes the design document then).
std::optional<json> without_index(const json& ddoc, const std::string& type, const std::string& name, bool& empty);

// An index's definition back from its text (index_def::definition()).
result<index_def> parse_definition(const std::string& definition);

// What documents are in JSON indexes (storage/json_index.hpp's index_keys), definitions compiled
// once and kept. Thread-safe.
class mango_keys final : public index_keys {
 public:
  void keys_of(const std::vector<const json_index_def*>& defs, std::string_view id, std::string_view rev,
               std::string_view body, std::vector<std::optional<std::string>>& out) const override;
  std::string version() const override;
  // The node's one instance (shard files and readers share its compiled definitions).
  static std::shared_ptr<const mango_keys> shared();
  // The key of the document `doc` (with _id and _rev) in the index defined by `definition`.
  std::optional<std::string> key_of(const std::string& definition, const json& doc) const;

 private:
  struct compiled {
    std::vector<std::vector<std::string>> paths;
    std::optional<mango_selector> filter;
  };
  std::shared_ptr<const compiled> compile(const std::string& definition) const;
  static std::optional<std::string> key(const compiled& c, const json& doc);
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const compiled>> cache_;
};

}  // namespace settee
