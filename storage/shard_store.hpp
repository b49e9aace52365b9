// shard_store: one shard replica's LMDB file (FORMAT.md): its header, documents with rev trees,
// leaf bodies, the by-sequence index (one entry per document) and _local documents.
//
// Thread-safety: commit() must be called by one thread at a time (the shard replica actor, the
// file's only writer). read() snapshots and header() may be used from any thread concurrently.
// Durability: commit() returns only after LMDB committed the transaction with fsync.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "node/error.hpp"
#include "storage/attachments.hpp"
#include "storage/blob_store.hpp"
#include "storage/db_events.hpp"
#include "storage/json_index.hpp"
#include "storage/purge_log.hpp"
#include "storage/rev_tree.hpp"
#include "storage/seq_counts.hpp"
#include "storage/shard_header.hpp"
#include "storage/write_ahead.hpp"

// LMDB stays an implementation detail: upper layers never include lmdb.h.
struct MDB_env;
struct MDB_txn;

namespace settee {

namespace lmdb {
class txn;
}

// What kind of file a store is, as its owner says (the store never guesses from its path).
enum class file_role {
  shard,    // a database's shard copy: every commit fsynced
  catalog,  // the catalog's own file (`<data>/_dbs.lmdb`): its commits also record databases'
            // lifecycle events (storage/db_events.hpp)
  derived,  // derived data (`<data>/_db_updates.lmdb`): commits not fsynced (MDB_NOSYNC), so a
            // kill -9 loses nothing (the page cache keeps it) but a machine crash may; its owner
            // rebuilds it then (actors/update_log.hpp)
};

struct store_options {
  std::string node_name = "settee@127.0.0.1";
  uint64_t map_size_bytes = 64ull << 30;                   // virtual; the file is sparse
  int64_t created_at = 0;                                  // header.created_at for a new file
  uint32_t revs_limit = 1000;                              // for a new file
  int64_t time_seq_min_time = time_seq::default_min_time;  // [time_seq] min_time
  bool time_seq_enabled = true;       // [time_seq] enabled; off only to measure what time-seq costs
  file_role role = file_role::shard;  // what the file is (given by its owner)
  // What documents are in JSON indexes (storage/json_index.hpp); null: the file keeps none.
  std::shared_ptr<const settee::index_keys> keys_of_indexes;
};

// One document write. new_edits=true: `revs` is empty (create) or holds the base revision.
// new_edits=false: `revs` is the full history to merge, newest first (at least one).
struct doc_update {
  std::string id;
  std::string body;  // JSON object text without _id/_rev/_deleted/_revisions
  bool deleted = false;
  bool new_edits = true;
  std::vector<rev_id> revs;
  // managed_attachments: the body's `_attachments` hold stored entries and stubs
  // (storage/attachments.hpp); the store merges the stubs from the revision the edit extends and
  // takes a reference to every blob the body names, whose bytes are here or in the shard. Off, they
  // are stored as given (release 0.2's way, still the front's until it speaks attachments).
  bool managed_attachments = false;
  std::vector<attachments::blob> blobs;
  // new_edits=false from another copy of the range (internal replication, a read's repair): a
  // revision this copy purged (its purge log names it for this id) is not merged back (nothing
  // written, added=false). A replication from another database (_bulk_docs) brings it back, as
  // in CouchDB.
  bool honor_purges = false;
  // How a new_edits write makes its revision (rev_tree.hpp): the same on every copy of the range.
  rev_hash hash = rev_hash::md5;
};

struct doc_result {
  status st;
  rev_id rev;          // the new (or merged) revision when st is ok
  bool added = true;   // false: nothing written (a merge this copy already had, or `known`)
  bool known = false;  // a conflict only because the revision this edit creates, `rev`, exists already
};

struct local_update {
  std::string id;  // including the "_local/" prefix
  std::string body;
  bool deleted = false;
  uint64_t rev = 0;  // the "0-N" revision the client names (0: none); the new one is N + 1
};

struct import_request;  // below shard_store

// The _local documents where internal replication records what it sent to another copy
// (actors/internal_replication.hpp): `<prefix><target shard uuid>`, a JSON body whose `purge_seq`
// is the last purge request of this copy the target has.
constexpr std::string_view sync_checkpoint_prefix = "_local/shard-sync-";

// A unit of work for commit(). The caller fills the inputs; commit() fills the outputs.
struct write_op {
  enum class kind {
    docs,
    local,
    security,
    revs_limit,
    time_seq_reset,
    compact,
    stage_blob,
    drop_staged,
    format,
    import,
    index_define,
    index_drop,
    index_build,
    purge,
    purged_infos_limit
  };
  kind what = kind::docs;
  std::vector<doc_update> docs;            // kind::docs
  local_update local;                      // kind::local
  std::string security;                    // kind::security (JSON text)
  uint32_t revs_limit = 0;                 // kind::revs_limit
  uint32_t format_version = 0;             // kind::format: raises the header's format_version to this
  std::optional<bool> seal;                // kind::format: records shard_header::sealed (durably)
  std::shared_ptr<import_request> import;  // kind::import (a shard split's copy step)
  // kind::compact: one step of compaction, from document id `compact_from` (inclusive) over at most
  // `compact_limit` documents: older revisions lose their bodies (and their attachments their
  // references). Answers the documents visited and where the next step starts ("": done).
  std::string compact_from;
  size_t compact_limit = 0;
  size_t compact_visited = 0;
  std::string compact_next;

  // kind::stage_blob: `blob_piece` at `blob_offset` of blob `blob_key` (blob_store::stage; a piece
  // out of order is this op's 400, not the transaction's); answers whether the shard holds the
  // whole blob already. kind::drop_staged: forgets blob `blob_key` if it is only staged.
  std::string blob_key;
  uint64_t blob_offset = 0;
  std::string blob_piece;
  bool blob_whole = false;

  // kind::index_define: JSON index `index.signature` with `index.definition` kept from now on (every
  // write updates it), unbuilt when new; `index` answers it as the file has it (a known signature:
  // nothing changes). kind::index_drop: the index of `index.signature` and its rows go.
  // kind::index_build: one step of its build, over at most `index_limit` documents; answers whether
  // it is built now in `index.built` (an index that is gone: not_found).
  json_index_def index;
  size_t index_limit = 0;

  // kind::purge: purge requests (storage/purge_log.hpp: uuid, id and revisions; their seq is this
  // copy's to give), applied in order: each request's leaves leave the document (rev_tree::
  // remove_leafs), which is gone when none is left, else moves to a new seq (its winner may
  // change); every request is recorded, also one that removed nothing. A request whose uuid this
  // copy has applied already changes nothing. `purged[i]` answers request i: the leaves removed.
  // Requests past the copy's purged_infos_limit are forgotten, oldest first, once every copy it
  // syncs to has them (the `purge_seq` of its sync checkpoints, sync_checkpoint_prefix).
  // kind::purged_infos_limit: sets the header's purged_infos_limit (> 0).
  std::vector<purge_info> purges;
  std::vector<std::vector<rev_id>> purged;
  uint32_t purged_infos_limit = 0;

  std::vector<doc_result> results;  // kind::docs: one per input doc
  status st;                        // every kind: the op-level outcome
  uint64_t local_rev = 0;           // kind::local: the new revision
};

struct doc_info {
  std::string id;
  uint64_t seq = 0;  // the seq of the document's latest change
  rev_tree tree;
};

struct change_entry {
  uint64_t seq = 0;
  std::string id;
  std::string rev;  // winning revision
  bool deleted = false;
  std::vector<std::string> leaf_revs;  // winner first
  int64_t time_s = 0;                  // commit time (unix seconds)
};

// A batch of changes for internal replication: every leaf of every changed document as a
// new_edits=false update (its full known history, deleted flag and body), so applying the batch to
// another copy merges the trees exactly. `last_seq` is the source seq the batch reaches.
constexpr size_t replication_batch_bytes = 16u << 20;
// A blob larger than this does not travel in the batch: the replicator stages it on the target in
// pieces of this size first (blob_store::stage), unless the target holds it already.
constexpr size_t replication_piece_bytes = 4u << 20;

struct replication_batch {
  std::vector<doc_update> updates;
  std::vector<std::pair<std::string, uint64_t>> large_blobs;  // (key, stored length) the updates name
  uint64_t last_seq = 0;
  size_t docs = 0;
};

struct local_doc {
  std::string id;
  uint64_t rev = 0;
  std::string body;
};

// A _local document's revision text "0-N" (N decimal): N into `out`; false for anything else.
bool parse_local_rev(std::string_view text, uint64_t& out);

// What a shard import (write_op::kind::import) reads: a snapshot of a local shard (a split's
// parent) or an import_batch that came from another node (a move's source).
class import_source {
 public:
  virtual ~import_source() = default;
  // Changes with seq > since, ascending; the visitor returns false to stop.
  virtual void scan_changes(uint64_t since, const std::function<bool(const change_entry&)>& visit) const = 0;
  virtual bool doc(std::string_view id, doc_info& out) const = 0;
  virtual bool body(std::string_view id, const rev_id& rev, std::string& out) const = 0;
  virtual bool blob(std::string_view key, std::string& out) const = 0;
  virtual bool header(shard_header& out) const = 0;
  virtual void scan_local(const std::function<bool(const local_doc&)>& visit) const = 0;
  // Whether the source holds a document `id` (a read error: fault()).
  virtual bool holds(std::string_view id) const {
    doc_info d;
    return doc(id, d);
  }
  // Purge requests with seq > since (a source without them: none).
  virtual void scan_purges(uint64_t since, const std::function<bool(const purge_info&)>& visit) const {
    (void)since;
    (void)visit;
  }
  // Whether scan_changes reaches the source's last change (a batch may hold only some).
  virtual bool complete() const { return true; }
  virtual const status& fault() const = 0;
};

class shard_store : public std::enable_shared_from_this<shard_store> {
 public:
  static result<std::shared_ptr<shard_store>> open(const std::string& path, const store_options& opts);
  ~shard_store();
  shard_store(const shard_store&) = delete;
  shard_store& operator=(const shard_store&) = delete;

  const std::string& path() const { return path_; }
  shard_header header() const;
  uint64_t update_seq() const;   // header().update_seq without copying the rest
  uint64_t purge_seq() const;    // header().purge_seq without copying the rest
  std::string security() const;  // header().security without copying the rest
  uint64_t file_size() const;

  // Applies every op in one transaction and syncs it to disk. A failure of the transaction itself
  // (e.g. a full map) fails every op with the returned status; per-document outcomes such as
  // conflicts are in each op's results. When the commit itself fails (the write or fsync of the
  // file: its state on disk is then unknown), the store is read-only until it is reopened: every
  // later commit fails at once with that reason (LevelDB's rule). A full disk is not such a
  // failure: LMDB left the file as it was, and writes resume once there is space.
  status commit(const std::vector<write_op*>& ops, int64_t now_s);
  // The failure that made the store read-only; ok while it takes writes.
  status failed() const;
  // A split is about to close this shard: from the next commit on, every op but kind::format and
  // kind::import is refused with errc::shard_moved (the coordinator retries on the new shard map).
  // In memory; a kind::format op with `seal` records it in the header (a move's source), and a
  // store opened with a sealed header starts sealed.
  void seal() { sealed_.store(true); }
  void unseal() { sealed_.store(false); }
  bool sealed() const { return sealed_.load(); }
  // Runs once the last holder let go and the environment is closed (the file may be opened again).
  // Set once, before the store is shared.
  void set_on_closed(std::function<void()> fn) { on_closed_ = std::move(fn); }

  // A consistent read-only view (one LMDB read transaction). Keep it short-lived. It keeps the
  // store open while it lives.
  // Errors: a read that fails (an LMDB error, or a record that does not decode) returns false or
  // stops its scan, and the snapshot keeps the first such error in fault() (logged once, with the
  // shard and the key). "false" from a read therefore means "not there" only while fault() is ok:
  // callers check it before they answer 404 or end a listing (LevelDB's Iterator::status()).
  class snapshot final : public import_source {
   public:
    snapshot() = default;
    snapshot(snapshot&& o) noexcept : store_(std::move(o.store_)), txn_(o.txn_) { o.txn_ = nullptr; }
    snapshot& operator=(snapshot&& o) noexcept;
    snapshot(const snapshot&) = delete;
    ~snapshot();

    bool doc(std::string_view id, doc_info& out) const override;
    bool body(std::string_view id, const rev_id& rev, std::string& out) const override;
    // The winning revision's body of `d`; false when the winner is a tombstone (or has no body).
    bool winner_body(const doc_info& d, std::string& out) const;
    bool local(std::string_view id, local_doc& out) const;
    // An attachment's stored bytes by blob key (storage/blob_store.hpp).
    bool blob(std::string_view key, std::string& out) const override;
    // At most `length` of them from `offset` (fewer at the end).
    bool blob_range(std::string_view key, uint64_t offset, uint64_t length, std::string& out) const;
    // Visits documents in id order from `start` (inclusive; "" = the first or, descending, the last
    // id). The visitor returns false to stop.
    void scan_docs(std::string_view start, bool descending, const std::function<bool(const doc_info&)>& visit) const;
    // Visits _local documents in id order.
    void scan_local(const std::function<bool(const local_doc&)>& visit) const override;
    // Visits changes with seq > since, ascending.
    void scan_changes(uint64_t since, const std::function<bool(const change_entry&)>& visit) const override;
    // Where an ascending read from `since` continues so that its first change is the first one
    // committed at or after `time` (Unix seconds): the seq of the last change before that one, or
    // the newest seq when none is that late. Decodes only the commit times.
    uint64_t skip_before_time(uint64_t since, int64_t time) const;
    // Visits changes with seq < before, descending (before = 0: from the last one).
    void scan_changes_descending(uint64_t before, const std::function<bool(const change_entry&)>& visit) const;
    // The catalog file's database events from (seq, index) on, ascending; none in other files.
    void scan_db_events(uint64_t seq, uint32_t index, const std::function<bool(const db_event&)>& visit) const;
    // The catalog file's database events of changes before `seq`, newest first.
    void scan_db_events_before(uint64_t seq, const std::function<bool(const db_event&)>& visit) const;
    // Up to `max_docs` changed documents after `since`, as a replication batch; it also ends after
    // the document that brings it past replication_batch_bytes (bodies and attachment bytes), so
    // one message stays well inside the node protocol's 64 MiB limit.
    replication_batch read_for_replication(uint64_t since, size_t max_docs) const;
    // How many changes have seq > since (reads keys only).
    uint64_t count_changes_after(uint64_t since) const;
    // How many changes have a seq below `before` (0: all of them). Reads the changes at or above it.
    uint64_t count_changes_before(uint64_t before) const;
    // Live documents whose id sorts before `id`, and all of them (storage/doc_rank.hpp: a few
    // thousand reads at most, whatever the shard's size).
    uint64_t live_before(std::string_view id) const;
    uint64_t live_total() const;
    // Purge requests this copy applied with seq > since, ascending (storage/purge_log.hpp).
    void scan_purges(uint64_t since, const std::function<bool(const purge_info&)>& visit) const override;
    // The oldest purge request still recorded (0: none).
    uint64_t oldest_purge_seq() const;
    // The JSON indexes (storage/json_index.hpp) as of this snapshot.
    std::vector<json_index_def> json_indexes() const;
    // Rows of JSON index `number` at positions in [low, high) ("" high: to its end), in order or
    // reversed; visit(position, id) returns false to stop. count_json_index: how many, up to `cap`.
    void scan_json_index(uint32_t number, std::string_view low, std::string_view high, bool descending,
                         const std::function<bool(std::string_view pos, std::string_view id)>& visit) const;
    uint64_t count_json_index(uint32_t number, std::string_view low, std::string_view high, uint64_t cap) const;
    // The header as of this snapshot (shard_store::header() is the latest commit's).
    bool header(shard_header& out) const override;
    // Releases the snapshot but keeps the reader slot; renew() takes a fresh snapshot without the
    // reader-table lock that a new read transaction needs under MDB_NOTLS. A reset snapshot must
    // be renewed before any read.
    void reset();
    bool renew();
    // The first read error met by this snapshot; ok when none.
    const status& fault() const override { return fault_; }

   private:
    friend class shard_store;
    bool fail(const status& st) const;  // records (first only) and logs; returns false
    bool corrupt(std::string_view what, std::string_view key) const;
    void scan_events(uint64_t seq, uint32_t index, bool backward,
                     const std::function<bool(const db_event&)>& visit) const;
    std::shared_ptr<const shard_store> store_;
    MDB_txn* txn_ = nullptr;
    mutable status fault_;
  };
  result<snapshot> read() const;

  // Forces what was committed to disk (for a derived file, at a clean stop).
  status sync();

  // Removes a closed store's files.
  static void remove_files(const std::string& path);

 private:
  // open() without the clean-up of a file it could not finish creating.
  static result<std::shared_ptr<shard_store>> open_env(const std::string& path, const store_options& opts);
  shard_store() = default;
  status apply_doc(MDB_txn* t, shard_header& h, doc_update& u, doc_result& r, int64_t now_s);
  // Makes `u.body`'s attachments final before the revision is computed: stubs merged from the
  // revision at tree index `base` (-1: none), new ones given `new_pos`, every blob they name present
  // or brought by the write; their keys go to `keys`. A refusal is left in r.st: missing_stub, or,
  // when `conflicted` (the edit cannot apply) and it has stubs, the conflict CouchDB reports first.
  status settle_attachments(MDB_txn* t, const doc_info& d, doc_update& u, int base, bool conflicted, uint64_t new_pos,
                            std::vector<std::string>& keys, doc_result& r);
  // References (+1 or -1) to the blobs a body names; the bytes stored or freed move external_size.
  status reference_blobs(MDB_txn* t, shard_header& h, const std::vector<std::string>& keys, const doc_update* u,
                         int delta);
  status apply_local(MDB_txn* t, write_op& op);
  // kind::purge: one request (its seq given here); `purged` gets the leaves it removed.
  status apply_purge(MDB_txn* t, shard_header& h, purge_info& p, std::vector<rev_id>& purged, int64_t now_s);
  // A new_edits edit's revision as the child of `parent` (-1: a root) in `d` (`leaf` its index); a
  // revision the purge log names is refused (r.st conflict).
  status add_edit(MDB_txn* t, const shard_header& h, doc_info& d, const doc_update& u, int parent, doc_result& r,
                  int& leaf);
  // Whether this copy's purge log names revision `rev` of document `id` (requests and the history
  // they removed).
  status was_purged(MDB_txn* t, const shard_header& h, const std::string& id, const rev_id& rev, bool& purged);
  // Records the revisions purge `p` removed besides those it named (the history only they had) as
  // a request of their own (purge_log::implied_marker), which internal replication carries: a copy
  // that lacked the named leaf when it applied `p` still holds that history as a leaf, and learns
  // to remove it from this one.
  status record_implied_purge(MDB_txn* t, shard_header& h, const purge_info& p, const std::vector<rev_id>& dropped);
  // Forgets the purge requests past the header's limit that every synced copy has.
  status prune_purges(MDB_txn* t, const shard_header& h);
  // Document `d` (a record under `key`) leaves every JSON index.
  status unindex_all(MDB_txn* t, const doc_info& d);
  // Stores leaf `rev` of `d` (edit `u`'s body, its references to blobs `blob_keys`), then stems
  // `d`'s history to the revs_limit (the stemmed revisions' bodies go).
  status store_leaf(MDB_txn* t, shard_header& h, doc_info& d, const doc_update& u, const rev_id& rev,
                    const std::vector<std::string>& blob_keys);
  // Removes the body of revision `rev` of document `id` (if stored) and its blob references.
  status drop_body(MDB_txn* t, shard_header& h, const std::string& id, const rev_id& rev);
  status compact_step(MDB_txn* t, shard_header& h, write_op& op);
  // JSON indexes: `defs` is the commit's list (a copy replaces it when an op changes it).
  using index_list = std::shared_ptr<const std::vector<json_index_def>>;
  status index_op(MDB_txn* t, write_op& op, index_list& defs);
  status build_step(MDB_txn* t, write_op& op, json_index_def& d);
  // A document's rows in the commit's JSON indexes as a revision makes them: its live winner
  // (nullopt: a tombstone, or no document) and that revision's key in each index (working_'s order).
  // Taken before a write changes the document, while the winner's body is still stored.
  struct indexed_as {
    std::optional<rev_id> winner;
    std::vector<std::optional<std::string>> keys;
  };
  // At open: the JSON indexes' definitions, emptied to be built again when the file's mark says
  // a commit since did not keep them (mark_of).
  status open_indexes(MDB_txn* t, uint64_t update_seq);
  // The mark of JSON indexes current at update seq `seq` with keys made by index_keys_'s version:
  // a file whose mark differs was written without them (an older release) or keyed another way.
  std::string mark_of(uint64_t seq) const;
  // Whether document `id` can have rows in JSON indexes (there are keys; views skip design
  // documents), and whether it has them in the commit's.
  bool keyed(const std::string& id) const;
  bool indexed(const std::string& id) const;
  // The commit's JSON indexes, as keys_of takes them.
  std::vector<const json_index_def*> working_list() const;
  // `out` for document `id` as revision `winner` (body `body`, read when null) makes it, in `defs`.
  status indexed_by(MDB_txn* t, const std::string& id, const std::optional<rev_id>& winner, const std::string* body,
                    const std::vector<const json_index_def*>& defs, indexed_as& out);
  // Document `d`'s rows in every index of the commit's list moved from `before` to what its winner
  // is now (`winner_body` when known).
  status reindex_all(MDB_txn* t, const doc_info& d, const std::string* winner_body, const indexed_as& before);
  status stage_blob(MDB_txn* t, shard_header& h, write_op& op);
  status import_step(MDB_txn* t, shard_header& h, import_request& req);
  // An import's purge requests: the source's for the documents kept, recorded with the source's
  // seqs; a document the source no longer holds at all (purged whole after an earlier pass copied
  // it) leaves this copy. One purged in part moved to a new seq in the source: its change brings it.
  status import_purges(MDB_txn* t, shard_header& h, const import_request& req);
  // The source's _local documents replace this copy's (with those req.also_local adds).
  status import_locals(MDB_txn* t, const import_source& src, const import_request& req);
  // Removes document `key`'s record, its by_seq entry, bodies and JSON index rows (a document
  // imported again, or purged whole).
  status forget_doc(MDB_txn* t, shard_header& h, const std::string& key, const doc_info& d);
  // The catalog file: appends the events that took `id` from its recorded state to the one its
  // tree `d` now has (the winner's body is `winner_body` when known), at `d.seq`.
  // `index` numbers the events of one seq.
  status record_db_events(MDB_txn* t, const doc_info& d, const std::string* winner_body, int64_t now_s,
                          uint32_t& index);
  // The catalog file, at open: brings the state table in line with the documents when a release
  // without it (0.2 and older) committed since, appending the events it missed.
  status reconcile_db_events(MDB_txn* t, uint64_t update_seq, int64_t now_s);
  // The by-seq entry of `d` at d.seq, and the removal of one: recorded for the commit's seq_counts.
  status put_change(MDB_txn* t, const doc_info& d, int64_t time_s);
  status del_change(MDB_txn* t, uint64_t seq);
  // seq_counts by LMDB transaction id: the commit `txn_id` derives its version from the one before
  // (none kept: built by the next count, from its snapshot); counts_at finds a snapshot's version.
  void publish_counts(uint64_t txn_id);
  // Commits `t` and publishes the seq_counts it made.
  status commit_txn(lmdb::txn& t);
  // The commit's own state back to the last commit's: its index list, no seq deltas.
  void reset_working();
  std::shared_ptr<const seq_counts> counts_at(uint64_t txn_id) const;
  void offer_counts(uint64_t txn_id, std::shared_ptr<const seq_counts> c) const;

  std::string path_;
  int64_t min_time_ = time_seq::default_min_time;  // time-seq ignores earlier times
  bool time_seq_enabled_ = true;                   // false: commits leave the bins alone
  MDB_env* env_ = nullptr;
  // Zeros ahead of the file's used pages, kept by commit_txn (the writer's).
  lmdb::write_ahead ahead_;
  unsigned meta_ = 0, docs_ = 0, bodies_ = 0, by_seq_ = 0, local_ = 0, rank_ = 0, purges_ = 0;  // MDB_dbi handles
  blob_store::tables blobs_;
  json_index::tables jx_;                         // JSON indexes' tables
  std::shared_ptr<const index_keys> index_keys_;  // null: no JSON indexes
  std::string keys_version_;                      // index_keys_->version(), asked once at open
  index_list indexes_;                            // as committed (the writer's)
  index_list working_;                            // during commit(): the commit's
  unsigned events_ = 0;                           // `db_events`, in the catalog file only
  bool db_events_ = false;                        // this is the catalog file
  status failed_;                                 // set by a failed commit (under header_mu_)
  std::atomic<bool> sealed_{false};
  std::function<void()> on_closed_;
  mutable std::mutex header_mu_;
  static constexpr size_t kept_counts = 4;  // seq_counts versions kept (snapshots a little behind)
  mutable std::mutex counts_mu_;
  mutable std::vector<std::pair<uint64_t, std::shared_ptr<const seq_counts>>> counts_;  // oldest first
  std::vector<std::pair<uint64_t, int>> seq_deltas_;  // during commit(): by-seq entries added (+1), removed (-1)
  shard_header header_;
  std::string header_raw_;
};

// One step of a shard import (write_op::kind::import): a split's copy into a child shard, or a
// move's copy into the copy that replaces the source. The changes of `from` after seq `since` whose
// ids `keep` accepts (for a split, those hashing into the child's range), visiting at most `limit`
// changes, each copied with its seq, tree, bodies and attachments (a document copied before is
// replaced). The target's update_seq becomes the last source seq visited: it continues the
// source's numbering. With `header`, the target also takes the source's security, revs_limit and
// time-seq bins, and with `local_docs` its _local documents (replication checkpoints). With `owner`
// (a move) it takes the source's identity too: its uuid and epochs, and `owner` starts an epoch.
// Imports leave time-seq alone: the bins are the source's.
struct import_request {
  const import_source* from = nullptr;
  std::function<bool(std::string_view id)> keep;  // empty: every document
  uint64_t since = 0;
  size_t limit = 1000;
  std::optional<shard_header> header;
  bool local_docs = false;
  // With local_docs: a document to keep beside each _local document copied (a split adds internal
  // replication checkpoints for the children of their targets, see actors/reshard_steps.cpp).
  std::function<std::optional<local_doc>(const local_doc&)> also_local;
  std::string owner;  // a move: this node's name
  std::string uuid;   // a split: the child's shard uuid (split_child_uuid), set by every pass
  uint64_t last = 0;  // out: the last source seq visited (since when none)
  size_t copied = 0;  // out: documents copied
  bool done = false;  // out: every change of the source after `since` was visited
};

}  // namespace settee
