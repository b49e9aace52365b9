#include "storage/rev_tree.hpp"

#include <algorithm>
#include <charconv>

#include "node/check.hpp"
#include "node/crypto.hpp"

namespace settee {

bool parse_rev(std::string_view text, rev_id& out) {
  size_t dash = text.find('-');
  // The hash may be empty: couch_doc:parse_rev takes "1-" (PouchDB's suite stores it).
  if (dash == std::string_view::npos || dash == 0) return false;
  uint64_t pos = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + dash, pos);
  if (ec != std::errc() || p != text.data() + dash || pos == 0) return false;
  out.pos = pos;
  out.hash.assign(text.substr(dash + 1));
  return true;
}

std::string make_rev_hash(bool deleted, const rev_id* parent, std::string_view body, rev_hash how) {
  std::string head(1, deleted ? '1' : '0');  // the body is hashed where it is, not copied after this
  head.push_back('\0');
  if (parent) head += parent->str();
  head.push_back('\0');
  return how == rev_hash::sha256 ? crypto::sha256_128_hex({head, body}) : crypto::md5_hex({head, body});
}

bool is_rev_path(const std::vector<rev_id>& path) {
  // The oldest at pos 1 or later; the newest leaves room for a child (an edit of it).
  if (path.empty() || path.back().pos < 1 || path.front().pos == UINT64_MAX) return false;
  for (size_t i = 1; i < path.size(); ++i)
    if (path[i].pos + 1 != path[i - 1].pos) return false;
  return true;
}

int rev_tree::find(const rev_id& r) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].pos == r.pos && nodes_[i].hash == r.hash) return static_cast<int>(i);
  return -1;
}

bool rev_tree::is_leaf(int i) const {
  for (auto& n : nodes_)
    if (n.parent == i) return false;
  return true;
}

std::vector<int> rev_tree::leaves() const {
  std::vector<bool> has_child(nodes_.size(), false);
  for (auto& n : nodes_)
    if (n.parent >= 0) has_child[n.parent] = true;
  std::vector<int> out;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!has_child[i]) out.push_back(static_cast<int>(i));
  return out;
}

std::vector<int> rev_tree::sorted_leaves() const {
  auto out = leaves();
  std::sort(out.begin(), out.end(), [&](int a, int b) {
    const node &x = nodes_[a], &y = nodes_[b];
    if (x.deleted != y.deleted) return !x.deleted;  // live leaves first
    if (x.pos != y.pos) return x.pos > y.pos;
    return x.hash > y.hash;
  });
  return out;
}

std::vector<int> rev_tree::leaves_by_rev() const {
  auto out = leaves();
  std::sort(out.begin(), out.end(), [&](int a, int b) { return rev(a) < rev(b); });
  return out;
}

int rev_tree::winner() const {
  if (nodes_.empty()) return -1;
  return sorted_leaves().front();
}

int rev_tree::add_child(int parent, const std::string& hash, bool deleted) {
  node n;
  n.pos = parent < 0 ? 1 : nodes_[parent].pos + 1;
  n.hash = hash;
  n.parent = parent;
  n.deleted = deleted;
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

int rev_tree::merge_path(const std::vector<rev_id>& path, bool deleted, bool& added) {
  SETTEE_CHECK(is_rev_path(path));  // callers validate what they were sent (shard_store::apply_doc)
  added = false;
  // Find the newest revision of the path the tree already has.
  size_t known = path.size();
  int known_index = -1;
  for (size_t i = 0; i < path.size(); ++i) {
    known_index = find(path[i]);
    if (known_index >= 0) {
      known = i;
      break;
    }
  }
  // If the path reaches below a stemmed root the tree has, that root learns its ancestors back.
  if (known_index >= 0) {
    size_t oldest = known;
    int oldest_index = known_index;
    while (oldest + 1 < path.size() && nodes_[oldest_index].parent >= 0 &&
           rev(nodes_[oldest_index].parent) == path[oldest + 1]) {
      oldest_index = nodes_[oldest_index].parent;
      ++oldest;
    }
    if (nodes_[oldest_index].parent < 0) {
      int child = oldest_index;
      for (size_t i = oldest + 1; i < path.size(); ++i) {
        int existing = find(path[i]);
        if (existing >= 0) {
          nodes_[child].parent = existing;
          break;
        }
        node n;
        n.pos = path[i].pos;
        n.hash = path[i].hash;
        nodes_.push_back(std::move(n));
        nodes_[child].parent = static_cast<int>(nodes_.size()) - 1;
        child = nodes_[child].parent;
        added = true;
      }
    }
  }
  if (known == 0) {
    SETTEE_CHECK(rev(known_index) == path.front());
    return known_index;
  }
  // Insert the unknown, newer part of the path, oldest first.
  int parent = known_index;
  for (size_t i = known; i-- > 0;) {
    node n;
    n.pos = path[i].pos;
    n.hash = path[i].hash;
    n.parent = parent;
    n.deleted = (i == 0) && deleted;
    nodes_.push_back(std::move(n));
    parent = static_cast<int>(nodes_.size()) - 1;
  }
  added = true;
  SETTEE_CHECK(rev(parent) == path.front());  // the path's newest revision is in the tree now
  return parent;
}

size_t rev_tree::stem(uint32_t limit, std::vector<rev_id>* removed) {
  if (limit == 0) limit = 1;
  std::vector<bool> keep(nodes_.size(), false);
  for (int leaf : leaves()) {
    int i = leaf;
    for (uint32_t depth = 0; i >= 0 && depth < limit; ++depth) {
      keep[i] = true;
      i = nodes_[i].parent;
    }
  }
  return keep_only(keep, removed);
}

std::vector<rev_id> rev_tree::remove_leafs(const std::vector<rev_id>& revs, std::vector<rev_id>* dropped) {
  std::vector<rev_id> purged;
  std::vector<bool> keep(nodes_.size(), false);
  for (int leaf : leaves()) {
    if (std::find(revs.begin(), revs.end(), rev(leaf)) != revs.end()) {
      purged.push_back(rev(leaf));
      continue;
    }
    for (int i : path_to(leaf)) keep[i] = true;
  }
  if (!purged.empty()) keep_only(keep, dropped);
  return purged;
}

size_t rev_tree::keep_only(const std::vector<bool>& keep, std::vector<rev_id>* removed) {
  size_t dropped = std::count(keep.begin(), keep.end(), false);
  if (dropped == 0) return 0;
  std::vector<int> remap(nodes_.size(), -1);
  std::vector<node> kept;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!keep[i]) {
      if (removed) removed->push_back(rev(static_cast<int>(i)));
      continue;
    }
    remap[i] = static_cast<int>(kept.size());
    kept.push_back(nodes_[i]);
  }
  for (auto& n : kept) n.parent = n.parent >= 0 ? remap[n.parent] : -1;
  nodes_ = std::move(kept);
  return dropped;
}

std::vector<int> rev_tree::leaves_under(int i) const {
  std::vector<int> out;
  for (int leaf : leaves()) {
    auto path = path_to(leaf);
    if (std::find(path.begin(), path.end(), i) != path.end()) out.push_back(leaf);
  }
  return out;
}

std::vector<int> rev_tree::path_to(int i) const {
  std::vector<int> out;
  for (; i >= 0; i = nodes_[i].parent) {
    out.push_back(i);
    SETTEE_CHECK(out.size() <= nodes_.size());  // decode() refuses cycles; a loop here is a bug
  }
  return out;
}

void rev_tree::encode(codec::writer& w) const {
  w.varint(nodes_.size());
  for (auto& n : nodes_) {
    // decode() refuses a tree whose edges skip a generation: never write one.
    SETTEE_CHECK(n.parent < 0 || nodes_[static_cast<size_t>(n.parent)].pos + 1 == n.pos);
    w.varint(n.pos);
    w.str(n.hash);
    w.varint(static_cast<uint64_t>(n.parent + 1));
    w.byte(n.deleted ? 1 : 0);
  }
}

bool rev_tree::decode(codec::reader& r, rev_tree& out) {
  uint64_t count = 0;
  if (!r.varint(count) || count > (1u << 24)) return false;
  out.nodes_.clear();
  out.nodes_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    node n;
    uint64_t parent = 0;
    uint8_t flags = 0;
    if (!r.varint(n.pos) || !r.str(n.hash) || !r.varint(parent) || !r.byte(flags)) return false;
    if (parent > count) return false;
    n.parent = static_cast<int32_t>(parent) - 1;
    n.deleted = flags & 1;
    out.nodes_.push_back(std::move(n));
  }
  // Every edge goes one generation back (pos decreases by one towards the root), which also rules
  // out cycles: a corrupt tree is refused here, so that no walk over it can loop.
  for (auto& n : out.nodes_) {
    if (n.parent >= 0 && out.nodes_[static_cast<size_t>(n.parent)].pos + 1 != n.pos) return false;
  }
  return true;
}

}  // namespace settee
