// key_buckets: rows keyed by positions longer than an LMDB key may be (JSON indexes and view
// indexes: storage/FORMAT.md). A long position is keyed by its first bytes, and the rows sharing
// such a key live together in one value, a bucket: kind byte 1, then each row's position and its
// fields, sorted by position. One codec for both indexes, so that their buckets never drift apart
// (issue 50); each index keeps its own single-row value (kind byte 0) and its own key rule. Pure.
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "node/check.hpp"
#include "storage/codec.hpp"

namespace settee::key_buckets {

constexpr uint8_t single_kind = 0, bucket_kind = 1;

// The rows of a bucket whose kind byte `r` has read: each position, then what `read_fields(r, row)`
// reads. False when malformed or not sorted by position (data from disk: an error, not a crash).
template <class Row, class ReadFields>
bool decode(codec::reader& r, std::vector<Row>& out, ReadFields read_fields) {
  while (!r.done()) {
    Row row;
    if (!r.str(row.pos) || !read_fields(r, row)) return false;
    if (!out.empty() && !(out.back().pos < row.pos)) return false;
    out.push_back(std::move(row));
  }
  return true;
}

// A bucket of `rows` (sorted by position): its value.
template <class Row, class WriteFields>
std::string encode(const std::vector<Row>& rows, WriteFields write_fields) {
  codec::writer w;
  w.byte(bucket_kind);
  for (const Row& row : rows) {
    w.str(row.pos);
    write_fields(w, row);
  }
  return std::move(w.data());
}

// Puts `row` in its place among `rows` (replacing the row of its position when `replace`); whether
// it was new.
template <class Row>
bool put(std::vector<Row>& rows, Row row, bool replace) {
  auto at =
      std::lower_bound(rows.begin(), rows.end(), row.pos, [](const Row& a, const std::string& p) { return a.pos < p; });
  const bool added = at == rows.end() || at->pos != row.pos;
  if (added)
    rows.insert(at, std::move(row));
  else if (replace)
    *at = std::move(row);
  SETTEE_CHECK(std::is_sorted(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.pos < b.pos; }));
  return added;
}

// Takes the row of position `pos` out of `rows`; whether there was one.
template <class Row>
bool take(std::vector<Row>& rows, const std::string& pos) {
  const size_t was = rows.size();
  rows.erase(std::remove_if(rows.begin(), rows.end(), [&](const Row& r) { return r.pos == pos; }), rows.end());
  return rows.size() != was;
}

}  // namespace settee::key_buckets
