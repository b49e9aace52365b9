// A reshard job as data: how /_reshard/jobs shows it, read back from that view (what a release
// 0.3 member answers), and from its saved form.
#include <doctest/doctest.h>

#include "actors/reshard_job.hpp"

using namespace settee;

namespace {

split_job a_split() {
  split_job j;
  j.id = "001-abc";
  j.db = "a/b";
  j.created = 1700000000;
  j.source = "00000000-ffffffff.1700000000";
  j.child_suffix = 1700000123;
  j.job_state = "running";
  j.split_state = "topoff1";
  j.reason = "why";
  j.start_time = 1700000200;
  j.update_time = 1700000300;
  j.history = {{1700000200, "new", ""}, {1700000250, "initial_copy", "a detail"}};
  return j;
}

}  // namespace

TEST_CASE("a split's /_reshard/jobs view reads back into the same view") {
  split_job j = a_split();
  json view = j.to_api("n1@h");
  CHECK(view["source"] == "shards/00000000-ffffffff/a/b.1700000000");
  CHECK(view["target"] ==
        json::array({"shards/00000000-7fffffff/a/b.1700000123", "shards/80000000-ffffffff/a/b.1700000123"}));
  auto back = split_job::from_api(view);
  REQUIRE(back);
  CHECK(back->db == "a/b");
  CHECK(back->source == j.source);
  CHECK(back->child_suffix == j.child_suffix);
  CHECK(back->reason == "why");
  CHECK(back->history.size() == 2);
  CHECK(back->to_api("n1@h") == view);
}

TEST_CASE("a move's view reads back; a view that is not a job does not") {
  split_job j = a_split();
  j.type = "move";
  j.from_node = "n2@h";
  j.reason.clear();
  json view = j.to_api("n3@h");
  CHECK(view["shard"] == "shards/00000000-ffffffff/a/b.1700000000");
  CHECK(view["source"] == "n2@h");
  auto back = split_job::from_api(view);
  REQUIRE(back);
  CHECK(back->from_node == "n2@h");
  CHECK(back->to_api("n3@h") == view);

  for (const char* bad : {R"({})", R"([])", R"({"id":"x","type":"merge","job_state":"new","split_state":"new",
                           "state_info":{},"start_time":null,"update_time":null,"history":[]})",
                          R"({"id":"x","type":"split","job_state":"new","split_state":"new","state_info":{},
                           "start_time":null,"update_time":null,"history":[],"source":"nonsense","target":[]})"}) {
    CHECK_FALSE(split_job::from_api(*parse_json(bad)));
  }
}

TEST_CASE("a job's saved form reads back whole") {
  split_job j = a_split();
  j.leader = "n1@h";
  j.copies = {"n1@h", "n2@h"};
  auto back = split_job::from_doc(j.to_doc());
  REQUIRE(back);
  CHECK(back->to_doc() == j.to_doc());
}
