// internal_replication: brings one copy of a shard range up to date with another (CouchDB's
// mem3_sync). Reads the source's changes after the checkpoint in bounded batches (every leaf with
// its history and body), writes them to the target's replica as new_edits=false merges, and records
// the source seq reached in a _local document on the source, one per target copy:
//   _local/shard-sync-<target shard uuid>  {"seq":N,"history":[[N,T],...],"purge_seq":P,"target_purge_seq":Q}
// where T is the target's update seq right after it committed everything up to source seq N (the
// at most 32 pairs, newest first: add_to_history below). Merging is idempotent, so a crash between the write and the
// checkpoint only repeats work.
// Purges go first (CouchDB's mem3_rep pulls and pushes purge infos before documents): the target's
// purge requests after Q are applied here, then this copy's after P there, so a revision one copy
// purged is not brought back by the other; a request is applied once per copy (its uuid), so
// sending it again is harmless.
// The history is what translates a `since` on another copy to a safe seq on this one (spec 11.1):
// if the target's seq T <= X, every change of this copy up to N was in the target at or before X.
// Thread-safety: call from a plain thread (it blocks on the replicas through the bridge).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "actors/remote_shards.hpp"
#include "actors/shard_copy.hpp"
#include "actors/shard_map.hpp"
#include "actors/shard_registry.hpp"

namespace settee {

struct replication_result {
  uint64_t from_seq = 0;                        // the checkpoint before
  uint64_t to_seq = 0;                          // the checkpoint after
  size_t docs = 0;                              // leaves sent
  size_t applied = 0;                           // leaves the target did not have yet
  size_t purges_pulled = 0, purges_pushed = 0;  // purge requests taken from and sent to the target
};

struct apply_result {
  size_t applied = 0;       // updates the target did not have yet
  uint64_t target_seq = 0;  // the target's update seq after the commit
};

// Where a push goes: a copy identified by its shard uuid, and how to commit updates on it (a local
// replica actor, or another node over RPC).
struct replication_target {
  std::string uuid;
  std::function<result<apply_result>(std::vector<doc_update>& updates)> apply;
  // Stages a piece of a large blob (shard_copy::stage_blob): true when the target holds it whole.
  std::function<result<bool>(const std::string& key, uint64_t offset, const std::string& piece)> stage;
  // The target as a shard_copy, with which purge requests are exchanged (shard_copy::purge_docs,
  // purge_infos); null: none are (errc::not_implemented from it, an older release: none either).
  std::shared_ptr<shard_copy> purges;
  // The target's purge seq when the push began, if known: none to take when the checkpoint has
  // reached it (a sync sweep then asks nothing more of a copy that purged nothing).
  std::optional<uint64_t> purge_seq;
  // Optional: told the source seq the target holds (`reached`) before the first batch (then it is
  // the checkpoint the push starts from, `from`) and after each batch: the progress of a long push.
  std::function<void(uint64_t from, uint64_t reached)> progress;
};
replication_target local_target(const shard_handle& target, std::chrono::milliseconds timeout);
// How many merges in `results` wrote something new.
size_t count_added(const std::vector<doc_result>& results);

std::string checkpoint_id(const std::string& target_uuid);

// A split copies its parent's _local documents into each child, `l` one of them. The checkpoint
// of the parent's pushes to copy T stays (feeds translate a token of the parent through it), and
// this answers its twin for T's child of the same range (T's split derives its uuid,
// split_child_uuid), which the child's pushes use: seqs and history hold, since both children
// continue their parents' numbering and hold what their parents held of the range. Purge positions
// start over (resending purge requests is harmless). Without it every child pushed its whole range
// to the other copies again after each split. nullopt for any other document.
std::optional<local_doc> carry_sync_checkpoint(const local_doc& l, const shard_range& child);
// The source seq already replicated to the target (0 when never).
uint64_t read_checkpoint(const shard_handle& source, const std::string& target_uuid);

// Adds (source seq, target seq) as the newest entry of a checkpoint history (newest first) and keeps
// it within `max` entries: the newest half as they are, then older entries thinned where they are
// closest together (so they spread out evenly), and the oldest never dropped. So a `since` from any time after the
// first push still translates (to an older seq the further back it is: more rows, never a rewind to 0).
void add_to_history(std::vector<std::pair<uint64_t, uint64_t>>& history, std::pair<uint64_t, uint64_t> entry,
                    size_t max);

// A safe place on `local` (a snapshot of this copy) to resume a feed that had read another copy of
// the same range, named by its uuid prefix, up to `seq`: every change of this copy at or below the
// answer was in the other copy at or below `seq`. nullopt when the checkpoints cannot tell.
std::optional<uint64_t> translate_since(const shard_store::snapshot& local, const std::string& other_uuid_prefix,
                                        uint64_t seq);

// Where a feed that read copy `uuid_prefix` up to `seq` continues on `copy`: exact on the same copy,
// translated through its checkpoints on another, else rewound to 0. Empty prefix: seq 0, exact.
resolved_since resolve_on_copy(const shard_handle& copy, const std::string& uuid_prefix, uint64_t seq);

result<replication_result> push_changes(const shard_handle& source, const replication_target& target,
                                        std::chrono::milliseconds timeout, size_t batch_docs = 500);

}  // namespace settee
