// Mango test fixtures shared by the planner's and _explain's tests.
#pragma once
#include <string>
#include <vector>

#include "query/mango_index.hpp"

namespace settee {

// A JSON index on `fields` (ascending) named `name` in design document `_design/<name>`.
inline query_index index_on(std::vector<std::string> fields, const std::string& name, json partial = json::object()) {
  query_index ix;
  ix.ddoc = "_design/" + name;
  ix.name = name;
  for (auto& f : fields) ix.def.fields.emplace_back(f, false);
  ix.def.partial_filter = std::move(partial);
  return ix;
}

}  // namespace settee
