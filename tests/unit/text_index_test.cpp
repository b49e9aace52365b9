// The full-text index file (storage/text_index, Lucene++): documents by id, replaced and removed;
// Lucene's query syntax (terms, fields, phrases, boolean operators, wildcards, fuzzy terms); the
// seq a commit records surviving a reopen; a query Lucene cannot parse refused with its message.
#include "storage/text_index.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <set>

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
    // A term in the default field, analyzed (case, stop words) as the standard analyzer does.
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
    CHECK(page->hits[0].score >= page->hits[1].score);
    CHECK(page->hits[0].stored == std::vector<std::pair<std::string, std::string>>{
                                      {"title", "The Quick Brown Fox"}, {"genre", "fable"}, {"year", "1912"}});
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
