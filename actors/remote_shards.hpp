// remote_shards: what a coordinator asks of the shard copies on other nodes. The cluster layer
// implements it over Cap'n Proto (cluster/rpc_node); the actors layer only knows this interface.
// Thread-safety: every method may be called from any thread except the RPC thread.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "node/error.hpp"
#include "storage/shard_store.hpp"
#include "storage/time_seq.hpp"

namespace settee {

// One copy of a range as its header describes it.
struct shard_summary {
  std::string uuid;
  uint64_t update_seq = 0;
  uint64_t doc_count = 0;
  uint64_t doc_del_count = 0;
  uint64_t external_size = 0;
  uint64_t file_size = 0;
};

// A page of one copy's changes feed; `doc` is the rendered winning revision when asked for.
struct change_row {
  change_entry e;
  std::string doc;
};
struct changes_page {
  std::vector<change_row> rows;
  uint64_t pending = 0;     // changes after the last row (ascending)
  uint64_t skipped_to = 0;  // not_before: the rows start after this seq (0: nothing skipped)
};
struct changes_request {
  uint64_t since = 0;  // ascending: after this seq; descending: before it (0 = from the end)
  uint32_t limit = 512;
  bool descending = false;
  bool with_docs = false;
  bool conflicts = false;  // with_docs: add _conflicts
  int64_t not_before = 0;  // ascending: first skip the changes committed before this time (0: none)
};

// Where a feed that had read another copy up to a seq continues on this one (spec 11.1).
struct resolved_since {
  std::string uuid;         // of the copy that answered
  uint64_t update_seq = 0;  // its update seq now
  uint64_t seq = 0;         // where to continue
  enum class how : uint8_t { exact, translated, rewound } resolution = how::exact;
};

using query_params = std::vector<std::pair<std::string, std::string>>;

// A document-level request a coordinator hands to a node holding the documents' range, which
// answers it from its copy as its own HTTP layer would.
struct doc_request {
  // "doc" (/db/{id}), "local" (/db/_local/{id}), "bulk_get", "revs_diff"; per range (0.3):
  // "revs_limit" (GET or PUT of the copy's limit), "local_docs" (the copy's _local documents).
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

// One copy's part of an _all_docs request: rows in id order within [start, end] (JSON keys as text,
// "" = unbounded), at most max_rows; or, by_keys, one row per key (found or not).
struct all_docs_request {
  std::string start, end;
  bool descending = false, inclusive_end = true, include_docs = false, conflicts = false;
  uint64_t max_rows = UINT64_MAX;
  bool by_keys = false;
  std::vector<std::string> keys;
};
struct all_docs_row {
  std::string id;
  std::string rev;
  bool deleted = false;
  bool found = true;
  std::string doc;  // include_docs: the rendered winner ("" = null)
};
struct all_docs_page {
  std::vector<all_docs_row> rows;
  uint64_t before = 0;  // live documents before the start key (CouchDB's offset)
  uint64_t doc_count = 0;
};

// A copy's time-seq and its update seq (for the histogram).
struct time_seq_state {
  time_seq::tseq bins;
  uint64_t update_seq = 0;
};

class remote_shards {
 public:
  virtual ~remote_shards() = default;

  // The header of `node`'s copy of `range` (blocks up to `timeout`).
  virtual result<shard_summary> summary(const std::string& node, const std::string& db, const std::string& range,
                                        std::chrono::milliseconds timeout) = 0;

  // Reads a page of `node`'s copy of `range`'s changes.
  virtual result<changes_page> changes(const std::string& node, const std::string& db, const std::string& range,
                                       const changes_request& req, std::chrono::milliseconds timeout) = 0;
  // Resolves a position (copy `uuid_prefix` at `seq`; empty prefix: seq 0) on `node`'s copy.
  virtual result<resolved_since> resolve_since(const std::string& node, const std::string& db, const std::string& range,
                                               const std::string& uuid_prefix, uint64_t seq,
                                               std::chrono::milliseconds timeout) = 0;

  // A document-level request answered by `node`'s copy of `range`.
  virtual result<doc_read> read_doc(const std::string& node, const std::string& db, const std::string& range,
                                    const doc_request& req, std::chrono::milliseconds timeout) = 0;

  // `node`'s copy's part of an _all_docs request.
  virtual result<all_docs_page> all_docs(const std::string& node, const std::string& db, const std::string& range,
                                         const all_docs_request& req, std::chrono::milliseconds timeout) = 0;

  // `node`'s copy's time-seq; with `reset`, empties the bins first (committed before the answer).
  // A node of a release without time-seq answers with an error (the method is unknown to it).
  virtual result<time_seq_state> time_seq(const std::string& node, const std::string& db, const std::string& range,
                                          bool reset, std::chrono::milliseconds timeout) = 0;

  using write_done = std::function<void(result<std::vector<doc_result>>)>;
  // Starts writing `docs` (each new_edits or not, as it says) to `node`'s copy of `range`. `done`
  // runs exactly once, on some other thread: with one result per document once that copy has
  // committed, or with the error (errc::unavailable when the node cannot be reached).
  virtual void update_docs(const std::string& node, const std::string& db, const std::string& range,
                           const std::vector<doc_update>& docs, write_done done) = 0;
};

}  // namespace settee
