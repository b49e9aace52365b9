// The full-text index file (storage/text_index, Lucene++): documents by id, replaced and removed;
// Lucene's query syntax (terms, fields, phrases, boolean operators, wildcards, fuzzy terms); the
// seq a commit records surviving a reopen; a query Lucene cannot parse refused with its message.
#include "storage/text_index.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <thread>

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "temp_dir.hpp"

using namespace settee;

namespace {

text_doc book(const std::string& id, const std::string& title, const std::string& body, const std::string& genre = "",
              double year = 0) {
  text_doc d{id, {}};
  d.fields.push_back({text_field::kind::text, "title", title, 0, true});
  d.fields.push_back({text_field::kind::text, "default", body, 0, false});
  if (!genre.empty()) d.fields.push_back({text_field::kind::string, "genre", genre, 0, true});
  if (year != 0) d.fields.push_back({text_field::kind::number, "year", "", year, true});
  return d;
}

std::set<std::string> ids(const result<text_page>& page) {
  std::set<std::string> out;
  if (page)
    for (const auto& h : page->hits) out.insert(h.id);
  return out;
}

}  // namespace

TEST_CASE("text_index: documents by id, found by Lucene's query syntax, replaced, removed, kept across a reopen") {
  temp_dir dir;
  const std::string path = dir.path + "/idx";
  {
    auto idx = text_index::open(path);
    REQUIRE(idx);
    CHECK((*idx)->seq() == 0);
    CHECK((*idx)->doc_count() == 0);
    REQUIRE((*idx)->apply({book("a", "The Quick Brown Fox", "a fox jumps over the lazy dog", "fable", 1912),
                           book("b", "Dogs and Cats", "the dog sleeps all day long", "essay", 1990),
                           book("c", "Foxes of the North", "arctic foxes and a quick dog", "fable", 2001)},
                          7));
    CHECK((*idx)->seq() == 7);
    CHECK((*idx)->doc_count() == 3);
    // A term in the default field, analyzed (case) as the standard analyzer does.
    CHECK(ids((*idx)->search("DOG", "default", 10)) == std::set<std::string>{"a", "b", "c"});
    CHECK(ids((*idx)->search("title:fox", "default", 10)) == std::set<std::string>{"a"});
    // A phrase, boolean operators, a wildcard, a fuzzy term, a string field taken as one term.
    CHECK(ids((*idx)->search("\"lazy dog\"", "default", 10)) == std::set<std::string>{"a"});
    CHECK(ids((*idx)->search("dog AND NOT sleeps", "default", 10)) == std::set<std::string>{"a", "c"});
    CHECK(ids((*idx)->search("+quick -title:brown", "default", 10)) == std::set<std::string>{"c"});
    CHECK(ids((*idx)->search("fox*", "default", 10)) == std::set<std::string>{"a", "c"});
    CHECK(ids((*idx)->search("title:dogz~", "default", 10)) == std::set<std::string>{"b"});
    CHECK(ids((*idx)->search("genre:fable", "default", 10)) == std::set<std::string>{"a", "c"});
    // Ranked, limited, counted; stored fields come back with a hit, the others do not.
    auto page = (*idx)->search("dog OR title:fox^4", "default", 2);
    REQUIRE(page);
    CHECK(page->total_hits == 3);
    REQUIRE(page->hits.size() == 2);
    CHECK(page->hits[0].id == "a");  // both clauses, and the boosted one
    CHECK(page->hits[0].order[0].number >= page->hits[1].order[0].number);
    REQUIRE(page->hits[0].stored.size() == 3);
    CHECK(page->hits[0].stored[0].name == "title");
    CHECK(page->hits[0].stored[0].text == "The Quick Brown Fox");
    CHECK(page->hits[0].stored[1].text == "fable");
    CHECK(page->hits[0].stored[2].name == "year");
    CHECK(page->hits[0].stored[2].is_number);
    CHECK(page->hits[0].stored[2].number == 1912);
    // A document replaced by id, one removed (no fields).
    REQUIRE((*idx)->apply({book("a", "A Slow Green Turtle", "a turtle walks"), text_doc{"b", {}}}, 9));
    CHECK(ids((*idx)->search("dog", "default", 10)) == std::set<std::string>{"c"});
    CHECK(ids((*idx)->search("turtle", "default", 10)) == std::set<std::string>{"a"});
    CHECK((*idx)->doc_count() == 2);
  }
  // Reopened: what the last commit held, and its seq.
  auto again = text_index::open(path);
  REQUIRE(again);
  CHECK((*again)->seq() == 9);
  CHECK((*again)->doc_count() == 2);
  CHECK(ids((*again)->search("turtle OR arctic", "default", 10)) == std::set<std::string>{"a", "c"});
}

TEST_CASE("text_index: a query Lucene cannot parse is the caller's error, with Lucene's message") {
  temp_dir dir;
  auto idx = text_index::open(dir.path + "/idx");
  REQUIRE(idx);
  REQUIRE((*idx)->apply({book("a", "x", "some words")}, 1));
  for (const char* bad : {"title:(unclosed", "\"open phrase", "AND", "a:[1 TO", "*leading"}) {
    auto r = (*idx)->search(bad, "default", 10);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::bad_request);
    CHECK_FALSE(r.error().reason.empty());
  }
  CHECK(ids((*idx)->search("words", "default", 10)) == std::set<std::string>{"a"});  // still searching
}

TEST_CASE("text_index: a process that dies without closing leaves what its last commit held") {
  temp_dir dir;
  const std::string path = dir.path + "/idx";
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {  // commits twice, then dies as kill -9 would: no destructor, no close
    auto idx = text_index::open(path);
    if (!idx || !(*idx)->apply({book("a", "first", "one")}, 5) || !(*idx)->apply({book("b", "second", "two")}, 6))
      _exit(1);
    (void)(*idx).release();
    _exit(0);
  }
  int wstatus = 0;
  REQUIRE(waitpid(child, &wstatus, 0) == child);
  REQUIRE((WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0));
  auto idx = text_index::open(path);  // its write lock went with the process
  REQUIRE(idx);
  CHECK((*idx)->seq() == 6);
  CHECK(ids((*idx)->search("one OR two", "default", 10)) == std::set<std::string>{"a", "b"});
  REQUIRE((*idx)->apply({book("c", "third", "three")}, 7));  // and it writes on
  CHECK((*idx)->doc_count() == 3);
}

namespace {

std::vector<std::string> in_order(const result<text_page>& page) {
  std::vector<std::string> out;
  if (page)
    for (const auto& h : page->hits) out.push_back(h.id);
  return out;
}

// 60 documents: a few words each, a string and a number field.
std::vector<text_doc> shelf() {
  const char* words[] = {"apple", "banana", "cherry", "date", "elder", "fig"};
  std::vector<text_doc> out;
  for (int i = 0; i < 60; ++i) {
    std::string body;
    for (int w = 0; w <= i % 5; ++w) body += std::string(words[(i + w * 7) % 6]) + " ";
    out.push_back(book("d" + std::to_string(100 + i), "t" + std::to_string(i), body, i % 3 ? "fable" : "essay",
                       1900 + (i * 37) % 100));
  }
  return out;
}

}  // namespace

TEST_CASE("text_index: scores from summed statistics are the same over one index or several") {
  // One index with every document, and three with a third each: scored from the three's summed
  // statistics, each of the three ranks its hits as the one does, by the very same scores.
  temp_dir dir;
  auto whole = text_index::open(dir.path + "/whole");
  REQUIRE(whole);
  std::vector<std::unique_ptr<text_index>> parts;
  std::vector<std::vector<text_doc>> split(3);
  const auto docs = shelf();
  for (size_t i = 0; i < docs.size(); ++i) split[(i * 7) % 3].push_back(docs[i]);
  REQUIRE((*whole)->apply(docs, 1));
  // Some documents replaced: deleted ones must not count in any statistic.
  REQUIRE((*whole)->apply({docs[4], docs[9]}, 2));
  for (int p = 0; p < 3; ++p) {
    auto idx = text_index::open(dir.path + "/part" + std::to_string(p));
    REQUIRE(idx);
    REQUIRE((*idx)->apply(split[p], 1));
    parts.push_back(std::move(*idx));
  }
  for (const char* query : {"apple", "apple banana", "\"cherry date\"", "fig OR title:t7^3", "elder~", "ban*"}) {
    CAPTURE(query);
    text_stats sum;
    for (auto& p : parts) {
      text_query sq;
      sq.query = query;
      auto s = p->stats(sq);
      REQUIRE(s);
      sum.add(*s);
    }
    auto one = (*whole)->search(query, "default", 100);
    REQUIRE(one);
    std::vector<text_hit> merged;
    uint64_t total = 0;
    for (auto& p : parts) {
      text_query q;
      q.query = query;
      q.limit = 100;
      q.stats = &sum;
      auto page = p->search(q);
      REQUIRE(page);
      total += page->total_hits;
      for (auto& h : page->hits) merged.push_back(h);
    }
    std::sort(merged.begin(), merged.end(),
              [](const text_hit& a, const text_hit& b) { return compare_orders({}, a.order, b.order) < 0; });
    CHECK(total == one->total_hits);
    REQUIRE(merged.size() == one->hits.size());
    for (size_t i = 0; i < merged.size(); ++i) {
      CHECK(merged[i].id == one->hits[i].id);
      CHECK(merged[i].order[0].number == one->hits[i].order[0].number);  // bit for bit
    }
    // The three searched as one (a node's own copies): the same hits and scores in one phase,
    // their stored fields too, and pages of 4 that continue as the one index's do.
    text_query q;
    q.query = query;
    q.limit = 100;
    auto together = text_index::search({parts[0].get(), parts[1].get(), parts[2].get()}, q);
    REQUIRE(together);
    CHECK(together->total_hits == one->total_hits);
    REQUIRE(together->hits.size() == one->hits.size());
    for (size_t i = 0; i < together->hits.size(); ++i) {
      CHECK(together->hits[i].id == one->hits[i].id);
      CHECK(together->hits[i].order[0].number == one->hits[i].order[0].number);
      CHECK(together->hits[i].stored.size() == one->hits[i].stored.size());
    }
    q.limit = 4;
    std::vector<std::string> paged;
    for (int i = 0; i < 30; ++i) {
      auto page = text_index::search({parts[0].get(), parts[1].get(), parts[2].get()}, q);
      REQUIRE(page);
      if (page->hits.empty()) break;
      for (const auto& h : page->hits) paged.push_back(h.id);
      q.after = page->hits.back().order;
    }
    CHECK(paged == in_order(one));
  }
  // Facets over the three as one: the whole index's counts.
  text_query f;
  f.query = "*:*";
  f.counts = {"genre"};
  auto whole_counts = (*whole)->search(f);
  auto parts_counts = text_index::search({parts[0].get(), parts[1].get(), parts[2].get()}, f);
  REQUIRE(whole_counts);
  REQUIRE(parts_counts);
  CHECK(parts_counts->counts == whole_counts->counts);
  CHECK(!parts_counts->counts["genre"].empty());
  // A query Lucene cannot parse: its error, as one index gives it.
  f.query = "title:(";
  CHECK(text_index::search({parts[0].get(), parts[1].get()}, f).error().code == errc::bad_request);
}

TEST_CASE("text_index: pages after an order, sorts by fields, numbers as numbers, facets") {
  temp_dir dir;
  auto idx = text_index::open(dir.path + "/idx");
  REQUIRE(idx);
  const auto docs = shelf();
  REQUIRE((*idx)->apply(docs, 1));
  // Pages of 7 after the last hit of the page before: together the one page of everything.
  auto all = (*idx)->search("apple OR fig", "default", 1000);
  REQUIRE(all);
  std::vector<std::string> paged;
  text_query q;
  q.query = "apple OR fig";
  q.limit = 7;
  for (int i = 0; i < 20; ++i) {
    auto page = (*idx)->search(q);
    REQUIRE(page);
    CHECK(page->total_hits == all->total_hits);
    if (page->hits.empty()) break;
    for (auto& h : page->hits) paged.push_back(h.id);
    q.after = page->hits.back().order;
  }
  CHECK(paged == in_order(all));
  // Equal scores fall back to _id: every hit of a constant-score query in id order.
  auto wild = (*idx)->search("title:t*", "default", 5);
  CHECK(in_order(wild) == std::vector<std::string>{"d100", "d101", "d102", "d103", "d104"});
  // Sorted by a number field (descending), then a string field and the number.
  text_query by_year;
  by_year.query = "genre:essay";
  by_year.sort = {"-year"};
  by_year.limit = 100;
  auto years = (*idx)->search(by_year);
  REQUIRE(years);
  REQUIRE(years->hits.size() == 20);
  for (size_t i = 1; i < years->hits.size(); ++i)
    CHECK(years->hits[i - 1].order[0].number >= years->hits[i].order[0].number);
  by_year.sort = {"genre", "year"};
  by_year.query = "*:*";
  auto two = (*idx)->search(by_year);
  REQUIRE(two);
  CHECK(two->hits.front().order[0].text == "essay");
  CHECK(two->hits.back().order[0].text == "fable");
  // Bad sorts: a text field, a malformed one.
  by_year.sort = {"title"};
  CHECK((*idx)->search(by_year).error().reason == "can't sort on field title");
  by_year.sort = {"a b"};
  CHECK((*idx)->search(by_year).error().reason == "a b is not a valid sort parameter");
  // Ranges and terms of a number field compare as numbers (1990 .. 1999: 1900 + (i*37) % 100).
  size_t nineties = 0;
  for (int i = 0; i < 60; ++i) nineties += (i * 37) % 100 >= 90;
  auto r = (*idx)->search("year:[1990 TO 1999]", "default", 100);
  REQUIRE(r);
  CHECK(r->total_hits == nineties);
  CHECK((*idx)->search("year:{1990 TO *}", "default", 100)->total_hits < 60);
  CHECK((*idx)->search("year:1937", "default", 100)->total_hits == 1);  // i = 1
  CHECK((*idx)->search("year:[abc TO 2]", "default", 1).error().code == errc::bad_request);
  // Counts of a string field's values and of number ranges, over every match.
  text_query facets;
  facets.query = "*:*";
  facets.limit = 0;
  facets.counts = {"genre"};
  facets.ranges["year"] = {{"old", -1.0 / 0.0, 1950, true, false}, {"new", 1950, 1.0 / 0.0, true, true}};
  auto f = (*idx)->search(facets);
  REQUIRE(f);
  CHECK(f->total_hits == 60);
  CHECK(f->hits.empty());
  CHECK(f->counts["genre"] == std::map<std::string, uint64_t>{{"essay", 20}, {"fable", 40}});
  CHECK(f->ranges["year"]["old"] + f->ranges["year"]["new"] == 60);
  CHECK(f->ranges["year"]["old"] == 30);
}

TEST_CASE("text_index: ties across segments keep the id order, in pages and either direction") {
  // Every hit scores the same; the ids went in shuffled, one commit (one segment) per 25, so the
  // last hit kept and `after` are often texts of another segment than the hit compared with them.
  temp_dir dir;
  auto idx = text_index::open(dir.path + "/idx");
  REQUIRE(idx);
  std::vector<std::string> all;
  for (int i = 0; i < 200; ++i) all.push_back("k" + std::to_string(1000 + (i * 73) % 200));
  for (size_t at = 0; at < all.size(); at += 25) {
    std::vector<text_doc> batch;
    for (size_t i = at; i < at + 25; ++i) batch.push_back(book(all[i], "same words", "same", i % 2 ? "odd" : "even"));
    REQUIRE((*idx)->apply(batch, at + 25));
  }
  std::vector<std::string> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  for (const std::vector<std::string>& sort :
       {std::vector<std::string>{}, std::vector<std::string>{"-_id"}, std::vector<std::string>{"genre", "_id"}}) {
    CAPTURE(sort.size());
    std::vector<std::string> want = sorted;
    if (sort.size() == 1) std::reverse(want.begin(), want.end());
    if (sort.size() == 2)
      std::stable_partition(want.begin(), want.end(), [&](const std::string& id) {
        return (std::find(all.begin(), all.end(), id) - all.begin()) % 2 == 0;  // "even" first
      });
    text_query q;
    q.query = "title:same";
    q.sort = sort;
    q.limit = 9;
    std::vector<std::string> paged;
    for (int i = 0; i < 40; ++i) {
      auto page = (*idx)->search(q);
      REQUIRE(page);
      if (page->hits.empty()) break;
      for (const auto& h : page->hits) paged.push_back(h.id);
      q.after = page->hits.back().order;
    }
    CHECK(paged == want);
  }
}

TEST_CASE("text_index: the segments' string indexes searches remember go with their segments") {
  // 60 commits of 5 documents: 60 segments made, merged away by tens as they come; each search
  // remembers its segments' _id string index. Those of segments gone are forgotten.
  temp_dir dir;
  const size_t before = text_index::remembered_string_indexes();
  {
    auto idx = text_index::open(dir.path + "/idx");
    REQUIRE(idx);
    for (int c = 0; c < 60; ++c) {
      std::vector<text_doc> batch;
      for (int i = 0; i < 5; ++i) batch.push_back(book("c" + std::to_string(c * 5 + i), "same words", "same"));
      REQUIRE((*idx)->apply(batch, static_cast<uint64_t>(c + 1)));
      auto page = (*idx)->search("title:same", "default", 3);
      REQUIRE(page);
      CHECK(page->total_hits == static_cast<uint64_t>(c * 5 + 5));
    }
    CHECK(text_index::remembered_string_indexes() <= before + 20);  // segments live now, not 60
  }
  // The index closed: its segments went with it.
  CHECK(text_index::remembered_string_indexes() <= before);
}

TEST_CASE("text_index: analyzers by name, per field, and the index's bookkeeping") {
  CHECK(*text_analyze("standard", "The Quick-Brown fox's e-mail: a@b.org") ==
        std::vector<std::string>{"the", "quick", "brown", "fox", "e", "mail", "a@b.org"});
  CHECK(*text_analyze("keyword", "The Quick") == std::vector<std::string>{"The Quick"});
  CHECK(*text_analyze("whitespace", "The Quick") == std::vector<std::string>{"The", "Quick"});
  CHECK(*text_analyze("simple", "The Quick2") == std::vector<std::string>{"the", "quick"});
  CHECK(*text_analyze("english", "the running dogs") == std::vector<std::string>{"run", "dog"});
  CHECK(text_analyze("german", "die Häuser")->size() == 1);  // a stop word gone, a stem
  CHECK(text_analyze("klingon", "x").error().reason == "klingon not a valid analyzer");
  for (const std::string& name : text_analyzers()) CHECK(text_analyze(name, "some words here"));
  temp_dir dir;
  text_analysis a;
  a.default_analyzer = "english";
  a.fields["code"] = "keyword";
  auto idx = text_index::open(dir.path + "/idx", a);
  REQUIRE(idx);
  text_doc d{"x", {}};
  d.fields.push_back({text_field::kind::text, "default", "running dogs", 0, false});
  d.fields.push_back({text_field::kind::text, "code", "AB-12 x", 0, false});
  REQUIRE((*idx)->apply({d}, 3, 2));
  CHECK((*idx)->search("runs", "default", 10)->total_hits == 1);  // stemmed both ways
  CHECK((*idx)->search("code:\"AB-12 x\"", "default", 10)->total_hits == 1);
  CHECK((*idx)->search("code:ab", "default", 10)->total_hits == 0);
  CHECK((*idx)->purge_seq() == 2);
  CHECK((*idx)->disk_size() > 0);
  REQUIRE((*idx)->clear(4));
  CHECK((*idx)->seq() == 0);
  CHECK((*idx)->purge_seq() == 4);
  CHECK((*idx)->doc_count() == 0);
  text_analysis bad;
  bad.fields["x"] = "nope";
  CHECK(text_index::open(dir.path + "/bad", bad).error().reason == "nope is not a valid analyzer name");
}

TEST_CASE("text_index: Lucene++ makes its objects' locks with settee's function, not its process-wide lock") {
  // storage/text_index.cpp interposes Synchronize::createSync; the library calls it through its
  // PLT, so the definition found first (the executable's) is the one in use.
  void* f = dlsym(RTLD_DEFAULT, "_ZN6Lucene11Synchronize10createSyncERN5boost10shared_ptrIS0_EE");
  REQUIRE(f != nullptr);
  Dl_info info{};
  REQUIRE(dladdr(f, &info) != 0);
  CHECK(std::string(info.dli_fname).find("liblucene") == std::string::npos);
  // Two indexes written and searched from two threads at once.
  temp_dir dir;
  std::vector<std::thread> threads;
  std::vector<uint64_t> found(2);
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      auto idx = text_index::open(dir.path + "/idx" + std::to_string(t));
      if (!idx) return;
      for (int b = 0; b < 20; ++b) {
        std::vector<text_doc> docs;
        for (int i = 0; i < 50; ++i) docs.push_back(book("d" + std::to_string(b * 50 + i), "t", "shared words here"));
        if (!(*idx)->apply(docs, static_cast<uint64_t>(b + 1))) return;
      }
      auto page = (*idx)->search("words", "default", 1);
      if (page) found[t] = page->total_hits;
    });
  for (auto& th : threads) th.join();
  CHECK(found == std::vector<uint64_t>{1000, 1000});
}
