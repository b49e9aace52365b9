// find_cursor: the coordinator's side of a _find (CouchDB's mango_cursor), beside the view and
// `_all_docs` readers. It weighs the plans the planner (query/mango_plan) offers by the rows their
// ranges hold (each copy counts its own), then runs the chosen one: on a JSON index, one copy of
// each range answers its next rows after the bookmark's position for it (actors/find_reader, local
// or over RPC) and the pages are merged here by index position; on a union of indexes, each part
// after the previous one; on a Mango text index (use_index names it, the selector asks $text, or
// no JSON index serves), the full-text index's hits, each matched (actors/find_text.cpp); with no
// usable index, the special `_all_docs` index, documents in id order, each matched. Bookmarks are
// opaque: the last id answered (`_all_docs`), each range's last position (an index), a union's
// part and its own bookmark, or a text index's last hit's order.
// Thread-safety: as its coordinator and reader (any thread); it keeps no state of its own.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/find_reader.hpp"
#include "actors/search_reader.hpp"
#include "query/mango_plan.hpp"
#include "query/mango_query.hpp"

namespace settee {

// What a _find answers: its documents, each rendered, and how they were found.
struct find_answer {
  std::vector<std::string> docs;  // each rendered
  std::string bookmark;           // where the next page starts ("": as given)
  uint64_t keys_examined = 0, docs_examined = 0;
  uint64_t skipped = 0;  // matches passed over for `skip`
};

// A checked _find or _explain body and the plan chosen for it.
struct planned_find {
  find_query q;
  query_plan plan;
  // With several usable indexes: each one's rows in its ranges, as the copies counted them (up
  // to mango_copy_request::estimate_cap a copy; UINT64_MAX: not built everywhere yet).
  std::vector<std::pair<std::string, uint64_t>> estimates;
  std::string partition;                                    // a partitioned database's query of one partition: its name
  std::shared_ptr<const std::vector<query_index>> indexes;  // the database's Mango indexes the plan weighed
  // A Mango text index answers instead (mango_cursor_text): use_index names it, the selector asks
  // $text, or no JSON index serves the query and it does; `plan` is then unused.
  std::optional<query_index> text;
  json text_selector;  // with `text`: the selector as the text index reads it (normalized)
};

// The rows every copy's page counted for a plan's ranges (capped below UINT64_MAX); UINT64_MAX
// (unknown) when any copy's index is not built yet, whichever range it answers for.
uint64_t estimated_rows(const std::vector<mango_page>& pages);

class find_cursor {
 public:
  // `search`: the node's full-text indexes, for Mango text indexes (null: none on this node).
  find_cursor(coordinator& coord, find_reader& reader, search_reader* search = nullptr);

  // The plan for `q` over `db`'s JSON indexes: among several usable ones, the index whose ranges
  // hold the fewest rows. `partition`: a partitioned database's partition ("" the whole database).
  result<planned_find> plan(const db_meta& db, find_query q, std::string partition);
  // The documents `p` finds (skip, limit and the bookmark applied).
  result<find_answer> run(const db_meta& db, const planned_find& p);
  // The rows `plan`'s ranges hold, summed over one copy of each range (UINT64_MAX: unknown).
  uint64_t estimate(const db_meta& db, const query_plan& plan, const find_query& q);
  // The Mango indexes (JSON and text) of the database's design documents, read now.
  result<std::vector<query_index>> mango_indexes(const db_meta& db);

 private:
  result<find_answer> run_all_docs(const db_meta& db, const find_query& q, bool descending,
                                   const std::string& partition);
  result<find_answer> run_index(const db_meta& db, const find_query& q, const query_plan& plan);
  result<find_answer> run_union(const db_meta& db, const find_query& q, const query_plan& plan);
  // The text index `p.text`'s cursor (actors/find_text.cpp).
  result<find_answer> run_text(const db_meta& db, const planned_find& p);

  coordinator& coord_;
  find_reader& reader_;
  search_reader* search_;
};

}  // namespace settee
