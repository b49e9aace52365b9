// Cluster endpoints: POST /db/_sync_shards (internal replication to every connected node that has a
// copy of the database's ranges).
#include "actors/internal_replication.hpp"
#include "cluster/membership.hpp"
#include "cluster/rpc_node.hpp"
#include "http/handlers.hpp"

namespace settee {

void handle_sync_shards(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  json pushed = json::array();
  bool all_ok = true;
  if (c.node.rpc) {
    const auto timeout = std::chrono::seconds(30);
    for (const std::string& peer : c.node.members->all_nodes()) {
      if (peer == c.node.node_name) continue;
      for (size_t i = 0; i < db.q; ++i) {
        std::string range = db.ranges[i].name();
        json row = {{"node", peer}, {"range", range}};
        auto info = c.node.rpc->shard_info(peer, db.name, range, std::chrono::seconds(5));
        auto source = c.node.coord.shard(db, i);
        if (!info || !source) {
          const status& st = !info ? info.error() : source.error();
          row["error"] = error_name_of(st.code);
          row["reason"] = st.reason;
          all_ok = false;
          pushed.push_back(row);
          continue;
        }
        replication_target target;
        target.uuid = info->uuid;
        target.apply = [&c, &db, peer, range, timeout](std::vector<doc_update>& updates) {
          return c.node.rpc->apply_changes(peer, db.name, range, updates, timeout);
        };
        auto r = push_changes(*source, target, timeout);
        if (r) {
          row["docs"] = r->docs;
          row["seq"] = r->to_seq;
        } else {
          row["error"] = error_name_of(r.error().code);
          row["reason"] = r.error().reason;
          all_ok = false;
        }
        pushed.push_back(row);
      }
    }
  }
  c.reply(200, json{{"ok", all_ok}, {"pushed", pushed}});
}

}  // namespace settee
