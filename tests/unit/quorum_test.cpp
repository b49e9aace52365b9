// How the answers of a range's copies combine into the client's answer (w semantics).
#include <doctest/doctest.h>

#include "actors/quorum.hpp"

using namespace settee;

namespace {

doc_result ok(const std::string& rev) {
  doc_result r;
  r.rev = {1, rev};
  return r;
}

doc_result conflict() {
  doc_result r;
  r.st = {errc::conflict, "Document update conflict."};
  return r;
}

}  // namespace

TEST_CASE("w copies agreeing on a revision meet the quorum; fewer are accepted (202)") {
  auto a = decide_quorum({ok("a"), ok("a"), ok("a")}, 2);
  CHECK(a.met);
  CHECK(a.result.st);
  CHECK(a.result.rev.hash == "a");

  a = decide_quorum({ok("a")}, 2);  // one copy answered: written, not yet on a quorum
  CHECK_FALSE(a.met);
  CHECK(a.result.st);
  CHECK(a.result.rev.hash == "a");

  a = decide_quorum({ok("a"), ok("a")}, 3);
  CHECK_FALSE(a.met);
}

TEST_CASE("an error w copies agree on is the answer; a lone stale copy's conflict is outvoted") {
  auto a = decide_quorum({conflict(), conflict(), ok("a")}, 2);
  CHECK(a.met);
  CHECK(a.result.st.code == errc::conflict);

  a = decide_quorum({ok("a"), ok("a"), conflict()}, 2);
  CHECK(a.met);
  CHECK(a.result.st);

  a = decide_quorum({ok("a"), conflict()}, 2);  // no agreement: the copy that committed wins, unmet
  CHECK_FALSE(a.met);
  CHECK(a.result.st);

  a = decide_quorum({conflict()}, 2);
  CHECK_FALSE(a.met);
  CHECK(a.result.st.code == errc::conflict);
}

TEST_CASE("no answer at all is unavailable") {
  auto a = decide_quorum({}, 1);
  CHECK_FALSE(a.met);
  CHECK(a.result.st.code == errc::unavailable);
}

TEST_CASE("a copy that already had the revision another copy just wrote agrees with it") {
  doc_result wrote = ok("a");  // committed in this request (added)
  doc_result had;              // replication delivered the same edit first
  had.st = {errc::conflict, "Document update conflict."};
  had.rev = {1, "a"};
  had.added = false;
  had.known = true;
  auto q = decide_quorum({had, wrote}, 2);
  CHECK(q.met);
  CHECK(q.result.st);
  CHECK(q.result.rev.hash == "a");

  // A client repeating an edit: every copy already had it, nobody wrote it: a conflict.
  q = decide_quorum({had, had, had}, 2);
  CHECK(q.met);
  CHECK(q.result.st.code == errc::conflict);
}
