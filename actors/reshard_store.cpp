#include "actors/reshard_store.hpp"

#include "node/log.hpp"

namespace settee {

namespace {
constexpr const char* job_prefix = "_local/reshard-job/";
constexpr const char* state_doc = "_local/reshard-state";
}  // namespace

result<reshard_store::saved> reshard_store::load() const {
  auto docs = store_.load("_local/reshard");
  if (!docs) return docs.error();
  saved out;
  for (auto& [id, body] : *docs) {
    if (id == state_doc) {
      out.state.running = body.value("state", "running") == "running";
      out.state.reason = body.value("reason", "");
    } else if (id.rfind(job_prefix, 0) == 0) {
      if (auto j = split_job::from_doc(body))
        out.jobs.push_back(std::move(*j));
      else
        log::error("ignoring unreadable reshard job " + id);
    }
  }
  return out;
}

status reshard_store::save(const split_job& j) {
  return store_.put(job_prefix + j.id, j.to_doc());
}

status reshard_store::save(const reshard_state& s) {
  return store_.put(state_doc, json{{"state", s.running ? "running" : "stopped"}, {"reason", s.reason}});
}

status reshard_store::remove(const std::string& job_id) {
  return store_.remove(job_prefix + job_id);
}

}  // namespace settee
