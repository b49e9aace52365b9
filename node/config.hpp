// config: CouchDB-style ini settings ([section] key = value). Unknown sections and keys are kept
// (later releases and operators may add them), never fatal. Values are strings; typed getters
// validate and fall back to a default. Not thread-safe for writes: build it at start-up, then share
// it read-only (the few runtime writes, e.g. generated admins, happen before the server starts).
#pragma once
#include <cstdint>
#include <map>
#include <string>

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
  // `text` (ini) with the value of `key` in `[sec]` replaced by `value`, every other line (comments,
  // order, other keys) as it was; `text` unchanged when it has no such key.
  static std::string with_value(const std::string& text, const std::string& sec, const std::string& key,
                                const std::string& value);

 private:
  std::map<std::string, section> sections_;
};

}  // namespace settee
