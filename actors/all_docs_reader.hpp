// all_docs_reader: the documents of a database in id order (_all_docs, _design_docs), read from
// one copy of every range, all ranges at once (coordinator::each_range), and merged: a k-way merge
// by id, or one row per key asked for, in the keys' order. Rows as data; http/ renders them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"

namespace settee {

struct all_docs_query {
  // What each range reads: bounds, direction, include_docs... (`keys` and `max_rows` are set here).
  all_docs_request range;
  // By keys, in the order the rows are given (nullopt: a key that is not a document id: not found).
  std::optional<std::vector<std::optional<std::string>>> keys;
  int64_t skip = 0;
  int64_t limit = -1;  // < 0: no limit
  // Set: only this range is read (a partition's, in a partitioned database); keys of other ranges
  // are not found.
  std::optional<size_t> only_range;
};

struct all_docs_listing {
  struct row {
    size_t key = 0;    // by keys: which key this row answers
    all_docs_row doc;  // by keys: doc.found false when there is no such document
  };
  std::vector<row> rows;
  uint64_t doc_count = 0;  // live documents, summed over the ranges
  uint64_t before = 0;     // live documents before the start key, summed (CouchDB's offset, without skip)
  uint64_t in_bounds = 0;  // rows the ranges found within the bounds (at most skip + limit each)
};

result<all_docs_listing> list_all_docs(coordinator& coord, const db_meta& db, const all_docs_query& q);

// The design documents of `db` (the ids from "_design/" up to "_design0"), with their bodies when
// `include_docs`: what the validator, _view_cleanup and _design_docs' total_rows read.
result<all_docs_listing> list_design_docs(coordinator& coord, const db_meta& db, bool include_docs);
// What one range reads for list_design_docs (also asked of every copy by actors/doc_validator).
all_docs_request design_docs_request(bool include_docs);

}  // namespace settee
