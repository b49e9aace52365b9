// text_index: one full-text index (issue 54), for one shard copy and one search index of a design
// document: a Lucene++ index directory (architecture section 57 says why Lucene++). Documents go
// in by id with their fields, as a search index's `index(type, name, value, options)` calls made
// them; a batch is one commit that records the copy's seq it indexed up to (in the commit's user
// data), so a directory reopened after kill -9 says exactly what it holds. Queries are in Lucene's
// own syntax (its QueryParser); a query it cannot parse is errc::bad_request with Lucene's message.
// Lucene++ stays in text_index.cpp: nothing else includes its headers.
// Thread-safe: one writer and any number of searches at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "node/error.hpp"

namespace settee {

// One `index(type, name, value, options)` call's field.
struct text_field {
  enum class kind { text, string, number, stored };
  kind type = kind::text;  // text: analyzed; string: one term as given; number: a double; stored: kept only
  std::string name;
  std::string text;    // the value of text, string and stored fields
  double number = 0;   // the value of a number field
  bool store = false;  // kept and returned with a hit (stored fields always are)
};

// What a document of the copy gives the index now: its fields, or nothing (deleted, or its index
// function indexed nothing): then it leaves the index.
struct text_doc {
  std::string id;
  std::vector<text_field> fields;
};

struct text_hit {
  std::string id;
  double score = 0;
  std::vector<std::pair<std::string, std::string>> stored;  // stored fields, in the order indexed
};

struct text_page {
  uint64_t total_hits = 0;     // every document the query matched
  std::vector<text_hit> hits;  // the best `limit`, by score
};

class text_index {
 public:
  // Opens (creating when absent) the index in directory `dir`.
  static result<std::unique_ptr<text_index>> open(const std::string& dir);
  ~text_index();
  text_index(const text_index&) = delete;
  text_index& operator=(const text_index&) = delete;

  // The copy's seq the index holds every change up to (0: empty).
  uint64_t seq() const;
  // Documents in the index.
  uint64_t doc_count() const;
  // Each document replaces the one of its id (none: removed), then one commit, durable, recording
  // `seq`.
  status apply(const std::vector<text_doc>& docs, uint64_t seq);
  // The best `limit` documents for `query` (Lucene's syntax; terms without a field are searched in
  // `default_field`), with the total count.
  result<text_page> search(const std::string& query, const std::string& default_field, size_t limit) const;

 private:
  struct impl;
  explicit text_index(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace settee
