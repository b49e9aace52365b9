// catalog_entry: one database's document in `_dbs`, decoded, and its encoding. Pure, no I/O.
//
// A database never split is stored as releases 0.1 and 0.2 store it (the body, and so its
// revision, stays the same):
//   {"by_range":{"00000000-7fffffff":["a@h","b@h"],...},"created":1700000000,"n":2,"props":{},
//    "q":2,"security":{}}
// Once split it also carries its whole lineage (docs/architecture.md section 31):
//   "shards":[{"id":"00000000-7fffffff.1700000000","range":"00000000-7fffffff","nodes":[...],
//              "state":"closed","parents":[],"children":["00000000-3fffffff.1700000500123",...],
//              "start_seq":{"a@h":0,...},"end_seq":{"a@h":912,...}}, ...]
// and `q`/`by_range` describe the open shards (for a reader's eye; this release routes by `shards`).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "actors/shard_map.hpp"

namespace settee {

// One shard of a database: a range of one incarnation, named "<range>.<suffix>" and never reused.
struct shard_info {
  shard_range range;
  int64_t suffix = 0;                          // the database's creation time for the first shards
  std::vector<std::string> nodes;              // where its copies live
  bool open = true;                            // closed: split into `children`, kept for lineage
  std::vector<std::string> parents, children;  // shard ids
  // Per copy (node): the shard's changes are those with start_seq < seq <= end_seq of that copy's
  // numbering (a child continues its parent's numbering, so its start_seq is the parent's end_seq).
  std::map<std::string, uint64_t> start_seq, end_seq;
  // Closed: each copy's shard uuid, so a `since` token naming it is known for what it is.
  std::map<std::string, std::string> uuids;
  // Copies moved to another node: old node -> the node that holds that copy now (same uuid, same
  // seqs), so a token naming the old node's copy continues exactly there.
  std::map<std::string, std::string> moved;
  int64_t closed_at = 0;  // closed: when (unix seconds; 0 when a release before 0.3 closed it)

  // When the shard began taking writes (unix seconds): its parents' closing, else its creation.
  // `parents_closed_at`: the latest closed_at of its parents (0: unknown).
  int64_t opened_at(int64_t parents_closed_at) const;

  std::string id() const { return range.name() + "." + std::to_string(suffix); }
};

struct catalog_entry {
  int64_t created = 0;
  bool everywhere = false;         // a system database: one range, a copy on every node
  std::vector<shard_info> shards;  // every shard there has been; the open ones cover the ring
  std::string security = "{}";     // JSON text
  bool partitioned = false;        // props.partitioned: documents placed by partition (shard_map.hpp)

  // The first q shards of a database created at `created`, copies placed as `nodes` says.
  static catalog_entry initial(int64_t created, const std::vector<std::vector<std::string>>& nodes);
  // Closes open shard `id` at `end_seq` (per copy; `uuids`: its copies' shard uuids) and opens its
  // two halves, on the same nodes, with ids suffixed `suffix`, starting where it ended. False
  // when `id` is not an open shard or cannot be split.
  bool split_shard(const std::string& id, int64_t suffix, const std::map<std::string, uint64_t>& end_seq,
                   const std::map<std::string, std::string>& uuids = {}, int64_t closed_at = 0);
  // Indexes of the shards that took writes at time `t` (unix seconds): opened at or before it, not
  // closed by then. They cover the ring once.
  std::vector<size_t> live_at(int64_t t) const;
  // Moves open shard `id`'s copy on `from` to `to` (the copy keeps its uuid and numbering). False
  // when `id` is not an open shard with a copy on `from`, or `to` holds one already.
  bool move_copy(const std::string& id, const std::string& from, const std::string& to);
  // Indexes of the open shards, ordered by range.
  std::vector<size_t> open_shards() const;
  // Whether the entry holds lineage a release before 0.3 cannot read: a split or a moved copy.
  bool split() const;
  // The `_dbs` file format a catalog holding this entry needs (shard_header's formats): 3 for a
  // partitioned database, 2 for a split one, else 1.
  uint32_t format_needed() const;
  // The index of the shard named `id`, if any.
  std::optional<size_t> find(const std::string& id) const;
};

// The shard uuid a split gives the child covering `range` of the copy whose uuid is `parent_uuid`
// (release 0.4; random before): derived, so a token naming a child copy can be checked against
// the lineage, which records the parent copies' uuids, before the parent's checkpoints translate it.
std::string split_child_uuid(const std::string& parent_uuid, const shard_range& range);

// The uuid prefixes (`prefix_length` characters) of the parent copies whose splits made the copy of
// `range` whose uuid starts with `uuid_prefix`, nearest first: each found by deriving its child's
// uuid (split_child_uuid), so wherever the copies went since (a map that has not learned a move
// still finds them). Stops at a copy no split in the lineage made (another incarnation, a split
// before release 0.4).
std::vector<std::string> ancestor_uuid_prefixes(const catalog_entry& lineage, const shard_range& range,
                                                const std::string& uuid_prefix, size_t prefix_length);

// One database's entry written on two nodes at once (splits of different ranges): lineage only
// grows (shards are added, open ones close, copies move), so the union of both is the map. Entries of different
// incarnations are not merged: `a` (the winner) stands.
catalog_entry merge_catalog_entries(const catalog_entry& a, const catalog_entry& b);

// Decodes a `_dbs` document body; nullopt, with the reason in `why`, when it is not one.
std::optional<catalog_entry> parse_catalog_entry(const std::string& body, std::string& why);
// The body to store (keys sorted; a database never split is stored without `shards`).
std::string encode_catalog_entry(const catalog_entry& e);

}  // namespace settee
