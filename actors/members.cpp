#include "actors/members.hpp"

#include "actors/compactor.hpp"
#include "actors/coordinator.hpp"
#include "actors/resharder.hpp"
#include "actors/task_list.hpp"
#include "actors/view_reader.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

status not_here(const char* what) {
  return {errc::not_implemented, std::string(what) + " is not available on this node"};
}

}  // namespace

result<reshard_state> local_member::get_reshard_state() {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->run_state();
}

status local_member::set_reshard_state(const reshard_state& s) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->set_state(s.running, s.reason);
}

result<std::vector<split_job>> local_member::reshard_jobs() {
  if (!s_.reshard) return std::vector<split_job>{};
  return s_.reshard->jobs();
}

status local_member::set_reshard_job_state(const std::string& id, const reshard_state& s) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->set_job_state(id, s.running, s.reason);
}

status local_member::remove_reshard_job(const std::string& id) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->remove(id);
}

result<split_job> local_member::create_reshard_job(const new_job& j) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->create_requested(j);
}

result<std::string> local_member::export_copy(const std::string& db, const std::string& range, uint64_t since,
                                              bool with_local) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->export_copy(db, range, since, with_local);
}

result<uint64_t> local_member::seal_copy(const std::string& db, const std::string& range, bool seal) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->seal_copy(db, range, seal);
}

status local_member::retire_copy(const std::string& db, const std::string& shard, uint64_t end_seq, bool remove) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->retire_copy(db, shard, end_seq, remove);
}

result<std::pair<uint64_t, std::string>> local_member::split_seal(const std::string& db, const std::string& shard) {
  if (!s_.reshard) return not_here("resharding");
  return s_.reshard->split_seal(db, shard);
}

result<config_reply> local_member::configure(const config_call& call) {
  if (!s_.configure) return not_here("configuration");
  return s_.configure(call);
}

result<node_status> local_member::figures() {
  if (!s_.figures) return not_here("figures");
  return s_.figures();
}

result<std::vector<std::string>> local_member::active_tasks() {
  std::vector<std::string> out;
  if (s_.tasks)
    for (const json& t : s_.tasks->all()) out.push_back(t.dump());
  return out;
}

status local_member::compact(const std::string& db) {
  if (!s_.compaction || !s_.coord) return not_here("compaction");
  auto m = s_.coord->catalog().lookup(db);
  if (!m) return m.error();
  s_.compaction->enqueue_db(*s_.coord, *m);
  return {};
}

status local_member::view_cleanup(const std::string& db, const std::vector<std::string>& keep) {
  if (!s_.views || !s_.coord) return not_here("views");
  auto m = s_.coord->catalog().lookup(db);
  if (!m) return m.error();
  const size_t removed = s_.views->cleanup(*m, keep);
  if (removed) log::info("_view_cleanup of " + db + " removed " + std::to_string(removed) + " index file(s)");
  if (s_.drop_json_indexes) {
    const size_t dropped = s_.drop_json_indexes(*m, std::set<std::string>(keep.begin(), keep.end()));
    if (dropped) log::info("_view_cleanup of " + db + " dropped " + std::to_string(dropped) + " JSON index(es)");
  }
  if (s_.drop_search_indexes) {
    const size_t dropped = s_.drop_search_indexes(*m, std::set<std::string>(keep.begin(), keep.end()));
    if (dropped) log::info("_view_cleanup of " + db + " removed " + std::to_string(dropped) + " search index(es)");
  }
  return {};
}

status local_member::view_compact(const std::string& db, const std::string& ddoc_id, const std::string& rev,
                                  const std::string& ddoc) {
  if (!s_.views || !s_.coord) return not_here("views");
  auto m = s_.coord->catalog().lookup(db);
  if (!m) return m.error();
  auto d = parse_json(ddoc);
  if (!d || !d->is_object()) return status{errc::bad_request, "the design document is not a JSON object"};
  s_.views->compact(*m, views_of(m->key(), m->partitioned, ddoc_id, rev, *d));
  return {};
}

}  // namespace settee
