#include "actors/change_notifier.hpp"

namespace settee {

change_notifier::slot& change_notifier::get(const std::string& key) {
  auto& s = slots_[key];
  if (!s) s = std::make_unique<slot>();
  return *s;
}

void change_notifier::notify(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  slot& s = get(key);
  ++s.version;
  s.cv.notify_all();
}

uint64_t change_notifier::version(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  return get(key).version;
}

uint64_t change_notifier::wait(const std::string& key, uint64_t seen, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  slot& s = get(key);
  s.cv.wait_until(lock, deadline, [&] { return s.version != seen; });
  return s.version;
}

}  // namespace settee
