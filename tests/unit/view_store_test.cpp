// The view index file (storage/view_store): rows in CouchDB's collation order then by document id,
// a document's rows replaced by its next revision, ranges with keys and document ids in both
// directions, keys longer than an LMDB key, and a file of another signature emptied. Checked
// against a model: the same rows kept in a vector and sorted by collation::compare.
#include "storage/view_store.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "node/collation.hpp"
#include "temp_dir.hpp"

using namespace settee;

namespace {

view_meta meta_of(const std::string& sig, uint32_t views = 2) {
  return view_meta{sig, "uuid-1", collation::collator_version(), views, 0};
}

view_row_in row(const json& key, const json& value = nullptr) {
  return {collation::sort_key(key), key.dump(), value.dump()};
}

std::vector<std::string> ids(const std::vector<view_row>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.id + "=" + r.key_json);
  return out;
}

view_bound at(const json& key, std::optional<std::string> id = std::nullopt, bool inclusive = true) {
  return view_bound{true, collation::sort_key(key), std::move(id), inclusive};
}

}  // namespace

TEST_CASE("view_store: rows in collation order, then by id; replaced, removed, counted, durable") {
  temp_dir dir;
  const std::string path = dir.path + "/shard/idx.view";
  {
    auto s = view_store::open(path, meta_of("sig1"));
    REQUIRE(s);
    CHECK((*s)->meta().seq == 0);
    std::vector<view_doc> docs = {
        {"b", {{row("B"), row(2)}, {}}},
        {"a", {{row("a"), row("b", 1)}, {row(json::array({1, 2}))}}},
        {"c", {{row(nullptr), row("a")}, {}}},
        {"d", {{row(json::object({{"k", 1}})), row(1.0)}, {}}},
    };
    REQUIRE((*s)->apply(docs, 7));
    uint64_t total = 0;
    auto all = (*s)->scan(view_scan{0, {}, {}, false}, &total);
    REQUIRE(all);
    CHECK(total == 8);
    CHECK(ids(*all) == std::vector<std::string>{"c=null", "d=1.0", "b=2", "a=\"a\"", "c=\"a\"", "a=\"b\"", "b=\"B\"",
                                                "d={\"k\":1}"});
    CHECK((*all)[5].value_json == "1");
    auto back = (*s)->scan(view_scan{0, {}, {}, true});
    REQUIRE(back);
    auto reversed = ids(*all);
    std::reverse(reversed.begin(), reversed.end());
    CHECK(ids(*back) == reversed);
    // A new revision of "a" emits other rows; "c" emits nothing any more.
    REQUIRE((*s)->apply({{"a", {{row("z")}, {}}}, {"c", {{}, {}}}}, 9));
    all = (*s)->scan(view_scan{0, {}, {}, false}, &total);
    REQUIRE(all);
    CHECK(ids(*all) == std::vector<std::string>{"d=1.0", "b=2", "b=\"B\"", "a=\"z\"", "d={\"k\":1}"});
    CHECK(total == 5);
    auto other = (*s)->scan(view_scan{1, {}, {}, false}, &total);
    REQUIRE(other);
    CHECK(other->empty());
    CHECK(total == 0);
  }
  auto again = view_store::open(path, meta_of("sig1"));
  REQUIRE(again);
  CHECK((*again)->meta().seq == 9);  // reopened: what was committed
  uint64_t total = 0;
  REQUIRE((*again)->scan(view_scan{0, {}, {}, false}, &total));
  CHECK(total == 5);
  // Another signature (the views changed): the file is emptied, to be indexed from the start.
  auto changed = view_store::open(path, meta_of("sig2"));
  REQUIRE(changed);
  CHECK((*changed)->meta().seq == 0);
  auto none = (*changed)->scan(view_scan{0, {}, {}, false}, &total);
  REQUIRE(none);
  CHECK(none->empty());
  CHECK(total == 0);
}

TEST_CASE("view_store: key ranges with document ids, inclusive or not, both directions, skip and limit") {
  temp_dir dir;
  auto s = view_store::open(dir.path + "/idx.view", meta_of("s", 1));
  REQUIRE(s);
  std::vector<view_doc> docs;
  for (int k = 1; k <= 3; ++k)
    for (const char* id : {"x", "y", "z"}) docs.push_back({std::string(id) + std::to_string(k), {{row(k)}}});
  REQUIRE((*s)->apply(docs, 1));
  auto q = [&](view_bound low, view_bound high, bool desc = false, uint64_t skip = 0, uint64_t limit = 100) {
    auto r = (*s)->scan(view_scan{0, std::move(low), std::move(high), desc, skip, limit});
    REQUIRE(r);
    std::vector<std::string> out;
    for (const auto& row : *r) out.push_back(row.id);
    return out;
  };
  using v = std::vector<std::string>;
  CHECK(q(at(2), at(2)) == v{"x2", "y2", "z2"});                          // key=2
  CHECK(q(at(2), at(3, std::nullopt, false)) == v{"x2", "y2", "z2"});     // inclusive_end=false
  CHECK(q(at(2, "y2"), at(3, "x3")) == v{"y2", "z2", "x3"});              // startkey_docid, endkey_docid
  CHECK(q(at(2, "y2"), at(3, "x3", false)) == v{"y2", "z2"});             // ... exclusive
  CHECK(q(at(2, "y2"), at(3, "y3"), true) == v{"y3", "x3", "z2", "y2"});  // descending
  CHECK(q(at(1), at(3, std::nullopt, false), true) == v{"z2", "y2", "x2", "z1", "y1", "x1"});
  CHECK(q(at(2), {}, false, 2, 3) == v{"z2", "x3", "y3"});  // skip, limit
  CHECK(q({}, at(1), true, 1) == v{"y1", "x1"});
  CHECK(q(at(3), at(1)).empty());  // low after high
  CHECK(q(at(1.5), at(2.5)) == v{"x2", "y2", "z2"});
}

TEST_CASE("view_store: keys longer than an LMDB key keep their exact order (buckets), against a model") {
  temp_dir dir;
  auto s = view_store::open(dir.path + "/idx.view", meta_of("long", 1));
  REQUIRE(s);
  std::mt19937 rng(7);
  const std::string shared(700, 'q');  // sort keys far past max_key that share their start
  REQUIRE(collation::sort_key(shared).size() > view_store::max_key);
  auto random_key = [&]() -> json {
    switch (rng() % 4) {
      case 0:
        return static_cast<int>(rng() % 5);
      case 1:
        return std::string(1, static_cast<char>('a' + rng() % 3));
      case 2:
        return shared + std::string(1, static_cast<char>('a' + rng() % 3));
      default:
        return json::array({shared, static_cast<int>(rng() % 3)});
    }
  };
  struct model_row {
    json key;
    std::string id;
    uint32_t order;
  };
  std::map<std::string, std::vector<json>> model;  // id -> keys emitted
  for (int round = 0; round < 30; ++round) {
    std::vector<view_doc> batch;
    for (int i = 0; i < 8; ++i) {
      std::string id = "doc" + std::to_string(rng() % 40);
      if (std::any_of(batch.begin(), batch.end(), [&](const view_doc& d) { return d.id == id; })) continue;
      std::vector<json> keys;
      for (int e = 0, n = static_cast<int>(rng() % 3); e < n; ++e) keys.push_back(random_key());
      view_doc d{id, {{}}};
      for (const auto& k : keys) d.views[0].push_back(row(k, id));
      batch.push_back(d);
      if (keys.empty())
        model.erase(id);
      else
        model[id] = keys;
    }
    REQUIRE((*s)->apply(batch, static_cast<uint64_t>(round + 1)));
  }
  std::vector<model_row> all;
  for (const auto& [id, keys] : model)
    for (uint32_t i = 0; i < keys.size(); ++i) all.push_back({keys[i], id, i});
  std::sort(all.begin(), all.end(), [](const model_row& a, const model_row& b) {
    int c = collation::compare(a.key, b.key);
    if (c) return c < 0;
    if (a.id != b.id) return a.id < b.id;
    return a.order < b.order;
  });
  uint64_t total = 0;
  auto scanned = (*s)->scan(view_scan{0, {}, {}, false}, &total);
  REQUIRE(scanned);
  REQUIRE(scanned->size() == all.size());
  CHECK(total == all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK_MESSAGE((*scanned)[i].id == all[i].id, i);
    CHECK((*scanned)[i].key_json == all[i].key.dump());
  }
  // Random ranges, both directions, against the model.
  for (int trial = 0; trial < 200; ++trial) {
    json lo = random_key(), hi = random_key();
    if (collation::compare(lo, hi) > 0) std::swap(lo, hi);
    const bool desc = rng() % 2, lo_incl = true, hi_incl = rng() % 2;
    std::vector<std::string> want;
    for (const auto& r : all)
      if (collation::compare(r.key, lo) >= 0 &&
          (hi_incl ? collation::compare(r.key, hi) <= 0 : collation::compare(r.key, hi) < 0))
        want.push_back(r.id + " " + r.key.dump());
    if (desc) std::reverse(want.begin(), want.end());
    auto got = (*s)->scan(view_scan{0, at(lo, std::nullopt, lo_incl), at(hi, std::nullopt, hi_incl), desc});
    REQUIRE(got);
    std::vector<std::string> have;
    for (const auto& r : *got) have.push_back(r.id + " " + r.key_json);
    CHECK_MESSAGE(have == want, lo.dump().substr(0, 40), " .. ", hi.dump().substr(0, 40), desc ? " desc" : "");
    auto counted = (*s)->count(view_scan{0, at(lo, std::nullopt, lo_incl), at(hi, std::nullopt, hi_incl), desc});
    REQUIRE(counted);
    CHECK(*counted == want.size());
  }
}

TEST_CASE("view_store: counts by blocks agree with the rows through splits, merges and reopening") {
  temp_dir dir;
  const std::string path = dir.path + "/blocks.view";
  const view_meta want{"sig", "uuid", collation::collator_version(), 2, 0};
  std::mt19937 rng(7);
  std::map<std::string, std::pair<int, int>> model;  // id -> (key in view 0, key in view 1; -1: none)
  auto s = view_store::open(path, want);
  REQUIRE(s);
  auto check = [&](view_store& store) {
    for (uint32_t view = 0; view < 2; ++view) {
      size_t in_view = 0;
      for (const auto& [id, keys] : model) in_view += (view == 0 ? keys.first : keys.second) >= 0;
      auto whole = store.count(view_scan{view, {}, {}, false});
      REQUIRE(whole);
      CHECK(*whole == in_view);
      for (int trial = 0; trial < 40; ++trial) {
        int lo = static_cast<int>(rng() % 1100) - 50, hi = lo + static_cast<int>(rng() % 400);
        view_scan range{view, at(lo, std::nullopt, rng() % 2),
                        at(hi, rng() % 2 ? std::optional<std::string>("d0500") : std::nullopt, rng() % 2),
                        rng() % 2 == 0};
        auto rows = store.scan(range);
        auto counted = store.count(range);
        REQUIRE(rows);
        REQUIRE(counted);
        CHECK_MESSAGE(*counted == rows->size(), view, " [", lo, ", ", hi, "]");
      }
    }
  };
  // Batches of inserts, replacements and removals: far past a block's size, then most rows gone.
  for (int round = 0; round < 40; ++round) {
    std::vector<view_doc> batch;
    std::set<std::string> seen;
    for (int i = 0; i < 150; ++i) {
      const std::string id = "d" + std::to_string(10000 + rng() % (round < 25 ? 3000 : 600)).substr(1);
      if (!seen.insert(id).second) continue;
      const bool gone = round >= 25 && rng() % 3 != 0;
      const int k0 = gone ? -1 : static_cast<int>(rng() % 1000),
                k1 = gone || rng() % 2 ? -1 : static_cast<int>(rng() % 50);
      view_doc d{id, {{}, {}}};
      if (k0 >= 0) d.views[0].push_back(row(k0));
      if (k1 >= 0) d.views[1].push_back(row(k1));
      batch.push_back(d);
      if (k0 < 0 && k1 < 0)
        model.erase(id);
      else
        model[id] = {k0, k1};
    }
    REQUIRE((*s)->apply(batch, static_cast<uint64_t>(round + 1)));
    if (round == 24 || round == 39) check(**s);
  }
  s->reset();
  auto again = view_store::open(path, want);
  REQUIRE(again);
  check(**again);
}

namespace {

// Sums integer values (a _sum stand-in: storage holds the partial's text as given).
struct summing final : block_reducer {
  bool keeps(uint32_t view) const override { return view == 0; }
  std::vector<std::string> reduce(uint32_t, const std::vector<std::vector<view_row>>& blocks) const override {
    std::vector<std::string> out;
    for (const auto& rows : blocks) {
      int64_t sum = 0;
      for (const auto& r : rows) sum += std::stoll(r.value_json);
      out.push_back(std::to_string(sum));
    }
    return out;
  }
};

}  // namespace

TEST_CASE("view_store: partial reductions per block reduce a range as its rows do") {
  temp_dir dir;
  const std::string path = dir.path + "/partials.view";
  const view_meta want{"sig", "uuid", collation::collator_version(), 2, 0};
  auto s = view_store::open(path, want);
  REQUIRE(s);
  std::mt19937 rng(11);
  summing reducer;
  auto check = [&](view_store& store, bool settled) {
    for (int trial = 0; trial < 60; ++trial) {
      const int lo = static_cast<int>(rng() % 1100) - 50, hi = lo + static_cast<int>(rng() % 600);
      const view_scan range{0, at(lo, std::nullopt, rng() % 2), at(hi, std::nullopt, rng() % 2), rng() % 2 == 0};
      auto rows = store.scan(range);
      REQUIRE(rows);
      int64_t want_sum = 0;
      for (const auto& r : *rows) want_sum += std::stoll(r.value_json);
      std::vector<std::string> partials;
      std::vector<view_row> read;
      REQUIRE(store.reduce_range(range, partials, read));
      int64_t got = 0;
      for (const auto& p : partials) got += std::stoll(p);
      for (const auto& r : read) got += std::stoll(r.value_json);
      CHECK_MESSAGE(got == want_sum, "[", lo, ", ", hi, "]");
      if (!settled) CHECK(partials.empty());
    }
    // The whole view: blocks' partials, only edge rows read.
    std::vector<std::string> partials;
    std::vector<view_row> read;
    REQUIRE(store.reduce_range(view_scan{0, {}, {}, false}, partials, read));
    if (settled) {
      CHECK(read.empty());
      CHECK(partials.size() > 3);
    }
  };
  for (int round = 0; round < 30; ++round) {
    std::vector<view_doc> batch;
    std::set<std::string> seen;
    for (int i = 0; i < 200; ++i) {
      const std::string id = "d" + std::to_string(10000 + rng() % (round < 20 ? 4000 : 800)).substr(1);
      if (!seen.insert(id).second) continue;
      view_doc d{id, {{}, {}}};
      if (round < 20 || rng() % 3 == 0)
        d.views[0].push_back(row(static_cast<int>(rng() % 1000), static_cast<int>(rng() % 100)));
      d.views[1].push_back(row(1, 1));  // a view without partials
      batch.push_back(d);
    }
    // Unsettled batches read rows; the last batch of an update settles in its transaction.
    REQUIRE((*s)->apply(batch, static_cast<uint64_t>(round + 1), round % 10 == 9 ? &reducer : nullptr));
    if (round == 5) check(**s, false);
    if (round % 10 == 9) check(**s, true);
  }
  REQUIRE((*s)->settle(reducer));  // nothing left: no write
  s->reset();
  auto again = view_store::open(path, want);
  REQUIRE(again);
  check(**again, true);
}

TEST_CASE("view_store: grouped reduces take whole blocks of one group by count or partial, as the rows say") {
  temp_dir dir;
  const view_meta want{"sig", "uuid", collation::collator_version(), 2, 0};
  auto s = view_store::open(dir.path + "/groups.view", want);
  REQUIRE(s);
  std::mt19937 rng(5);
  summing reducer;
  // Keys [a, b]: a of 4 values (groups of thousands of rows at level 1), b of 40; some bare
  // numbers and one-element arrays beside them.
  auto key_of = [&]() -> json {
    const int kind = static_cast<int>(rng() % 20);
    if (kind == 0) return static_cast<int>(rng() % 3);
    if (kind == 1) return json::array({"k" + std::to_string(rng() % 4)});
    return json::array({"k" + std::to_string(rng() % 4), static_cast<int>(rng() % 40)});
  };
  for (int round = 0; round < 12; ++round) {
    std::vector<view_doc> batch;
    std::set<std::string> seen;
    for (int i = 0; i < 1500; ++i) {
      const std::string id = "d" + std::to_string(100000 + rng() % 12000).substr(1);
      if (!seen.insert(id).second) continue;
      view_doc d{id, {{}, {}}};
      if (round < 8 || rng() % 4 != 0) d.views[0].push_back(row(key_of(), static_cast<int>(rng() % 100)));
      batch.push_back(d);
    }
    REQUIRE((*s)->apply(batch, static_cast<uint64_t>(round + 1), round % 4 == 3 ? &reducer : nullptr));
  }
  auto group_key = [](const json& k, int64_t level) -> json {
    if (level < 0) return k;
    if (!k.is_array() || k.size() <= static_cast<size_t>(level)) return k;
    return json(k.begin(), k.begin() + level);
  };
  size_t read_at_level_1 = 0, rows_in_view = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t level = trial % 3 == 0 ? -1 : trial % 3;
    view_scan range{0, {}, {}, false};
    if (trial >= 3) {  // a random range, ends in the middle of groups
      range.low =
          at(json::array({"k" + std::to_string(rng() % 4), static_cast<int>(rng() % 40)}), std::nullopt, rng() % 2);
      range.high =
          at(json::array({"k" + std::to_string(rng() % 4), static_cast<int>(rng() % 40)}), std::nullopt, rng() % 2);
      if (range.low.sort_key > range.high.sort_key) std::swap(range.low, range.high);
    }
    // The model: the range's rows grouped by their group keys' collation.
    auto rows = (*s)->scan(range);
    REQUIRE(rows);
    struct model {
      std::string first, last;
      int64_t count = 0, sum = 0;
    };
    std::vector<model> groups;
    std::string last_sk;
    for (const auto& r : *rows) {
      const std::string sk = collation::sort_key(group_key(json::parse(r.key_json), level));
      if (groups.empty() || sk != last_sk) groups.push_back({r.key_json, "", 0, 0});
      last_sk = sk;
      groups.back().last = r.key_json;
      ++groups.back().count;
      groups.back().sum += std::stoll(r.value_json);
    }
    auto length = [level](std::string_view k) { return collation::group_length(k, level); };
    for (block_use use : {block_use::rows, block_use::counts, block_use::partials}) {
      const uint64_t most = trial % 5 == 4 ? 3 : UINT64_MAX;
      std::vector<view_group> got;
      REQUIRE((*s)->reduce_groups(range, length, use, most, got));
      REQUIRE(got.size() == std::min<uint64_t>(groups.size(), most));
      size_t read = 0;
      for (size_t g = 0; g < got.size(); ++g) {
        CHECK(got[g].first_key == groups[g].first);
        CHECK(got[g].last_key == groups[g].last);
        int64_t sum = 0;
        for (const auto& p : got[g].partials) sum += std::stoll(p);
        for (const auto& r : got[g].rows) sum += std::stoll(r.value_json);
        read += got[g].rows.size();
        if (use == block_use::counts)
          CHECK(got[g].counted + got[g].rows.size() == static_cast<uint64_t>(groups[g].count));
        if (use == block_use::partials) CHECK(sum == groups[g].sum);
        if (use == block_use::rows) CHECK(got[g].rows.size() == static_cast<uint64_t>(groups[g].count));
      }
      if (trial == 1 && use == block_use::partials) {
        read_at_level_1 = read;
        rows_in_view = rows->size();
      }
    }
  }
  // The whole view at level 1: 3 + 4 + 4 groups; the rows near their edges read, not the rest.
  CHECK(rows_in_view > 7000);
  CHECK_MESSAGE(read_at_level_1 * 4 < rows_in_view, read_at_level_1, " of ", rows_in_view);
}

TEST_CASE("view_store: blocks are cut where keys change, so a grouped reduce reads few rows at the groups' edges") {
  // emit(n % 40) over documents written in id order, 600 a batch: every batch adds rows at the end
  // of each of 40 groups, and blocks split as they grow (growth.py's view, smaller).
  temp_dir dir;
  summing reducer;
  auto s = view_store::open(dir.path + "/edges.view", view_meta{"sig", "uuid", collation::collator_version(), 1, 0});
  REQUIRE(s);
  constexpr int groups = 40, docs = 40000;
  for (int from = 0; from < docs; from += 600) {
    std::vector<view_doc> batch;
    for (int n = from; n < std::min(docs, from + 600); ++n) {
      std::string id = std::to_string(1000000 + n);
      batch.push_back(view_doc{id, {{row(json(n % groups), 1)}}});
    }
    REQUIRE((*s)->apply(batch, static_cast<uint64_t>(from + 1), &reducer));
  }
  for (int64_t level : {int64_t{-1}, int64_t{1}}) {
    auto length = [level](std::string_view k) { return collation::group_length(k, level); };
    std::vector<view_group> got;
    REQUIRE((*s)->reduce_groups(view_scan{0, {}, {}, false}, length, block_use::partials, UINT64_MAX, got));
    REQUIRE(got.size() == groups);
    size_t read = 0;
    for (int g = 0; g < groups; ++g) {
      int64_t sum = static_cast<int64_t>(got[g].rows.size());
      for (const auto& p : got[g].partials) sum += std::stoll(p);
      CHECK(sum == docs / groups);
      CHECK(got[g].first_key == std::to_string(g));
      CHECK(got[g].last_key == std::to_string(g));
      read += got[g].rows.size();
    }
    // Blocks of 64-512 rows: reading a block at each of 40 edges would be ~10,000 rows.
    CHECK_MESSAGE(read < docs / 20, read, " rows read of ", docs);
  }
}

TEST_CASE("view_store: a file whose partials an older release made gets every block's again from the next settle") {
  temp_dir dir;
  const std::string path = dir.path + "/older.view";
  const view_meta want{"sig", "uuid", collation::collator_version(), 2, 0};
  summing reducer;
  {
    auto s = view_store::open(path, want);
    REQUIRE(s);
    std::vector<view_doc> batch;
    for (int i = 0; i < 3000; ++i) {
      view_doc d{"d" + std::to_string(10000 + i), {{}, {}}};
      d.views[0].push_back(row(i % 7, 1));
      batch.push_back(d);
    }
    REQUIRE((*s)->apply(batch, 1, &reducer));
  }
  // What 0.4 left: no partials for a view it kept none for (a JavaScript reduce), no `partials`.
  {
    MDB_env* env = nullptr;
    REQUIRE(mdb_env_create(&env) == 0);
    mdb_env_set_maxdbs(env, 16);
    REQUIRE(mdb_env_open(env, path.c_str(), MDB_NOSUBDIR, 0644) == 0);
    MDB_txn* t = nullptr;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &t) == 0);
    MDB_dbi meta = 0, partials = 0;
    REQUIRE(mdb_dbi_open(t, "meta", 0, &meta) == 0);
    REQUIRE(mdb_dbi_open(t, "partials", 0, &partials) == 0);
    MDB_val k{8, const_cast<char*>("partials")};
    REQUIRE(mdb_del(t, meta, &k, nullptr) == 0);
    REQUIRE(mdb_drop(t, partials, 0) == 0);
    REQUIRE(mdb_txn_commit(t) == 0);
    mdb_env_close(env);
  }
  auto s = view_store::open(path, want);
  REQUIRE(s);
  std::vector<std::string> partials;
  std::vector<view_row> read;
  REQUIRE((*s)->reduce_range(view_scan{0, {}, {}, false}, partials, read));
  CHECK(partials.empty());
  CHECK(read.size() == 3000);
  REQUIRE((*s)->settle(reducer));  // the update after the upgrade
  partials.clear();
  read.clear();
  REQUIRE((*s)->reduce_range(view_scan{0, {}, {}, false}, partials, read));
  CHECK(partials.size() > 3);
  CHECK(read.empty());
  int64_t sum = 0;
  for (const auto& p : partials) sum += std::stoll(p);
  CHECK(sum == 3000);
}
