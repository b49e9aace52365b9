#include "cluster/membership.hpp"

#include <algorithm>
#include <cstdlib>

namespace settee {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

result<std::vector<peer_address>> parse_seeds(const std::string& text) {
  std::vector<peer_address> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string entry = trim(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (entry.empty()) {
      if (comma == std::string::npos && out.empty()) break;  // "" means no seeds
      return status{errc::bad_request, "empty entry in [cluster] seeds"};
    }
    size_t at = entry.find('@'), colon = entry.rfind(':');
    if (at == std::string::npos || at == 0 || colon == std::string::npos || colon < at + 2 ||
        colon + 1 >= entry.size()) {
      return status{errc::bad_request, "seed `" + entry + "` is not name@host:rpcport"};
    }
    std::string port_text = entry.substr(colon + 1);
    char* end = nullptr;
    long port = std::strtol(port_text.c_str(), &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535) {
      return status{errc::bad_request, "seed `" + entry + "` has an invalid port"};
    }
    peer_address p;
    p.name = entry.substr(0, colon);
    p.host = entry.substr(at + 1, colon - at - 1);
    p.port = static_cast<uint16_t>(port);
    out.push_back(std::move(p));
  }
  return out;
}

void membership::add_member(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name != self_) members_.emplace(name, false);
}

void membership::remove_member(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  members_.erase(name);
  info_.erase(name);
}

void membership::connected(const std::string& name, peer_info info) {
  std::lock_guard<std::mutex> lock(mu_);
  if (name == self_) return;
  members_[name] = true;
  info_[name] = std::move(info);
}

void membership::disconnected(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(name);
  if (it != members_.end()) it->second = false;
}

bool membership::is_connected(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = members_.find(name);
  return name == self_ || (it != members_.end() && it->second);
}

bool membership::is_member(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return name == self_ || members_.count(name) > 0;
}

bool membership::has_feature(const std::string& name, const std::string& feature) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = info_.find(name);
  if (it == info_.end()) return false;
  const auto& f = it->second.features;
  return std::find(f.begin(), f.end(), feature) != f.end();
}

std::vector<std::string> membership::all_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out{self_};
  for (auto& [name, up] : members_)
    if (up) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> membership::cluster_nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out{self_};
  for (auto& [name, up] : members_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace settee
