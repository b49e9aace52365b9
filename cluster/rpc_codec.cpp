#include "cluster/rpc_internal.hpp"

namespace settee {

void set_status(CallStatus::Builder b, const status& st) {
  if (st) return;
  b.setError(error_name_of(st.code));
  b.setReason(st.reason);
  b.setCode(code_name_of(st.code));
}

status status_of(CallStatus::Reader r) {
  if (r.getError().size() == 0) return {};
  errc code = errc_from_code_name(r.getCode().cStr());
  return {code, r.getReason()};
}

void set_shard(ShardRef::Builder b, const std::string& db, const std::string& range) {
  b.setDb(db);
  b.setRange(range);
}

void write_update(DocUpdate::Builder b, const doc_update& u) {
  b.setId(u.id);
  b.setBody(u.body);
  b.setDeleted(u.deleted);
  b.setNewEdits(u.new_edits);
  auto revs = b.initRevs(static_cast<unsigned>(u.revs.size()));
  for (unsigned k = 0; k < u.revs.size(); ++k) {
    revs[k].setPos(u.revs[k].pos);
    revs[k].setHash(u.revs[k].hash);
  }
  b.setManagedAttachments(u.managed_attachments);
  b.setHonorPurges(u.honor_purges);
  b.setSha256Revs(u.hash == rev_hash::sha256);
  if (u.blobs.empty()) return;
  auto blobs = b.initBlobs(static_cast<unsigned>(u.blobs.size()));
  for (unsigned k = 0; k < u.blobs.size(); ++k) {
    blobs[k].setKey(u.blobs[k].key);
    blobs[k].setBytes(
        capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(u.blobs[k].bytes.data()), u.blobs[k].bytes.size()));
  }
}

void write_updates(capnp::List<DocUpdate>::Builder list, const std::vector<doc_update>& updates) {
  for (unsigned i = 0; i < updates.size(); ++i) write_update(list[i], updates[i]);
}

void write_revs(capnp::List<RevId>::Builder list, const std::vector<rev_id>& revs) {
  for (unsigned i = 0; i < revs.size(); ++i) {
    list[i].setPos(revs[i].pos);
    list[i].setHash(revs[i].hash);
  }
}

std::vector<rev_id> read_revs(capnp::List<RevId>::Reader list) {
  std::vector<rev_id> out;
  out.reserve(list.size());
  for (auto r : list) out.push_back({r.getPos(), r.getHash()});
  return out;
}

void write_purge(PurgeInfo::Builder b, const purge_info& p) {
  b.setSeq(p.seq);
  b.setUuid(p.uuid);
  b.setId(p.id);
  write_revs(b.initRevs(static_cast<unsigned>(p.revs.size())), p.revs);
}

purge_info read_purge(PurgeInfo::Reader r) {
  return {r.getSeq(), r.getUuid(), r.getId(), read_revs(r.getRevs())};
}

void write_doc_copy(DocCopy::Builder b, const doc_copy& d) {
  b.setId(d.id);
  b.setFound(d.found);
  if (!d.found) return;
  b.setSeq(d.info.seq);
  codec::writer w;
  d.info.tree.encode(w);
  b.setTree(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(w.data().data()), w.data().size()));
  auto bodies = b.initBodies(static_cast<unsigned>(d.bodies.size()));
  for (unsigned i = 0; i < d.bodies.size(); ++i) {
    bodies[i].initRev().setPos(d.bodies[i].first.pos);
    bodies[i].getRev().setHash(d.bodies[i].first.hash);
    bodies[i].setBody(d.bodies[i].second);
  }
}

result<doc_copy> read_doc_copy(DocCopy::Reader b) {
  doc_copy d;
  d.id = b.getId();
  d.found = b.getFound();
  d.info.id = d.id;
  if (!d.found) return d;
  d.info.seq = b.getSeq();
  auto tree = b.getTree();
  codec::reader r(std::string_view(reinterpret_cast<const char*>(tree.begin()), tree.size()));
  if (!rev_tree::decode(r, d.info.tree) || d.info.tree.empty()) {
    return status{errc::internal, "a peer sent an undecodable revision tree for '" + d.id + "'"};
  }
  for (auto body : b.getBodies()) {
    d.bodies.emplace_back(rev_id{body.getRev().getPos(), body.getRev().getHash()}, body.getBody());
  }
  return d;
}

status check_updates(capnp::List<DocUpdate>::Reader updates) {
  for (auto u : updates) {
    // Shaped like a JSON object (not parsed again here: the coordinator parsed it).
    std::string_view body(u.getBody().cStr(), u.getBody().size());
    const size_t first = body.find_first_not_of(" \t\r\n"), last = body.find_last_not_of(" \t\r\n");
    if (first == std::string_view::npos || body[first] != '{' || body[last] != '}')
      return status{errc::bad_request, "document " + std::string(u.getId().cStr()) + ": the body is not a JSON object"};
    if (!within_json_depth(u.getBody().cStr())) {
      return status{errc::bad_request, "document " + std::string(u.getId().cStr()) + " nests deeper than " +
                                           std::to_string(max_json_depth()) + " levels ([couchdb] max_json_depth)"};
    }
  }
  return {};
}

doc_update read_update(DocUpdate::Reader u, bool new_edits) {
  doc_update d;
  d.id = u.getId();
  d.body = u.getBody();
  d.deleted = u.getDeleted();
  d.new_edits = new_edits;
  for (auto r : u.getRevs()) d.revs.push_back({r.getPos(), r.getHash()});
  d.managed_attachments = u.getManagedAttachments();
  d.honor_purges = u.getHonorPurges();
  d.hash = u.getSha256Revs() ? rev_hash::sha256 : rev_hash::md5;
  for (auto b : u.getBlobs()) {
    auto bytes = b.getBytes();
    d.blobs.push_back({b.getKey(), std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size())});
  }
  return d;
}

void write_job(ReshardJob::Builder b, const split_job& j) {
  b.setId(j.id);
  b.setDb(j.db);
  b.setCreated(j.created);
  b.setType(j.type);
  b.setSource(j.source);
  b.setFromNode(j.from_node);
  b.setEndSeq(j.end_seq);
  b.setLeader(j.leader);
  auto copies = b.initCopies(static_cast<unsigned>(j.copies.size()));
  for (unsigned i = 0; i < j.copies.size(); ++i) copies.set(i, j.copies[i]);
  b.setChildSuffix(j.child_suffix);
  b.setJobState(j.job_state);
  b.setSplitState(j.split_state);
  b.setReason(j.reason);
  b.setStoppedByUser(j.stopped_by_user);
  b.setStartTime(j.start_time);
  b.setUpdateTime(j.update_time);
  auto history = b.initHistory(static_cast<unsigned>(j.history.size()));
  for (unsigned i = 0; i < j.history.size(); ++i) {
    history[i].setTime(j.history[i].time);
    history[i].setType(j.history[i].type);
    history[i].setDetail(j.history[i].detail);
  }
  b.setCopiedTo(j.copied_to);
  b.setTotal(j.total);
}

split_job read_job(ReshardJob::Reader r) {
  split_job j;
  j.id = r.getId();
  j.db = r.getDb();
  j.created = r.getCreated();
  j.type = r.getType();
  j.source = r.getSource();
  j.from_node = r.getFromNode();
  j.end_seq = r.getEndSeq();
  j.leader = r.getLeader();
  for (auto c : r.getCopies()) j.copies.emplace_back(c);
  j.child_suffix = r.getChildSuffix();
  j.job_state = r.getJobState();
  j.split_state = r.getSplitState();
  j.reason = r.getReason();
  j.stopped_by_user = r.getStoppedByUser();
  j.start_time = r.getStartTime();
  j.update_time = r.getUpdateTime();
  for (auto e : r.getHistory()) j.history.push_back({e.getTime(), e.getType(), e.getDetail()});
  j.copied_to = r.getCopiedTo();
  j.total = r.getTotal();
  return j;
}

void write_new_job(NewJob::Builder b, const new_job& j) {
  b.setType(j.type);
  b.setDb(j.db);
  b.setShard(j.shard);
  b.setSuffix(j.suffix);
  b.setLeader(j.leader);
  b.setSource(j.source);
}

new_job read_new_job(NewJob::Reader r) {
  return new_job{r.getType(), r.getDb(), r.getShard(), r.getSuffix(), r.getLeader(), r.getSource()};
}

void write_node_status(NodeStatus::Builder n, const node_status& s) {
  n.setRelease(s.release);
  n.setUptimeS(s.uptime_s);
  n.setRssBytes(s.rss_bytes);
  n.setThreads(s.threads);
  n.setOpenFiles(s.open_files);
  n.setLiveFeeds(s.live_feeds);
  n.setFeedWatches(s.feed_watches);
  n.setFsSizeBytes(s.fs_size_bytes);
  n.setFsFreeBytes(s.fs_free_bytes);
  n.setDbFilesBytes(s.db_files_bytes);
  n.setRequests(s.requests);
  n.setServerErrors(s.server_errors);
}

node_status read_node_status(NodeStatus::Reader n) {
  node_status out;
  out.release = n.getRelease();
  out.uptime_s = n.getUptimeS();
  out.rss_bytes = n.getRssBytes();
  out.threads = n.getThreads();
  out.open_files = n.getOpenFiles();
  out.live_feeds = n.getLiveFeeds();
  out.feed_watches = n.getFeedWatches();
  out.fs_size_bytes = n.getFsSizeBytes();
  out.fs_free_bytes = n.getFsFreeBytes();
  out.db_files_bytes = n.getDbFilesBytes();
  out.requests = n.getRequests();
  out.server_errors = n.getServerErrors();
  return out;
}

void write_view_bound(ViewBound::Builder b, const view_bound& v) {
  b.setSet(v.set);
  b.setSortKey(capnp::Data::Reader(reinterpret_cast<const kj::byte*>(v.sort_key.data()), v.sort_key.size()));
  b.setHasDocId(v.doc_id.has_value());
  if (v.doc_id) b.setDocId(*v.doc_id);
  b.setInclusive(v.inclusive);
}

view_bound read_view_bound(ViewBound::Reader b) {
  view_bound v;
  v.set = b.getSet();
  auto key = b.getSortKey();
  v.sort_key.assign(reinterpret_cast<const char*>(key.begin()), key.size());
  if (b.getHasDocId()) v.doc_id = b.getDocId();
  v.inclusive = b.getInclusive();
  return v;
}

}  // namespace settee
