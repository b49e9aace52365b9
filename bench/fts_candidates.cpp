// The text engines Debian packages, measured for full-text search (issue 54 point 4): Lucene++
// (liblucene++-dev 3.0.8) and Xapian (libxapian-dev 1.4.22), each given the same documents and
// queries in a process of its own. Not built by the project (neither library is a dependency
// yet); bench/fts_candidates.sh builds and runs it:
//   fts_candidates <lucene|xapian> build <dir> <docs> [commit_every]   index, print docs/s
//   fts_candidates <lucene|xapian> query <dir> <docs> <queries>         term, phrase, boolean p50/p95
// Documents: ~1 KB each, a title (~8 words) and a body (~150 words) drawn from a Zipf vocabulary of
// 20,000 words (seeded: the same text for both engines). Prints one JSON line.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <lucene++/LuceneHeaders.h>
#include <xapian.h>

namespace {

using clock_type = std::chrono::steady_clock;

// A deterministic corpus: word k of the vocabulary drawn with probability ~ 1/(k+1).
struct corpus {
  std::vector<std::string> words;
  std::vector<double> cumulative;
  corpus() {
    std::mt19937 rng(7);
    const char* letters = "abcdefghijklmnopqrstuvwxyz";
    double sum = 0;
    for (int k = 0; k < 20000; ++k) {
      std::string w;
      const int len = 3 + static_cast<int>(rng() % 7);
      for (int i = 0; i < len; ++i) w += letters[rng() % 26];
      words.push_back(w);
      sum += 1.0 / (k + 1);
      cumulative.push_back(sum);
    }
    for (double& c : cumulative) c /= sum;
  }
  const std::string& word(std::mt19937& rng) const {
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    return words[std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()];
  }
  std::string text(std::mt19937& rng, int n) const {
    std::string out;
    for (int i = 0; i < n; ++i) (out += i ? " " : "") += word(rng);
    return out;
  }
};

struct doc {
  std::string id, title, body;
};

doc make_doc(const corpus& c, int i) {
  std::mt19937 rng(1000003u * static_cast<unsigned>(i) + 17);
  return {"doc" + std::to_string(i), c.text(rng, 8), c.text(rng, 150)};
}

long rss_peak_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

Lucene::String wide(const std::string& s) {
  return Lucene::StringUtils::toUnicode(s);
}

// ---- Lucene++ ----

void lucene_build(const std::string& dir, int docs, int every) {
  using namespace Lucene;
  corpus c;
  AnalyzerPtr analyzer = newLucene<StandardAnalyzer>(LuceneVersion::LUCENE_CURRENT);
  IndexWriterPtr w =
      newLucene<IndexWriter>(FSDirectory::open(wide(dir)), analyzer, true, IndexWriter::MaxFieldLengthUNLIMITED);
  w->setRAMBufferSizeMB(32);
  const auto t = clock_type::now();
  for (int i = 0; i < docs; ++i) {
    doc d = make_doc(c, i);
    DocumentPtr ld = newLucene<Document>();
    ld->add(newLucene<Field>(L"_id", wide(d.id), Field::STORE_YES, Field::INDEX_NOT_ANALYZED));
    ld->add(newLucene<Field>(L"title", wide(d.title), Field::STORE_YES, Field::INDEX_ANALYZED));
    ld->add(newLucene<Field>(L"body", wide(d.body), Field::STORE_NO, Field::INDEX_ANALYZED));
    w->addDocument(ld);
    if (every && (i + 1) % every == 0) w->commit();
  }
  w->commit();
  const double s = seconds_since(t);
  w->close();
  std::printf("{\"engine\":\"lucene++\",\"docs\":%d,\"seconds\":%.2f,\"docs_per_s\":%.0f,\"rss_peak_mb\":%.1f}\n", docs,
              s, docs / s, rss_peak_kb() / 1024.0);
}

// ---- Xapian ----

void xapian_build(const std::string& dir, int docs, int every) {
  corpus c;
  Xapian::WritableDatabase db(dir, Xapian::DB_CREATE_OR_OVERWRITE);
  Xapian::TermGenerator tg;
  const auto t = clock_type::now();
  for (int i = 0; i < docs; ++i) {
    doc d = make_doc(c, i);
    Xapian::Document xd;
    tg.set_document(xd);
    tg.index_text(d.title, 1, "S");  // the title field, prefixed
    tg.increase_termpos();
    tg.index_text(d.title);  // and both in the default field
    tg.increase_termpos();
    tg.index_text(d.body);
    xd.set_data(d.title);
    xd.add_boolean_term("Q" + d.id);  // what an update would replace it by
    db.add_document(xd);              // a fresh build, as Lucene++'s addDocument
    if (every && (i + 1) % every == 0) db.commit();
  }
  db.commit();
  const double s = seconds_since(t);
  db.close();
  std::printf("{\"engine\":\"xapian\",\"docs\":%d,\"seconds\":%.2f,\"docs_per_s\":%.0f,\"rss_peak_mb\":%.1f}\n", docs,
              s, docs / s, rss_peak_kb() / 1024.0);
}

// ---- queries ----

struct latencies {
  std::vector<double> ms;
  void add(clock_type::time_point t) { ms.push_back(seconds_since(t) * 1000); }
  double at(double q) {
    std::sort(ms.begin(), ms.end());
    return ms.empty() ? 0 : ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  }
};

// The queries: a term of middling frequency (rank 50-2,000), two adjacent words of a document's
// body as a phrase, and `title:w1 AND w2`.
struct query_set {
  std::vector<std::string> terms, phrases, booleans;
  query_set(const corpus& c, int docs, int n) {
    std::mt19937 rng(99);
    for (int i = 0; i < n; ++i) {
      terms.push_back(c.words[50 + rng() % 1950]);
      doc d = make_doc(c, static_cast<int>(rng() % docs));
      const size_t a = d.body.find(' ', d.body.size() / 2) + 1, b = d.body.find(' ', a);
      const size_t e = d.body.find(' ', b + 1);
      phrases.push_back("\"" + d.body.substr(a, e - a) + "\"");
      booleans.push_back("title:" + d.title.substr(0, d.title.find(' ')) + " AND " + c.words[rng() % 200]);
    }
  }
};

template <class Run>
void time_all(const std::vector<std::string>& qs, Run run, latencies& l, long& hits) {
  for (const auto& q : qs) {
    const auto t = clock_type::now();
    hits += run(q);
    l.add(t);
  }
}

// Times `run` over the term, phrase and boolean queries and prints the engine's line.
template <class Run>
void time_queries(const char* engine, const query_set& qs, int docs, uint64_t found, double open_ms, Run run) {
  latencies term, phrase, boolean;
  long hits = 0;
  time_all(qs.terms, run, term, hits);
  time_all(qs.phrases, run, phrase, hits);
  time_all(qs.booleans, run, boolean, hits);
  std::printf(
      "{\"engine\":\"%s\",\"docs\":%d,\"docs_found\":%llu,\"open_ms\":%.1f,\"term_p50\":%.3f,\"term_p95\":%.3f,"
      "\"phrase_p50\":%.3f,\"phrase_p95\":%.3f,\"boolean_p50\":%.3f,\"boolean_p95\":%.3f,\"hits\":%ld,\"rss_peak_mb\":%"
      ".1f}\n",
      engine, docs, static_cast<unsigned long long>(found), open_ms, term.at(0.5), term.at(0.95), phrase.at(0.5),
      phrase.at(0.95), boolean.at(0.5), boolean.at(0.95), hits, rss_peak_kb() / 1024.0);
}

void lucene_query(const std::string& dir, int docs, int n) {
  using namespace Lucene;
  corpus c;
  query_set qs(c, docs, n);
  const auto open = clock_type::now();
  IndexReaderPtr reader = IndexReader::open(FSDirectory::open(wide(dir)), true);
  SearcherPtr searcher = newLucene<IndexSearcher>(reader);
  const double open_ms = seconds_since(open) * 1000;
  AnalyzerPtr analyzer = newLucene<StandardAnalyzer>(LuceneVersion::LUCENE_CURRENT);
  QueryParserPtr parser = newLucene<QueryParser>(LuceneVersion::LUCENE_CURRENT, L"body", analyzer);
  auto run = [&](const std::string& q) -> long {
    TopDocsPtr top = searcher->search(parser->parse(wide(q)), 25);
    for (auto& sd : top->scoreDocs) searcher->doc(sd->doc)->get(L"_id");  // the ids, as an answer needs
    return top->totalHits;
  };
  time_queries("lucene++", qs, docs, static_cast<uint64_t>(reader->numDocs()), open_ms, run);
}

void xapian_query(const std::string& dir, int docs, int n) {
  corpus c;
  query_set qs(c, docs, n);
  const auto open = clock_type::now();
  Xapian::Database db(dir);
  const double open_ms = seconds_since(open) * 1000;
  Xapian::QueryParser qp;
  qp.set_database(db);
  qp.add_prefix("title", "S");
  qp.set_default_op(Xapian::Query::OP_OR);
  auto run = [&](const std::string& q) -> long {
    Xapian::Enquire enquire(db);
    enquire.set_query(qp.parse_query(
        q, Xapian::QueryParser::FLAG_DEFAULT | Xapian::QueryParser::FLAG_PHRASE | Xapian::QueryParser::FLAG_BOOLEAN));
    Xapian::MSet m = enquire.get_mset(0, 25);
    for (auto it = m.begin(); it != m.end(); ++it) it.get_document().get_data();
    return static_cast<long>(m.get_matches_estimated());
  };
  time_queries("xapian", qs, docs, db.get_doccount(), open_ms, run);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s <lucene|xapian> <build|query> <dir> <docs> [commit_every|queries]\n", argv[0]);
    return 2;
  }
  const std::string engine = argv[1], what = argv[2], dir = argv[3];
  const int docs = std::atoi(argv[4]), extra = argc > 5 ? std::atoi(argv[5]) : 0;
  try {
    if (engine == "lucene" && what == "build")
      lucene_build(dir, docs, extra);
    else if (engine == "xapian" && what == "build")
      xapian_build(dir, docs, extra);
    else if (engine == "lucene" && what == "query")
      lucene_query(dir, docs, extra ? extra : 500);
    else if (engine == "xapian" && what == "query")
      xapian_query(dir, docs, extra ? extra : 500);
    else
      return 2;
  } catch (const Lucene::LuceneException& e) {
    std::fprintf(stderr, "lucene++: %ls\n", e.getError().c_str());
    return 1;
  } catch (const Xapian::Error& e) {
    std::fprintf(stderr, "xapian: %s\n", e.get_description().c_str());
    return 1;
  }
  return 0;
}
