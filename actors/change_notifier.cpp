#include "actors/change_notifier.hpp"

namespace settee {

void change_notifier::notify(const std::string& key) {
  if (observe_) observe_(key);
  std::unordered_map<uint64_t, std::function<void()>> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    // Nobody asked for this key's version yet: nothing to wake, nothing to remember (a commit that
    // lands after retire() must not bring a deleted database's slot back).
    if (it == slots_.end()) return;
    ++it->second.version;
    fire.swap(it->second.watches);
    watchers_ -= fire.size();
  }
  for (auto& [id, wake] : fire) wake();
}

void change_notifier::retire(const std::string& key) {
  std::unordered_map<uint64_t, std::function<void()>> fire;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = slots_.find(key);
    if (it == slots_.end()) return;
    fire.swap(it->second.watches);
    watchers_ -= fire.size();
    slots_.erase(it);
  }
  for (auto& [id, wake] : fire) wake();
}

uint64_t change_notifier::version(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return slots_[key].version;
}

uint64_t change_notifier::watch(const std::string& key, uint64_t seen, std::function<void()> wake) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    slot& s = slots_[key];
    if (s.version == seen) {
      uint64_t id = next_id_++;
      s.watches.emplace(id, std::move(wake));
      ++watchers_;
      return id;
    }
  }
  wake();
  return 0;
}

void change_notifier::unwatch(const std::string& key, uint64_t id) {
  if (id == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = slots_.find(key);
  if (it != slots_.end()) watchers_ -= it->second.watches.erase(id);
}

size_t change_notifier::watchers() const {
  std::lock_guard<std::mutex> lock(mu_);
  return watchers_;
}

}  // namespace settee
