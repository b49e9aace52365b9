#include "storage/text_index.hpp"

#include <lucene++/ArabicAnalyzer.h>
#include <lucene++/BrazilianAnalyzer.h>
#include <lucene++/CJKAnalyzer.h>
#include <lucene++/ChineseAnalyzer.h>
#include <lucene++/CzechAnalyzer.h>
#include <lucene++/DefaultSimilarity.h>
#include <lucene++/DutchAnalyzer.h>
#include <lucene++/FieldCache.h>
#include <lucene++/FieldSelector.h>
#include <lucene++/FilteredQuery.h>
#include <lucene++/FrenchAnalyzer.h>
#include <lucene++/GermanAnalyzer.h>
#include <lucene++/GreekAnalyzer.h>
#include <lucene++/Highlighter.h>
#include <lucene++/LuceneHeaders.h>
#include <lucene++/MMapDirectory.h>
#include <lucene++/NumericRangeFilter.h>
#include <lucene++/NumericRangeQuery.h>
#include <lucene++/OpenBitSet.h>
#include <lucene++/PersianAnalyzer.h>
#include <lucene++/QueryScorer.h>
#include <lucene++/QueryWrapperFilter.h>
#include <lucene++/RussianAnalyzer.h>
#include <lucene++/SimpleFragmenter.h>
#include <lucene++/SimpleHTMLFormatter.h>
#include <lucene++/SnowballAnalyzer.h>
#include <lucene++/TermAttribute.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>
#include <queue>
#include <regex>

#include "node/files.hpp"

namespace settee {

namespace {

using namespace Lucene;

const wchar_t* const id_field = L"_id";
const wchar_t* const seq_key = L"settee_seq";
const wchar_t* const purge_key = L"settee_purge_seq";
const wchar_t* const fields_key = L"settee_fields";
constexpr LuceneVersion::Version version = LuceneVersion::LUCENE_30;
// The writer's buffer before it flushes a segment: fewer, larger segments to merge and to apply
// deletes against (architecture 57; Lucene's default is 16).
constexpr double ram_buffer_mb = 32;
// Every how many terms of a segment's dictionary one is held in memory: a term lookup (each term
// of a query, in each segment) reads on from the nearest held one, term by term. Lucene's default
// of 128 made those reads a fifth of a term query's CPU (BENCHMARKS); 16 holds 8x the terms.
constexpr int32_t term_index_interval = 16;

String wide(const std::string& s) {
  return StringUtils::toUnicode(s);
}
std::string narrow(const String& s) {
  return StringUtils::toUTF8(s);
}

// A Lucene++ exception as a status: a query Lucene cannot parse is the caller's (400, Lucene's own
// message), anything else the index's.
status failed(const LuceneException& e, const std::string& doing) {
  const std::string message = narrow(e.getError());
  if (e.getType() == LuceneException::Parse || e.getType() == LuceneException::QueryParser ||
      e.getType() == LuceneException::TooManyClauses)
    return {errc::bad_request, message};
  return {errc::internal, "the text index could not " + doing + ": " + message};
}

// The analyzers by name: Nouveau's names (Lucene's own analyzers where Lucene++ has them, its
// Snowball stemmers for the other languages) and Clouseau's "classic".
struct analyzer_maker {
  const char* name;
  std::function<AnalyzerPtr()> make;
};
AnalyzerPtr snowball(const wchar_t* language, bool english_stops = false) {
  if (english_stops) return newLucene<SnowballAnalyzer>(version, language, StopAnalyzer::ENGLISH_STOP_WORDS_SET());
  return newLucene<SnowballAnalyzer>(version, language);
}
const std::vector<analyzer_maker>& makers() {
  static const std::vector<analyzer_maker> all = {
      // Lucene 9's StandardAnalyzer (Nouveau's) keeps stop words; Lucene 3's removed English ones.
      {"standard", [] { return newLucene<StandardAnalyzer>(version, HashSet<String>::newInstance()); }},
      {"classic", [] { return newLucene<StandardAnalyzer>(version); }},
      {"email", [] { return newLucene<StandardAnalyzer>(version, HashSet<String>::newInstance()); }},
      {"keyword", [] { return newLucene<KeywordAnalyzer>(); }},
      {"simple", [] { return newLucene<SimpleAnalyzer>(); }},
      {"whitespace", [] { return newLucene<WhitespaceAnalyzer>(); }},
      {"stop", [] { return newLucene<StopAnalyzer>(version); }},
      {"arabic", [] { return newLucene<ArabicAnalyzer>(version); }},
      {"brazilian", [] { return newLucene<BrazilianAnalyzer>(version); }},
      {"cjk", [] { return newLucene<CJKAnalyzer>(version); }},
      {"chinese", [] { return newLucene<ChineseAnalyzer>(); }},
      {"czech", [] { return newLucene<CzechAnalyzer>(version); }},
      {"danish", [] { return snowball(L"danish"); }},
      {"dutch", [] { return newLucene<DutchAnalyzer>(version); }},
      {"english", [] { return snowball(L"english", true); }},
      {"finnish", [] { return snowball(L"finnish"); }},
      {"french", [] { return newLucene<FrenchAnalyzer>(version); }},
      {"german", [] { return newLucene<GermanAnalyzer>(version); }},
      {"greek", [] { return newLucene<GreekAnalyzer>(version); }},
      {"hungarian", [] { return snowball(L"hungarian"); }},
      {"italian", [] { return snowball(L"italian"); }},
      {"norwegian", [] { return snowball(L"norwegian"); }},
      {"persian", [] { return newLucene<PersianAnalyzer>(version); }},
      {"portuguese", [] { return snowball(L"portuguese"); }},
      {"romanian", [] { return snowball(L"romanian"); }},
      {"russian", [] { return newLucene<RussianAnalyzer>(version); }},
      {"spanish", [] { return snowball(L"spanish"); }},
      {"swedish", [] { return snowball(L"swedish"); }},
      {"turkish", [] { return snowball(L"turkish"); }},
  };
  return all;
}

result<AnalyzerPtr> analyzer_named(const std::string& name) {
  for (const analyzer_maker& m : makers())
    if (name == m.name) return m.make();
  return status{errc::bad_request, name + " is not a valid analyzer name"};
}

// The per-field analyzers with a gap of 100 positions between a field's values: a phrase does
// not match across two values (two index() calls, or two strings of a Mango document's $default).
// Lucene's default gap is 0.
class gapped_analyzer : public Analyzer {
 public:
  explicit gapped_analyzer(AnalyzerPtr inner) : inner_(std::move(inner)) {}
  TokenStreamPtr tokenStream(const String& field, const ReaderPtr& reader) override {
    return inner_->tokenStream(field, reader);
  }
  TokenStreamPtr reusableTokenStream(const String& field, const ReaderPtr& reader) override {
    return inner_->reusableTokenStream(field, reader);
  }
  int32_t getPositionIncrementGap(const String&) override { return 100; }

 private:
  AnalyzerPtr inner_;
};

// Scores with no per-query normalisation: a copy's expansion of a fuzzy term would change it.
class plain_similarity : public DefaultSimilarity {
 public:
  double queryNorm(double) override { return 1.0; }
};

std::string term_key(const TermPtr& t) {
  return narrow(t->field()) + '\0' + narrow(t->text());
}

// A searcher whose term statistics are given (several copies' summed): what scores come from.
class stats_searcher : public IndexSearcher {
 public:
  stats_searcher(const IndexReaderPtr& reader, const text_stats& stats) : IndexSearcher(reader), stats_(stats) {}
  int32_t docFreq(const TermPtr& term) override {
    auto it = stats_.freqs.find(term_key(term));
    return it == stats_.freqs.end() ? 0 : static_cast<int32_t>(std::min<uint64_t>(it->second, INT32_MAX));
  }
  int32_t maxDoc() override { return static_cast<int32_t>(std::min<uint64_t>(stats_.docs, INT32_MAX)); }

 private:
  const text_stats& stats_;
};

// The field kinds an index has seen ('t' text, 's' string, 'n' number), for sorting and ranges.
using field_kinds = std::map<std::string, char>;

double parse_number(const String& text, bool& ok) {
  const std::string s = narrow(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  ok = !s.empty() && end == s.c_str() + s.size() && std::isfinite(v);
  return v;
}

// Lucene's QueryParser, with number fields' terms and ranges compared as numbers.
class number_aware_parser : public QueryParser {
 public:
  number_aware_parser(const String& field, const AnalyzerPtr& analyzer, const field_kinds& kinds)
      : QueryParser(version, field, analyzer), kinds_(kinds) {}

 protected:
  bool number(const String& field) const {
    auto it = kinds_.find(narrow(field));
    return it != kinds_.end() && it->second == 'n';
  }
  // An open end ("*") is an infinity: Lucene++ takes no open end beside a number.
  double bound(const String& field, const String& text, double open) {
    if (text == L"*") return open;
    bool ok = false;
    const double v = parse_number(text, ok);
    if (!ok)
      boost::throw_exception(QueryParserError(L"\"" + text + L"\" is not a number, and " + field + L" holds numbers"));
    return v;
  }
  QueryPtr getRangeQuery(const String& field, const String& part1, const String& part2, bool inclusive) override {
    if (!number(field)) return QueryParser::getRangeQuery(field, part1, part2, inclusive);
    const double inf = std::numeric_limits<double>::infinity();
    return NumericRangeQuery::newDoubleRange(field, bound(field, part1, -inf), bound(field, part2, inf), inclusive,
                                             inclusive);
  }
  QueryPtr getFieldQuery(const String& field, const String& text) override {
    if (!number(field)) return QueryParser::getFieldQuery(field, text);
    const double v = bound(field, text, std::numeric_limits<double>::quiet_NaN());
    return NumericRangeQuery::newDoubleRange(field, v, v, true, true);
  }

 private:
  const field_kinds& kinds_;
};

uint64_t number_of(const MapStringString& data, const wchar_t* key) {
  if (!data.contains(key)) return 0;
  try {
    return std::stoull(narrow(data.get(key)));
  } catch (const std::exception&) {
    return 0;
  }
}

// The field kinds as a commit records them: each "<kind><length>:<name>".
String kinds_text(const field_kinds& kinds) {
  std::string out;
  for (const auto& [name, kind] : kinds) out += kind + std::to_string(name.size()) + ":" + name;
  return wide(out);
}
field_kinds kinds_of(const MapStringString& data) {
  field_kinds out;
  if (!data.contains(fields_key)) return out;
  const std::string s = narrow(data.get(fields_key));
  for (size_t i = 0; i < s.size();) {
    const char kind = s[i];
    const size_t colon = s.find(':', i + 1);
    if (colon == std::string::npos) break;
    size_t n = 0;
    try {
      n = std::stoul(s.substr(i + 1, colon - i - 1));
    } catch (const std::exception&) {
      break;
    }
    if (colon + 1 + n > s.size()) break;
    out[s.substr(colon + 1, n)] = kind;
    i = colon + 1 + n;
  }
  return out;
}

DocumentPtr lucene_doc(const text_doc& d, field_kinds& kinds) {
  DocumentPtr doc = newLucene<Document>();
  doc->add(newLucene<Field>(id_field, wide(d.id), Field::STORE_YES, Field::INDEX_NOT_ANALYZED_NO_NORMS));
  auto seen = [&](const std::string& name, char kind) { kinds[name] = kind; };
  for (const text_field& f : d.fields) {
    const String name = wide(f.name);
    const Field::Store store = f.store ? Field::STORE_YES : Field::STORE_NO;
    auto stored_number = [&](double v) {
      ByteArray bytes = ByteArray::newInstance(sizeof v);
      std::memcpy(bytes.get(), &v, sizeof v);
      doc->add(newLucene<Field>(name, bytes, Field::STORE_YES));
    };
    switch (f.type) {
      case text_field::kind::text:
        seen(f.name, 't');
        doc->add(newLucene<Field>(name, wide(f.text), store, Field::INDEX_ANALYZED));
        break;
      case text_field::kind::string:
        seen(f.name, 's');
        doc->add(newLucene<Field>(name, wide(f.text), store, Field::INDEX_NOT_ANALYZED_NO_NORMS));
        break;
      case text_field::kind::number:
        seen(f.name, 'n');
        doc->add(newLucene<NumericField>(name, Field::STORE_NO, true)->setDoubleValue(f.number));
        if (f.store) stored_number(f.number);
        break;
      case text_field::kind::stored:
        if (f.is_number)
          stored_number(f.number);
        else
          doc->add(newLucene<Field>(name, wide(f.text), Field::STORE_YES, Field::INDEX_NO));
        break;
    }
  }
  return doc;
}

// The segments of `reader` (of each index, for a reader over several).
Collection<IndexReaderPtr> segments_of(const IndexReaderPtr& reader) {
  Collection<IndexReaderPtr> out = Collection<IndexReaderPtr>::newInstance();
  Collection<IndexReaderPtr> subs = reader->getSequentialSubReaders();
  if (!subs || subs.empty()) {
    out.add(reader);
    return out;
  }
  for (const IndexReaderPtr& sub : subs)
    for (const IndexReaderPtr& seg : segments_of(sub)) out.add(seg);
  return out;
}

// One sort key of a search, resolved against the index's fields.
struct sort_spec {
  enum class kind { score, text, number, missing } type = kind::score;
  String field;
  bool descending = false;
};

constexpr size_t max_sort_keys = 8;

result<std::vector<sort_spec>> resolve_sort(const std::vector<std::string>& sort, const field_kinds& kinds) {
  std::vector<std::string> names = sort.empty() ? std::vector<std::string>{"-<score>"} : sort;
  if (names.back() != "_id" && names.back() != "-_id") names.push_back("_id");
  if (names.size() > max_sort_keys)
    return status{errc::bad_request, "at most " + std::to_string(max_sort_keys - 1) + " sort fields"};
  static const std::regex field_re("^([-+])?([.\\w]+)$");
  std::vector<sort_spec> out;
  for (const std::string& s : names) {
    sort_spec k;
    if (s == "-<score>" || s == "<score>") {
      k.descending = s[0] == '-';
      out.push_back(k);
      continue;
    }
    std::smatch m;
    if (!std::regex_match(s, m, field_re)) return status{errc::bad_request, s + " is not a valid sort parameter"};
    k.descending = m[1] == "-";
    const std::string name = m[2];
    k.field = wide(name);
    auto it = kinds.find(name);
    if (name == "_id" || (it != kinds.end() && it->second == 's'))
      k.type = sort_spec::kind::text;
    else if (it != kinds.end() && it->second == 'n')
      k.type = sort_spec::kind::number;
    else if (it == kinds.end())
      k.type = sort_spec::kind::missing;  // no document has it (yet): every hit alike
    else
      return status{errc::bad_request, "can't sort on field " + name};
    out.push_back(k);
  }
  return out;
}

// One key's value of a hit while collecting: a number, or a text of a field cache (null: missing).
struct slot {
  double number = 0;
  const String* text = nullptr;
  // The segment whose field cache `text` points into (-1: none): two texts of one segment compare
  // as their places in its sorted lookup array, without reading them.
  int32_t segment = -1;
};

int compare_slot(const sort_spec& k, const slot& a, const slot& b) {
  int c = 0;
  if (k.type == sort_spec::kind::score || k.type == sort_spec::kind::number) {
    c = a.number < b.number ? -1 : a.number > b.number ? 1 : 0;
  } else if (k.type == sort_spec::kind::text) {
    if (!a.text || !b.text) return (a.text ? -1 : 0) + (b.text ? 1 : 0);  // missing last, either way
    if (a.segment >= 0 && a.segment == b.segment) {
      c = a.text < b.text ? -1 : a.text > b.text ? 1 : 0;
    } else {
      c = a.text->compare(*b.text);
      c = c < 0 ? -1 : c > 0 ? 1 : 0;
    }
  }
  return k.descending ? -c : c;
}

struct entry {
  std::array<slot, max_sort_keys> keys;
  int32_t doc = 0;  // in the whole reader
};

// Segment `reader`'s string index of `field` (FieldCache's), remembered here too: Lucene++'s
// FieldCache finds it under a lock, through a weak map keyed by an object it locks and hashes
// (~4.6 us a segment: with the _id of every sort, 8% of a term query's CPU at 10 segments). An
// entry holds its segment's cache key weakly: a key gone (the segment closed) is an entry to drop,
// which every miss (a new segment) does for all of them.
struct remembered_index {
  boost::weak_ptr<LuceneObject> key;
  StringIndexPtr index;
};
std::mutex remembered_mu;
std::map<std::pair<const LuceneObject*, String>, remembered_index> remembered;  // remembered_mu

// Drops the remembered string indexes of segments now closed. Called with remembered_mu held.
void forget_closed_locked() {
  for (auto it = remembered.begin(); it != remembered.end();)
    it = it->second.key.expired() ? remembered.erase(it) : std::next(it);
}

StringIndexPtr string_index_of(const IndexReaderPtr& reader, const String& field) {
  const LuceneObjectPtr key = reader->getFieldCacheKey();
  std::pair<const LuceneObject*, String> at{key.get(), field};
  {
    std::lock_guard<std::mutex> lock(remembered_mu);
    auto it = remembered.find(at);
    if (it != remembered.end() && !it->second.key.expired()) return it->second.index;
  }
  StringIndexPtr index = FieldCache::DEFAULT()->getStringIndex(reader, field);
  std::lock_guard<std::mutex> lock(remembered_mu);
  forget_closed_locked();
  remembered[std::move(at)] = remembered_index{key, index};
  return index;
}

// Collects the first `limit` hits after `after` in the sort's order, counts every hit, and marks
// them per segment when facets are asked for.
class hit_collector : public Collector {
 public:
  hit_collector(const std::vector<sort_spec>& sort, const std::vector<slot>* after, size_t limit, bool mark)
      : sort_(sort), after_(after), limit_(limit), mark_(mark) {}

  void setScorer(const ScorerPtr& scorer) override { scorer_ = scorer; }
  void setNextReader(const IndexReaderPtr& reader, int32_t base) override {
    base_ = base;
    ++segment_;
    texts_.assign(sort_.size(), nullptr);
    numbers_.assign(sort_.size(), Collection<double>());
    for (size_t i = 0; i < sort_.size(); ++i) {
      if (sort_[i].type == sort_spec::kind::text) {
        StringIndexPtr si = string_index_of(reader, sort_[i].field);
        held_.push_back(si);
        texts_[i] = si.get();
      } else if (sort_[i].type == sort_spec::kind::number) {
        numbers_[i] =
            FieldCache::DEFAULT()->getDoubles(reader, sort_[i].field, FieldCache::NUMERIC_UTILS_DOUBLE_PARSER());
      }
    }
    if (mark_) marks.emplace_back(reader, newLucene<OpenBitSet>(reader->maxDoc()));
  }
  void collect(int32_t doc) override {
    ++total;
    if (mark_) marks.back().second->set(static_cast<int64_t>(doc));
    if (limit_ == 0) return;
    entry e;
    e.doc = base_ + doc;
    // The first key alone often decides (relevance): a hit worse than the last one kept, or not
    // after `after`, is passed over before the other keys are read.
    if (sort_[0].type == sort_spec::kind::score || sort_[0].type == sort_spec::kind::number) {
      e.keys[0].number = sort_[0].type == sort_spec::kind::score ? scorer_->score() : numbers_[0][doc];
      if (after_ && compare_slot(sort_[0], e.keys[0], (*after_)[0]) < 0) return;
      if (best_.size() >= limit_ && compare_slot(sort_[0], e.keys[0], best_.top().keys[0]) > 0) return;
    }
    for (size_t i = 0; i < sort_.size(); ++i) {
      switch (sort_[i].type) {
        case sort_spec::kind::score:
          if (i > 0) e.keys[i].number = scorer_->score();
          break;
        case sort_spec::kind::number:
          if (i > 0) e.keys[i].number = numbers_[i][doc];
          break;
        case sort_spec::kind::text: {
          const int32_t ord = texts_[i]->order[doc];
          e.keys[i].text = ord == 0 ? nullptr : &texts_[i]->lookup[ord];
          e.keys[i].segment = segment_;
          break;
        }
        case sort_spec::kind::missing:
          break;
      }
    }
    if (after_ && compare_here(e.keys.data(), after_->data(), after_places_) <= 0) return;
    if (best_.size() < limit_) {
      best_.push(e);
    } else if (compare_here(e.keys.data(), best_.top().keys.data(), top_places_) < 0) {
      best_.pop();
      best_.push(e);
    }
  }
  bool acceptsDocsOutOfOrder() override { return true; }

  // The hits kept, in order.
  std::vector<entry> hits() {
    std::vector<entry> out;
    for (; !best_.empty(); best_.pop()) out.push_back(best_.top());
    std::reverse(out.begin(), out.end());
    return out;
  }

  uint64_t total = 0;
  std::vector<std::pair<IndexReaderPtr, OpenBitSetPtr>> marks;  // marked_segments

 private:
  int compare(const slot* a, const slot* b) const {
    for (size_t i = 0; i < sort_.size(); ++i)
      if (int c = compare_slot(sort_[i], a[i], b[i]); c != 0) return c;
    return 0;
  }
  // Where a text of another segment (the last hit kept, `after`) falls among this segment's sorted
  // texts of one key: `pos`, the first at or after it, and whether that one is equal.
  struct place {
    const String* text = nullptr;
    int32_t segment = -1;
    bool placed = false, exact = false;
    int32_t pos = 0;
  };
  // compare(a, b) for `a` a hit of this segment and `b` one that stays (the last hit kept, or
  // `after`), asked again and again: ties of the first key are common (the same score), and its
  // text keys (_id) from another segment compared as strings were a sixth of a term query's CPU.
  // From the second time `b` is asked, its text is placed among this segment's once (a binary
  // search) and compared as a position.
  int compare_here(const slot* a, const slot* b, std::array<place, max_sort_keys>& places) {
    for (size_t i = 0; i < sort_.size(); ++i) {
      int c = 0;
      if (sort_[i].type != sort_spec::kind::text || !a[i].text || !b[i].text || b[i].segment == segment_) {
        c = compare_slot(sort_[i], a[i], b[i]);
      } else {
        c = placed_compare(i, *a[i].text, *b[i].text, places[i]);
        if (sort_[i].descending) c = -c;
      }
      if (c != 0) return c;
    }
    return 0;
  }
  // a (a text of this segment's key i) against b, placed as `p` says.
  int placed_compare(size_t i, const String& a, const String& b, place& p) {
    if (p.text != &b || p.segment != segment_) {
      p = place{&b, segment_};
      const int c = a.compare(b);
      return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    const Collection<String>& lookup = texts_[i]->lookup;
    const String* first = &lookup[0];
    const String* end = first + lookup.size();
    if (!p.placed) {
      const String* at = std::lower_bound(first + 1, end, b);  // [0] is no text
      p.pos = static_cast<int32_t>(at - first);
      p.exact = at != end && *at == b;
      p.placed = true;
    }
    const int32_t ord = static_cast<int32_t>(&a - first);
    return ord < p.pos ? -1 : ord == p.pos && p.exact ? 0 : 1;
  }
  struct later {  // the heap's top is the last hit kept
    const hit_collector* c;
    bool operator()(const entry& a, const entry& b) const { return c->compare(a.keys.data(), b.keys.data()) < 0; }
  };

  const std::vector<sort_spec>& sort_;
  const std::vector<slot>* after_;
  size_t limit_;
  bool mark_;
  ScorerPtr scorer_;
  int32_t base_ = 0;
  int32_t segment_ = -1;
  std::vector<StringIndex*> texts_;
  std::vector<Collection<double>> numbers_;
  std::vector<StringIndexPtr> held_;  // the texts slots point into
  std::priority_queue<entry, std::vector<entry>, later> best_{later{this}};
  std::array<place, max_sort_keys> top_places_, after_places_;
};

// The most frequent `top_n` of `counts` (ties: the smaller label first).
std::map<std::string, uint64_t> top_of(const std::map<std::string, uint64_t>& counts, size_t top_n) {
  std::vector<std::pair<std::string, uint64_t>> all(counts.begin(), counts.end());
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (all.size() > top_n) all.resize(top_n);
  return {all.begin(), all.end()};
}

// The stored fields a hit shows: all but _id, which its order ends with (resolve_sort).
class shown_fields : public FieldSelector {
 public:
  FieldSelectorResult accept(const String& name) override {
    return name == id_field ? SELECTOR_NO_LOAD : SELECTOR_LOAD;
  }
};

// A kept hit as the answer gives it: its id, its order, its stored fields.
text_hit hit_of(Searcher& searcher, const std::vector<sort_spec>& sort, const entry& e) {
  static const FieldSelectorPtr shown = newLucene<shown_fields>();
  text_hit hit;
  const bool by_id = !sort.empty() && sort.back().type == sort_spec::kind::text && sort.back().field == id_field;
  const String* id = by_id ? e.keys[sort.size() - 1].text : nullptr;
  DocumentPtr doc = id ? searcher.doc(e.doc, shown) : searcher.doc(e.doc);
  hit.id = narrow(id ? *id : doc->get(id_field));
  for (size_t i = 0; i < sort.size(); ++i) {
    order_value v;
    if (sort[i].type == sort_spec::kind::text || sort[i].type == sort_spec::kind::missing) {
      v.type = e.keys[i].text ? order_value::kind::text : order_value::kind::missing;
      if (e.keys[i].text) v.text = narrow(*e.keys[i].text);
    } else {
      v.number = e.keys[i].number;
    }
    hit.order.push_back(std::move(v));
  }
  for (const FieldablePtr& f : doc->getFields()) {
    if (f->name() == id_field) continue;
    text_hit::stored_value v;
    v.name = narrow(f->name());
    if (f->isBinary()) {
      ByteArray bytes = f->getBinaryValue();
      if (bytes.size() == sizeof v.number) std::memcpy(&v.number, bytes.get(), sizeof v.number);
      v.is_number = true;
    } else {
      v.text = narrow(f->stringValue());
    }
    hit.stored.push_back(std::move(v));
  }
  return hit;
}

// `query` kept to the documents whose fields hold the drilldown's values (each entry: one of them),
// as a filter: the scores stay the query's.
QueryPtr with_drilldown(const QueryPtr& query, const std::vector<std::vector<std::string>>& drilldown) {
  if (drilldown.empty()) return query;
  BooleanQueryPtr all = newLucene<BooleanQuery>();
  for (const auto& entry : drilldown) {
    if (entry.size() < 2) continue;
    BooleanQueryPtr any = newLucene<BooleanQuery>(true);
    for (size_t i = 1; i < entry.size(); ++i)
      any->add(newLucene<TermQuery>(newLucene<Term>(wide(entry[0]), wide(entry[i]))), BooleanClause::SHOULD);
    all->add(any, BooleanClause::MUST);
  }
  return newLucene<FilteredQuery>(query, newLucene<QueryWrapperFilter>(all));
}

// The hit's highlights: the best fragments of each stored text field asked for.
void highlight(const text_query& q, const QueryPtr& query, const AnalyzerPtr& analyzer, text_hit& hit) {
  for (const std::string& field : q.highlight_fields) {
    std::vector<std::string> fragments;
    const String f = wide(field);
    HighlighterPtr h =
        newLucene<Highlighter>(newLucene<SimpleHTMLFormatter>(wide(q.highlight_pre), wide(q.highlight_post)),
                               newLucene<QueryScorer>(query));  // its terms of any field
    h->setTextFragmenter(
        newLucene<SimpleFragmenter>(static_cast<int32_t>(std::min<size_t>(q.highlight_size, INT32_MAX))));
    for (const auto& v : hit.stored) {
      if (v.name != field || v.is_number) continue;
      Collection<String> best = h->getBestFragments(analyzer, f, wide(v.text),
                                                    static_cast<int32_t>(std::min<size_t>(q.highlight_number, 1000)));
      for (const String& frag : best) fragments.push_back(narrow(frag));
    }
    hit.highlights.emplace_back(field, std::move(fragments));
  }
}

using marked_segments = std::vector<std::pair<IndexReaderPtr, OpenBitSetPtr>>;

// Facets over every match (`marks`): a string field's values counted, a number field's ranges.
void count_facets(const text_query& q, const marked_segments& marks, text_page& page) {
  for (const std::string& field : q.counts) {
    std::map<std::string, uint64_t> counts;
    const String f = wide(field);
    for (const auto& [seg, bits] : marks) {
      TermEnumPtr te = seg->terms(newLucene<Term>(f, L""));
      do {
        TermPtr t = te->term();
        if (!t || t->field() != f) break;
        uint64_t n = 0;
        TermDocsPtr td = seg->termDocs(t);
        while (td->next())
          if (bits->fastGet(td->doc())) ++n;
        td->close();
        if (n > 0) counts[narrow(t->text())] += n;
      } while (te->next());
      te->close();
    }
    page.counts[field] = top_of(counts, q.top_n);
  }
  for (const auto& [field, ranges] : q.ranges) {
    std::map<std::string, uint64_t>& out = page.ranges[field];
    for (const text_range& r : ranges) {
      uint64_t n = 0;
      FilterPtr filter =
          NumericRangeFilter::newDoubleRange(wide(field), r.min, r.max, r.min_inclusive, r.max_inclusive);
      for (const auto& [seg, bits] : marks) {
        DocIdSetPtr set = filter->getDocIdSet(seg);
        DocIdSetIteratorPtr it = set ? set->iterator() : DocIdSetIteratorPtr();
        if (!it) continue;
        for (int32_t d = it->nextDoc(); d != DocIdSetIterator::NO_MORE_DOCS; d = it->nextDoc())
          if (bits->fastGet(d)) ++n;
      }
      out[r.label] += n;
    }
  }
}

}  // namespace

size_t text_index::remembered_string_indexes() {
  std::lock_guard<std::mutex> lock(remembered_mu);
  return remembered.size();
}

void text_stats::add(const text_stats& other) {
  docs += other.docs;
  for (const auto& [term, n] : other.freqs) freqs[term] += n;
}

const std::vector<std::string>& text_analyzers() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const analyzer_maker& m : makers()) out.push_back(m.name);
    return out;
  }();
  return names;
}

result<std::vector<std::string>> text_analyze(const std::string& analyzer, const std::string& text) {
  auto a = analyzer_named(analyzer);
  if (!a) return status{errc::bad_request, analyzer + " not a valid analyzer"};  // Nouveau's AnalyzeResource
  std::vector<std::string> out;
  try {
    TokenStreamPtr ts = (*a)->tokenStream(L"default", newLucene<StringReader>(wide(text)));
    TermAttributePtr term = ts->addAttribute<TermAttribute>();
    ts->reset();
    while (ts->incrementToken()) out.push_back(narrow(term->term()));
    ts->end();
    ts->close();
  } catch (const LuceneException& e) {
    return failed(e, "analyze");
  }
  return out;
}

int compare_orders(const std::vector<std::string>& sort, const text_order& a, const text_order& b) {
  std::vector<std::string> names = sort.empty() ? std::vector<std::string>{"-<score>"} : sort;
  if (names.back() != "_id" && names.back() != "-_id") names.push_back("_id");
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const order_value &x = a[i], &y = b[i];
    const bool descending = i < names.size() && !names[i].empty() && names[i][0] == '-';
    if (x.type == order_value::kind::missing || y.type == order_value::kind::missing) {
      const int c = (x.type == order_value::kind::missing ? 1 : 0) - (y.type == order_value::kind::missing ? 1 : 0);
      if (c != 0) return c;
      continue;
    }
    int c = 0;
    if (x.type == order_value::kind::number && y.type == order_value::kind::number)
      c = x.number < y.number ? -1 : x.number > y.number ? 1 : 0;
    else if (x.type == order_value::kind::text && y.type == order_value::kind::text)
      c = x.text < y.text ? -1 : x.text > y.text ? 1 : 0;
    else
      c = x.type == order_value::kind::number ? -1 : 1;  // not one sort's orders: numbers first
    if (c != 0) return descending ? -c : c;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

struct text_index::impl {
  std::string dir;
  DirectoryPtr directory;
  AnalyzerPtr analyzer;
  SimilarityPtr similarity;
  IndexWriterPtr writer;
  mutable std::mutex mu;  // guards reader, seq, purge_seq and kinds
  IndexReaderPtr reader;  // the last commit's
  uint64_t seq = 0, purge_seq = 0;
  field_kinds kinds;    // as of the last commit (mu)
  field_kinds writing;  // as of the documents staged (the writer's own)

  // The reader of the last commit (kept open by the caller's reference) and the kinds then.
  IndexReaderPtr acquire(field_kinds* k = nullptr) const {
    std::lock_guard<std::mutex> lock(mu);
    reader->incRef();
    if (k) *k = kinds;
    return reader;
  }
  QueryPtr parse(const std::string& query, const std::string& default_field, const field_kinds& k,
                 bool lowercase_expanded = true) const {
    QueryParserPtr parser = newLucene<number_aware_parser>(wide(default_field), analyzer, k);
    parser->setLowercaseExpandedTerms(lowercase_expanded);
    return parser->parse(wide(query));
  }
  text_stats stats_of(const IndexReaderPtr& r, const QueryPtr& q) const {
    text_stats out;
    out.docs = static_cast<uint64_t>(r->numDocs());
    SetTerm terms = SetTerm::newInstance();
    try {
      newLucene<IndexSearcher>(r)->rewrite(q)->extractTerms(terms);
    } catch (const UnsupportedOperationException&) {  // a query of no terms of its own
    }
    Collection<IndexReaderPtr> segs = segments_of(r);
    for (const TermPtr& t : terms) {
      uint64_t n = 0;
      for (const IndexReaderPtr& s : segs) {
        if (!s->hasDeletions()) {
          n += static_cast<uint64_t>(s->docFreq(t));
          continue;
        }
        TermDocsPtr td = s->termDocs(t);  // live documents only
        while (td->next()) ++n;
        td->close();
      }
      out.freqs[term_key(t)] = n;
    }
    return out;
  }
  // `q` over `reader` (one index's, or several's at once), its fields' kinds `k`; parsed with this
  // index's analyzer. Lucene's exceptions are the caller's.
  result<text_page> search(const IndexReaderPtr& reader, const field_kinds& k, const text_query& q) const {
    auto sort = resolve_sort(q.sort, k);
    if (!sort) return sort.error();
    QueryPtr query = with_drilldown(parse(q.query, q.default_field, k, q.lowercase_expanded), q.drilldown);
    const text_stats own = q.stats ? text_stats{} : stats_of(reader, query);
    SearcherPtr searcher = newLucene<stats_searcher>(reader, q.stats ? *q.stats : own);
    searcher->setSimilarity(similarity);
    std::vector<String> after_texts;  // what `after`'s slots point to
    std::vector<slot> after = after_slots(q, *sort, after_texts);
    const bool facets = !q.counts.empty() || !q.ranges.empty();
    auto collector = newLucene<hit_collector>(*sort, q.after ? &after : nullptr, q.limit, facets);
    searcher->search(query, collector);
    text_page page;
    page.total_hits = collector->total;
    for (const entry& e : collector->hits()) {
      page.hits.push_back(hit_of(*searcher, *sort, e));
      if (!q.highlight_fields.empty()) highlight(q, query, analyzer, page.hits.back());
    }
    count_facets(q, collector->marks, page);
    return page;
  }
  // `q.after` as slots of `sort`, its texts held in `texts` as Lucene strings.
  static std::vector<slot> after_slots(const text_query& q, const std::vector<sort_spec>& sort,
                                       std::vector<String>& texts) {
    std::vector<slot> after;
    if (!q.after) return after;
    texts.reserve(q.after->size());
    for (size_t i = 0; i < sort.size() && i < q.after->size(); ++i) {
      const order_value& v = (*q.after)[i];
      slot s;
      if (v.type == order_value::kind::number) s.number = v.number;
      if (v.type == order_value::kind::text) {
        texts.push_back(wide(v.text));
        s.text = &texts.back();
      }
      after.push_back(s);
    }
    after.resize(sort.size());
    return after;
  }
  status commit(uint64_t s, uint64_t p, const field_kinds& k) {
    MapStringString data = MapStringString::newInstance();
    data.put(seq_key, wide(std::to_string(s)));
    data.put(purge_key, wide(std::to_string(p)));
    data.put(fields_key, kinds_text(k));
    writer->commit(data);  // Lucene++ fsyncs the commit's files
    IndexReaderPtr next = reader->reopen();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (next != reader) {
        reader->decRef();  // searches under way hold their own reference
        reader = next;
      }
      seq = s;
      purge_seq = p;
      kinds = k;
    }
    // And the directory, so the new commit's file names survive a crash of the machine.
    return sync_file(dir);
  }
};

text_index::text_index(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

text_index::~text_index() {
  try {
    if (impl_->writer) impl_->writer->close();
    if (impl_->reader) impl_->reader->decRef();
  } catch (const LuceneException&) {  // closing: nothing left to tell
  }
  // Its segments' string indexes go now (a deleted database's), unless a search still reads them.
  std::lock_guard<std::mutex> lock(remembered_mu);
  forget_closed_locked();
}

result<std::unique_ptr<text_index>> text_index::open(const std::string& dir, const text_analysis& analysis) {
  auto i = std::make_unique<impl>();
  i->dir = dir;
  auto def = analyzer_named(analysis.default_analyzer);
  if (!def) return def.error();
  PerFieldAnalyzerWrapperPtr per_field = newLucene<PerFieldAnalyzerWrapper>(*def);
  for (const auto& [field, name] : analysis.fields) {
    auto a = analyzer_named(name);
    if (!a) return a.error();
    per_field->addAnalyzer(wide(field), *a);
  }
  i->analyzer = newLucene<gapped_analyzer>(per_field);
  i->similarity = newLucene<plain_similarity>();
  try {
    // Mapped: a search reads the index files from the page cache without a read() per buffer.
    i->directory = newLucene<MMapDirectory>(wide(dir));
    const bool fresh = !IndexReader::indexExists(i->directory);
    i->writer = newLucene<IndexWriter>(i->directory, i->analyzer, fresh, IndexWriter::MaxFieldLengthUNLIMITED);
    i->writer->setRAMBufferSizeMB(ram_buffer_mb);
    i->writer->setTermIndexInterval(term_index_interval);
    if (fresh) {  // an empty commit, so that readers open
      MapStringString data = MapStringString::newInstance();
      data.put(seq_key, L"0");
      i->writer->commit(data);
    }
    i->reader = IndexReader::open(i->directory, true);
    const MapStringString data = i->reader->getCommitUserData();
    i->seq = number_of(data, seq_key);
    i->purge_seq = number_of(data, purge_key);
    i->kinds = i->writing = kinds_of(data);
  } catch (const LuceneException& e) {
    return failed(e, "open " + dir);
  }
  return std::unique_ptr<text_index>(new text_index(std::move(i)));
}

uint64_t text_index::seq() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->seq;
}

uint64_t text_index::purge_seq() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->purge_seq;
}

uint64_t text_index::doc_count() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return static_cast<uint64_t>(impl_->reader->numDocs());
}

uint64_t text_index::disk_size() const {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(impl_->dir, ec))
    if (f.is_regular_file(ec)) n += f.file_size(ec);
  return n;
}

status text_index::stage(const std::vector<text_doc>& docs) {
  try {
    for (const text_doc& d : docs) {
      TermPtr id = newLucene<Term>(id_field, wide(d.id));
      if (d.fields.empty())
        impl_->writer->deleteDocuments(id);
      else
        impl_->writer->updateDocument(id, lucene_doc(d, impl_->writing));
    }
  } catch (const LuceneException& e) {
    return failed(e, "apply a batch");
  }
  return {};
}

status text_index::apply(const std::vector<text_doc>& docs, uint64_t seq, uint64_t purge_seq) {
  if (auto st = stage(docs); !st) return st;
  try {
    return impl_->commit(seq, purge_seq, impl_->writing);
  } catch (const LuceneException& e) {
    return failed(e, "commit a batch");
  }
}

status text_index::clear(uint64_t purge_seq) {
  try {
    impl_->writer->deleteAll();
    impl_->writing.clear();
    return impl_->commit(0, purge_seq, {});
  } catch (const LuceneException& e) {
    return failed(e, "be emptied");
  }
}

result<text_stats> text_index::stats(const text_query& q) const {
  field_kinds kinds;
  IndexReaderPtr reader = impl_->acquire(&kinds);
  result<text_stats> out = text_stats{};
  try {
    out = impl_->stats_of(reader, impl_->parse(q.query, q.default_field, kinds, q.lowercase_expanded));
  } catch (const LuceneException& e) {
    out = failed(e, "search");
  }
  reader->decRef();
  return out;
}

result<text_page> text_index::search(const text_query& q) const {
  field_kinds kinds;
  IndexReaderPtr reader = impl_->acquire(&kinds);
  result<text_page> page = text_page{};
  try {
    page = impl_->search(reader, kinds, q);
  } catch (const LuceneException& e) {
    page = failed(e, "search");
  }
  reader->decRef();
  return page;
}

result<text_page> text_index::search(const std::vector<const text_index*>& parts, const text_query& q) {
  if (parts.empty()) return text_page{};
  if (parts.size() == 1) return parts[0]->search(q);
  field_kinds kinds;
  Collection<IndexReaderPtr> readers = Collection<IndexReaderPtr>::newInstance();
  for (const text_index* part : parts) {
    field_kinds k;
    readers.add(part->impl_->acquire(&k));
    kinds.insert(k.begin(), k.end());
  }
  result<text_page> page = text_page{};
  try {
    // Not closing its parts: each keeps the reference acquire() took, given back below.
    IndexReaderPtr all = newLucene<MultiReader>(readers, false);
    page = parts[0]->impl_->search(all, kinds, q);
    all->close();
  } catch (const LuceneException& e) {
    page = failed(e, "search");
  }
  for (const IndexReaderPtr& r : readers) r->decRef();
  return page;
}

result<text_page> text_index::search(const std::string& query, const std::string& default_field, size_t limit) const {
  text_query q;
  q.query = query;
  q.default_field = default_field;
  q.limit = limit;
  return search(q);
}

}  // namespace settee

// Lucene++ 3.0.8's one process-wide lock, taken out (architecture 57). Every synchronized method
// of every Lucene++ object asks LuceneSync::getSync() for the object's lock, which asks
// Synchronize::createSync() to create it on first use; Debian's 3.0.8 takes one static mutex in
// every createSync() call, made or not, so two threads indexing two different indexes (a
// database's copies, built at once) spend half their time waiting on each other: q=2 built no
// faster than q=1 (9,500 docs/s). This definition interposes the library's (the library calls it
// through its PLT; the executable's symbol wins), with double-checked locking: the lock's two
// pointer words are written once, from null, under the mutex and after a release fence, so a
// caller that sees both set sees the lock made, and only the first use of an object's lock takes
// the mutex. text_index_test checks that this definition is the one in use.
namespace Lucene {

void Synchronize::createSync(SynchronizePtr& sync) {
  static_assert(sizeof(SynchronizePtr) == 2 * sizeof(void*), "boost::shared_ptr is a pointer and a count");
  void** words = reinterpret_cast<void**>(&sync);
  if (__atomic_load_n(&words[0], __ATOMIC_RELAXED) && __atomic_load_n(&words[1], __ATOMIC_RELAXED)) {
    std::atomic_thread_fence(std::memory_order_acquire);
    return;
  }
  static std::mutex made;
  std::lock_guard<std::mutex> lock(made);
  if (sync) return;
  SynchronizePtr fresh = newInstance<Synchronize>();
  std::atomic_thread_fence(std::memory_order_release);
  sync = std::move(fresh);
}

}  // namespace Lucene
