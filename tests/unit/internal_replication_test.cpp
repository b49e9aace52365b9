// Internal replication between two shard copies owned by real replica actors.
#include <doctest/doctest.h>
#include <caf/all.hpp>

#include "actors/bridge.hpp"
#include "actors/catalog_entry.hpp"
#include "actors/internal_replication.hpp"
#include "registry_fixture.hpp"

using namespace settee;

namespace {

std::vector<doc_result> put_docs(const shard_handle& h, std::vector<doc_update> docs) {
  auto op = std::make_shared<write_op>();
  op->docs = std::move(docs);
  REQUIRE(write_all({{h.writer, op}}, std::chrono::seconds(10)));
  REQUIRE(op->st);
  return op->results;
}

doc_update doc(const std::string& id, const std::string& body, std::vector<rev_id> revs = {}) {
  doc_update u;
  u.id = id;
  u.body = body;
  u.revs = std::move(revs);
  return u;
}

}  // namespace

TEST_CASE("push_changes copies everything once, checkpoints, and resumes from the checkpoint") {
  registry_fixture f;
  temp_dir& dir = f.dir;
  shard_registry& shards = f.shards;
  auto source = shards.acquire(dir.path + "/n1/range.db", 1);
  auto target = shards.acquire(dir.path + "/n2/range.db", 1);
  REQUIRE(source.ok());
  REQUIRE(target.ok());

  std::vector<doc_update> first;
  for (int i = 0; i < 25; ++i) first.push_back(doc("d" + std::to_string(i), "{\"i\":" + std::to_string(i) + "}"));
  auto revs = put_docs(*source, first);

  auto to = local_target(*target, std::chrono::seconds(10));
  auto r1 = push_changes(*source, to, std::chrono::seconds(10), 10);  // 3 batches
  REQUIRE(r1.ok());
  CHECK(r1->from_seq == 0);
  CHECK(r1->to_seq == 25);
  CHECK(r1->docs == 25);
  CHECK(target->store->header().doc_count == 25);
  CHECK(read_checkpoint(*source, target->store->header().shard_uuid) == 25);

  auto r2 = push_changes(*source, to, std::chrono::seconds(10));
  REQUIRE(r2.ok());
  CHECK(r2->docs == 0);  // nothing new: nothing sent

  put_docs(*source, {doc("d0", "{\"i\":100}", {revs[0].rev}), doc("new", "{}")});
  auto r3 = push_changes(*source, to, std::chrono::seconds(10));
  REQUIRE(r3.ok());
  CHECK(r3->from_seq == 25);
  CHECK(r3->docs == 2);
  auto snap = target->store->read();
  doc_info d;
  REQUIRE(snap->doc("d0", d));
  std::string body;
  REQUIRE(snap->body("d0", d.tree.rev(d.tree.winner()), body));
  CHECK(body == "{\"i\":100}");
  CHECK(target->store->header().doc_count == 26);
  // The handles and the snapshot go out of scope before the registry closes everything.
}

TEST_CASE("a split gives each sync checkpoint a twin for the child of its target, purge positions reset") {
  const std::string target(32, 'b');
  const shard_range child{0, 0x7fffffff};
  local_doc cp{checkpoint_id(target), 3, R"({"seq":42,"history":[[42,40],[7,5]],"purge_seq":4,"target_purge_seq":2})"};
  auto twin = carry_sync_checkpoint(cp, child);
  REQUIRE(twin);
  CHECK(twin->id == checkpoint_id(split_child_uuid(target, child)));
  CHECK(twin->rev == 3);  // the next save names the revision it replaces
  CHECK(json::parse(twin->body) ==
        json::parse(R"({"seq":42,"history":[[42,40],[7,5]],"purge_seq":0,"target_purge_seq":0})"));
  CHECK(!carry_sync_checkpoint(local_doc{"_local/app-state", 1, R"({"seq":1})"}, child));
  CHECK(!carry_sync_checkpoint(local_doc{checkpoint_id(target), 1, "not json"}, child));
}

TEST_CASE("add_to_history keeps the newest entries and thins older ones, never dropping the oldest") {
  std::vector<std::pair<uint64_t, uint64_t>> h;
  for (uint64_t k = 1; k <= 1000; ++k) add_to_history(h, {k * 10, k * 7}, 32);
  REQUIRE(h.size() == 32);
  for (size_t i = 0; i < 16; ++i) CHECK(h[i] == std::make_pair((1000 - i) * 10, (1000 - i) * 7));
  CHECK(h.back() == std::make_pair(uint64_t{10}, uint64_t{7}));                // the first push
  for (size_t i = 1; i < h.size(); ++i) CHECK(h[i].second < h[i - 1].second);  // still newest first
  // Older entries are spread out evenly, not bunched at either end.
  for (size_t i = 17; i < h.size(); ++i) CHECK(h[i - 1].second - h[i].second < 1500);
  // Every target seq since the first push has an entry at or below it.
  for (uint64_t seq = 7; seq <= 7000; seq += 13) {
    bool found = false;
    for (auto& [source, target] : h) found = found || target <= seq;
    CHECK(found);
  }
}
