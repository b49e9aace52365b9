// remote_shards: the calls this node can make to other nodes' shard copies (remote_copy turns
// them into shard_copy objects). The cluster layer implements it over Cap'n Proto
// (cluster/rpc_node); the actors layer only knows this interface. A node of an older release
// answers a method it does not know with errc::not_implemented.
// Thread-safety: every method may be called from any thread except the RPC thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/node_updates.hpp"
#include "actors/shard_copy.hpp"
#include "node/error.hpp"

namespace settee {

// The feature a node announces in its handshake when it serves the typed document calls.
inline constexpr const char* typed_feature = "typed-copies-v1";
// ... and when it serves dbUpdates (its update log, for the cluster's _db_updates).
inline constexpr const char* db_updates_feature = "db-updates-v1";
// ... and when it stores attachments as blobs and carries them (DocUpdate.blobs, readBlob).
inline constexpr const char* attachments_feature = "attachments-v1";
// ... and when it compacts its copies of a database on request and lists its tasks (compactDb,
// activeTasks).
inline constexpr const char* tasks_feature = "tasks-v1";
// ... and when it reads a split database's lineage in `_dbs` (catalog_entry `shards`): a member
// without it would route a split database by `q` alone, so no split starts while one is there.
inline constexpr const char* reshard_feature = "reshard-v1";
// ... and when it answers nodeStatus (its /_node/_local/_system figures).
inline constexpr const char* node_status_feature = "node-status-v1";

// ... and when it answers the node-level calls of members.hpp (reshardState).
inline constexpr const char* members_feature = "members-v1";
// Release 0.4: the node runs validate_doc_update on the writes it coordinates (JavaScript).
inline constexpr const char* javascript_feature = "javascript-v1";
// ... and when its copies answer their part of a view query (viewRows).
inline constexpr const char* views_feature = "views-v1";
// ... and when it places a partitioned database's documents by partition (shard_map's
// placement_hash): a member without it would place them by id, so none is created while one is there.
inline constexpr const char* partitions_feature = "partitions-v1";
// ... and when its copies keep and apply purge requests (purgeDocs, purgeInfos,
// setPurgedInfosLimit): a member without it would bring purged revisions back, so no purge is
// accepted while one is there.
inline constexpr const char* purges_feature = "purge-v1";
// Release 0.5: the node answers /_node/<it>/_config asked on another member (configRequest).
inline constexpr const char* config_feature = "config-v1";
// ... and when its copies answer their part of a full-text query (searchCopy).
inline constexpr const char* search_feature = "search-v1";
// ... and when its copies index Mango text definitions and keep a query's expanded terms as written
// (search_index_def::mango, text_query::lowercase_expanded).
inline constexpr const char* mango_text_feature = "mango-text-v1";
// ... and when its copies make a new revision's hash with SHA-256 when a write asks (DocUpdate
// sha256Revs; storage/rev_tree.hpp rev_hash): a coordinator asks only when every copy's node can.
inline constexpr const char* rev_hash_feature = "revs-sha256-v1";

using query_params = std::vector<std::pair<std::string, std::string>>;

// Release 0.2's document-level request (readDoc): a coordinator handed it to a node holding the
// documents' range, which answered it from its copy as its own HTTP layer would. Kept to talk to
// 0.2 nodes and to answer them; 0.3 nodes use the typed calls below.
struct doc_request {
  // "doc" (/db/{id}), "local" (/db/_local/{id}), "bulk_get", "revs_diff".
  std::string what = "doc";
  std::string method = "GET";
  std::string range;  // set by the node that serves it: the range of the call's shard
  std::string id;     // doc and local
  query_params params;
  std::string if_none_match;
  std::string body;
};
struct doc_read {
  int http_status = 200;
  std::string body;
  std::string etag;
};

class remote_shards {
 public:
  virtual ~remote_shards() = default;

  // Whether `node` announced typed_feature (release 0.3+): the typed document calls below. Older
  // nodes are asked through read_doc.
  virtual bool typed(const std::string& node) const = 0;
  // Whether `node` announced rev_hash_feature.
  virtual bool hashes_sha256(const std::string& /*node*/) const { return false; }

  template <class T>
  using answer = shard_copy::answer<T>;
  // The reads a coordinator starts on many copies at once. Each returns at once; `done` runs
  // exactly once, on the RPC thread (it must not block): with the answer, or with the error
  // (errc::unavailable when the node cannot be reached or did not answer within the call timeout).
  // The header of `node`'s copy of `range`.
  virtual void summary(const std::string& node, const std::string& db, const std::string& range,
                       answer<shard_summary> done) = 0;
  // A page of `node`'s copy of `range`'s changes.
  virtual void changes(const std::string& node, const std::string& db, const std::string& range,
                       const changes_request& req, answer<changes_page> done) = 0;
  // Resolves a position (copy `uuid_prefix` at `seq`; empty prefix: seq 0) on `node`'s copy.
  virtual void resolve_since(const std::string& node, const std::string& db, const std::string& range,
                             const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) = 0;
  // `node`'s copy's part of an _all_docs request.
  virtual void all_docs(const std::string& node, const std::string& db, const std::string& range,
                        const all_docs_request& req, answer<all_docs_page> done) = 0;
  // `node`'s copy's time-seq; with `reset`, empties the bins first (committed before the answer).
  // A node of a release without time-seq answers with an error (the method is unknown to it).
  virtual void time_seq(const std::string& node, const std::string& db, const std::string& range, bool reset,
                        answer<time_seq_state> done) = 0;

  // `node`'s copy's part of a view query (release 0.4; an older node: errc::not_implemented).
  virtual void view_rows(const std::string& node, const std::string& db, const std::string& range,
                         const view_copy_request& req, answer<view_page> done) = 0;
  // `node`'s copy's part of a _find on a JSON index (release 0.4, feature views-v1).
  virtual void mango_rows(const std::string& node, const std::string& db, const std::string& range,
                          const mango_copy_request& req, answer<mango_page> done) = 0;
  // `node`'s copy's part of a full-text query (release 0.5, feature search-v1; an older node:
  // errc::not_implemented naming it).
  virtual void search_rows(const std::string& node, const std::string& db, const std::string& range,
                           const search_copy_request& req, answer<search_copy_page> done) {
    (void)db, (void)range, (void)req;
    done(status{errc::not_implemented, "node " + node + " runs a release without full-text search"});
  }

  // A document-level request answered by `node`'s copy of `range`.
  virtual result<doc_read> read_doc(const std::string& node, const std::string& db, const std::string& range,
                                    const doc_request& req, std::chrono::milliseconds timeout) = 0;

  // The documents `ids` of `node`'s copy of `range` as data (release 0.3: openDocs).
  virtual void open_docs(const std::string& node, const std::string& db, const std::string& range,
                         const std::vector<std::string>& ids, doc_bodies bodies, shard_copy::docs_done done) = 0;
  // _local documents and revs_limit of `node`'s copy (release 0.3: localDoc, writeLocal, localDocs,
  // setRevsLimit).
  virtual result<std::optional<local_doc>> open_local(const std::string& node, const std::string& db,
                                                      const std::string& range, const std::string& id,
                                                      std::chrono::milliseconds timeout) = 0;
  virtual result<uint64_t> write_local(const std::string& node, const std::string& db, const std::string& range,
                                       const local_update& u, std::chrono::milliseconds timeout) = 0;
  virtual result<std::vector<local_doc>> list_local(const std::string& node, const std::string& db,
                                                    const std::string& range, std::chrono::milliseconds timeout) = 0;
  virtual status set_revs_limit(const std::string& node, const std::string& db, const std::string& range,
                                uint32_t limit, std::chrono::milliseconds timeout) = 0;
  // Whether `node` announced attachments_feature; and its copy's blob calls (readBlob, stageBlob,
  // dropStaged; shard_copy says what they do).
  virtual bool stores_attachments(const std::string& node) const = 0;
  virtual result<std::string> read_blob(const std::string& node, const std::string& db, const std::string& range,
                                        const std::string& key, uint64_t offset, uint64_t length,
                                        std::chrono::milliseconds timeout) = 0;
  virtual result<bool> stage_blob(const std::string& node, const std::string& db, const std::string& range,
                                  const std::string& key, uint64_t offset, const std::string& piece,
                                  std::chrono::milliseconds timeout) = 0;
  virtual status drop_staged(const std::string& node, const std::string& db, const std::string& range,
                             const std::string& key, std::chrono::milliseconds timeout) = 0;

  using write_done = shard_copy::write_done;
  // Starts writing `docs` (each new_edits or not, as it says) to `node`'s copy of `range`. `done`
  // runs exactly once, on some other thread: with one result per document once that copy has
  // committed, or with the error (errc::unavailable when the node cannot be reached).
  virtual void update_docs(const std::string& node, const std::string& db, const std::string& range,
                           const std::vector<doc_update>& docs, write_done done) = 0;

  // Purges on `node`'s copy (release 0.4: purgeDocs, purgeInfos, setPurgedInfosLimit; shard_copy
  // says what each does). errc::not_implemented from a node without purges_feature.
  virtual void purge_docs(const std::string& node, const std::string& db, const std::string& range,
                          const std::vector<purge_info>& reqs, shard_copy::purge_done done) {
    (void)db, (void)range, (void)reqs;
    done(status{errc::not_implemented, "node " + node + " runs a release without purge"});
  }
  virtual result<purge_page> purge_infos(const std::string& node, const std::string& db, const std::string& range,
                                         uint64_t since, uint32_t limit, std::chrono::milliseconds timeout) {
    (void)db, (void)range, (void)since, (void)limit, (void)timeout;
    return status{errc::not_implemented, "node " + node + " runs a release without purge"};
  }
  virtual status set_purged_infos_limit(const std::string& node, const std::string& db, const std::string& range,
                                        uint32_t limit, std::chrono::milliseconds timeout) {
    (void)db, (void)range, (void)limit, (void)timeout;
    return {errc::not_implemented, "node " + node + " runs a release without purge"};
  }

  // Whether `node` announced db_updates_feature (release 0.3+).
  virtual bool serves_db_updates(const std::string& node) const {
    (void)node;
    return false;
  }
  // A page of `node`'s update log after (uuid, seq) (release 0.3: dbUpdates).
  virtual result<log_page> db_updates(const std::string& node, const std::string& uuid, uint64_t seq, size_t limit,
                                      std::chrono::milliseconds timeout) {
    (void)uuid, (void)seq, (void)limit, (void)timeout;
    return status{errc::not_implemented, "node " + node + " does not serve _db_updates"};
  }
};

}  // namespace settee
