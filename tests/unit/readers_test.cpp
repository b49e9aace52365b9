// The coordinator's view and _find readers against fake shard copies (issue 50 point 2): every copy,
// this node's or another's, answers through shard_copy::start_view / start_mango, so pages made
// up here drive the merges: order across ranges, skip and limit, bookmarks going on per range and
// across a split, and a copy answering out of order (an error, never a crash or a wrong answer).
#include <doctest/doctest.h>

#include <caf/all.hpp>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.hpp"
#include "actors/find_cursor.hpp"
#include "actors/view_reader.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

// A copy of one range answering made-up pages.
class page_copy final : public shard_copy {
 public:
  page_copy(std::string node, std::vector<std::string> positions)
      : node_(std::move(node)), pos_(std::move(positions)) {}
  const std::string& node() const override { return node_; }
  bool local() const override { return false; }

  void start_view(const view_copy_request& req, answer<view_page> done) override {
    view_page p;
    std::vector<std::string> mine = pos_;
    if (req.scan.descending) std::reverse(mine.begin(), mine.end());
    for (const std::string& pos : mine) {
      if (p.rows.size() >= req.scan.limit) break;
      p.rows.push_back(view_row{"id-" + pos, "\"" + pos + "\"", "1", pos});
    }
    p.total = pos_.size();
    asked.push_back(req.scan.limit);
    done(std::move(p));
  }
  void start_mango(const mango_copy_request& req, answer<mango_page> done) override {
    mango_page p;
    p.built = true;
    std::vector<std::string> mine = pos_;
    if (req.descending) std::reverse(mine.begin(), mine.end());
    for (const std::string& pos : mine) {
      if (!req.after.empty() && (req.descending ? pos >= req.after : pos <= req.after)) continue;
      if (p.rows.size() >= req.limit) break;
      p.rows.push_back(mango_row{pos, "{\"_id\":\"" + pos + "\"}"});
    }
    p.keys_examined = p.docs_examined = p.rows.size();
    afters.push_back(req.after);
    done(std::move(p));
  }

  // Unused by the readers under test.
  result<shard_summary> summary() override { return unused(); }
  result<changes_page> changes(const changes_request&) override { return unused(); }
  result<resolved_since> resolve_since(const std::string&, uint64_t) override { return unused(); }
  result<all_docs_page> all_docs(const all_docs_request&) override { return unused(); }
  result<time_seq_state> time_seq(bool) override { return unused(); }
  void open_docs(const std::vector<std::string>&, doc_bodies, docs_done done) override { done(unused()); }
  result<std::optional<local_doc>> open_local(const std::string&) override { return unused(); }
  result<uint64_t> write_local(const local_update&) override { return unused(); }
  result<std::vector<local_doc>> list_local() override { return unused(); }
  status set_revs_limit(uint32_t) override { return unused(); }
  void update_docs(std::vector<doc_update>, write_done done) override { done(unused()); }
  result<std::string> read_blob(const std::string&, uint64_t, uint64_t) override { return unused(); }
  result<bool> stage_blob(const std::string&, uint64_t, const std::string&) override { return unused(); }
  status drop_staged(const std::string&) override { return unused(); }

  std::string node_;
  std::vector<std::string> pos_;    // the range's rows' positions, ascending
  std::vector<uint64_t> asked;      // each view page's limit
  std::vector<std::string> afters;  // each _find page's start

 private:
  static status unused() { return {errc::not_implemented, "not in this test"}; }
};

// Range r's copy is copies[r] (one copy per range, on node "b": another node's).
struct range_source : copy_source {
  std::vector<std::shared_ptr<page_copy>> by_range;
  std::vector<copy_ptr> copies(const db_meta&, size_t range) override { return {by_range.at(range)}; }
};

struct fixture : registry_fixture {
  db_catalog catalog{shards, clk, dir.path, "a", std::chrono::milliseconds(1000)};
  range_source source;
  coordinator coord{catalog, shards, std::chrono::seconds(5), "a"};
  task_list tasks;
  job_runner jobs{tasks, clk, "a", job_options{{{view_build::lane, 1}}, {}, {}}};
  db_meta db;

  explicit fixture(std::vector<std::vector<std::string>> ranges) {
    coord.set_copy_source(&source);
    db.name = "db";
    db.q = static_cast<uint32_t>(ranges.size());
    db.n = 1;
    db.ranges = make_ranges(db.q);
    db.suffixes.assign(db.q, 0);
    db.nodes.assign(db.q, {"b"});
    db.local.assign(db.q, false);
    for (auto& r : ranges) source.by_range.push_back(std::make_shared<page_copy>("b", std::move(r)));
  }
};

std::vector<std::string> ids_of(const std::vector<view_row>& rows) {
  std::vector<std::string> out;
  for (const view_row& r : rows) out.push_back(r.id);
  return out;
}

std::vector<std::string> ids_of(const std::vector<std::string>& docs) {
  std::vector<std::string> out;
  for (const std::string& d : docs) out.push_back(json::parse(d)["_id"].get<std::string>());
  return out;
}

// A _find on index "ix" of field `f` (the plan the planner makes for it).
planned_find plan_for(const std::string& body_text) {
  json ddoc = json::parse(
      R"({"language":"query","views":{"ix":{"map":{"fields":{"f":"asc"}},"options":{"def":{"fields":["f"]}}}}})");
  auto indexes = indexes_of("_design/i", ddoc);
  REQUIRE(indexes.size() == 1);
  auto q = parse_find(json::parse(body_text));
  REQUIRE(q);
  auto plans = plan_find(*q, indexes);
  REQUIRE(plans);
  REQUIRE(plans->front().index);
  return planned_find{std::move(*q), std::move(plans->front()), {}, "", nullptr, std::nullopt, json()};
}

}  // namespace

TEST_CASE("view reader: the ranges' pages merge by position, skip and limit over the merge") {
  fixture f({{"a", "d", "f"}, {"b", "c", "e", "g"}});
  js_pool js(js_options{});
  view_reader views(f.coord, js, f.jobs, f.dir.path + "/views", js_reduce_options{});
  design_views dv;
  dv.ddoc_id = "_design/d";
  dv.names = {"v"};
  dv.builtins = {builtin_reduce::none};
  view_request q;
  q.skip = 1;
  q.limit = 4;
  auto got = views.query(f.db, dv, q);
  REQUIRE(got);
  CHECK(ids_of(got->rows) == std::vector<std::string>{"id-b", "id-c", "id-d", "id-e"});
  CHECK(got->total_rows == 7);
  CHECK(f.source.by_range[0]->asked == std::vector<uint64_t>{5});  // skip + limit from each range
  q.descending = true;
  q.skip = 0;
  q.limit = 3;
  got = views.query(f.db, dv, q);
  REQUIRE(got);
  CHECK(ids_of(got->rows) == std::vector<std::string>{"id-g", "id-f", "id-e"});

  // A copy whose page is out of order is an error, not a wrong merge.
  f.source.by_range[1]->pos_ = {"c", "b"};
  q.descending = false;
  got = views.query(f.db, dv, q);
  REQUIRE_FALSE(got);
  CHECK(got.error().code == errc::internal);
}

TEST_CASE("find cursor: ranges merge by index position, bookmarks go on per range and across a split") {
  fixture f({{"a", "d", "f"}, {"b", "c", "e", "g"}});
  find_reader reader(f.coord, f.jobs, mango_keys::shared());
  find_cursor cursor(f.coord, reader);
  planned_find p = plan_for(R"({"selector":{"f":{"$gt":null}},"limit":3})");
  auto page = cursor.run(f.db, p);
  REQUIRE(page);
  CHECK(ids_of(page->docs) == std::vector<std::string>{"a", "b", "c"});
  REQUIRE_FALSE(page->bookmark.empty());

  // The next page goes on from each range's last position used.
  p.q.bookmark = page->bookmark;
  auto next = cursor.run(f.db, p);
  REQUIRE(next);
  CHECK(ids_of(next->docs) == std::vector<std::string>{"d", "e", "f"});
  CHECK(f.source.by_range[0]->afters.back() == "a");
  CHECK(f.source.by_range[1]->afters.back() == "c");

  // The second range split in two: each child goes on from its parent's position.
  fixture split({{"a", "d", "f"}, {"b", "c"}, {"e", "g"}});
  split.db.ranges = {f.db.ranges[0], shard_range{f.db.ranges[1].begin, f.db.ranges[1].begin + 0x1000},
                     shard_range{f.db.ranges[1].begin + 0x1001, f.db.ranges[1].end}};
  find_reader split_reader(split.coord, split.jobs, mango_keys::shared());
  find_cursor split_cursor(split.coord, split_reader);
  auto after_split = split_cursor.run(split.db, p);
  REQUIRE(after_split);
  CHECK(ids_of(after_split->docs) == std::vector<std::string>{"d", "e", "f"});
  CHECK(split.source.by_range[1]->afters.back() == "c");
  CHECK(split.source.by_range[2]->afters.back() == "c");

  // skip counts across ranges; a copy answering out of order is an error.
  p.q.bookmark.reset();
  p.q.skip = 5;
  p.q.limit = 10;
  auto skipped = cursor.run(f.db, p);
  REQUIRE(skipped);
  CHECK(ids_of(skipped->docs) == std::vector<std::string>{"f", "g"});
  f.source.by_range[0]->pos_ = {"f", "a"};
  auto bad = cursor.run(f.db, p);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == errc::internal);
}

TEST_CASE("find reader: a copy whose replica does not commit an index definition in time answers a timeout") {
  fixture f({std::vector<std::string>{}});
  coordinator quick(f.catalog, f.shards, std::chrono::milliseconds(200), "a");
  find_reader reader(quick, f.jobs, mango_keys::shared());
  auto h = f.shards.acquire(f.dir.path + "/stalled.couch", 1);
  REQUIRE(h);
  // A replica stuck in a long handler: the index definition waits in its mailbox.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  shard_handle stalled = *h;
  stalled.writer = {};  // an actor only: writes reach it as messages
  stalled.writer.actor = f.sys.spawn([released](caf::event_based_actor* self) -> caf::behavior {
    self->set_default_handler(caf::drop);
    return {[released](int) { released.wait(); }};
  });
  caf::anon_send(stalled.writer.actor, 1);
  mango_copy_request req;
  req.signature = std::string(16, 'a');
  req.definition = R"({"fields":[{"f":"asc"}]})";
  req.selector = R"({"f":{"$gt":null}})";
  req.limit = 10;
  std::optional<result<mango_page>> got;
  reader.copy_rows(f.db, 0, stalled, req, [&](result<mango_page> r) { got.emplace(std::move(r)); });
  release.set_value();  // the answer came without it (an HTTP worker is not held by a stuck replica)
  REQUIRE(got);
  REQUIRE_FALSE(*got);
  CHECK(got->error().code == errc::timeout);
  caf::anon_send_exit(stalled.writer.actor, caf::exit_reason::user_shutdown);
}
