#include <doctest/doctest.h>

#include "storage/rev_tree.hpp"

#include <tuple>
#include <vector>

using namespace settee;

namespace {
rev_id R(const char* s) {
  rev_id r;
  REQUIRE(parse_rev(s, r));
  return r;
}
}  // namespace

TEST_CASE("parse_rev accepts N-hash only (the hash may be empty)") {
  rev_id r;
  CHECK(parse_rev("1-abc", r));
  CHECK(r.pos == 1);
  CHECK(r.hash == "abc");
  CHECK(r.str() == "1-abc");
  CHECK(parse_rev("1-", r));
  CHECK(r.pos == 1);
  CHECK(r.hash.empty());
  CHECK(r.str() == "1-");
  for (const char* bad : {"", "1", "-", "-abc", "0-abc", "x-abc", "1x-abc", "-1-abc"}) {
    CHECK_MESSAGE(!parse_rev(bad, r), bad);
  }
}

TEST_CASE("rev hashes are deterministic and depend on every input") {
  rev_id parent = R("1-aaaa");
  std::string h = make_rev_hash(false, &parent, "{\"a\":1}");
  CHECK(h.size() == 32);
  CHECK(h == make_rev_hash(false, &parent, "{\"a\":1}"));
  CHECK(h != make_rev_hash(true, &parent, "{\"a\":1}"));
  CHECK(h != make_rev_hash(false, nullptr, "{\"a\":1}"));
  CHECK(h != make_rev_hash(false, &parent, "{\"a\":2}"));
  // The exact bytes hashed never change: every copy of a document, on every release in a cluster,
  // must make the same revision of the same edit (md5 of deleted, NUL, parent, NUL, body).
  rev_id known = R("1-967a00dff5e02add41819138abb3284d");
  CHECK(make_rev_hash(false, &known, "{\"a\":1}") == "96e7463a59b13042807e6053b2fc0f46");
  CHECK(make_rev_hash(true, nullptr, "{}") == "cfa2524f8aa503ee8238b151e18d7a5d");
  // The same bytes under SHA-256 (0.5+, when every copy can), its first 16 bytes: also fixed forever.
  CHECK(make_rev_hash(false, &known, "{\"a\":1}", rev_hash::sha256) == "6dff9676c44c3e1a9ff4b80baf4ae862");
  CHECK(make_rev_hash(true, nullptr, "{}", rev_hash::sha256) == "e7edb15cb64e487283bd4dfee90f90bf");
  CHECK(make_rev_hash(true, nullptr, "{}", rev_hash::sha256) != make_rev_hash(false, nullptr, "{}", rev_hash::sha256));
}

TEST_CASE("linear history: winner, leaves, path") {
  rev_tree t;
  int a = t.add_child(-1, "a", false);
  int b = t.add_child(a, "b", false);
  int c = t.add_child(b, "c", false);
  CHECK(t.rev(c).str() == "3-c");
  CHECK(t.leaves() == std::vector<int>{c});
  CHECK(t.winner() == c);
  CHECK(t.path_to(c) == std::vector<int>{c, b, a});
  CHECK_FALSE(t.is_leaf(a));
}

TEST_CASE("winner: live beats deleted, then higher pos, then greater hash") {
  rev_tree t;
  int root = t.add_child(-1, "r", false);
  int x = t.add_child(root, "x", false);
  int y = t.add_child(root, "y", false);
  CHECK(t.winner() == y);  // same pos: greater hash
  int x2 = t.add_child(x, "a", false);
  CHECK(t.winner() == x2);  // higher pos
  int x3 = t.add_child(x2, "z", true);
  CHECK(t.winner() == y);  // the longer branch is deleted now
  CHECK(t.sorted_leaves() == std::vector<int>{y, x3});
  int y2 = t.add_child(y, "d", true);
  CHECK(t.winner_deleted());
  CHECK(t.winner() == x3);  // all deleted: highest pos wins
  (void)y2;
}

TEST_CASE("merge_path: foreign histories, idempotence, conflicts") {
  rev_tree t;
  bool added = false;
  int leaf = t.merge_path({R("3-c"), R("2-b"), R("1-a")}, false, added);
  CHECK(added);
  CHECK(t.nodes().size() == 3);
  CHECK(t.rev(leaf).str() == "3-c");
  CHECK(t.merge_path({R("3-c"), R("2-b"), R("1-a")}, false, added) == leaf);
  CHECK_FALSE(added);
  // A conflicting branch off 2-b.
  int other = t.merge_path({R("3-d"), R("2-b")}, false, added);
  CHECK(added);
  CHECK(t.leaves().size() == 2);
  CHECK(t.nodes()[other].parent == t.find(R("2-b")));
  CHECK(t.winner() == other);  // "d" > "c"
  // An unrelated history becomes a second root.
  t.merge_path({R("2-y"), R("1-x")}, true, added);
  CHECK(t.leaves().size() == 3);
  CHECK(t.winner() == other);
}

TEST_CASE("merge_path reattaches ancestors of a stemmed root") {
  rev_tree t;
  bool added = false;
  t.merge_path({R("5-e"), R("4-d")}, false, added);
  t.merge_path({R("6-f"), R("5-e"), R("4-d"), R("3-c")}, false, added);
  CHECK(added);
  CHECK(t.nodes().size() == 4);
  int c = t.find(R("3-c"));
  CHECK(t.nodes()[t.find(R("4-d"))].parent == c);
  CHECK(t.path_to(t.find(R("6-f"))).size() == 4);
}

TEST_CASE("stem keeps the last N revisions of every branch and never a leaf less") {
  rev_tree t;
  int p = -1;
  for (int i = 0; i < 10; ++i) p = t.add_child(p, "h" + std::to_string(i), false);
  int side = t.add_child(t.find(R("3-h2")), "side", false);
  (void)side;
  size_t dropped = t.stem(3);
  CHECK(t.leaves().size() == 2);
  CHECK(t.find(R("10-h9")) >= 0);
  CHECK(t.find(R("8-h7")) >= 0);
  CHECK(t.find(R("7-h6")) < 0);
  CHECK(t.find(R("4-side")) >= 0);
  CHECK(t.find(R("2-h1")) >= 0);  // within 3 of the side leaf
  CHECK(t.find(R("1-h0")) < 0);
  CHECK(dropped == 11 - 6);
  for (auto& n : t.nodes()) CHECK(n.parent < static_cast<int>(t.nodes().size()));
  CHECK(t.path_to(t.find(R("10-h9"))).size() == 3);
  CHECK(t.stem(1) > 0);
  CHECK(t.nodes().size() == 2);
}

TEST_CASE("encode/decode round-trip and corrupt input") {
  rev_tree t;
  int a = t.add_child(-1, "a", false);
  t.add_child(a, "b", true);
  t.add_child(a, "c", false);
  codec::writer w;
  t.encode(w);
  rev_tree back;
  codec::reader r(w.data());
  REQUIRE(rev_tree::decode(r, back));
  REQUIRE(back.nodes().size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(back.nodes()[i].pos == t.nodes()[i].pos);
    CHECK(back.nodes()[i].hash == t.nodes()[i].hash);
    CHECK(back.nodes()[i].parent == t.nodes()[i].parent);
    CHECK(back.nodes()[i].deleted == t.nodes()[i].deleted);
  }
  std::string bytes = w.data();
  for (size_t cut = 0; cut + 1 < bytes.size(); ++cut) {
    codec::reader rc(std::string_view(bytes).substr(0, cut));
    rev_tree x;
    CHECK_FALSE(rev_tree::decode(rc, x));
  }
}

TEST_CASE("decode refuses a tree whose parent links loop or skip a generation") {
  // Two nodes that are each other's parent: a walk up from either would never end.
  auto tree_of = [](std::vector<std::tuple<uint64_t, const char*, int>> nodes) {
    codec::writer w;
    w.varint(nodes.size());
    for (auto& [pos, hash, parent] : nodes) {
      w.varint(pos);
      w.str(hash);
      w.varint(static_cast<uint64_t>(parent + 1));
      w.byte(0);
    }
    return std::move(w.data());
  };
  auto decodes = [](const std::string& bytes) {
    codec::reader r(bytes);
    rev_tree t;
    return rev_tree::decode(r, t);
  };
  CHECK(decodes(tree_of({{1, "a", -1}, {2, "b", 0}})));
  CHECK(decodes(tree_of({{2, "b", 1}, {1, "a", -1}})));        // a parent after its child is fine
  CHECK_FALSE(decodes(tree_of({{1, "a", 1}, {2, "b", 0}})));   // a cycle
  CHECK_FALSE(decodes(tree_of({{1, "a", 0}})));                // its own parent
  CHECK_FALSE(decodes(tree_of({{1, "a", -1}, {3, "b", 0}})));  // a generation skipped
}

TEST_CASE("leaves_under: the leaves whose history holds a revision") {
  rev_tree t;
  int a = t.add_child(-1, "a", false);
  int b = t.add_child(a, "b", false);
  int c = t.add_child(a, "c", false);
  int d = t.add_child(b, "d", false);
  CHECK(t.leaves_under(a).size() == 2);
  CHECK(t.leaves_under(b) == std::vector<int>{d});
  CHECK(t.leaves_under(c) == std::vector<int>{c});  // a leaf is its own latest
}

TEST_CASE("remove_leafs purges named leaves and the history only they had (couch_key_tree)") {
  rev_tree t;
  bool added = false;
  t.merge_path({R("3-c"), R("2-b"), R("1-a")}, false, added);
  t.merge_path({R("3-d"), R("2-b")}, false, added);           // conflict off 2-b
  t.merge_path({R("4-f"), R("3-e"), R("2-x")}, true, added);  // a branch off 1-a, deleted
  REQUIRE(t.leaves().size() == 3);

  SUBCASE("a revision that is not a leaf is not purged") {
    std::vector<rev_id> dropped;
    CHECK(t.remove_leafs({R("2-b"), R("1-a"), R("9-zz")}, &dropped).empty());
    CHECK(dropped.empty());
    CHECK(t.nodes().size() == 7);
  }
  SUBCASE("a leaf whose parent keeps another child takes only itself") {
    std::vector<rev_id> dropped;
    auto purged = t.remove_leafs({R("3-d")}, &dropped);
    REQUIRE(purged.size() == 1);
    CHECK(purged[0] == R("3-d"));
    CHECK(dropped == std::vector<rev_id>{R("3-d")});
    CHECK(t.find(R("2-b")) >= 0);
    CHECK(t.rev(t.winner()) == R("3-c"));
  }
  SUBCASE("a branch goes up to where it meets a kept one") {
    std::vector<rev_id> dropped;
    auto purged = t.remove_leafs({R("4-f")}, &dropped);
    CHECK(purged == std::vector<rev_id>{R("4-f")});
    CHECK(dropped.size() == 3);  // 4-f, 3-e, 2-x
    CHECK(t.find(R("2-x")) < 0);
    CHECK(t.find(R("1-a")) >= 0);
    CHECK(t.nodes().size() == 4);
    for (int leaf : t.leaves()) CHECK(t.path_to(leaf).back() == t.find(R("1-a")));
  }
  SUBCASE("every leaf: the tree is empty (the document is gone)") {
    auto purged = t.remove_leafs({R("3-c"), R("3-d"), R("4-f")});
    CHECK(purged.size() == 3);
    CHECK(t.empty());
  }
  SUBCASE("the winner purged: the next leaf wins") {
    t.remove_leafs({R("3-d")});
    t.remove_leafs({R("3-c")});
    CHECK(t.rev(t.winner()) == R("4-f"));
    CHECK(t.winner_deleted());
  }
}
