// /db/_partition/<partition>[/...] (chttpd_db's handle_partition_req): a partitioned database's
// partition, answered from the one range that holds it (shard_map.hpp's placement_hash).
#include "actors/coordinator.hpp"
#include "http/handlers.hpp"
#include "node/json.hpp"

namespace settee {

status validate_partition_name(const std::string& p) {
  if (p.empty()) return {errc::illegal_partition, "Partition must not be empty"};
  if (p[0] == '_') return {errc::illegal_partition, "Partition must not start with an underscore"};
  if (!valid_utf8(p)) return {errc::illegal_partition, "Partition must be valid UTF-8"};
  if (p.find(':') != std::string::npos) return {errc::illegal_partition, "Partition must not contain a colon"};
  return {};
}

namespace {

// GET /db/_partition/<p> (fabric:get_partition_info): its documents, deleted ones and their size,
// counted on a copy of its range from the partition's own ids ("p:" up to "p;"): O(partition).
void partition_info(ctx& c, const db_meta& db, const std::string& partition) {
  if (c.method() != "GET") return c.method_not_allowed("GET,HEAD");
  all_docs_request req;
  req.start = json(partition + ":").dump();
  req.end = json(partition + ";").dump();
  req.inclusive_end = false;
  req.include_docs = true;
  req.with_deleted = true;
  auto page = c.node.coord.first_answer<all_docs_page>(db, c.node.coord.partition_index(db, partition),
                                                       [&](shard_copy& copy) { return copy.all_docs(req); });
  if (!page) return c.error(page.error());
  uint64_t docs = 0, deleted = 0, external = 0;
  for (const all_docs_row& row : page->rows) {
    if (row.deleted) {
      ++deleted;
    } else {
      ++docs;
      external += row.doc.size();
    }
  }
  c.reply(200, json{{"db_name", db.name},
                    {"sizes", {{"active", external}, {"external", external}}},
                    {"partition", partition},
                    {"doc_count", docs},
                    {"doc_del_count", deleted}});
}

}  // namespace

void handle_partition(ctx& c, const db_meta& db) {
  const auto& p = c.path;  // db, _partition, <partition>, ...
  if (!db.partitioned) return c.error(errc::bad_request, "database is not partitioned");
  if (p.size() < 3) return c.error(errc::bad_request, "invalid_partition_req");
  const std::string& partition = p[2];
  if (auto st = validate_partition_name(partition); !st) return c.error(st);
  if (p.size() == 3) return partition_info(c, db, partition);
  if (p[3] == "_all_docs" && p.size() == 4) return handle_partition_all_docs(c, db, partition);
  if (p[3] == "_find" && p.size() == 4) return handle_find(c, db, partition);
  if (p[3] == "_explain" && p.size() == 4) return handle_explain(c, db, partition);
  if (p[3] == "_design" && p.size() == 7 && p[5] == "_view") return handle_view(c, db, p[4], p[6], partition);
  if (p[3] == "_design" && p.size() == 7 && p[5] == "_search") return handle_search(c, db, p[4], p[6], partition);
  if (p[3] == "_design" && p.size() == 7 && p[5] == "_nouveau") return handle_nouveau(c, db, p[4], p[6], partition);
  c.error(errc::bad_request, "invalid_partition_req");
}

}  // namespace settee
