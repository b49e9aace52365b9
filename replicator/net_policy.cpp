#include "replicator/net_policy.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace settee {

const char* const default_denied_networks = "127.0.0.0/8, ::1/128, 0.0.0.0/8, ::/128, 169.254.0.0/16, fe80::/10";

namespace {

using address = std::array<uint8_t, 16>;

address mapped_v4(const in_addr& v4) {
  address a{};
  a[10] = a[11] = 0xff;
  std::memcpy(&a[12], &v4, 4);
  return a;
}

bool is_mapped_v4(const address& a) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(a.data(), prefix, 12) == 0;
}

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split_list(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string::npos) comma = list.size();
    if (std::string item = trimmed(list.substr(at, comma - at)); !item.empty()) out.push_back(item);
    at = comma + 1;
  }
  return out;
}

// A host as URLs spell it, as the policy compares it: lower case, no brackets, no trailing dot.
std::string host_key(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  while (!host.empty() && host.back() == '.') host.pop_back();
  std::transform(host.begin(), host.end(), host.begin(), [](unsigned char c) { return std::tolower(c); });
  return host;
}

std::vector<address> resolve_all(const std::string& host, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::vector<address> out;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (rc != 0) {
    error = gai_strerror(rc);
    return out;
  }
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    if (ai->ai_family == AF_INET)
      out.push_back(mapped_v4(reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr));
    else if (ai->ai_family == AF_INET6) {
      address a;
      std::memcpy(a.data(), &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, 16);
      out.push_back(a);
    }
  }
  freeaddrinfo(found);
  return out;
}

// Every address of this machine's interfaces.
std::vector<address> own_addresses() {
  std::vector<address> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr) continue;
    if (i->ifa_addr->sa_family == AF_INET) {
      out.push_back(mapped_v4(reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      address a;
      std::memcpy(a.data(), &reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr, 16);
      out.push_back(a);
    }
  }
  freeifaddrs(list);
  return out;
}

}  // namespace

bool parse_ip(const std::string& text, address& out) {
  in_addr v4;
  in6_addr v6;
  // inet_pton takes only the dotted-quad form (no octal, no short forms): a network is written plainly.
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    out = mapped_v4(v4);
    return true;
  }
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    std::memcpy(out.data(), &v6, 16);
    return true;
  }
  return false;
}

bool in_network(const address& a, const ip_net& n) {
  int bits = n.prefix;
  for (size_t i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    uint8_t mask = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff << (8 - bits));
    if ((a[i] & mask) != (n.addr[i] & mask)) return false;
  }
  return true;
}

std::string ip_text(const address& a) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (is_mapped_v4(a)) {
    inet_ntop(AF_INET, &a[12], buf, sizeof buf);
    return buf;
  }
  inet_ntop(AF_INET6, a.data(), buf, sizeof buf);
  return buf;
}

result<std::vector<ip_net>> parse_networks(const std::string& list) {
  std::vector<ip_net> out;
  for (const std::string& item : split_list(list)) {
    auto slash = item.find('/');
    ip_net n;
    if (!parse_ip(item.substr(0, slash), n.addr)) return status{errc::bad_request, "not an IP network: `" + item + "`"};
    const bool v4 = is_mapped_v4(n.addr) && item.find(':') == std::string::npos;
    const int width = v4 ? 32 : 128;
    int prefix = width;
    if (slash != std::string::npos) {
      const std::string p = item.substr(slash + 1);
      if (p.empty() || p.size() > 3 ||
          !std::all_of(p.begin(), p.end(), [](unsigned char c) { return std::isdigit(c); }) || std::stoi(p) > width)
        return status{errc::bad_request, "not an IP network: `" + item + "`"};
      prefix = std::stoi(p);
    }
    n.prefix = v4 ? prefix + 96 : prefix;
    out.push_back(n);
  }
  return out;
}

result<net_policy> net_policy::parse(const std::string& denied, const std::string& allowed) {
  net_policy p;
  auto nets = parse_networks(denied);
  if (!nets) return status{errc::bad_request, "[replicator] denied_networks: " + nets.error().reason};
  p.denied_ = std::move(*nets);
  for (const std::string& item : split_list(allowed)) {
    address a;
    if (parse_ip(item.substr(0, item.find('/')), a)) {
      auto n = parse_networks(item);
      if (!n) return status{errc::bad_request, "[replicator] allowed_hosts: " + n.error().reason};
      p.allowed_nets_.push_back(n->front());
    } else {
      p.allowed_hosts_.push_back(host_key(item));
    }
  }
  return p;
}

status net_policy::check(const std::string& host, const std::vector<address>& addrs, int port,
                         const std::vector<int>& own_ports, const std::vector<address>& own_addrs,
                         const std::vector<address>& member_addrs) const {
  const std::string key = host_key(host);
  if (std::find(allowed_hosts_.begin(), allowed_hosts_.end(), key) != allowed_hosts_.end()) return {};
  const auto refused = [&](const address& a, const std::string& why) {
    return status{errc::forbidden, "replications of users who are not server admins may not connect to " + host + " (" +
                                       ip_text(a) + "): " + why + " (see [replicator] allowed_hosts)"};
  };
  for (const address& a : addrs) {
    if (std::any_of(allowed_nets_.begin(), allowed_nets_.end(), [&](const ip_net& n) { return in_network(a, n); }))
      continue;
    for (const ip_net& n : denied_)
      if (in_network(a, n)) return refused(a, "a denied network ([replicator] denied_networks)");
    if (std::find(member_addrs.begin(), member_addrs.end(), a) != member_addrs.end())
      return refused(a, "a member of this cluster");
    if (std::find(own_ports.begin(), own_ports.end(), port) != own_ports.end() &&
        std::find(own_addrs.begin(), own_addrs.end(), a) != own_addrs.end())
      return refused(a, "this node's own port");
  }
  return {};
}

result<std::string> net_policy::resolve(const std::string& host, int port) const {
  std::string error;
  const std::string name = host_key(host);
  std::vector<address> addrs = resolve_all(name, error);
  if (addrs.empty()) return status{errc::db_not_found, "cannot resolve " + host + ": " + error};
  std::vector<address> members;
  if (member_hosts_)
    for (const std::string& h : member_hosts_()) {
      std::string ignored;
      for (const address& a : resolve_all(host_key(h), ignored)) members.push_back(a);
    }
  const std::vector<int> ports = own_ports_ ? own_ports_() : std::vector<int>();
  if (auto st = check(host, addrs, port, ports, own_addresses(), members); !st) return st;
  return ip_text(addrs.front());
}

}  // namespace settee
