#include "actors/reshard_job.hpp"

#include <algorithm>

#include "actors/db_catalog.hpp"
#include "actors/shard_map.hpp"
#include "storage/time_seq.hpp"

namespace settee {

namespace {

json time_or_null(int64_t t) {
  return t ? json(time_seq::format_time(t)) : json(nullptr);
}

size_t state_index(const std::string& s) {
  auto& all = split_state_names();
  return static_cast<size_t>(std::find(all.begin(), all.end(), s) - all.begin());
}

int64_t time_of(const json& t) {
  if (!t.is_string()) return 0;
  return time_seq::parse_time(t.get<std::string>()).value_or(0);
}

// "shards/<range>/<db>.<suffix>" into db and "<range>.<suffix>" (database names hold no dot).
bool parse_shard_name(const std::string& name, std::string& db, std::string& id) {
  if (name.rfind("shards/", 0) != 0) return false;
  size_t slash = name.find('/', 7), dot = name.rfind('.');
  if (slash == std::string::npos || dot == std::string::npos || dot < slash) return false;
  db = name.substr(slash + 1, dot - slash - 1);
  id = name.substr(7, slash - 7) + name.substr(dot);
  return true;
}

}  // namespace

const std::vector<std::string>& split_state_names() {
  static const std::vector<std::string> all{"new",     "initial_copy",    "topoff1",         "build_indices",
                                            "topoff2", "copy_local_docs", "update_shardmap", "wait_source_close",
                                            "topoff3", "source_delete",   "completed"};
  return all;
}

std::vector<std::string> split_job::targets() const {
  if (move()) return {source};
  auto range = shard_range::parse(source.substr(0, source.find('.')));
  auto halves = range ? range->halves() : std::nullopt;
  if (!halves) return {};
  return {halves->first.name() + "." + std::to_string(child_suffix),
          halves->second.name() + "." + std::to_string(child_suffix)};
}

json split_job::to_api(const std::string& node) const {
  json hist = json::array();
  for (auto& e : history) {
    hist.push_back({{"timestamp", time_seq::format_time(e.time)},
                    {"type", e.type},
                    {"detail", e.detail.empty() ? json(nullptr) : json(e.detail)}});
  }
  json info = json::object();
  if (!reason.empty()) info["reason"] = reason;
  json out{{"id", id},
           {"type", type},
           {"job_state", job_state},
           {"split_state", split_state},
           {"state_info", info},
           {"node", node},
           {"start_time", time_or_null(start_time)},
           {"update_time", time_or_null(update_time)},
           {"history", hist}};
  if (move()) {  // spec 11.6: the shard, and the nodes it moves between
    out["shard"] = shard_name(db, source);
    out["source"] = from_node;
    out["target"] = node;
    return out;
  }
  json target = json::array();
  for (auto& t : targets()) target.push_back(shard_name(db, t));
  out["source"] = shard_name(db, source);
  out["target"] = std::move(target);
  return out;
}

json split_job::to_doc() const {
  json hist = json::array();
  for (auto& e : history) hist.push_back({e.time, e.type, e.detail});
  return json{{"id", id},
              {"db", db},
              {"created", created},
              {"source", source},
              {"child_suffix", child_suffix},
              {"job_state", job_state},
              {"split_state", split_state},
              {"reason", reason},
              {"stopped_by_user", stopped_by_user},
              {"start_time", start_time},
              {"update_time", update_time},
              {"history", hist},
              {"type", type},
              {"from_node", from_node},
              {"end_seq", end_seq},
              {"leader", leader},
              {"copies", copies}};
}

std::optional<split_job> split_job::from_doc(const json& j) {
  try {
    split_job s;
    s.id = j.at("id").get<std::string>();
    s.db = j.at("db").get<std::string>();
    s.created = j.at("created").get<int64_t>();
    s.source = j.at("source").get<std::string>();
    s.child_suffix = j.at("child_suffix").get<int64_t>();
    s.job_state = j.at("job_state").get<std::string>();
    s.split_state = j.at("split_state").get<std::string>();
    s.reason = j.at("reason").get<std::string>();
    s.stopped_by_user = j.at("stopped_by_user").get<bool>();
    s.start_time = j.at("start_time").get<int64_t>();
    s.update_time = j.at("update_time").get<int64_t>();
    s.type = j.value("type", "split");
    s.from_node = j.value("from_node", "");
    s.end_seq = j.value("end_seq", uint64_t{0});
    s.leader = j.value("leader", "");
    s.copies = j.value("copies", std::vector<std::string>{});
    if (s.type != "split" && s.type != "move") return std::nullopt;
    for (auto& e : j.at("history"))
      s.history.push_back({e.at(0).get<int64_t>(), e.at(1).get<std::string>(), e.at(2).get<std::string>()});
    if (state_index(s.split_state) == split_state_names().size()) return std::nullopt;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<split_job> split_job::from_api(const json& j) {
  try {
    split_job s;
    s.id = j.at("id").get<std::string>();
    s.type = j.value("type", "split");
    s.job_state = j.at("job_state").get<std::string>();
    s.split_state = j.at("split_state").get<std::string>();
    const json& info = j.at("state_info");
    if (info.is_object() && info.contains("reason") && info["reason"].is_string()) s.reason = info["reason"];
    s.start_time = time_of(j.at("start_time"));
    s.update_time = time_of(j.at("update_time"));
    for (const json& e : j.at("history")) {
      const json& detail = e.at("detail");
      s.history.push_back({time_of(e.at("timestamp")), e.at("type").get<std::string>(),
                           detail.is_string() ? detail.get<std::string>() : ""});
    }
    if (s.type == "move") {
      if (!parse_shard_name(j.at("shard").get<std::string>(), s.db, s.source)) return std::nullopt;
      s.from_node = j.at("source").get<std::string>();
    } else if (s.type == "split") {
      if (!parse_shard_name(j.at("source").get<std::string>(), s.db, s.source)) return std::nullopt;
      const json& targets = j.at("target");
      std::string db, child;
      if (!targets.empty() && parse_shard_name(targets.at(0).get<std::string>(), db, child))
        s.child_suffix = std::strtoll(child.c_str() + child.find('.') + 1, nullptr, 10);
    } else {
      return std::nullopt;
    }
    return s;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace settee
