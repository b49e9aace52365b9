// net_policy: where a replication owned by a user who is not a server admin may connect
// ([replicator] denied_networks and allowed_hosts; docs/security.md "Where replications connect").
// A host is refused when any address it resolves to lies in a denied network (by default
// loopback, unspecified and link-local, where cloud metadata services live), belongs to a cluster member, or is
// this node's own HTTP or RPC port on an address of this machine; allowed_hosts lets a host or
// network through all the same. Addresses are compared after resolution (getaddrinfo), so every
// spelling of an address is the address: decimal (2130706433), octal (0177.0.0.1), short (127.1),
// `0`, IPv4-mapped IPv6 (::ffff:127.0.0.1), a trailing dot, a name that resolves to it; and the
// connection then goes to the address that was checked (no second lookup to rebind).
//
//   net_policy p = *net_policy::parse(denied, allowed);
//   auto where = p.resolve("db.example.com", 443);  // "203.0.113.5", or 403 forbidden
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "node/error.hpp"

namespace settee {

// An IP network; IPv4 kept as IPv4-mapped IPv6 (::ffff:a.b.c.d/96+n), so one comparison serves both.
struct ip_net {
  std::array<uint8_t, 16> addr{};
  int prefix = 128;
};

// The address `text` names ("127.0.0.1", "::1", "::ffff:10.0.0.1"): false when it is not one.
bool parse_ip(const std::string& text, std::array<uint8_t, 16>& out);
// "10.0.0.0/8, fe80::/10, 192.0.2.1" (a bare address is its own /32 or /128); 400 on a bad entry.
result<std::vector<ip_net>> parse_networks(const std::string& list);
bool in_network(const std::array<uint8_t, 16>& a, const ip_net& n);
// The address as text (IPv4-mapped ones as IPv4).
std::string ip_text(const std::array<uint8_t, 16>& a);

// What [replicator] denied_networks is when the configuration does not set it.
extern const char* const default_denied_networks;

class net_policy {
 public:
  // `denied`: networks; `allowed`: host names and networks let through whatever else says.
  static result<net_policy> parse(const std::string& denied, const std::string& allowed);

  // This node's own ports (HTTP, RPC, metrics), refused on every address of this machine; asked
  // at each check (they are known once the node listens).
  void set_own_ports(std::function<std::vector<int>()> ports) { own_ports_ = std::move(ports); }
  // The cluster members' hosts ("settee@10.0.0.2" names 10.0.0.2), asked at each check.
  void set_member_hosts(std::function<std::vector<std::string>()> hosts) { member_hosts_ = std::move(hosts); }

  // The address to connect to for `host`:`port` (as a URL spells the host: "[::1]" for IPv6), or
  // 403 forbidden saying why not; 404-style db_not_found when the name does not resolve.
  result<std::string> resolve(const std::string& host, int port) const;
  // The same for addresses already resolved (pure; what resolve() applies to each address).
  status check(const std::string& host, const std::vector<std::array<uint8_t, 16>>& addrs, int port,
               const std::vector<int>& own_ports, const std::vector<std::array<uint8_t, 16>>& own_addrs,
               const std::vector<std::array<uint8_t, 16>>& member_addrs) const;

 private:
  std::vector<ip_net> denied_, allowed_nets_;
  std::vector<std::string> allowed_hosts_;  // lower case, without a trailing dot
  std::function<std::vector<int>()> own_ports_;
  std::function<std::vector<std::string>()> member_hosts_;
};

}  // namespace settee
