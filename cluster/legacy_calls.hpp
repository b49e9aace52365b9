// legacy_calls: release 0.3's string calls about reshard jobs (reshardRequest, createJob), answered
// for 0.3 callers from this node's member (actors/members.hpp), as 0.3 answered them: JSON as
// /_reshard/jobs shows it, with an HTTP status. Release 0.4 nodes use the typed calls.
#pragma once
#include <string>
#include <utility>

#include "actors/members.hpp"

namespace settee {

// reshardRequest: an empty `id` lists the jobs; else GET|DELETE one or, with `state`, GET|PUT its
// state (`body`: {"state","reason"}). (HTTP status, JSON body).
std::pair<int, std::string> answer_reshard_request(cluster_member& self, const std::string& method,
                                                   const std::string& id, bool state, const std::string& body);
// createJob: the job made from `body` ({"type","db","shard","suffix"?,"leader"?,"source"?}) as JSON.
result<std::string> answer_create_job(cluster_member& self, const std::string& body);

}  // namespace settee
