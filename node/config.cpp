#include "node/config.hpp"
#include "node/files.hpp"

#include <cerrno>
#include <cstring>
#include <sstream>

namespace settee {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

result<config> config::parse(const std::string& text, const std::string& origin) {
  config c;
  std::istringstream in(text);
  std::string line, current;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::string t = trim(line);
    if (t.empty() || t[0] == ';' || t[0] == '#') continue;
    if (t[0] == '[') {
      if (t.back() != ']' || t.size() < 3) {
        return status{errc::bad_request, origin + ":" + std::to_string(lineno) + ": bad section header"};
      }
      current = trim(t.substr(1, t.size() - 2));
      c.sections_[current];
      continue;
    }
    size_t eq = t.find('=');
    if (eq == std::string::npos || current.empty()) {
      return status{errc::bad_request,
                    origin + ":" + std::to_string(lineno) + ": expected `key = value` inside a [section]"};
    }
    std::string key = trim(t.substr(0, eq));
    std::string value = trim(t.substr(eq + 1));
    // CouchDB allows trailing " ; comment" after a value.
    size_t sc = value.find(" ;");
    if (sc != std::string::npos) value = trim(value.substr(0, sc));
    if (key.empty()) {
      return status{errc::bad_request, origin + ":" + std::to_string(lineno) + ": empty key"};
    }
    c.sections_[current][key] = value;
  }
  return c;
}

std::string config::edited(const std::string& text, const std::string& sec, const std::string& key,
                           const std::string* value) {
  std::istringstream in(text);
  std::string out, line, current;
  bool done = false;
  size_t section_end = std::string::npos;  // where [sec]'s last key line ends in `out`
  auto is_key_line = [](const std::string& t) { return !t.empty() && t[0] != ';' && t[0] != '#' && t[0] != '['; };
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (!t.empty() && t[0] == '[' && t.back() == ']') {
      current = trim(t.substr(1, t.size() - 2));
      if (current == sec && section_end == std::string::npos) section_end = out.size() + line.size() + 1;
    }
    size_t eq = t.find('=');
    if (!done && current == sec && is_key_line(t) && eq != std::string::npos && trim(t.substr(0, eq)) == key) {
      done = true;
      if (!value) continue;  // the line goes
      line = line.substr(0, line.find_first_not_of(" \t")) + key + " = " + *value;
    }
    out += line + "\n";
    if (current == sec && is_key_line(t)) section_end = out.size();
  }
  bool at_end = false;  // the text now ends with what was added: it ends with a newline
  if (!done && value) {
    std::string added = key + " = " + *value + "\n";
    at_end = section_end == std::string::npos || section_end == out.size();
    if (section_end != std::string::npos)
      out.insert(section_end, added);
    else
      out += (out.empty() ? "[" : "\n[") + sec + "]\n" + added;
  }
  if (!text.empty() && text.back() != '\n' && !at_end) out.pop_back();  // as it ended
  return out;
}

result<config> config::load_file(const std::string& path) {
  auto text = read_file(path);
  if (!text) return status{errc::not_found, "cannot read config file " + path + ": " + std::strerror(errno)};
  return parse(*text, path);
}

status config::save_file(const std::string& path) const {
  return replace_file(path, to_ini());
}

void config::merge(const config& other) {
  for (auto& [sec, kv] : other.sections_)
    for (auto& [k, v] : kv) sections_[sec][k] = v;
}

bool config::has(const std::string& sec, const std::string& key) const {
  auto s = sections_.find(sec);
  return s != sections_.end() && s->second.count(key) > 0;
}

std::string config::get(const std::string& sec, const std::string& key, const std::string& def) const {
  auto s = sections_.find(sec);
  if (s == sections_.end()) return def;
  auto k = s->second.find(key);
  return k == s->second.end() ? def : k->second;
}

int64_t config::get_int(const std::string& sec, const std::string& key, int64_t def) const {
  std::string v = get(sec, key);
  if (v.empty()) return def;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return def;
  return n;
}

bool config::get_bool(const std::string& sec, const std::string& key, bool def) const {
  std::string v = get(sec, key);
  if (v == "true") return true;
  if (v == "false") return false;
  return def;
}

void config::set(const std::string& sec, const std::string& key, const std::string& value) {
  sections_[sec][key] = value;
}

void config::erase(const std::string& sec, const std::string& key) {
  auto it = sections_.find(sec);
  if (it == sections_.end()) return;
  it->second.erase(key);
  if (it->second.empty()) sections_.erase(it);
}

std::vector<std::string> config::split_list(const std::string& value) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= value.size();) {
    size_t comma = value.find(',', start);
    std::string piece = trim(value.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!piece.empty()) out.push_back(std::move(piece));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string config::to_ini() const {
  std::string out;
  for (auto& [sec, kv] : sections_) {
    out += "[" + sec + "]\n";
    for (auto& [k, v] : kv) out += k + " = " + v + "\n";
    out += "\n";
  }
  return out;
}

}  // namespace settee
