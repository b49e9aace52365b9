#include "cluster/legacy_calls.hpp"

#include "node/json.hpp"

namespace settee {

namespace {

std::pair<int, std::string> error_answer(const status& st) {
  return {http_status_of(st.code), json{{"error", error_name_of(st.code)}, {"reason", st.reason}}.dump()};
}

const std::pair<int, std::string> ok_answer{200, R"({"ok":true})"};

}  // namespace

std::pair<int, std::string> answer_reshard_request(cluster_member& self, const std::string& method,
                                                   const std::string& id, bool state, const std::string& body) {
  if (state && method == "PUT") {
    auto b = parse_json(body);
    if (!b || !b->is_object() || !member(*b, "state").is_string())
      return error_answer({errc::bad_request, "Expected a `state` field"});
    const json& reason = member(*b, "reason");
    reshard_state want{(*b)["state"] == "running", reason.is_string() ? reason.get<std::string>() : ""};
    status st = self.set_reshard_job_state(id, want);
    return st ? ok_answer : error_answer(st);
  }
  if (method == "DELETE") {
    status st = self.remove_reshard_job(id);
    return st ? ok_answer : error_answer(st);
  }
  auto jobs = self.reshard_jobs();
  if (!jobs) return error_answer(jobs.error());
  if (id.empty()) {
    json list = json::array();
    for (const split_job& j : *jobs) list.push_back(j.to_api(self.name()));
    return {200, list.dump()};
  }
  for (const split_job& j : *jobs) {
    if (j.id != id) continue;
    if (!state) return {200, j.to_api(self.name()).dump()};
    return {200, json{{"state", j.job_state}, {"reason", j.reason.empty() ? json(nullptr) : json(j.reason)}}.dump()};
  }
  return error_answer({errc::not_found, "Job not found"});
}

result<std::string> answer_create_job(cluster_member& self, const std::string& body) {
  auto b = parse_json(body);
  bool typed = b && b->is_object();
  for (const char* field : {"type", "db", "shard", "source", "leader"})
    typed = typed && (!b->contains(field) || (*b)[field].is_string());
  if (!typed || (b->contains("suffix") && !(*b)["suffix"].is_number_integer()))
    return status{errc::bad_request, "createJob: a JSON object with string fields and an integer suffix"};
  new_job want{b->value("type", ""),           b->value("db", ""),     b->value("shard", ""),
               b->value("suffix", int64_t{0}), b->value("leader", ""), b->value("source", "")};
  auto made = self.create_reshard_job(want);
  if (!made) return made.error();
  return made->to_api(self.name()).dump();
}

}  // namespace settee
