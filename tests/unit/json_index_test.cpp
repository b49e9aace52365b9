// JSON indexes in a shard file (storage/json_index.hpp): rows kept in the transaction of each write,
// built for the documents there before, dropped; scans in both directions over any range, long
// keys in buckets included, checked against a model.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <random>

#include <unistd.h>

#include "shard_fixture.hpp"
#include "storage/json_index.hpp"

namespace settee {
namespace {

// Bodies are {"v":"<key>"}; the key is the value's bytes, none for "-" (not in the index). A
// definition "upper" indexes the key with its first byte raised by one (another index, other rows).
class test_keys final : public index_keys {
 public:
  void keys_of(const std::vector<const json_index_def*>& defs, std::string_view, std::string_view,
               std::string_view body, std::vector<std::optional<std::string>>& out) const override {
    out.assign(defs.size(), std::nullopt);
    const std::string v(body.substr(6, body.size() - 8));
    for (size_t i = 0; i < defs.size(); ++i) {
      if (v == "-") continue;
      std::string k = v;
      if (defs[i]->definition == "upper") k[0] = static_cast<char>(k[0] + 1);
      out[i] = k;
    }
  }
  std::string version() const override { return version_; }
  std::string version_ = "test 1";
};

std::string body_of(const std::string& key) {
  return "{\"v\":\"" + key + "\"}";
}

struct fixture {
  std::string path;
  std::shared_ptr<shard_store> store;
  std::map<std::string, std::string> model;  // id -> key (live, in the index)
  std::map<std::string, rev_id> revs;        // id -> current rev

  fixture() {
    path = (std::filesystem::temp_directory_path() / ("json_index_test_" + std::to_string(::getpid()))).string();
    shard_store::remove_files(path);
    store_options o;
    o.map_size_bytes = 256ull << 20;
    o.keys_of_indexes = std::make_shared<test_keys>();
    auto s = shard_store::open(path, o);
    REQUIRE(s.ok());
    store = *s;
  }
  ~fixture() {
    store.reset();
    shard_store::remove_files(path);
  }

  json_index_def define(const std::string& sig, const std::string& definition) {
    write_op op;
    op.what = write_op::kind::index_define;
    op.index.signature = sig;
    op.index.definition = definition;
    REQUIRE(store->commit({&op}, 1700000000));
    REQUIRE(op.st);
    return op.index;
  }
  bool build_step(const std::string& sig, size_t limit) {
    write_op op;
    op.what = write_op::kind::index_build;
    op.index.signature = sig;
    op.index_limit = limit;
    REQUIRE(store->commit({&op}, 1700000000));
    REQUIRE(op.st);
    return op.index.built;
  }
  void put(const std::string& id, const std::string& key) {
    std::vector<rev_id> base;
    if (revs.count(id)) base.push_back(revs[id]);
    auto r = testing::write(*store, {testing::upd(id, body_of(key), base)});
    REQUIRE(r[0].st);
    revs[id] = r[0].rev;
    if (key == "-") {
      model.erase(id);
    } else {
      model[id] = key;
    }
  }
  void remove(const std::string& id) {
    auto r = testing::write(*store, {testing::upd(id, "{}", {revs[id]}, true)});
    REQUIRE(r[0].st);
    revs[id] = r[0].rev;
    model.erase(id);
  }

  // The model's positions in [low, high), in order.
  std::vector<std::pair<std::string, std::string>> expected(const std::string& low, const std::string& high,
                                                            bool descending, bool upper = false) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [id, key] : model) {
      std::string k = key;
      if (upper) k[0] = static_cast<char>(k[0] + 1);
      std::string pos = json_index::position(k, id);
      if (pos >= low && (high.empty() || pos < high)) out.emplace_back(pos, id);
    }
    std::sort(out.begin(), out.end());
    if (descending) std::reverse(out.begin(), out.end());
    return out;
  }
  std::vector<std::pair<std::string, std::string>> scanned(uint32_t number, const std::string& low,
                                                           const std::string& high, bool descending) const {
    auto snap = store->read();
    REQUIRE(snap.ok());
    std::vector<std::pair<std::string, std::string>> out;
    snap->scan_json_index(number, low, high, descending, [&](std::string_view pos, std::string_view id) {
      out.emplace_back(std::string(pos), std::string(id));
      return true;
    });
    REQUIRE(snap->fault());
    return out;
  }
};

// Keys that share long prefixes (past json_index::bucket_len: kept in buckets) and short ones.
std::string random_key(std::mt19937& rng) {
  static const std::vector<std::string> stems = {
      "a", "b", "bb", std::string(470, 'x'), std::string(600, 'x'), std::string(476, 'y') + "z"};
  std::string k = stems[rng() % stems.size()];
  const int tail = static_cast<int>(rng() % 4);
  for (int i = 0; i < tail; ++i) k.push_back(static_cast<char>('a' + rng() % 3));
  return k;
}

TEST_CASE("a JSON index's rows follow every write and scan in order, long keys included") {
  fixture f;
  const json_index_def d = f.define("sig-a", "plain");
  CHECK_FALSE(d.built);
  CHECK(f.build_step("sig-a", 10));  // nothing to build in an empty file
  std::mt19937 rng(7);
  for (int step = 0; step < 600; ++step) {
    const std::string id = "doc" + std::to_string(rng() % 80);
    const int what = static_cast<int>(rng() % 10);
    if (what == 0 && f.model.count(id)) {
      f.remove(id);
    } else {
      f.put(id, what == 1 ? "-" : random_key(rng));
    }
    if (step % 50 == 0 || step == 599) {
      for (bool desc : {false, true}) {
        CHECK(f.scanned(d.number, "", "", desc) == f.expected("", "", desc));
        // Ranges with ends inside buckets and between rows.
        for (int k = 0; k < 5; ++k) {
          std::string a = random_key(rng), b = random_key(rng);
          if (b < a) std::swap(a, b);
          const std::string low = k % 2 ? a : json_index::past(a), high = b;
          CHECK(f.scanned(d.number, low, high, desc) == f.expected(low, high, desc));
        }
      }
    }
  }
  auto snap = f.store->read();
  CHECK(snap->count_json_index(d.number, "", "", 1000000) == f.model.size());
  CHECK(snap->count_json_index(d.number, "", "", 3) == std::min<size_t>(3, f.model.size()));
}

TEST_CASE("an index defined over existing documents is built in steps, writes keeping it meanwhile") {
  fixture f;
  std::mt19937 rng(11);
  for (int i = 0; i < 300; ++i) f.put("d" + std::to_string(i), random_key(rng));
  json_index_def d = f.define("sig-b", "upper");
  CHECK_FALSE(d.built);
  CHECK(f.define("sig-b", "upper").number == d.number);  // known: nothing changes
  int steps = 0;
  while (!f.build_step("sig-b", 64)) {
    ++steps;
    // Writes between steps, on both sides of where the build is.
    f.put("d" + std::to_string(rng() % 300), random_key(rng));
    f.put("new" + std::to_string(steps), random_key(rng));
    REQUIRE(steps < 100);
  }
  CHECK(steps >= 4);
  CHECK(f.scanned(d.number, "", "", false) == f.expected("", "", false, true));
  // Another index beside it has its own rows; dropping one leaves the other whole.
  const json_index_def e = f.define("sig-c", "plain");
  while (!f.build_step("sig-c", 1000)) {
  }
  CHECK(e.number != d.number);
  CHECK(f.scanned(e.number, "", "", true) == f.expected("", "", true));
  write_op drop;
  drop.what = write_op::kind::index_drop;
  drop.index.signature = "sig-b";
  REQUIRE(f.store->commit({&drop}, 1700000000));
  CHECK(f.scanned(d.number, "", "", false).empty());
  CHECK(f.scanned(e.number, "", "", false) == f.expected("", "", false));
  auto snap = f.store->read();
  CHECK(snap->json_indexes().size() == 1);
  // A build step of a dropped index says so.
  write_op step;
  step.what = write_op::kind::index_build;
  step.index.signature = "sig-b";
  REQUIRE(f.store->commit({&step}, 1700000000));
  CHECK(step.st.code == errc::not_found);
}

TEST_CASE("JSON indexes survive a reopen") {
  fixture f;
  f.put("a", "k1");
  const json_index_def d = f.define("sig-d", "plain");
  CHECK_FALSE(d.built);
  CHECK(f.build_step("sig-d", 10));
  f.store.reset();
  store_options o;
  o.map_size_bytes = 256ull << 20;
  o.keys_of_indexes = std::make_shared<test_keys>();
  f.store = *shard_store::open(f.path, o);
  f.put("b", "k0");  // kept by the reopened store
  CHECK(f.scanned(d.number, "", "", false) == f.expected("", "", false));
}

TEST_CASE("a document's row follows its winner: stemmed history, conflicts, a purged winner") {
  fixture f;
  const json_index_def d = f.define("sig-e", "plain");
  CHECK(f.build_step("sig-e", 10));
  auto commit = [&](write_op& op) {
    REQUIRE(f.store->commit({&op}, 1700000000));
    REQUIRE(op.st);
  };
  auto rows = [&] { return f.scanned(d.number, "", "", false); };
  // revs_limit 1: each edit stems the revision before it, body and all, in its own transaction.
  write_op limit;
  limit.what = write_op::kind::revs_limit;
  limit.revs_limit = 1;
  commit(limit);
  for (const char* k : {"k1", "k2", "k3"}) f.put("a", k);
  CHECK(rows() == f.expected("", "", false));
  // Branches merged as a replicator brings them: the winner (1-zzz beats 1-aaa) has the row.
  auto merge = [&](const std::string& rev, const std::string& key, bool deleted = false) {
    write_op op;
    op.docs.push_back(
        testing::upd("b", body_of(key), {rev_id{static_cast<uint64_t>(rev[0] - '0'), rev.substr(2)}}, deleted));
    op.docs.back().new_edits = false;
    commit(op);
  };
  merge("1-aaa", "m1");
  f.model["b"] = "m1";
  CHECK(rows() == f.expected("", "", false));
  merge("1-zzz", "m2");
  f.model["b"] = "m2";
  CHECK(rows() == f.expected("", "", false));
  merge("1-bbb", "m3");  // a losing branch: the row stays
  CHECK(rows() == f.expected("", "", false));
  // Purging the winner hands the row to the next one.
  write_op purge;
  purge.what = write_op::kind::purge;
  purge.purges = {{0, "u-1", "b", {rev_id{1, "zzz"}}}};
  commit(purge);
  f.model["b"] = "m3";
  CHECK(rows() == f.expected("", "", false));
  // A deleted leaf over the winner: the next live leaf wins; the last one gone: no row.
  merge("2-ddd", "", true);  // its path is 2-ddd alone: another branch, deleted
  CHECK(rows() == f.expected("", "", false));
  write_op purge_rest;
  purge_rest.what = write_op::kind::purge;
  purge_rest.purges = {{0, "u-2", "b", {rev_id{1, "aaa"}, rev_id{1, "bbb"}}}};
  commit(purge_rest);
  f.model.erase("b");
  CHECK(rows() == f.expected("", "", false));
  CHECK(rows().size() == 1);
}

TEST_CASE("JSON indexes whose keys another version made are emptied and built again") {
  fixture f;
  std::mt19937 rng(3);
  for (int i = 0; i < 50; ++i) f.put("d" + std::to_string(i), random_key(rng));
  const json_index_def d = f.define("sig-f", "plain");
  while (!f.build_step("sig-f", 1000)) {
  }
  auto reopen = [&](const std::string& version) {
    f.store.reset();
    store_options o;
    o.map_size_bytes = 256ull << 20;
    auto keys = std::make_shared<test_keys>();
    keys->version_ = version;
    o.keys_of_indexes = keys;
    f.store = *shard_store::open(f.path, o);
    return f.store->read()->json_indexes().at(0);
  };
  CHECK(reopen("test 1").built);  // the same keys: kept as they are
  CHECK(f.scanned(d.number, "", "", false) == f.expected("", "", false));
  const json_index_def again = reopen("test 2");  // e.g. another ICU: rows might sit elsewhere now
  CHECK_FALSE(again.built);
  CHECK(f.scanned(d.number, "", "", false).empty());
  f.put("d1", "new");  // kept while the build is pending
  while (!f.build_step("sig-f", 7)) {
  }
  CHECK(f.scanned(d.number, "", "", false) == f.expected("", "", false));
  CHECK(f.scanned(d.number, "", "", false).size() == f.model.size());
}

}  // namespace
}  // namespace settee
