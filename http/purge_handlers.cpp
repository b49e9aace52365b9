// POST /db/_purge, GET /db/_purged_infos, GET|PUT /db/_purged_infos_limit (issue 35), as
// chttpd_db answers them; the work is actors/purges.
#include "actors/purges.hpp"
#include "http/handlers.hpp"
#include "node/crypto.hpp"

namespace settee {
namespace {

// CouchDB's [purge] max_document_id_number and max_revisions_number defaults.
constexpr size_t max_purge_ids = 100;
constexpr size_t max_purge_revs = 1000;

// A member that does not keep purges would bring the purged revisions back: none is accepted then.
status every_member_purges(ctx& c) {
  for (const std::string& m : c.node.cluster->all()) {
    auto member = c.node.cluster->get(m);
    if (!member || !member->purges())
      return {errc::bad_request, "Cannot purge: member " + m + " runs a release without purge"};
  }
  return {};
}

// The body {"docid": ["rev", ...], ...} as requests, each with a new uuid.
result<std::vector<purge_info>> parse_purge_body(const std::string& body) {
  auto parsed = parse_json(body);
  if (!parsed || !parsed->is_object()) return status{errc::bad_request, "Request body must be a JSON object"};
  if (parsed->size() > max_purge_ids) return status{errc::bad_request, "Exceeded maximum number of documents."};
  std::vector<purge_info> reqs;
  size_t revs = 0;
  for (auto& [id, list] : parsed->items()) {
    purge_info p;
    p.uuid = crypto::random_hex(16);
    p.id = id;
    const json one = list.is_string() ? json::array({list}) : list;
    if (!one.is_array()) return status{errc::bad_request, "Invalid rev format"};
    for (const json& r : one) {
      rev_id rev;
      if (!r.is_string() || !parse_rev(r.get<std::string>(), rev))
        return status{errc::bad_request, "Invalid rev format"};
      p.revs.push_back(std::move(rev));
    }
    revs += p.revs.size();
    reqs.push_back(std::move(p));
  }
  if (revs > max_purge_revs) return status{errc::bad_request, "Exceeded maximum number of revisions."};
  return reqs;
}

void handle_purge(ctx& c, const db_meta& db) {
  if (c.method() != "POST") return c.method_not_allowed("POST");
  if (auto st = c.require_json_content(); !st) return c.error(st);
  auto reqs = parse_purge_body(c.req.body);
  if (!reqs) return c.error(reqs.error());
  if (auto st = every_member_purges(c); !st) return c.error(st);
  auto w = c.int_param("w", 0);
  if (!w) return c.error(w.error());
  auto out = purge_docs(c.node.coord, db, *reqs, static_cast<size_t>(std::max<int64_t>(0, *w)));
  if (!out) return c.error(out.error());
  // chttpd_db's purge_results_to_json: 201, 202 when a request missed its quorum, else the worst
  // error's status.
  int code = out->quorum_met ? 201 : 202;
  json purged = json::object();
  for (size_t i = 0; i < reqs->size(); ++i) {
    const auto& r = out->purged[i];
    if (!r) {
      purged[(*reqs)[i].id] = {{"error", error_name_of(r.error().code)}, {"reason", r.error().reason}};
      code = std::max(code, http_status_of(r.error().code));
      continue;
    }
    json revs = json::array();
    for (const rev_id& rev : r.value()) revs.push_back(rev.str());
    purged[(*reqs)[i].id] = std::move(revs);
  }
  c.reply(code, json{{"purge_seq", nullptr}, {"purged", std::move(purged)}});
}

void handle_purged_infos(ctx& c, const db_meta& db) {
  if (c.method() != "GET") return c.method_not_allowed("GET");
  auto infos = purged_infos(c.node.coord, db);
  if (!infos) return c.error(infos.error());
  json list = json::array();
  for (const purge_info& p : *infos) {
    json revs = json::array();
    for (const rev_id& r : p.revs) revs.push_back(r.str());
    list.push_back({{"id", p.id}, {"revs", std::move(revs)}});
  }
  c.reply(200, json{{"purged_infos", std::move(list)}});
}

void handle_purged_infos_limit(ctx& c, const db_meta& db) {
  if (c.method() == "GET") {
    auto limit = purged_infos_limit(c.node.coord, db);
    if (!limit) return c.error(limit.error());
    return c.reply_raw(200, std::to_string(*limit) + "\n");
  }
  if (c.method() != "PUT") return c.method_not_allowed("GET,PUT");
  auto v = parse_json(c.req.body);
  if (!v || !v->is_number_integer() || v->get<int64_t>() <= 0 || v->get<int64_t>() > UINT32_MAX)
    return c.error(errc::bad_request, "`purge_infos_limit` must be positive integer");
  reply_set_on_copies(c, set_purged_infos_limit(c.node.coord, db, static_cast<uint32_t>(v->get<int64_t>())));
}

}  // namespace

void handle_purges(ctx& c, const db_meta& db) {
  const std::string& what = c.path[1];
  if (what == "_purge") return handle_purge(c, db);
  if (what == "_purged_infos") return handle_purged_infos(c, db);
  return handle_purged_infos_limit(c, db);
}

}  // namespace settee
