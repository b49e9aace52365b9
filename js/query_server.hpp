// query_server: the worker's side of the protocol between the node and a settee-js process (one
// engine). A request is two lines: a header (a JSON array naming the command) and a body (JSON:
// the command's data, handed to the engine as text, parsed once, in the design document's realm).
// The answer is one line, a JSON object:
//   {"ok": value}                        the function's result
//   {"thrown": value}                    it threw something other than an Error (CouchDB's
//                                        {forbidden: m} from validate_doc_update, ["error", n, r])
//   {"error": name, "reason": message}   it threw an Error (TypeError, ...)
//   {"fault": "compilation_error"|"timeout"|"memory"|"internal", "reason": message}
// with "log": [lines] when the function logged, and for filters "errors": [per-document errors].
//
// Commands (header / body):
//   ["ddoc", "new", key]                   the design document (body) under `key` (its id and rev)
//   ["compile", key]                       the design document (body): every function compiled,
//                                          the first that does not compile answered
//   ["ddoc", key, ["validate_doc_update"]] [newDoc, oldDoc, userCtx, secObj]
//   ["ddoc", key, ["filters", name]]       [docs, req] -> {"ok": [bool per doc]}
//   ["ddoc", key, ["views", name, "map"]]  [docs] -> whether each doc emitted (filter=_view)
//   ["ddoc", key, ["updates", name]]       [doc or null, req] -> the handler's [doc, response]
//   ["map", key, [view names]]             [docs] -> {"ok": per doc, per view, its [[key, value],
//                                          ...]} ("errors": "<doc id>: <error>" per throw)
//   ["each", key, path]                    [[args...], ...]: the function once per argument array,
//                                          each with its own deadline -> {"each": [answer, ...]}
//                                          (validate_doc_update for many writes in one exchange)
//   ["reset"]                              (body ignored) every design document forgotten
// A key the worker does not hold answers {"fault":"internal","reason":"unknown design document"}:
// the node sends it and asks again.
#pragma once

#include <list>
#include <map>
#include <string>
#include <vector>

#include "js/engine.hpp"

namespace settee::js {

class query_server {
 public:
  explicit query_server(engine& e, size_t max_ddocs = 64) : e_(e), max_ddocs_(max_ddocs) {}
  // One request: its header and body lines (without newlines); the answer line (without one).
  std::string handle(const std::string& header, const std::string& body);

 private:
  struct ddoc {
    engine::scope_id scope = 0;
    std::string source;                             // the design document's JSON
    std::map<std::string, engine::fn_id> compiled;  // by path ("filters.by_type")
  };
  std::string add(const std::string& key, const std::string& body);
  std::string compile_all(const std::string& body);
  std::string run(const std::string& key, const std::vector<std::string>& path, const std::string& body);
  std::string run_each(const std::string& key, const std::vector<std::string>& path, const std::string& body);
  std::string map(const std::string& key, const std::vector<std::string>& views, const std::string& body);
  // Each function at `paths` (views' maps, search indexes' functions) over the documents of `body`.
  std::string map_paths(const std::string& key, const std::vector<std::vector<std::string>>& paths,
                        const std::string& body);
  // The function at `path` of the design document held as `key`: "" and `fn`, or the answer
  // that says why not (unknown design document, no such function, compilation error).
  std::string find_function(const std::string& key, const std::vector<std::string>& path, engine::fn_id& fn);
  // The function at `path` of design document `d` (compiled on first use).
  outcome function_at(ddoc& d, const std::vector<std::string>& path, engine::fn_id& out);
  void forget(const std::string& key);
  std::string answer(const outcome& r, const std::string& extra = "");

  engine& e_;
  size_t max_ddocs_;
  std::map<std::string, ddoc> ddocs_;
  std::list<std::string> lru_;  // least recently used first
};

}  // namespace settee::js
