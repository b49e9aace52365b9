// rev_tree: a document's revision tree, following CouchDB's rules exactly.
//  - A revision is "<pos>-<hash>"; new hashes are deterministic (see make_rev_hash).
//  - Leaves are the open ends of the tree; the winner is the leaf that is not deleted, then with the
//    highest pos, then with the greatest hash. Other live leaves are conflicts.
//  - new_edits=true extends a leaf (add_child); new_edits=false merges a foreign history (merge_path).
//  - stem(limit) keeps only the last `limit` revisions of every branch (revs_limit).
// Pure value type: no I/O, not thread-safe (copy it between threads).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/codec.hpp"

namespace settee {

struct rev_id {
  uint64_t pos = 0;
  std::string hash;

  std::string str() const { return std::to_string(pos) + "-" + hash; }
  bool operator==(const rev_id& o) const { return pos == o.pos && hash == o.hash; }
  bool operator!=(const rev_id& o) const { return !(*this == o); }
  // By (pos, hash): the order CouchDB sorts revisions in its answers (open_revs, _revs_diff).
  bool operator<(const rev_id& o) const { return pos != o.pos ? pos < o.pos : hash < o.hash; }
};

// Parses "N-hash" (N a positive integer; the hash may be empty, as CouchDB takes "1-"). Returns
// false on anything else.
bool parse_rev(std::string_view text, rev_id& out);

// Whether `path` is a revision path as merge_path takes it: not empty, newest first, each
// revision one generation before the one above it, the oldest at pos 1 or later, the newest below
// the largest position (an edit of it needs the next one).
bool is_rev_path(const std::vector<rev_id>& path);

// How a new revision's hash is made: MD5, as every release makes it, or (0.5+) the first 16 bytes
// of SHA-256, 2.2x faster on a CPU with SHA instructions (the hash was 14% of a _bulk_docs' CPU).
// Every copy of a range computes the revisions of an edit itself, so all must hash alike: a
// coordinator asks for sha256 only of copies whose nodes all announce it (remote_shards.hpp
// rev_hash_feature); whatever else writes (a release before 0.5) makes MD5.
enum class rev_hash { md5, sha256 };

// The hash of a new revision: `how` over the deleted flag, the parent revision and the body bytes,
// as 32 lowercase hex digits. Same inputs, same rev: retried writes are idempotent.
std::string make_rev_hash(bool deleted, const rev_id* parent, std::string_view body, rev_hash how = rev_hash::md5);

class rev_tree {
 public:
  struct node {
    uint64_t pos = 0;
    std::string hash;
    int32_t parent = -1;  // index into nodes(), -1 for a root (or a stemmed root)
    bool deleted = false;
  };

  bool empty() const { return nodes_.empty(); }
  const std::vector<node>& nodes() const { return nodes_; }
  rev_id rev(int i) const { return {nodes_[i].pos, nodes_[i].hash}; }

  int find(const rev_id& r) const;
  bool is_leaf(int i) const;
  std::vector<int> leaves() const;
  // Leaves ordered winner first, then by the same rule descending.
  std::vector<int> sorted_leaves() const;
  // The same leaves by (pos, hash) ascending: the order of CouchDB's open_revs answers
  // (fabric_doc_open_revs sorts its replies).
  std::vector<int> leaves_by_rev() const;
  int winner() const;  // -1 when empty
  bool winner_deleted() const { return nodes_[winner()].deleted; }

  // Adds a child of `parent` (-1: a new root at pos 1). Returns the new node's index.
  int add_child(int parent, const std::string& hash, bool deleted);

  // Merges a history given newest first (each element one pos below the previous).
  // Returns the index of the path's newest revision; `added` tells whether anything was new.
  int merge_path(const std::vector<rev_id>& path, bool deleted, bool& added);

  // Keeps at most `limit` (>= 1) revisions on every root-to-leaf path. Returns how many were dropped.
  // `removed` (if given) receives the revisions stemmed away.
  size_t stem(uint32_t limit, std::vector<rev_id>* removed = nullptr);

  // Purges (CouchDB's couch_key_tree:remove_leafs): removes the leaves named in `revs` and every
  // revision that no remaining leaf descends from. Revisions in `revs` that are not leaves are
  // left alone. Returns the leaves removed (in tree order); `dropped` (if given) receives every
  // revision removed, leaves included. An empty tree after it: the document is gone.
  std::vector<rev_id> remove_leafs(const std::vector<rev_id>& revs, std::vector<rev_id>* dropped = nullptr);

  // The history of node i, newest first (i itself included), as far as the tree knows it.
  std::vector<int> path_to(int i) const;
  // The leaves whose history holds node i (i itself when it is a leaf): what `latest=true` answers
  // for revision i.
  std::vector<int> leaves_under(int i) const;

  void encode(codec::writer& w) const;
  static bool decode(codec::reader& r, rev_tree& out);

 private:
  // Keeps the nodes marked in `keep` (a kept node's parent is kept or it becomes a root).
  size_t keep_only(const std::vector<bool>& keep, std::vector<rev_id>* removed);
  std::vector<node> nodes_;
};

}  // namespace settee
