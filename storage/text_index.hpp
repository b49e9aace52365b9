// text_index: one full-text index (issue 54), for one shard copy and one search index of a design
// document: a Lucene++ index directory (architecture section 57 says why Lucene++). Documents go
// in by id with their fields, as a search index's `index(type, name, value, options)` calls made
// them; a batch is one commit that records the copy's seq it indexed up to and the fields' types
// (in the commit's user data), so a directory reopened after kill -9 says exactly what it holds.
// Queries are in Lucene's own syntax (its QueryParser; ranges and terms of number fields compare
// as numbers); a query it cannot parse is errc::bad_request with Lucene's message.
//
// Scores are the same whatever the number of copies a database is split into: a search is scored
// from term statistics (live documents, and live documents holding each term) that the asker may
// sum over every copy first (stats(), then text_query::stats), and with no per-query normalisation
// (which Lucene computes from each copy's own expansion of a fuzzy term). Hits are ordered by
// their `order`, a total order (the sort keys, then _id), so a page continues after the last hit
// of the one before on every copy alike (text_query::after).
// Lucene++ stays in text_index.cpp: nothing else includes its headers (which also takes out
// Lucene++ 3.0.8's process-wide lock: see its end).
// Thread-safe: one writer and any number of searches at once.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
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
  std::string text;        // the value of text, string and stored fields
  double number = 0;       // the value of a number field (and of a stored one when `is_number`)
  bool store = false;      // kept and returned with a hit (stored fields always are)
  bool is_number = false;  // a stored field's value is `number`
};

// What a document of the copy gives the index now: its fields, or nothing (deleted, or its index
// function indexed nothing): then it leaves the index.
struct text_doc {
  std::string id;
  std::vector<text_field> fields;
};

// The analyzers of an index: the default one and some fields' own, by name (text_analyzers()).
struct text_analysis {
  std::string default_analyzer = "standard";
  std::map<std::string, std::string> fields;
};
// The analyzer names an index may use.
const std::vector<std::string>& text_analyzers();
// `text` as analyzer `analyzer` cuts it into terms (Nouveau's _nouveau_analyze); bad_request
// "<name> not a valid analyzer" for a name it does not know.
result<std::vector<std::string>> text_analyze(const std::string& analyzer, const std::string& text);

// One value of a hit's order: a number (a score, a number field) or a text (a string field, _id);
// `missing` for a document without the field (it sorts after every value, either direction).
struct order_value {
  enum class kind { number, text, missing };
  kind type = kind::number;
  double number = 0;
  std::string text;
};
using text_order = std::vector<order_value>;

// What scores are computed from: live documents, and per term (field + '\0' + text) the live
// documents holding it. One copy's, or several copies' summed.
struct text_stats {
  uint64_t docs = 0;
  std::map<std::string, uint64_t> freqs;
  void add(const text_stats& other);
};

struct text_range {
  std::string label;
  double min = -std::numeric_limits<double>::infinity(), max = std::numeric_limits<double>::infinity();
  bool min_inclusive = true, max_inclusive = true;
};

struct text_query {
  std::string query;  // Lucene's syntax
  std::string default_field = "default";
  // Wildcard, prefix, fuzzy and range terms lowercased as Lucene's parser does by default (true);
  // false keeps them as written (Mango's queries: their keyword fields keep their case).
  bool lowercase_expanded = true;
  size_t limit = 25;
  // Nouveau's sort: "field" or "-field" (descending) of a string or number field, "<score>"
  // (lowest first) or "-<score>"; "_id" last unless given. Empty: "-<score>", then _id.
  std::vector<std::string> sort;
  std::optional<text_order> after;                        // only hits after this order
  const text_stats* stats = nullptr;                      // scores from these statistics (null: this index's own)
  std::vector<std::string> counts;                        // string fields whose values are counted over every match
  std::map<std::string, std::vector<text_range>> ranges;  // number fields' matches counted by range
  size_t top_n = 10;                                      // the most frequent values kept per counted field
  // Clouseau's drilldown: each entry [field, value, value...] keeps the matches whose string
  // field holds one of the values (entries: all of them).
  std::vector<std::vector<std::string>> drilldown;
  // Clouseau's highlights: the best `highlight_number` fragments of about `highlight_size`
  // characters of each stored field named, the query's terms between the tags.
  std::vector<std::string> highlight_fields;
  std::string highlight_pre = "<em>", highlight_post = "</em>";
  size_t highlight_number = 1, highlight_size = 100;
};

struct text_hit {
  std::string id;
  text_order order;  // its sort keys' values, then its id
  // Stored fields, in the order indexed: a number (is_number) or a text.
  struct stored_value {
    std::string name, text;
    double number = 0;
    bool is_number = false;
  };
  std::vector<stored_value> stored;
  std::vector<std::pair<std::string, std::vector<std::string>>> highlights;  // per highlight field
};

struct text_page {
  uint64_t total_hits = 0;     // every document the query matched (after or not)
  std::vector<text_hit> hits;  // the first `limit` after `after`, in order
  std::map<std::string, std::map<std::string, uint64_t>> counts, ranges;
};

// The order of two hits' orders under `sort` (text_query's): < 0 when `a` comes first.
int compare_orders(const std::vector<std::string>& sort, const text_order& a, const text_order& b);

class text_index {
 public:
  // Opens (creating when absent) the index in directory `dir`, analyzing text as `analysis` says
  // (bad_request "<name> is not a valid analyzer name" for one text_analyzers() does not hold).
  static result<std::unique_ptr<text_index>> open(const std::string& dir, const text_analysis& analysis = {});
  ~text_index();
  text_index(const text_index&) = delete;
  text_index& operator=(const text_index&) = delete;

  // The copy's seq the index holds every change up to (0: empty), and the copy's purge seq.
  uint64_t seq() const;
  uint64_t purge_seq() const;
  // Documents in the index; the bytes of its files.
  uint64_t doc_count() const;
  uint64_t disk_size() const;
  // Each document replaces the one of its id (none: removed), then one commit, durable, recording
  // `seq` and `purge_seq` (with every document staged before).
  status apply(const std::vector<text_doc>& docs, uint64_t seq, uint64_t purge_seq = 0);
  // The same without the commit: searches and seq() see them after the next apply() (a build
  // commits every so many documents, not every batch).
  status stage(const std::vector<text_doc>& docs);
  // Empties the index (one commit recording purge_seq, seq 0).
  status clear(uint64_t purge_seq);
  // The statistics the query of `q` is scored from in this index.
  result<text_stats> stats(const text_query& q) const;
  result<text_page> search(const text_query& q) const;
  // `q` over several indexes of one definition at once (a database's copies on this node, one a
  // range) as if they were one: its statistics theirs summed, one order, `limit` hits. The answer
  // stats() of each summed and then search() of each merged would give, for half the work and
  // without the second phase. Parsed with the first one's analyzer.
  static result<text_page> search(const std::vector<const text_index*>& parts, const text_query& q);
  // The segments' string indexes (sort keys, _id) searches remember, of every index (tests: a
  // segment closed is forgotten at the next one looked up).
  static size_t remembered_string_indexes();
  // The first `limit` (by score) of `query`: search() without the rest.
  result<text_page> search(const std::string& query, const std::string& default_field, size_t limit) const;

 private:
  struct impl;
  explicit text_index(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace settee
