// live_config: the node's configuration while it runs, as CouchDB's config application keeps it.
// Layers, lowest first (built-in defaults, DIR/local.ini, the environment, the operator's --config
// file, the command line), merged into one immutable snapshot that every reader shares; then the
// values set at run time without being written (X-Couch-Persist: false) on top.
//
// A change (PUT/DELETE /_node/{node}/_config/{section}/{key}) is checked (names and values an ini
// file can hold; the whole configuration must still read as settings), written to the file its
// value came from (the topmost file layer that holds the key, else DIR/local.ini, the node's own
// file, as CouchDB writes its local.ini), published as a new snapshot, and then told to the
// watchers that apply it. Admin passwords are hashed before anything keeps them.
// Thread-safety: every method may be called from any thread; changes are serialised.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/config.hpp"
#include "node/error.hpp"

namespace settee {

class live_config {
 public:
  struct layer {
    std::string name;  // "defaults", "local.ini", "environment", "command line" or the file's path
    std::string path;  // the ini file behind it; empty when it is not a file
    config values;
  };
  // Runs on a candidate snapshot before it is published; an error refuses the change.
  using checker = std::function<status(const config&)>;
  // Runs after a change was published, with the new snapshot, the section and the key.
  using watcher = std::function<void(const config&, const std::string& section, const std::string& key)>;

  // `write_path`: the file layer new keys go to (DIR/local.ini).
  live_config(std::vector<layer> layers, std::string write_path, checker check = nullptr);
  // A configuration of one in-memory layer (tests, tools).
  explicit live_config(config values = {});

  std::shared_ptr<const config> current() const;
  std::string get(const std::string& sec, const std::string& key, const std::string& def = "") const;
  int64_t get_int(const std::string& sec, const std::string& key, int64_t def) const;
  bool get_bool(const std::string& sec, const std::string& key, bool def) const;
  uint64_t version() const;  // grows at each published change

  // Sets `[sec] key = value` (trimmed, as CouchDB); `persist`: written to its file too. The old
  // value ("" when there was none).
  result<std::string> set(const std::string& sec, const std::string& key, const std::string& value, bool persist);
  // Removes the key (from its file too when `persist`); a lower layer's value shows again. The old
  // value; errc::not_found when the key is not set.
  result<std::string> erase(const std::string& sec, const std::string& key, bool persist);
  // Reads every file layer again and drops the values that were never written (CouchDB's
  // POST /_node/{node}/_config/_reload).
  status reload();
  void watch(watcher w);

  // What an ini file can hold: section and key printable, without `[`, `]` or (a key) `=`, at most
  // 256 bytes; a value printable (tabs allowed), at most 64 KiB. bad_request naming the problem.
  static status validate(const std::string& sec, const std::string& key, const std::string& value);
  // The sections whose values no client may change over HTTP (as CouchDB's config blacklist).
  static bool locked_section(const std::string& sec);

 private:
  config merged() const;      // mu_ held
  void publish(config next);  // mu_ held: the new snapshot
  void notify(const std::string& sec, const std::string& key);
  // The layer a persisted change of `[sec] key` belongs in: the topmost file layer holding it, else
  // the write layer. mu_ held.
  layer& home_of(const std::string& sec, const std::string& key);
  layer* file_holding(const std::string& sec, const std::string& key);  // the topmost; null: none
  // set (value) or erase (null): tried in memory, checked, written, published, then told.
  result<std::string> change(const std::string& sec, const std::string& key, const std::string* value, bool persist);
  static status write_layer(const layer& l, const std::string& sec, const std::string& key, const std::string* value);

  mutable std::mutex mu_;  // layers_, runtime_, erased_, changes
  std::vector<layer> layers_;
  std::string write_path_;
  checker check_;
  config runtime_;                                        // set without persisting
  std::set<std::pair<std::string, std::string>> erased_;  // erased without persisting
  mutable std::mutex snap_mu_;                            // snapshot_, version_
  std::shared_ptr<const config> snapshot_;
  uint64_t version_ = 0;
  std::mutex watch_mu_;
  std::vector<watcher> watchers_;
};

}  // namespace settee
