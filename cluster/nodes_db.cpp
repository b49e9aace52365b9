#include "cluster/nodes_db.hpp"

#include "node/json.hpp"

#include "actors/bridge.hpp"
#include "node/log.hpp"

namespace settee {

nodes_db::nodes_db(shard_registry& shards, const clock& clk, std::string data_dir, membership& members, rpc_node& rpc,
                   std::chrono::milliseconds timeout)
    : shards_(shards),
      clk_(clk),
      path_(std::move(data_dir) + "/_nodes.lmdb"),
      members_(members),
      rpc_(rpc),
      timeout_(timeout) {}

result<shard_handle> nodes_db::handle() {
  return shards_.acquire(path_, 0);
}

db_meta nodes_db::meta() const {
  return db_meta::local_system("_nodes", path_);
}

// Writes the edit `make` builds from the current `_nodes` (nullopt: nothing to write), again when a
// peer's push changed the document between the read and the write (a conflict: at start, the
// seeds and this node's own entry race the other nodes' pushes of `_nodes`).
status nodes_db::edit(const std::function<result<std::optional<doc_update>>(const shard_store::snapshot&)>& make) {
  auto h = handle();
  if (!h) return h.error();
  status st;
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto snap = h->store->read();
    if (!snap) return snap.error();
    auto u = make(*snap);
    if (!u) return u.error();
    if (!*u) return {};
    auto op = std::make_shared<write_op>();
    op->docs.push_back(std::move(**u));
    st = write_one(h->writer, op, timeout_);
    if (st.code != errc::conflict) break;
  }
  if (!st) return st;
  return reload();
}

status nodes_db::add(const peer_address& node, bool seed) {
  nlohmann::json body = {{"host", node.host}, {"rpc_port", node.port}};
  return edit([&](const shard_store::snapshot& snap) -> result<std::optional<doc_update>> {
    doc_update u;
    u.id = node.name;
    u.body = body.dump();
    doc_info d;
    if (snap.doc(node.name, d)) {
      if (seed && d.tree.winner_deleted()) {
        log::warning("seed " + node.name + " was removed from the cluster: not dialling it");
        return std::optional<doc_update>();
      }
      std::string old;
      if (snap.winner_body(d, old) && old == u.body) {
        return std::optional<doc_update>();  // already there: no new revision (seeds are written at every start)
      }
      u.revs.push_back(d.tree.rev(d.tree.winner()));
    }
    return std::optional<doc_update>(std::move(u));
  });
}

status nodes_db::remove(const std::string& name) {
  return edit([&](const shard_store::snapshot& snap) -> result<std::optional<doc_update>> {
    doc_info d;
    if (!snap.doc(name, d) || d.tree.winner_deleted()) return status{errc::not_found, name + " is not a member"};
    doc_update u;
    u.id = name;
    u.deleted = true;
    u.body = "{}";
    u.revs.push_back(d.tree.rev(d.tree.winner()));
    return std::optional<doc_update>(std::move(u));
  });
}

status nodes_db::reload() {
  std::lock_guard<std::mutex> lock(mu_);
  auto h = handle();
  if (!h) return h.error();
  uint64_t seq = h->store->header().update_seq;
  if (seq == loaded_seq_) return {};
  auto snap = h->store->read();
  if (!snap) return snap.error();
  snap->scan_docs("", false, [&](const doc_info& d) {
    if (d.tree.winner_deleted()) {  // removed (here or on another node)
      if (d.id != members_.self() && (known_.erase(d.id) || loaded_seq_ == UINT64_MAX)) {
        rpc_.remove_peer(d.id);
        log::info("member " + d.id + " removed from the cluster");
      }
      return true;
    }
    std::string body;
    if (known_.count(d.id) || !snap->winner_body(d, body)) return true;
    json j = parse_json(body).value_or(json());
    if (!j.is_object() || !j["host"].is_string() || !j["rpc_port"].is_number_unsigned()) {
      log::warning("ignoring unreadable _nodes entry " + d.id);
      return true;
    }
    peer_address p{d.id, j["host"].get<std::string>(), j["rpc_port"].get<uint16_t>()};
    members_.add_member(p.name);
    if (p.name != members_.self()) rpc_.add_peer(p);
    known_.insert(p.name);
    return true;
  });
  loaded_seq_ = seq;
  return {};
}

}  // namespace settee
