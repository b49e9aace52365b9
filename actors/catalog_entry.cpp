#include "actors/catalog_entry.hpp"

#include <algorithm>
#include <set>

#include "node/crypto.hpp"
#include "node/json.hpp"

namespace settee {

namespace {

// How much deeper than what it holds (_security) an entry nests: the entry object itself.
constexpr size_t entry_depth = 1;

// Written with sorted keys: the bodies, and so their revisions, stay the same across releases.
using sorted_json = nlohmann::json;

bool read_names(const json& j, std::vector<std::string>& out) {
  if (!j.is_array()) return false;
  for (auto& v : j) {
    if (!v.is_string()) return false;
    out.push_back(v.get<std::string>());
  }
  return true;
}

bool read_seqs(const json& j, std::map<std::string, uint64_t>& out) {
  if (!j.is_object()) return false;
  for (auto& [node, seq] : j.items()) {
    if (!seq.is_number_unsigned()) return false;
    out[node] = seq.get<uint64_t>();
  }
  return true;
}

// A {node: text} object (absent: empty).
bool read_uuids(const json& j, std::map<std::string, std::string>& out) {
  if (j.is_null()) return true;  // absent
  if (!j.is_object()) return false;
  for (auto& [node, uuid] : j.items()) {
    if (!uuid.is_string()) return false;
    out[node] = uuid.get<std::string>();
  }
  return true;
}

// The lineage of a database that has been split; false when any shard is not well formed or the
// open shards do not cover the ring exactly once.
bool read_shards(const json& list, catalog_entry& e, std::string& why) {
  std::set<std::string> ids;
  for (auto& s : list) {
    shard_info info;
    const json& id = s.is_object() ? s["id"] : json();
    const json& state = s.is_object() ? s["state"] : json();
    auto range =
        s.is_object() && s["range"].is_string() ? shard_range::parse(s["range"].get<std::string>()) : std::nullopt;
    std::string text = id.is_string() ? id.get<std::string>() : "";
    size_t dot = text.find('.');
    if (!range || dot == std::string::npos || text.substr(0, dot) != range->name() || !state.is_string() ||
        !read_names(s["nodes"], info.nodes) || !read_names(s["parents"], info.parents) ||
        !read_names(s["children"], info.children) || !read_seqs(s["start_seq"], info.start_seq) ||
        !read_seqs(s["end_seq"], info.end_seq) || !read_uuids(s.value("uuids", json()), info.uuids) ||
        !read_uuids(s.value("moved", json()), info.moved)) {
      why = "shard " + (text.empty() ? s.dump() : text) + " is not well formed";
      return false;
    }
    try {
      size_t used = 0;
      info.suffix = std::stoll(text.substr(dot + 1), &used);
      if (used != text.size() - dot - 1) throw std::invalid_argument(text);
    } catch (const std::exception&) {
      why = "shard id " + text + " has no numeric suffix";
      return false;
    }
    if (s.contains("closed_at")) {
      if (!s["closed_at"].is_number_integer()) {
        why = "shard " + text + " has a closed_at that is not a time";
        return false;
      }
      info.closed_at = s["closed_at"].get<int64_t>();
    }
    info.range = *range;
    info.open = state.get<std::string>() == "open";
    if (!ids.insert(text).second) {
      why = "shard " + text + " is listed twice";
      return false;
    }
    e.shards.push_back(std::move(info));
  }
  uint64_t next = 0;
  for (size_t i : e.open_shards()) {
    if (e.shards[i].range.begin != next) {
      why = "the open shards do not cover the hash ring";
      return false;
    }
    next = uint64_t{e.shards[i].range.end} + 1;
  }
  if (next != (uint64_t{1} << 32)) {
    why = "the open shards do not cover the hash ring";
    return false;
  }
  return true;
}

}  // namespace

catalog_entry catalog_entry::initial(int64_t created, const std::vector<std::vector<std::string>>& nodes) {
  catalog_entry e;
  e.created = created;
  e.everywhere = nodes.empty();
  auto ranges = make_ranges(e.everywhere ? 1 : static_cast<uint32_t>(nodes.size()));
  for (size_t i = 0; i < ranges.size(); ++i) {
    shard_info s;
    s.range = ranges[i];
    s.suffix = created;
    if (!e.everywhere) s.nodes = nodes[i];
    e.shards.push_back(std::move(s));
  }
  return e;
}

int64_t shard_info::opened_at(int64_t parents_closed_at) const {
  if (parents.empty() || !parents_closed_at) return suffix > 100000000000 ? suffix / 1000 : suffix;  // ms or s
  return parents_closed_at;
}

std::vector<size_t> catalog_entry::live_at(int64_t t) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < shards.size(); ++i) {
    const shard_info& s = shards[i];
    int64_t parents_closed = 0;
    for (const std::string& p : s.parents)
      if (auto at = find(p)) parents_closed = std::max(parents_closed, shards[*at].closed_at);
    // Closed by a release that kept no closed_at: the children's creation says when.
    int64_t closed = s.closed_at;
    if (!s.open && !closed) {
      for (const std::string& c : s.children)
        if (auto at = find(c)) closed = std::max(closed, shards[*at].opened_at(0));
    }
    if (s.opened_at(parents_closed) <= t && (s.open || t < closed)) out.push_back(i);
  }
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) { return shards[a].range.begin < shards[b].range.begin; });
  return out;
}

bool catalog_entry::split_shard(const std::string& id, int64_t suffix, const std::map<std::string, uint64_t>& end_seq,
                                const std::map<std::string, std::string>& uuids, int64_t closed_at) {
  auto at = find(id);
  if (!at || !shards[*at].open) return false;
  auto halves = shards[*at].range.halves();
  if (!halves) return false;
  std::vector<shard_info> children;
  for (const shard_range& r : {halves->first, halves->second}) {
    shard_info c;
    c.range = r;
    c.suffix = suffix;
    c.nodes = shards[*at].nodes;
    c.parents = {id};
    c.start_seq = end_seq;
    children.push_back(std::move(c));
  }
  shard_info& parent = shards[*at];
  parent.open = false;
  parent.end_seq = end_seq;
  parent.uuids = uuids;
  parent.closed_at = closed_at;
  for (const shard_info& c : children) parent.children.push_back(c.id());
  shards.insert(shards.end(), children.begin(), children.end());
  return true;
}

bool catalog_entry::move_copy(const std::string& id, const std::string& from, const std::string& to) {
  auto at = find(id);
  if (!at || !shards[*at].open || from == to) return false;
  shard_info& s = shards[*at];
  auto it = std::find(s.nodes.begin(), s.nodes.end(), from);
  if (it == s.nodes.end() || std::find(s.nodes.begin(), s.nodes.end(), to) != s.nodes.end()) return false;
  *it = to;  // in place: the first copy (the one shard feeds read) stays first
  if (auto seq = s.start_seq.find(from); seq != s.start_seq.end()) {
    s.start_seq[to] = seq->second;
    s.start_seq.erase(from);
  }
  for (auto& [old, now] : s.moved)
    if (now == from) now = to;
  s.moved[from] = to;
  s.moved.erase(to);  // moved back: that node's copy is the one it holds again
  return true;
}

std::vector<size_t> catalog_entry::open_shards() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < shards.size(); ++i)
    if (shards[i].open) out.push_back(i);
  std::sort(out.begin(), out.end(), [&](size_t a, size_t b) { return shards[a].range.begin < shards[b].range.begin; });
  return out;
}

bool catalog_entry::split() const {
  return std::any_of(shards.begin(), shards.end(), [](const shard_info& s) { return !s.open || !s.moved.empty(); });
}

std::optional<size_t> catalog_entry::find(const std::string& id) const {
  for (size_t i = 0; i < shards.size(); ++i)
    if (shards[i].id() == id) return i;
  return std::nullopt;
}

std::vector<std::string> ancestor_uuid_prefixes(const catalog_entry& lineage, const shard_range& range,
                                                const std::string& uuid_prefix, size_t prefix_length) {
  std::vector<std::string> out;
  auto at =
      std::find_if(lineage.shards.begin(), lineage.shards.end(), [&](const shard_info& s) { return s.range == range; });
  std::string known = uuid_prefix;  // the copy's uuid as far as known: its parent's must derive it
  for (size_t depth = 0; at != lineage.shards.end() && !known.empty() && depth < 64; ++depth) {
    if (at->parents.empty()) break;
    auto parent = lineage.find(at->parents.front());
    if (!parent) break;
    const shard_range child = at->range;
    at = lineage.shards.begin() + static_cast<std::ptrdiff_t>(*parent);
    auto made = std::find_if(at->uuids.begin(), at->uuids.end(), [&](const auto& u) {
      return split_child_uuid(u.second, child).compare(0, known.size(), known) == 0;
    });
    if (made == at->uuids.end()) break;
    out.push_back(made->second.substr(0, prefix_length));
    known = made->second;
  }
  return out;
}

catalog_entry merge_catalog_entries(const catalog_entry& a, const catalog_entry& b) {
  if (a.created != b.created || a.everywhere || b.everywhere) return a;
  catalog_entry out = a;
  for (const shard_info& s : b.shards) {
    auto at = out.find(s.id());
    if (!at) {
      out.shards.push_back(s);
      continue;
    }
    shard_info& m = out.shards[*at];
    m.open = m.open && s.open;
    for (auto& c : s.children)
      if (std::find(m.children.begin(), m.children.end(), c) == m.children.end()) m.children.push_back(c);
    m.start_seq.insert(s.start_seq.begin(), s.start_seq.end());
    m.end_seq.insert(s.end_seq.begin(), s.end_seq.end());
    m.uuids.insert(s.uuids.begin(), s.uuids.end());
    m.moved.insert(s.moved.begin(), s.moved.end());
    m.closed_at = std::max(m.closed_at, s.closed_at);
    // A copy one side moved is where that side put it.
    for (std::string& n : m.nodes) {
      auto to = m.moved.find(n);
      if (to != m.moved.end() && std::find(m.nodes.begin(), m.nodes.end(), to->second) == m.nodes.end()) n = to->second;
    }
  }
  return out;
}

std::optional<catalog_entry> parse_catalog_entry(const std::string& body, std::string& why) {
  // The entry holds the database's _security one level down: a _security as deep as a client may
  // send (max_json_depth) makes an entry one deeper, which must still read (or the database
  // vanishes at the next reading of _dbs). The node wrote it; the bound stays finite.
  json j = parse_json(body, max_json_depth() + entry_depth, nullptr).value_or(json());
  if (!j.is_object() || !j["q"].is_number_unsigned() || !j["created"].is_number_integer() ||
      !j["by_range"].is_object()) {
    why = "not a database entry";
    return std::nullopt;
  }
  catalog_entry e;
  e.created = j["created"].get<int64_t>();
  if (j.contains("security") && j["security"].is_object()) e.security = j["security"].dump();
  const bool partitioned = member(member(j, "props"), "partitioned") == json(true);
  e.partitioned = partitioned;
  if (j.contains("shards")) {
    if (!j["shards"].is_array() || !read_shards(j["shards"], e, why)) {
      if (why.empty()) why = "shards is not a list";
      return std::nullopt;
    }
    return e;
  }
  const json& by_range = j["by_range"];
  uint32_t q = j["q"].get<uint32_t>();
  if (by_range.empty()) {  // a system database: everywhere
    e = catalog_entry::initial(e.created, {});
    e.security = j.contains("security") && j["security"].is_object() ? j["security"].dump() : "{}";
    return e;
  }
  std::vector<std::vector<std::string>> nodes;
  for (auto& r : make_ranges(q)) {
    std::vector<std::string> names;
    const json& copies = by_range[r.name()];
    if (copies.is_array()) {
      for (auto& n : copies)
        if (n.is_string()) names.push_back(n.get<std::string>());
    }
    nodes.push_back(std::move(names));
  }
  std::string security = std::move(e.security);
  e = catalog_entry::initial(e.created, nodes);
  e.security = std::move(security);
  e.partitioned = partitioned;
  return e;
}

std::string encode_catalog_entry(const catalog_entry& e) {
  sorted_json by_range = sorted_json::object();
  auto open = e.open_shards();
  if (!e.everywhere) {
    for (size_t i : open) by_range[e.shards[i].range.name()] = e.shards[i].nodes;
  }
  auto parsed = parse_json(e.security);
  sorted_json security = parsed && parsed->is_object() ? sorted_json(*parsed) : sorted_json::object();
  size_t n = e.everywhere || open.empty() || e.shards[open[0]].nodes.empty() ? 1 : e.shards[open[0]].nodes.size();
  sorted_json props = sorted_json::object();
  if (e.partitioned) props["partitioned"] = true;
  sorted_json body{{"q", open.size()},     {"n", n},         {"created", e.created},
                   {"by_range", by_range}, {"props", props}, {"security", security}};
  if (e.split()) {
    sorted_json shards = sorted_json::array();
    for (auto& s : e.shards) {
      shards.push_back({{"id", s.id()},
                        {"range", s.range.name()},
                        {"nodes", s.nodes},
                        {"state", s.open ? "open" : "closed"},
                        {"parents", s.parents},
                        {"children", s.children},
                        {"start_seq", s.start_seq},
                        {"end_seq", s.end_seq}});
      if (!s.uuids.empty()) shards.back()["uuids"] = s.uuids;
      if (!s.moved.empty()) shards.back()["moved"] = s.moved;
      if (s.closed_at) shards.back()["closed_at"] = s.closed_at;
    }
    body["shards"] = std::move(shards);
  }
  return body.dump();
}

uint32_t catalog_entry::format_needed() const {
  return partitioned ? 3 : split() ? 2 : 1;
}

std::string split_child_uuid(const std::string& parent_uuid, const shard_range& range) {
  return crypto::sha256_hex(parent_uuid + "/" + range.name()).substr(0, 32);
}

}  // namespace settee
