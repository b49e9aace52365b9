// purges: a database's purge requests across the copies of its ranges (issue 35; CouchDB's
// fabric_doc_purge and fabric_db_purged_infos). Every copy of a document's range applies the
// request (a copy that is down learns it from internal replication, which carries purges before
// documents); the answer waits for w copies of each range, as a write does.
// Thread-safety: as coordinator's (any thread but an actor's or the RPC loop's).
#pragma once
#include <cstdint>
#include <vector>

#include "actors/coordinator.hpp"

namespace settee {

struct purge_outcome {
  // Per request, in input order: the leaves removed (the union of what the copies that answered
  // removed), or why no copy applied it.
  std::vector<result<std::vector<rev_id>>> purged;
  bool quorum_met = true;  // every request reached w copies (else: HTTP 202)
};

// Applies `reqs` (each with its uuid, made by the caller) on every copy of their ranges.
// w = 0: n/2+1, capped at n. A split's sealed parent refusing them: applied again on the new map
// (the uuids make that harmless).
result<purge_outcome> purge_docs(coordinator& c, const db_meta& db, const std::vector<purge_info>& reqs, size_t w = 0);

// The purge requests every reachable copy keeps, each (id, revisions) once, ranges in order;
// errc::unavailable when no copy of some range answers.
result<std::vector<purge_info>> purged_infos(coordinator& c, const db_meta& db);
// The purged_infos_limit of the first range, from the first copy that answers.
result<uint32_t> purged_infos_limit(coordinator& c, const db_meta& db);
// Sets it on every copy of every range.
coordinator::copies_outcome set_purged_infos_limit(coordinator& c, const db_meta& db, uint32_t limit);

}  // namespace settee
