#include "actors/remote_copy.hpp"

#include <cstdlib>

#include "actors/gather.hpp"
#include "node/json.hpp"

namespace settee {

namespace {

status bad_answer(const std::string& node, const std::string& what) {
  return {errc::unavailable, "node " + node + " answered " + what + " with something this release cannot read"};
}

}  // namespace

status remote_copy::older_release(const char* what) const {
  return {errc::not_implemented, "node " + node_ + " runs a release that cannot " + what};
}

result<shard_summary> remote_copy::summary() {
  return wait_one<shard_summary>([&](auto done) { start_summary(std::move(done)); }, deadline(), "node " + node_);
}

result<changes_page> remote_copy::changes(const changes_request& req) {
  return wait_one<changes_page>([&](auto done) { start_changes(req, std::move(done)); }, deadline(), "node " + node_);
}

result<resolved_since> remote_copy::resolve_since(const std::string& uuid_prefix, uint64_t seq) {
  return wait_one<resolved_since>([&](auto done) { start_resolve_since(uuid_prefix, seq, std::move(done)); },
                                  deadline(), "node " + node_);
}

result<all_docs_page> remote_copy::all_docs(const all_docs_request& req) {
  return wait_one<all_docs_page>([&](auto done) { start_all_docs(req, std::move(done)); }, deadline(), "node " + node_);
}

result<time_seq_state> remote_copy::time_seq(bool reset) {
  return wait_one<time_seq_state>([&](auto done) { start_time_seq(reset, std::move(done)); }, deadline(),
                                  "node " + node_);
}

void remote_copy::start_summary(answer<shard_summary> done) {
  rpc_.summary(node_, db_, range_, std::move(done));
}

void remote_copy::start_changes(const changes_request& req, answer<changes_page> done) {
  rpc_.changes(node_, db_, range_, req, std::move(done));
}

void remote_copy::start_resolve_since(const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) {
  rpc_.resolve_since(node_, db_, range_, uuid_prefix, seq, std::move(done));
}

void remote_copy::start_all_docs(const all_docs_request& req, answer<all_docs_page> done) {
  rpc_.all_docs(node_, db_, range_, req, std::move(done));
}

void remote_copy::start_time_seq(bool reset, answer<time_seq_state> done) {
  rpc_.time_seq(node_, db_, range_, reset, std::move(done));
}

void remote_copy::start_view(const view_copy_request& req, answer<view_page> done) {
  rpc_.view_rows(node_, db_, range_, req, std::move(done));
}

void remote_copy::start_mango(const mango_copy_request& req, answer<mango_page> done) {
  rpc_.mango_rows(node_, db_, range_, req, std::move(done));
}

void remote_copy::start_search(const search_copy_request& req, answer<search_copy_page> done) {
  rpc_.search_rows(node_, db_, range_, req, std::move(done));
}

void remote_copy::open_docs(const std::vector<std::string>& ids, doc_bodies bodies, docs_done done) {
  if (!rpc_.typed(node_)) return done(legacy_open_docs(ids));  // on this thread, blocking
  rpc_.open_docs(node_, db_, range_, ids, bodies, std::move(done));
}

result<std::optional<local_doc>> remote_copy::open_local(const std::string& id) {
  if (rpc_.typed(node_)) return rpc_.open_local(node_, db_, range_, id, timeout_);
  doc_request req;
  req.what = "local";
  req.id = id;
  auto a = legacy(req);
  if (!a) return a.error();
  if (a->http_status == 404) return std::optional<settee::local_doc>();
  auto doc = parse_json(a->body);
  uint64_t rev = 0;
  if (a->http_status != 200 || !doc || !doc->is_object() || !member(*doc, "_rev").is_string() ||
      !parse_local_rev((*doc)["_rev"].get<std::string>(), rev)) {
    return bad_answer(node_, "a _local read");
  }
  for (const char* k : {"_id", "_rev"}) doc->erase(k);
  return std::optional<settee::local_doc>(settee::local_doc{id, rev, doc->dump()});
}

result<uint64_t> remote_copy::write_local(const local_update& u) {
  if (rpc_.typed(node_)) return rpc_.write_local(node_, db_, range_, u, timeout_);
  doc_request req;
  req.what = "local";
  req.id = u.id;
  req.method = u.deleted ? "DELETE" : "PUT";
  if (u.rev) req.params.emplace_back("rev", "0-" + std::to_string(u.rev));
  req.body = u.deleted ? "" : u.body;
  auto a = legacy(req);
  if (!a) return a.error();
  auto body = parse_json(a->body);
  uint64_t rev = 0;
  if (a->http_status >= 300) {
    std::string error = body ? member(*body, "error").is_string() ? (*body)["error"].get<std::string>() : "" : "";
    std::string reason = body && member(*body, "reason").is_string() ? (*body)["reason"].get<std::string>() : a->body;
    return status{error == "conflict" ? errc::conflict : errc::unavailable, reason};
  }
  if (!body || !member(*body, "rev").is_string() || !parse_local_rev((*body)["rev"].get<std::string>(), rev)) {
    return bad_answer(node_, "a _local write");
  }
  return rev;
}

result<std::vector<local_doc>> remote_copy::list_local() {
  if (rpc_.typed(node_)) return rpc_.list_local(node_, db_, range_, timeout_);
  return older_release("list _local documents");
}

status remote_copy::set_revs_limit(uint32_t limit) {
  if (rpc_.typed(node_)) return rpc_.set_revs_limit(node_, db_, range_, limit, timeout_);
  return older_release("set revs_limit");
}

void remote_copy::update_docs(std::vector<doc_update> docs, write_done done) {
  rpc_.update_docs(node_, db_, range_, docs, std::move(done));
}

void remote_copy::purge_docs(std::vector<purge_info> reqs, purge_done done) {
  rpc_.purge_docs(node_, db_, range_, reqs, std::move(done));
}

result<purge_page> remote_copy::purge_infos(uint64_t since, uint32_t limit) {
  return rpc_.purge_infos(node_, db_, range_, since, limit, timeout_);
}

status remote_copy::set_purged_infos_limit(uint32_t limit) {
  return rpc_.set_purged_infos_limit(node_, db_, range_, limit, timeout_);
}

result<doc_read> remote_copy::legacy(const doc_request& req) {
  return rpc_.read_doc(node_, db_, range_, req, timeout_);
}

// Every leaf of each document with its history (open_revs=all&revs=true), read back into a tree.
result<std::vector<doc_copy>> remote_copy::legacy_open_docs(const std::vector<std::string>& ids) {
  std::vector<doc_copy> out;
  for (const std::string& id : ids) {
    doc_copy d;
    d.id = id;
    d.info.id = id;
    doc_request req;
    req.id = id;
    req.params = {{"open_revs", "all"}, {"revs", "true"}};
    auto a = legacy(req);
    if (!a) return a.error();
    auto leaves = parse_json(a->body);
    if (a->http_status == 404) {
      out.push_back(std::move(d));
      continue;
    }
    if (a->http_status != 200 || !leaves || !leaves->is_array()) return bad_answer(node_, "a document read");
    for (json& item : *leaves) {
      if (!item.contains("ok") || !item["ok"].is_object()) continue;
      json& doc = item["ok"];
      const json& revs = member(doc, "_revisions");
      rev_id leaf;
      if (!member(doc, "_rev").is_string() || !parse_rev(doc["_rev"].get<std::string>(), leaf) ||
          !member(revs, "start").is_number_unsigned() || !member(revs, "ids").is_array()) {
        return bad_answer(node_, "a document read");
      }
      std::vector<rev_id> path;
      uint64_t start = revs["start"].get<uint64_t>();
      for (size_t i = 0; i < revs["ids"].size() && i < start; ++i) {
        if (!revs["ids"][i].is_string()) return bad_answer(node_, "a document read");
        path.push_back({start - i, revs["ids"][i].get<std::string>()});
      }
      if (path.empty() || path.front() != leaf) return bad_answer(node_, "a document read");
      bool deleted = member(doc, "_deleted").is_boolean() && doc["_deleted"].get<bool>();
      bool added = false;
      d.info.tree.merge_path(path, deleted, added);
      for (const char* k : {"_id", "_rev", "_revisions", "_deleted"}) doc.erase(k);
      d.bodies.emplace_back(leaf, doc.dump());
      d.found = true;
    }
    out.push_back(std::move(d));
  }
  return out;
}

result<std::string> remote_copy::read_blob(const std::string& key, uint64_t offset, uint64_t length) {
  if (!rpc_.stores_attachments(node_)) {
    return status{errc::not_found, "Document is missing attachment"};  // an older node holds no blobs
  }
  return rpc_.read_blob(node_, db_, range_, key, offset, length, timeout_);
}

result<bool> remote_copy::stage_blob(const std::string& key, uint64_t offset, const std::string& piece) {
  return rpc_.stage_blob(node_, db_, range_, key, offset, piece, timeout_);
}

status remote_copy::drop_staged(const std::string& key) {
  return rpc_.drop_staged(node_, db_, range_, key, timeout_);
}

}  // namespace settee
