// search_ddoc: the full-text indexes a design document defines (issue 54), as CouchDB reads them:
// Nouveau's `nouveau: {name: {index, default_analyzer, field_analyzers, lucene_version}}`
// (nouveau_util:design_doc_to_index) and Clouseau's `indexes: {name: {index, analyzer}}`
// (dreyfus_index:design_doc_to_index). Pure code: no I/O.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "node/json.hpp"
#include "storage/text_index.hpp"

namespace settee {

enum class search_api { nouveau, clouseau };  // `_nouveau` and `nouveau`, `_search` and `indexes`

struct search_index_def {
  search_api api = search_api::nouveau;
  std::string ddoc_id, name;
  std::string function;  // the index function's source
  // A Mango text index's definition (query/mango_text: POST /db/_index "type": "text"), indexed
  // by the node itself, without JavaScript; null for an index function's index.
  json mango;
  std::string default_analyzer = "standard";           // nouveau's default_analyzer, clouseau's analyzer
  std::map<std::string, std::string> field_analyzers;  // nouveau's field_analyzers (clouseau: a perfield analyzer)
  int lucene_version = 9;                              // nouveau's lucene_version (CouchDB's default: 9)
  // The definition hashed (hex sha256 of what the index is built from): the index's file name, so
  // that changing anything that changes its terms builds a new one, and nothing else does.
  std::string signature;
  // A partitioned index (a partitioned database's, unless the design document's
  // options.partitioned is false): each document's partition is indexed too (a `_partition`
  // string field), and a query may keep to one partition. Set by partition_index().
  bool partitioned = false;
};

// `d` of design document `ddoc` in a database that is partitioned or not: partitioned as views are
// (CouchDB's get_view_partition_option), with a signature of its own when it is.
void partition_index(search_index_def& d, bool partitioned_db, const json& ddoc);

// Index `name` of `api` in design document `ddoc` (its JSON body, `ddoc_id` its id): errc::not_found
// "<name> not found." when it has none of that name; errc::invalid_design_doc (CouchDB's
// invalid_design_doc) "index `<name>` must have parameter `index`" when the definition has no
// function, or when the function, the analyzers or the version are not what they must be.
result<search_index_def> search_index_of(search_api api, const std::string& ddoc_id, const json& ddoc,
                                         const std::string& name);

// The analyzer a Clouseau index's name means: its "standard" is Lucene's StandardAnalyzer with the
// English stop words (storage/text_index's "classic"); Nouveau's keeps them (its "standard").
std::string clouseau_analyzer(const std::string& name);
// The analyzers an index of `def` uses, as storage/text_index names them.
text_analysis analysis_of(const search_index_def& def);

// Every well-formed index of `api` in the design document, in its order (CouchDB skips the others).
std::vector<search_index_def> search_indexes_of(search_api api, const std::string& ddoc_id, const json& ddoc);

}  // namespace settee
