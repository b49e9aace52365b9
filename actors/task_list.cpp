#include "actors/task_list.hpp"

#include <algorithm>

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

index_task::index_task(const task_place& place, json row, uint64_t from, uint64_t to)
    : place_(place), from_(from), to_(to) {
  if (!place_.list || !place_.clk) return;
  started_ms_ = place_.clk->now_ms();
  row["node"] = place_.node;
  row["changes_done"] = 0;
  row["total_changes"] = to_ - from_;
  row["progress"] = 0;
  row["started_on"] = started_ms_ / 1000;
  row["updated_on"] = started_ms_ / 1000;
  id_ = place_.list->add(std::move(row));
}

index_task::~index_task() {
  if (id_) place_.list->remove(id_);
}

void index_task::progress(uint64_t seq) {
  if (!id_) return;
  const uint64_t at = std::min(seq, to_), done = at > from_ ? at - from_ : 0,
                 total = std::max<uint64_t>(to_ - from_, 1);
  const int64_t now = place_.clk->now_ms(), spent = now - started_ms_;
  json fields{{"changes_done", done}, {"progress", done * 100 / total}, {"updated_on", now / 1000}};
  if (done > 0) fields["eta_s"] = static_cast<double>(spent) * static_cast<double>(total - done) / done / 1000.0;
  place_.list->update(id_, fields);
}

}  // namespace settee
