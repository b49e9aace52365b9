// quorum: how the answers of a range's copies become the answer the client gets: for a write
// (CouchDB's w semantics) and for a read (r copies merged, the stale ones repaired). Pure logic,
// no I/O.
#pragma once
#include <vector>

#include "actors/shard_copy.hpp"
#include "storage/shard_store.hpp"

namespace settee {

struct quorum_answer {
  doc_result result;
  bool met = false;  // w copies agreed; else the write was accepted by fewer (HTTP 202)
};

// `answers` holds the result of each copy that answered. A conflict marked `known` (the copy already
// had the revision, delivered by replication first) counts for that revision when another copy
// committed it in this request; a client repeating an edit gets its conflict from every copy.
// The most common successful revision wins
// when w copies report it; an error w copies agree on (e.g. a conflict) is the answer; otherwise a
// revision any copy committed is accepted (met = false: internal replication brings it to the
// others); with no success at all, the most common error. No answers: errc::unavailable.
quorum_answer decide_quorum(const std::vector<doc_result>& answers, size_t w);

// A document read from several copies (CouchDB's read quorum, fabric_doc_open): the union of
// their trees and bodies, and what the copies that answered lack.
struct merged_read {
  doc_copy doc;                     // found when any copy has the document
  std::vector<doc_update> repairs;  // each leaf some answering copy does not know, as a
                                    // new_edits=false merge of its history and body (idempotent)
};
merged_read merge_doc_copies(const std::vector<doc_copy>& answers);

}  // namespace settee
