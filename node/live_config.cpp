#include "node/live_config.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "node/crypto.hpp"
#include "node/files.hpp"
#include "node/log.hpp"

namespace settee {

namespace {

constexpr size_t max_name_bytes = 256;
constexpr size_t max_value_bytes = 64 * 1024;

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Printable ASCII or UTF-8 bytes, spaces and tabs: nothing that ends a line or hides in a log.
bool printable(const std::string& s) {
  for (unsigned char ch : s)
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f) return false;
  return true;
}

status name_problem(const char* what, const std::string& name) {
  if (name.empty()) return {errc::bad_request, std::string("a config ") + what + " must not be empty"};
  if (name.size() > max_name_bytes)
    return {errc::bad_request, std::string("a config ") + what + " is at most 256 bytes"};
  if (!printable(name))
    return {errc::bad_request,
            std::string("a config ") + what + " must be printable (no CR, LF or control characters)"};
  if (name.find_first_of("[]") != std::string::npos)
    return {errc::bad_request, std::string("a config ") + what + " must not hold [ or ]"};
  if (trimmed(name) != name)
    return {errc::bad_request, std::string("a config ") + what + " must not begin or end with blanks"};
  return {};
}

// Values a person reads in a log: an admin's hash stays out of it.
std::string shown(const std::string& sec, const std::string& value) {
  return sec == "admins" || sec == "jwt_keys" || value.empty() ? "'****'" : value;
}

}  // namespace

live_config::live_config(std::vector<layer> layers, std::string write_path, checker check)
    : layers_(std::move(layers)), write_path_(std::move(write_path)), check_(std::move(check)) {
  snapshot_ = std::make_shared<const config>(merged());
}

live_config::live_config(config values) : live_config({layer{"defaults", "", std::move(values)}}, "") {}

status live_config::validate(const std::string& sec, const std::string& key, const std::string& value) {
  if (auto st = name_problem("section", sec); !st) return st;
  if (auto st = name_problem("key", key); !st) return st;
  if (key.find('=') != std::string::npos || key[0] == ';' || key[0] == '#')
    return {errc::bad_request, "a config key must not hold = or begin with ; or #"};
  if (value.size() > max_value_bytes) return {errc::bad_request, "a config value is at most 64 KiB"};
  if (!printable(value))
    return {errc::bad_request, "a config value must be printable (no CR, LF or control characters)"};
  if (value.find(" ;") != std::string::npos || value.find("\t;") != std::string::npos)
    return {errc::bad_request, "a config value must not hold \" ;\" (an ini file reads the rest as a comment)"};
  return {};
}

bool live_config::locked_section(const std::string& sec) {
  static const char* const locked[] = {"daemons",
                                       "external",
                                       "httpd_design_handlers",
                                       "httpd_db_handlers",
                                       "httpd_global_handlers",
                                       "native_query_servers",
                                       "os_daemons",
                                       "query_servers",
                                       "feature_flags"};
  for (const char* s : locked)
    if (sec == s) return true;
  return false;
}

config live_config::merged() const {
  config out;
  for (const layer& l : layers_) out.merge(l.values);
  out.merge(runtime_);
  for (auto& [sec, key] : erased_) out.erase(sec, key);
  return out;
}

std::shared_ptr<const config> live_config::current() const {
  std::lock_guard<std::mutex> lock(snap_mu_);
  return snapshot_;
}

uint64_t live_config::version() const {
  std::lock_guard<std::mutex> lock(snap_mu_);
  return version_;
}

std::string live_config::get(const std::string& sec, const std::string& key, const std::string& def) const {
  return current()->get(sec, key, def);
}

int64_t live_config::get_int(const std::string& sec, const std::string& key, int64_t def) const {
  return current()->get_int(sec, key, def);
}

bool live_config::get_bool(const std::string& sec, const std::string& key, bool def) const {
  return current()->get_bool(sec, key, def);
}

live_config::layer* live_config::file_holding(const std::string& sec, const std::string& key) {
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it)
    if (!it->path.empty() && it->values.has(sec, key)) return &*it;
  return nullptr;
}

live_config::layer& live_config::home_of(const std::string& sec, const std::string& key) {
  if (layer* holding = file_holding(sec, key)) return *holding;
  for (layer& l : layers_)
    if (!write_path_.empty() && l.path == write_path_) return l;
  return layers_.back();
}

status live_config::write_layer(const layer& l, const std::string& sec, const std::string& key,
                                const std::string* value) {
  if (l.path.empty()) return {};  // not a file: kept in memory only
  auto text = read_file(l.path);
  if (!text && errno != ENOENT) return {errc::bad_request, "cannot read " + l.path + ": " + std::strerror(errno)};
  struct stat before {};
  const int mode = ::stat(l.path.c_str(), &before) == 0 ? static_cast<int>(before.st_mode & 07777) : 0600;
  auto st = replace_file(l.path, config::edited(text ? *text : "", sec, key, value), mode);
  if (!st) return {errc::bad_request, "cannot write " + l.path + ": " + st.reason};
  return {};
}

void live_config::publish(config next) {
  auto snap = std::make_shared<const config>(std::move(next));
  std::lock_guard<std::mutex> lock(snap_mu_);
  snapshot_ = std::move(snap);
  ++version_;
}

void live_config::notify(const std::string& sec, const std::string& key) {
  std::lock_guard<std::mutex> lock(watch_mu_);  // in order, each with the newest snapshot
  auto now = current();
  for (auto& w : watchers_) w(*now, sec, key);
}

void live_config::watch(watcher w) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watchers_.push_back(std::move(w));
}

result<std::string> live_config::set(const std::string& sec, const std::string& key, const std::string& raw,
                                     bool persist) {
  std::string value = trimmed(raw);
  if (auto st = validate(sec, key, value); !st) return st;
  // As CouchDB: an admin's password is hashed before it is kept anywhere.
  if (sec == "admins" && !value.empty() && !crypto::is_hashed(value)) value = crypto::hash(value);
  return change(sec, key, &value, persist);
}

result<std::string> live_config::erase(const std::string& sec, const std::string& key, bool persist) {
  if (auto st = validate(sec, key, ""); !st) return st;
  return change(sec, key, nullptr, persist);
}

result<std::string> live_config::change(const std::string& sec, const std::string& key, const std::string* value,
                                        bool persist) {
  std::string old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    config now = merged();
    if (!value && !now.has(sec, key)) return status{errc::not_found, "unknown_config_value"};
    old = now.get(sec, key);
    // Tried in memory first: a value the node cannot run with is refused before any file changes.
    const auto saved_runtime = runtime_;
    const auto saved_erased = erased_;
    layer* home = !persist ? nullptr : value ? &home_of(sec, key) : file_holding(sec, key);
    const config saved_home = home ? home->values : config{};
    auto undo = [&] {
      runtime_ = saved_runtime;
      erased_ = saved_erased;
      if (home) home->values = saved_home;
    };
    runtime_.erase(sec, key);
    erased_.erase({sec, key});
    if (value && home) home->values.set(sec, key, *value);
    if (value && !home) runtime_.set(sec, key, *value);
    if (!value && home) home->values.erase(sec, key);
    if (!value && !home) erased_.insert({sec, key});  // in no file (or not persisted): gone until a restart
    config candidate = merged();
    if (check_) {
      // A value itself too, where a layer above its home (the command line) hides it now: it would
      // be read at a start without that layer.
      config forced = candidate;
      if (value) forced.set(sec, key, *value);
      if (auto st = check_(forced); !st) return undo(), st;
      if (auto st = check_(candidate); !st) return undo(), st;
    }
    if (home) {
      if (auto st = write_layer(*home, sec, key, value); !st) return undo(), st;
    }
    publish(std::move(candidate));
    log::info("config: [" + sec + "] " + key + (value ? " set to " + shown(sec, *value) : " deleted") +
              (home ? (value ? " in " : " from ") + home->name : " (in memory)"));
  }
  notify(sec, key);
  return old;
}

status live_config::reload() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<config> fresh;
    for (const layer& l : layers_) {
      if (l.path.empty()) {
        fresh.push_back(l.values);
        continue;
      }
      auto text = read_file(l.path);
      if (!text) {
        fresh.push_back(config{});  // a file that is gone holds nothing now
        continue;
      }
      auto c = config::parse(*text, l.path);
      if (!c) return status{errc::bad_request, c.error().reason};
      // Plain-text admins in a file are used through their hashes, as at start-up.
      if (auto it = c->sections().find("admins"); it != c->sections().end()) {
        std::vector<std::pair<std::string, std::string>> plain;
        for (auto& [name, value] : it->second)
          if (!crypto::is_hashed(value)) plain.push_back({name, value});
        for (auto& [name, value] : plain) c->set("admins", name, crypto::hash(value));
      }
      fresh.push_back(std::move(*c));
    }
    const auto saved = layers_;
    const auto saved_runtime = runtime_;
    const auto saved_erased = erased_;
    for (size_t i = 0; i < layers_.size(); ++i) layers_[i].values = std::move(fresh[i]);
    runtime_ = config{};
    erased_.clear();
    config candidate = merged();
    if (check_) {
      if (auto st = check_(candidate); !st) {
        layers_ = saved;
        runtime_ = saved_runtime;
        erased_ = saved_erased;
        return st;
      }
    }
    publish(std::move(candidate));
    log::info("config: reloaded from its files");
  }
  notify("", "");
  return {};
}

}  // namespace settee
