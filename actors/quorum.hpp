// quorum: how the answers of a range's copies to one document write become the answer the client
// gets (CouchDB's w semantics). Pure logic, no I/O.
#pragma once
#include <vector>

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

}  // namespace settee
