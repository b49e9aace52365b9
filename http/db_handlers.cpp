// Database-level endpoints: /db (create, delete, info, POST a doc), _security, _shards,
// _ensure_full_commit.
#include <algorithm>
#include <map>
#include <set>

#include "actors/all_docs_reader.hpp"
#include "actors/clustered_seq.hpp"
#include "actors/compactor.hpp"
#include "actors/doc_render.hpp"
#include "actors/shard_map.hpp"
#include "actors/view_reader.hpp"
#include "http/auth.hpp"
#include "http/design_function.hpp"
#include "http/handlers.hpp"
#include "node/log.hpp"

namespace settee {

const json& read_security(const db_meta& db) {
  return *db.security;
}

std::string seq_token(const db_meta& db, const std::vector<coordinator::range_summary>& ranges) {
  std::vector<seq_entry> entries;
  for (size_t i = 0; i < db.q; ++i) {
    const shard_summary& s = ranges[i].s;
    entries.push_back({db.ranges[i], ranges[i].node, s.uuid.substr(0, uuid_prefix_length), s.update_seq});
  }
  return encode_seq(entries);
}

namespace {

result<uint32_t> positive_param(ctx& c, const char* name, uint32_t def) {
  if (!c.has(name)) return def;
  std::string v = c.param(name);
  char* end = nullptr;
  long long n = v.empty() ? 0 : std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || n <= 0 || n > 1024) {
    return status{errc::bad_request, std::string("The `") + name + "` value should be a positive integer."};
  }
  return static_cast<uint32_t>(n);
}

void create_db(ctx& c, const std::string& name) {
  if (auto st = authenticator::require_server_admin(c.user); !st) return c.error(st);
  if (auto st = validate_db_name(name); !st) return c.error(st);
  std::vector<std::string> members = c.node.cluster->all();
  auto q = positive_param(c, "q", c.node.default_q);
  auto n = positive_param(c, "n", static_cast<uint32_t>(std::min<size_t>(3, members.size())));
  if (auto e = first_error(q, n)) return c.error(*e);
  bool partitioned = false;
  if (c.has("partitioned")) {
    std::string v = c.param("partitioned");
    if (v != "true" && v != "false")
      return c.error(errc::bad_request, "`partitioned` parameter can only be set to true or false.");
    partitioned = v == "true";
  }
  if (partitioned) {
    if (name.front() == '_') return c.error(errc::bad_request, "Cannot partition a system database");
    // Every member places the documents by partition, or some would place them by id.
    for (const std::string& m : members) {
      auto member = c.node.cluster->get(m);
      if (!member || !member->places_partitions())
        return c.error(errc::bad_request, "Cannot create a partitioned database: member " + m +
                                              " runs a release without partitioned databases");
    }
  }
  // More copies than nodes: one on each node, as CouchDB (mem3 places at most one per node).
  const uint32_t copies = std::min<uint32_t>(*n, static_cast<uint32_t>(members.size()));
  // Look at `_dbs` as peers pushed it: the name may have been taken on another node a moment ago.
  if (auto st = c.node.coord.catalog().reload(); !st) return c.error(st);
  auto db = c.node.coord.catalog().create(name, *q, copies, members, c.node.new_db_security, partitioned);
  if (!db) return c.error(db.error());
  share_catalog(c);
  c.reply(201, json{{"ok", true}});
  c.set_location({name});
}

void delete_db(ctx& c, const std::string& name) {
  if (auto st = authenticator::require_server_admin(c.user); !st) return c.error(st);
  if (c.has("rev")) {
    return c.error(errc::bad_request,
                   "You tried to DELETE a database with a ?=rev parameter. Did you mean to DELETE a document instead?");
  }
  if (auto st = c.node.coord.catalog().reload(); !st) return c.error(st);
  if (auto st = c.node.coord.catalog().remove(name); !st) return c.error(st);
  share_catalog(c);
  c.reply(200, json{{"ok", true}});
}

}  // namespace

result<json> db_info_json(ctx& c, const db_meta& db) {
  auto ranges = c.node.coord.summaries(db);
  if (!ranges) return ranges.error();
  uint64_t docs = 0, deleted = 0, external = 0, file = 0, purges = 0;
  for (auto& r : *ranges) {
    purges += r.s.purge_seq;
    docs += r.s.doc_count;
    deleted += r.s.doc_del_count;
    external += r.s.external_size;
    file += r.s.file_size;
  }
  uint32_t quorum = db.n / 2 + 1;
  return json{{"instance_start_time", std::to_string(db.created)},
              {"db_name", db.name},
              {"purge_seq", std::to_string(purges)},
              {"update_seq", seq_token(db, *ranges)},
              {"sizes", {{"file", file}, {"external", external}, {"active", std::min(file, external)}}},
              {"props", db.partitioned ? json{{"partitioned", true}} : json::object()},
              {"doc_del_count", deleted},
              {"doc_count", docs},
              {"disk_format_version", 8},
              {"compact_running", c.node.compaction && c.node.compaction->running(db.name)},
              {"cluster", {{"q", db.q}, {"n", db.n}, {"w", quorum}, {"r", quorum}}}};
}

namespace {

void db_info(ctx& c, const db_meta& db) {
  auto info = db_info_json(c, db);
  if (!info) return c.error(info.error());
  c.reply(200, *info);
}

}  // namespace

void handle_db(ctx& c, const std::string& name) {
  if (c.method() == "PUT") return create_db(c, name);
  if (c.method() == "DELETE") return delete_db(c, name);
  if (c.method() != "GET" && c.method() != "POST") return c.method_not_allowed("DELETE,GET,HEAD,POST");
  auto db = c.node.coord.catalog().lookup(name);
  if (!db) return c.error(db.error());
  const json& security = read_security(*db);
  status allowed =
      name == "_users" ? authenticator::require_server_admin(c.user) : authenticator::require_member(c.user, security);
  if (!allowed) return c.error(allowed);
  if (c.method() == "GET") return db_info(c, *db);
  // POST /db: create a document with a server-generated id unless it brings its own.
  if (auto st = c.require_json_content(); !st) return c.error(st);
  c.security = &security;
  handle_doc(c, *db, "");
}

void handle_security(ctx& c, const db_meta& db, const json& security) {
  if (c.method() == "GET") return c.reply(200, security);
  if (c.method() != "PUT") return c.method_not_allowed("PUT,GET");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  status refusal{errc::bad_request, "Security object must be a JSON object"};
  auto body = parse_client_json(c.req.body, refusal);
  if (!body) return c.error(body.error());
  if (!body->is_object()) return c.error(refusal);
  for (const char* section : {"admins", "members"}) {
    if (!body->contains(section)) continue;
    const json& s = (*body)[section];
    bool ok = s.is_object();
    for (const char* list : {"names", "roles"}) {
      if (ok && s.contains(list)) {
        ok = s[list].is_array() &&
             std::all_of(s[list].begin(), s[list].end(), [](const json& x) { return x.is_string(); });
      }
    }
    if (!ok)
      return c.error(errc::bad_request,
                     std::string("`") + section + "` must have `names` and `roles` as lists of strings");
  }
  if (auto st = c.node.coord.catalog().set_security(db.name, body->dump()); !st) return c.error(st);
  share_catalog(c);  // every node enforces it from its own `_dbs` copy
  c.reply(200, json{{"ok", true}});
}

void handle_shards(ctx& c, const db_meta& db) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  auto copies = [&](size_t i) { return db.everywhere() ? json(c.node.cluster->all()) : json(db.nodes[i]); };
  if (c.path.size() == 3) {
    size_t i = c.node.coord.shard_index(db, c.path[2]);
    return c.reply(200, json{{"range", db.ranges[i].name()}, {"nodes", copies(i)}});
  }
  json shards = json::object();
  for (size_t i = 0; i < db.q; ++i) shards[db.ranges[i].name()] = copies(i);
  c.reply(200, json{{"shards", shards}});
}

void handle_ensure_full_commit(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);  // as CouchDB: no cross-site simple POST
  // Every acknowledged write is already synced: nothing to flush.
  c.reply(201, json{{"ok", true}, {"instance_start_time", std::to_string(db.created)}});
}

// As CouchDB's fabric reaches every shard file: a node that cannot be asked now is logged as
// `what` was not started there, one of an older release skipped.
void on_every_holder(ctx& c, const db_meta& db, const std::string& what,
                     const std::function<status(cluster_member&)>& ask) {
  std::set<std::string> holders{c.node.node_name};
  for (const auto& copies : db.nodes) holders.insert(copies.begin(), copies.end());
  for (const std::string& n : holders) {
    auto m = c.node.cluster->get(n);
    status st = m ? ask(*m) : status{errc::not_found, "not a member"};
    if (!st && st.code != errc::not_implemented)
      log::warning(what + " of " + db.name + " on " + n + " was not started: " + st.reason);
  }
}

// POST /db/_compact: this node's copies of the database drop their older revisions' bodies in the
// background (actors/compactor.hpp). POST /db/_compact/ddoc: the index files of the design
// document's views are replaced by compacted copies (view_reader::compact). Both on every node
// holding a copy; 202 once asked.
void handle_compact(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  if (c.path.size() >= 3) {  // a design document's views: it must exist (CouchDB opens it)
    const std::string ddoc_id = "_design/" + c.path[2];
    auto d = open_design_doc(c, db, ddoc_id);
    if (!d) return c.error(d.error());
    on_every_holder(c, db, "view compaction",
                    [&](cluster_member& m) { return m.view_compact(db.name, ddoc_id, d->rev.str(), d->text); });
    return c.reply(202, json{{"ok", true}});
  }
  on_every_holder(c, db, "compaction", [&](cluster_member& m) { return m.compact(db.name); });
  c.reply(202, json{{"ok", true}});
}

// POST /db/_view_cleanup: every node holding a copy of the database removes the index files no
// design document's views name any more (as CouchDB's fabric cleans every node's; a node that
// cannot be asked now is logged and keeps its files until the next cleanup).
void handle_view_cleanup(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto listing = list_design_docs(c.node.coord, db, true);
  if (!listing) return c.error(listing.error());
  std::vector<std::string> keep = kept_signatures(db, *listing);
  on_every_holder(c, db, "_view_cleanup", [&](cluster_member& m) { return m.view_cleanup(db.name, keep); });
  c.reply(202, json{{"ok", true}});
}

// A _revs_limit body (a JSON integer, 1 to 1000000), from a client or another node's coordinator.
result<uint32_t> parse_revs_limit(const std::string& body) {
  auto v = parse_json(body);
  if (!v || !v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > 1000000) {
    return status{errc::bad_request, "`revs_limit` must be a positive integer (at most 1000000)"};
  }
  return static_cast<uint32_t>(v->get<int64_t>());
}

void handle_revs_limit(ctx& c, const db_meta& db) {
  if (c.method() == "GET") {
    auto limit = c.node.coord.revs_limit(db);
    if (!limit) return c.error(limit.error());
    return c.reply_raw(200, std::to_string(*limit) + "\n");
  }
  if (c.method() != "PUT") return c.method_not_allowed("GET,PUT");
  auto limit = parse_revs_limit(c.req.body);
  if (!limit) return c.error(limit.error());
  reply_set_on_copies(c, c.node.coord.set_revs_limit(db, *limit));
}

void reply_set_on_copies(ctx& c, const coordinator::copies_outcome& set) {
  // Copies that could not take it are listed, as DELETE /db/_time_seq does; none could: 503.
  if (!set.failed.empty() && set.failed.size() == set.asked)
    return c.error(errc::unavailable, set.failed.front().reason);
  json out = {{"ok", true}};
  for (auto& f : set.failed) out["unavailable"].push_back({{"range", f.range}, {"node", f.node}, {"reason", f.reason}});
  c.reply(set.failed.empty() ? 200 : 202, out);
}

namespace {

json bins_json(const std::vector<std::pair<int64_t, uint64_t>>& bins) {
  json out = json::array();
  for (auto& [t, n] : bins) out.push_back({time_seq::format_time(t), n});
  return out;
}

}  // namespace

void handle_time_seq(ctx& c, const db_meta& db) {
  if (c.method() != "GET" && c.method() != "DELETE") return c.method_not_allowed("GET,DELETE");
  bool reset = c.method() == "DELETE";
  json ranges = json::object(), inherited = json::object();
  json unavailable = json::array();
  // The database's histogram: one copy per range (the first that answered), each counting the
  // changes it does not share with another range (a split's children share their parent's).
  std::map<int64_t, uint64_t> database;
  std::set<std::string> counted;
  for (auto& copy : c.node.coord.time_seqs(db, reset)) {
    if (!copy.state) {
      unavailable.push_back({{"range", copy.range}, {"node", copy.node}, {"reason", copy.state.error().reason}});
      continue;
    }
    const time_seq::tseq& t = copy.state->bins;
    const uint64_t top = copy.state->update_seq;
    ranges[copy.range][copy.node] = bins_json(time_seq::histogram(t, top));
    if (t.inherited_seq > 0)
      inherited[copy.range][copy.node] = bins_json(time_seq::histogram(t, top, 0, t.inherited_seq));
    if (!counted.insert(copy.range).second) continue;
    for (auto& [at, n] : time_seq::histogram(t, top, t.counted_from)) database[at] += n;
  }
  if (reset) {
    json out = {{"ok", true}};
    if (!unavailable.empty()) out["unavailable"] = unavailable;
    return c.reply(unavailable.empty() ? 200 : 202, out);
  }
  json out = {{"time_seq", ranges}};
  if (!inherited.empty()) {  // split: CouchDB's shape alone would count the parent's changes twice
    out["inherited"] = inherited;
    out["database"] = bins_json({database.begin(), database.end()});
  }
  if (!unavailable.empty()) out["unavailable"] = unavailable;
  c.reply(200, out);
}

}  // namespace settee
