// config: CouchDB-style ini settings ([section] key = value). Unknown sections and keys are kept
// (later releases and operators may add them), never fatal. Values are strings; typed getters
// validate and fall back to a default. A value type, not thread-safe for writes: a running node
// shares immutable ones through live_config (node/live_config.hpp).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "node/error.hpp"

namespace settee {

class config {
 public:
  using section = std::map<std::string, std::string>;

  // Parses ini text; `origin` names the source in error reasons.
  static result<config> parse(const std::string& text, const std::string& origin = "config");
  static result<config> load_file(const std::string& path);
  // Writes atomically (temp file, fsync, rename).
  status save_file(const std::string& path) const;

  // Layers `other` on top of this one (its values win).
  void merge(const config& other);

  bool has(const std::string& sec, const std::string& key) const;
  std::string get(const std::string& sec, const std::string& key, const std::string& def = "") const;
  int64_t get_int(const std::string& sec, const std::string& key, int64_t def) const;
  bool get_bool(const std::string& sec, const std::string& key, bool def) const;
  void set(const std::string& sec, const std::string& key, const std::string& value);
  void erase(const std::string& sec, const std::string& key);  // an emptied section goes too
  const std::map<std::string, section>& sections() const { return sections_; }
  std::string to_ini() const;
  // A list value as CouchDB's config reads one ("a, b ,c"): split on commas, blanks around each
  // piece trimmed, empty pieces dropped.
  static std::vector<std::string> split_list(const std::string& value);
  // `text` (ini) with `key` in `[sec]` set to `*value` (added at the end of its section, or in a new
  // section at the end, when missing) or removed (`value` null), every other line (comments, order,
  // other keys) as it was.
  static std::string edited(const std::string& text, const std::string& sec, const std::string& key,
                            const std::string* value);

 private:
  std::map<std::string, section> sections_;
};

}  // namespace settee
