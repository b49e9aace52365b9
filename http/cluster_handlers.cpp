// Cluster endpoints: POST /db/_sync_shards (internal replication to every connected node that has a
// copy of the database's ranges).
#include "http/handlers.hpp"
#include "node/log.hpp"
#include "wire/json_util.hpp"

namespace settee {

void handle_sync_shards(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  json pushed = json::array();
  bool all_ok = true;
  {
    for (auto& row : c.node.cluster->sync(db, c.node.push_timeout)) {
      json r = {{"node", row.node}, {"range", row.range}};
      if (row.st) {
        r["docs"] = row.docs;
        r["applied"] = row.applied;
        r["seq"] = row.seq;
      } else {
        add_error(r, row.st);
        all_ok = false;
      }
      pushed.push_back(r);
    }
  }
  c.reply(200, json{{"ok", all_ok}, {"pushed", pushed}});
}

void share_catalog(ctx& c) {
  for (auto& row : c.node.cluster->sync(c.node.coord.catalog().dbs_meta(), c.node.catalog_push_timeout)) {
    // The periodic sweep retries; the database works meanwhile (a copy that has not heard of it
    // looks again when the first write for it arrives).
    if (!row.st) log::warning("pushing _dbs to " + row.node + " failed: " + row.st.reason);
  }
}

}  // namespace settee
