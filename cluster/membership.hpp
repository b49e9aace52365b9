// membership: which nodes belong to the cluster and which are connected right now.
// Members come from `[cluster] seeds` and from peers that introduced themselves; a member is
// connected while our RPC connection to it is up (handshake done, pings answered in time).
// Thread-safety: all methods may be called from any thread (the KJ RPC thread writes, HTTP reads).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "node/error.hpp"

namespace settee {

struct peer_address {
  std::string name;  // "settee@host"
  std::string host;
  uint16_t port = 0;
};

// Parses "name@host:port,name@host:port" (spaces allowed around commas). An empty string is no
// peers. Errors name the entry that is wrong.
result<std::vector<peer_address>> parse_seeds(const std::string& text);

struct peer_info {
  std::string release;
  std::vector<std::string> features;
};

class membership {
 public:
  explicit membership(std::string self) : self_(std::move(self)) {}

  const std::string& self() const { return self_; }
  void add_member(const std::string& name);
  // A member removed from the cluster (DELETE /_node/_local/_nodes/<name>): no longer listed.
  void remove_member(const std::string& name);
  void connected(const std::string& name, peer_info info);
  void disconnected(const std::string& name);
  bool is_connected(const std::string& name) const;
  // Whether `name` is this node or a member, connected or not.
  bool is_member(const std::string& name) const;
  // Whether `name` announced `feature` in its last handshake.
  bool has_feature(const std::string& name, const std::string& feature) const;

  // Sorted names, self included (CouchDB's /_membership).
  std::vector<std::string> all_nodes() const;      // connected
  std::vector<std::string> cluster_nodes() const;  // members

 private:
  std::string self_;
  mutable std::mutex mu_;
  std::map<std::string, bool> members_;  // name -> connected
  std::map<std::string, peer_info> info_;
};

}  // namespace settee
