#include "actors/task_list.hpp"

namespace settee {

uint64_t task_list::add(json task) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_++;
  task["pid"] = "<settee." + std::to_string(id) + ">";
  tasks_.emplace(id, std::move(task));
  return id;
}

void task_list::update(uint64_t id, const json& fields) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  for (auto& [k, v] : fields.items()) it->second[k] = v;
}

void task_list::remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  tasks_.erase(id);
}

json task_list::all() const {
  std::lock_guard<std::mutex> lock(mu_);
  json out = json::array();
  for (auto& [id, t] : tasks_) out.push_back(t);
  return out;
}

}  // namespace settee
