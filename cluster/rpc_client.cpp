// What this node asks of other nodes' shard copies (rpc_node's typed calls; concurrent reads and
// writes of one copy travel batched).
#include <algorithm>

#include "cluster/rpc_internal.hpp"

namespace settee {

void rpc_node::summary(const std::string& node, const std::string& db, const std::string& range,
                       answer<shard_summary> done) {
  start_call<shard_summary>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.shardInfoRequest();
        set_shard(req.initShard(), db, range);
        return req.send().then([](capnp::Response<Node::ShardInfoResults>&& r) -> result<shard_summary> {
          if (status st = status_of(r.getStatus()); !st) return st;
          return shard_summary{r.getUuid(),         r.getUpdateSeq(), r.getDocCount(),  r.getDocDelCount(),
                               r.getExternalSize(), r.getFileSize(),  r.getRevsLimit(), r.getPurgeSeq()};
        });
      },
      std::move(done));
}

result<remote_shard_info> rpc_node::shard_info(const std::string& peer, const std::string& db, const std::string& range,
                                               std::chrono::milliseconds timeout) {
  return wait_one<shard_summary>([&](auto done) { summary(peer, db, range, std::move(done)); }, mono::now() + timeout,
                                 "node " + peer);
}

result<apply_result> rpc_node::apply_changes(const std::string& peer, const std::string& db, const std::string& range,
                                             const std::vector<doc_update>& updates,
                                             std::chrono::milliseconds timeout) {
  return call<apply_result>(peer, timeout, [=](Node::Client& cap) {
    auto req = cap.applyChangesRequest();
    set_shard(req.initShard(), db, range);
    write_updates(req.initUpdates(static_cast<unsigned>(updates.size())), updates);
    return req.send().then([](capnp::Response<Node::ApplyChangesResults>&& r) -> result<apply_result> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return apply_result{r.getApplied(), r.getUpdateSeq()};
    });
  });
}

namespace {

// Queues `items` for `node`'s copy of `range`; the loop sends the queue as one call when it next
// runs (loop_control::drain).
template <class Batch, class Item, class Done>
void enqueue(loop_control* c, std::map<std::string, Batch> loop_control::*queue, const std::string& node,
             const std::string& db, const std::string& range, doc_bodies bodies, const std::vector<Item>& items,
             Done done) {
  if (c) {
    std::unique_lock<std::mutex> lock(c->mu);
    if (c->running) {
      Batch& b = (c->*queue)[node + '\n' + db + '\n' + range + '\n' + std::to_string(static_cast<int>(bodies))];
      if (b.waiters.empty()) {
        b.node = node;
        b.db = db;
        b.range = range;
        b.bodies = bodies;
      }
      b.waiters.emplace_back(items, std::move(done));
      c->wake_locked();
      return;
    }
  }
  done(status{errc::unavailable, "cluster RPC is not running"});
}

// Sends a queued batch as one call: `send(cap, batch)` starts it and returns a promise of every
// item's answer, in order; each waiter gets its part. On the loop.
template <class Batch, class Send>
void send_batch(rpc_node::loop& l, const membership& members, int timeout_ms, Batch& queued, Send send) {
  auto batch = std::make_shared<Batch>(std::move(queued));
  std::string peer = batch->node;
  auto& m = metrics::node();
  m.rpc_calls.add(peer);
  Node::Client* cap = connected_cap(l, members, batch->node);
  if (!cap) {
    m.rpc_errors.add(peer);
    return batch->fail(unavailable(batch->node, "not connected"));
  }
  size_t n = batch->items();
  auto& timer = l.io.provider->getTimer();
  const auto sent = mono::now();
  l.tasks.add(timer.timeoutAfter(timeout_ms * kj::MILLISECONDS, send(*cap, *batch))
                  .then(
                      [batch, n, peer, sent](auto&& answers) {
                        observe_answer(peer, sent);
                        if (!answers) return batch->fail(answers.error());
                        if (answers->size() != n) {
                          return batch->fail({errc::internal, "node " + peer + " answered for the wrong count"});
                        }
                        auto it = answers->begin();
                        for (auto& w : batch->waiters) {
                          auto end = it + static_cast<std::ptrdiff_t>(w.first.size());
                          w.second(std::vector(std::make_move_iterator(it), std::make_move_iterator(end)));
                          it = end;
                        }
                      },
                      [batch, peer](kj::Exception&& e) {
                        metrics::node().rpc_errors.add(peer);
                        batch->fail(unavailable(peer, e.getDescription().cStr()));
                      }));
}

}  // namespace

// Concurrent writes to one peer's copy of one range travel as one updateDocs call, as reads do
// (open_docs): the peer commits them in one transaction anyway (group commit), and each request
// gets its own documents' results back. Documents are applied in order, so two requests editing one
// document in a batch get what they would get from two calls in one group commit.
void rpc_node::update_docs(const std::string& node, const std::string& db, const std::string& range,
                           const std::vector<doc_update>& docs, write_done done) {
  enqueue(control_.get(), &loop_control::writes, node, db, range, doc_bodies::none, docs, std::move(done));
}

void rpc_node::send_writes(loop& l, pending_writes& w) {
  // Writes asking for SHA-256 revisions go only over a connection whose handshake announced it:
  // the coordinator chose from what it knew then, and the node may since have restarted as an
  // older release, which would make MD5 revisions and disagree with the other copies. Such a
  // write is not applied on that copy (unavailable); internal replication brings it, rev and all.
  if (members_.is_connected(w.node) && !members_.has_feature(w.node, rev_hash_feature)) {
    auto& ws = w.waiters;
    auto asks_sha = [](const auto& x) {
      return std::any_of(x.first.begin(), x.first.end(),
                         [](const doc_update& u) { return u.hash == rev_hash::sha256; });
    };
    for (auto& x : ws)
      if (asks_sha(x)) x.second(unavailable(w.node, "it no longer makes SHA-256 revisions (an older release)"));
    ws.erase(std::remove_if(ws.begin(), ws.end(), asks_sha), ws.end());
    if (ws.empty()) return;
  }
  send_batch(l, members_, opts_.call_timeout_ms, w, [](Node::Client& cap, const pending_writes& b) {
    auto req = cap.updateDocsRequest();
    set_shard(req.initShard(), b.db, b.range);
    auto list = req.initUpdates(static_cast<unsigned>(b.items()));
    unsigned k = 0;
    for (auto& x : b.waiters)
      for (auto& u : x.first) write_update(list[k++], u);
    return req.send().then([](capnp::Response<Node::UpdateDocsResults>&& r) -> result<std::vector<doc_result>> {
      if (status st = status_of(r.getStatus()); !st) return st;
      std::vector<doc_result> out;
      for (auto d : r.getResults()) {
        doc_result res{status_of(d.getStatus()), {d.getRev().getPos(), d.getRev().getHash()}};
        res.added = d.getAdded();
        res.known = d.getKnown();
        out.push_back(std::move(res));
      }
      return out;
    });
  });
}

void rpc_node::changes(const std::string& node, const std::string& db, const std::string& range,
                       const changes_request& cr, answer<changes_page> done) {
  start_call<changes_page>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.changesPageRequest();
        set_shard(req.initShard(), db, range);
        req.setSince(cr.since);
        req.setLimit(cr.limit);
        req.setDescending(cr.descending);
        req.setWithDocs(cr.with_docs);
        req.setConflicts(cr.conflicts);
        req.setAttachments(cr.attachments);
        req.setAttEncodingInfo(cr.att_encoding_info);
        req.setNotBefore(cr.not_before);
        return req.send().then([](capnp::Response<Node::ChangesPageResults>&& r) -> result<changes_page> {
          if (status st = status_of(r.getStatus()); !st) return st;
          changes_page page;
          page.pending = r.getPending();
          page.skipped_to = r.getSkippedTo();
          for (auto row : r.getRows()) {
            change_row c;
            c.e.seq = row.getSeq();
            c.e.id = row.getId();
            c.e.rev = row.getRev();
            c.e.deleted = row.getDeleted();
            for (auto l : row.getLeafRevs()) c.e.leaf_revs.emplace_back(l.cStr());
            c.e.time_s = row.getTimeS();
            c.doc = row.getDoc();
            page.rows.push_back(std::move(c));
          }
          return page;
        });
      },
      std::move(done));
}

void rpc_node::resolve_since(const std::string& node, const std::string& db, const std::string& range,
                             const std::string& uuid_prefix, uint64_t seq, answer<resolved_since> done) {
  start_call<resolved_since>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.resolveSinceRequest();
        set_shard(req.initShard(), db, range);
        req.setUuidPrefix(uuid_prefix);
        req.setSeq(seq);
        return req.send().then([](capnp::Response<Node::ResolveSinceResults>&& r) -> result<resolved_since> {
          if (status st = status_of(r.getStatus()); !st) return st;
          resolved_since out;
          out.uuid = r.getUuid();
          out.update_seq = r.getUpdateSeq();
          out.seq = r.getSeq();
          out.resolution = static_cast<resolved_since::how>(std::min<uint8_t>(r.getResolution(), 2));
          return out;
        });
      },
      std::move(done));
}

result<doc_read> rpc_node::read_doc(const std::string& node, const std::string& db, const std::string& range,
                                    const doc_request& dr, std::chrono::milliseconds timeout) {
  return call<doc_read>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.readDocRequest();
    set_shard(req.initShard(), db, range);
    req.setId(dr.id);
    auto list = req.initParams(static_cast<unsigned>(dr.params.size()));
    for (unsigned i = 0; i < dr.params.size(); ++i) {
      list[i].setName(dr.params[i].first);
      list[i].setValue(dr.params[i].second);
    }
    req.setIfNoneMatch(dr.if_none_match);
    req.setWhat(dr.what);
    req.setMethod(dr.method);
    req.setBody(dr.body);
    return req.send().then([](capnp::Response<Node::ReadDocResults>&& r) -> result<doc_read> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return doc_read{r.getHttpStatus(), r.getBody(), r.getEtag()};
    });
  });
}

void rpc_node::all_docs(const std::string& node, const std::string& db, const std::string& range,
                        const all_docs_request& ar, answer<all_docs_page> done) {
  start_call<all_docs_page>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.allDocsPageRequest();
        set_shard(req.initShard(), db, range);
        req.setStartKey(ar.start);
        req.setEndKey(ar.end);
        req.setDescending(ar.descending);
        req.setInclusiveEnd(ar.inclusive_end);
        req.setWithDeleted(ar.with_deleted);
        req.setIncludeDocs(ar.include_docs);
        req.setConflicts(ar.conflicts);
        req.setAttachments(ar.attachments);
        req.setAttEncodingInfo(ar.att_encoding_info);
        req.setMaxRows(ar.max_rows);
        req.setByKeys(ar.by_keys);
        auto keys = req.initKeys(static_cast<unsigned>(ar.keys.size()));
        for (unsigned i = 0; i < ar.keys.size(); ++i) keys.set(i, ar.keys[i]);
        return req.send().then([](capnp::Response<Node::AllDocsPageResults>&& r) -> result<all_docs_page> {
          if (status st = status_of(r.getStatus()); !st) return st;
          all_docs_page page;
          page.before = r.getBefore();
          page.doc_count = r.getDocCount();
          for (auto row : r.getRows()) {
            page.rows.push_back({row.getId(), row.getRev(), row.getDeleted(), row.getFound(), row.getDoc()});
          }
          return page;
        });
      },
      std::move(done));
}

void rpc_node::view_rows(const std::string& node, const std::string& db, const std::string& range,
                         const view_copy_request& vr, answer<view_page> done) {
  if (!members_.has_feature(node, views_feature))
    return done(status{errc::not_implemented, "node " + node + " runs a release without views"});
  start_call<view_page>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.viewRowsRequest();
        set_shard(req.initShard(), db, range);
        req.setDdocId(vr.ddoc_id);
        req.setRev(vr.rev);
        req.setDdoc(vr.ddoc);
        req.setSignature(vr.signature);
        req.setView(vr.scan.view);
        write_view_bound(req.initLow(), vr.scan.low);
        write_view_bound(req.initHigh(), vr.scan.high);
        req.setDescending(vr.scan.descending);
        req.setLimit(vr.scan.limit);
        req.setUpdate(vr.update);
        req.setCountBefore(vr.count_before);
        req.setLazy(vr.lazy);
        req.setCountRange(vr.count_range);
        req.setReduce(vr.reduce);
        req.setGrouped(vr.grouped);
        req.setGroupLevel(vr.group_level);
        req.setDescribe(vr.describe);
        req.setPartition(vr.partition);
        return req.send().then([](capnp::Response<Node::ViewRowsResults>&& r) -> result<view_page> {
          if (status st = status_of(r.getStatus()); !st) return st;
          view_page page;
          page.total = r.getTotal();
          page.before = r.getBefore();
          page.indexed_seq = r.getIndexedSeq();
          page.purge_seq = r.getPurgeSeq();
          page.copy_seq = r.getCopySeq();
          page.disk_size = r.getDiskSize();
          page.active_size = r.getActiveSize();
          page.updating = r.getUpdating();
          page.compacting = r.getCompacting();
          page.counted = r.getCounted();
          page.reduction = r.getReduction();
          page.uuid = r.getUuid();
          page.rows.reserve(r.getRows().size());
          for (auto row : r.getRows()) {
            auto pos = row.getPos();
            page.rows.push_back({row.getId(), row.getKey(), row.getValue(),
                                 std::string(reinterpret_cast<const char*>(pos.begin()), pos.size())});
          }
          return page;
        });
      },
      std::move(done), opts_.view_call_timeout_ms);
}

void rpc_node::mango_rows(const std::string& node, const std::string& db, const std::string& range,
                          const mango_copy_request& mr, answer<mango_page> done) {
  if (!members_.has_feature(node, views_feature))
    return done(status{errc::not_implemented, "node " + node + " runs a release without Mango indexes"});
  start_call<mango_page>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.mangoRowsRequest();
        set_shard(req.initShard(), db, range);
        req.setSignature(mr.signature);
        req.setDefinition(mr.definition);
        req.setSelector(mr.selector);
        auto ranges = req.initRanges(static_cast<unsigned>(mr.ranges.size()));
        for (unsigned i = 0; i < mr.ranges.size(); ++i) {
          ranges[i].setLow(data_of(mr.ranges[i].first));
          ranges[i].setHigh(data_of(mr.ranges[i].second));
        }
        req.setDescending(mr.descending);
        req.setAfter(data_of(mr.after));
        req.setLimit(mr.limit);
        req.setConflicts(mr.conflicts);
        req.setEstimate(mr.estimate);
        req.setCovered(mr.covered);
        return req.send().then([](capnp::Response<Node::MangoRowsResults>&& r) -> result<mango_page> {
          if (status st = status_of(r.getStatus()); !st) return st;
          mango_page page;
          page.keys_examined = r.getKeysExamined();
          page.docs_examined = r.getDocsExamined();
          page.built = r.getBuilt();
          page.estimated = r.getEstimated();
          page.rows.reserve(r.getRows().size());
          for (auto row : r.getRows()) page.rows.push_back({bytes_of(row.getPos()), row.getDoc()});
          return page;
        });
      },
      std::move(done));
}

void rpc_node::search_rows(const std::string& node, const std::string& db, const std::string& range,
                           const search_copy_request& sr, answer<search_copy_page> done) {
  if (!members_.has_feature(node, search_feature))
    return done(status{errc::not_implemented, "node " + node + " runs a release without full-text search"});
  if ((sr.parsed && !sr.parsed->mango.is_null()) && !members_.has_feature(node, mango_text_feature))
    return done(status{errc::not_implemented, "node " + node + " runs a release without Mango text indexes"});
  start_call<search_copy_page>(
      node,
      [=, text = encode_request(sr)](Node::Client& cap) {
        auto req = cap.searchCopyRequest();
        set_shard(req.initShard(), db, range);
        req.setRequest(text);
        return req.send().then([](capnp::Response<Node::SearchCopyResults>&& r) -> result<search_copy_page> {
          if (status st = status_of(r.getStatus()); !st) return st;
          return decode_page(r.getPage());
        });
      },
      std::move(done), opts_.view_call_timeout_ms);
}

void rpc_node::time_seq(const std::string& node, const std::string& db, const std::string& range, bool reset,
                        answer<time_seq_state> done) {
  start_call<time_seq_state>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.timeSeqRequest();
        set_shard(req.initShard(), db, range);
        req.setReset(reset);
        return req.send().then([](capnp::Response<Node::TimeSeqResults>&& r) -> result<time_seq_state> {
          if (status st = status_of(r.getStatus()); !st) return st;
          time_seq_state out;
          out.update_seq = r.getUpdateSeq();
          out.bins = read_time_seq(r.getBins());
          return out;
        });
      },
      std::move(done));
}

bool rpc_node::typed(const std::string& node) const {
  return members_.has_feature(node, typed_feature);
}

bool rpc_node::hashes_sha256(const std::string& node) const {
  return members_.has_feature(node, rev_hash_feature);
}

// Concurrent reads of one peer's copy of one range travel as one openDocs call: they queue until
// the loop next runs, which sends each queue as one message and splits the answer (one encode, one
// write and one wake-up per batch instead of per request; the peer reads the batch in one snapshot).
void rpc_node::open_docs(const std::string& node, const std::string& db, const std::string& range,
                         const std::vector<std::string>& ids, doc_bodies bodies, shard_copy::docs_done done) {
  enqueue(control_.get(), &loop_control::reads, node, db, range, bodies, ids, std::move(done));
}

void rpc_node::send_reads(loop& l, pending_reads& r) {
  send_batch(l, members_, opts_.call_timeout_ms, r, [](Node::Client& cap, const pending_reads& b) {
    auto req = cap.openDocsRequest();
    set_shard(req.initShard(), b.db, b.range);
    auto list = req.initIds(static_cast<unsigned>(b.items()));
    unsigned k = 0;
    for (auto& w : b.waiters)
      for (auto& id : w.first) list.set(k++, id);
    req.setBodies(b.bodies != doc_bodies::none);
    req.setAllBodies(b.bodies == doc_bodies::all);
    return req.send().then([](capnp::Response<Node::OpenDocsResults>&& r) -> result<std::vector<doc_copy>> {
      if (status st = status_of(r.getStatus()); !st) return st;
      std::vector<doc_copy> out;
      for (auto d : r.getDocs()) {
        auto doc = read_doc_copy(d);
        if (!doc) return doc.error();  // a tree that does not decode fails the batch, not one reader
        out.push_back(std::move(*doc));
      }
      return out;
    });
  });
}

result<std::optional<local_doc>> rpc_node::open_local(const std::string& node, const std::string& db,
                                                      const std::string& range, const std::string& id,
                                                      std::chrono::milliseconds timeout) {
  using answer = std::optional<settee::local_doc>;
  return call<answer>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.localDocRequest();
    set_shard(req.initShard(), db, range);
    req.setId(id);
    return req.send().then([id](capnp::Response<Node::LocalDocResults>&& r) -> result<answer> {
      if (status st = status_of(r.getStatus()); !st) return st;
      if (!r.getFound()) return answer();
      return answer(settee::local_doc{id, r.getRev(), r.getBody()});
    });
  });
}

result<uint64_t> rpc_node::write_local(const std::string& node, const std::string& db, const std::string& range,
                                       const local_update& u, std::chrono::milliseconds timeout) {
  return call<uint64_t>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.writeLocalRequest();
    set_shard(req.initShard(), db, range);
    req.setId(u.id);
    req.setRev(u.rev);
    req.setDeleted(u.deleted);
    req.setBody(u.body);
    return req.send().then([](capnp::Response<Node::WriteLocalResults>&& r) -> result<uint64_t> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return r.getRev();
    });
  });
}

result<std::vector<local_doc>> rpc_node::list_local(const std::string& node, const std::string& db,
                                                    const std::string& range, std::chrono::milliseconds timeout) {
  using answer = std::vector<settee::local_doc>;
  return call<answer>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.localDocsRequest();
    set_shard(req.initShard(), db, range);
    return req.send().then([](capnp::Response<Node::LocalDocsResults>&& r) -> result<answer> {
      if (status st = status_of(r.getStatus()); !st) return st;
      answer out;
      for (auto d : r.getDocs()) out.push_back({d.getId(), d.getRev(), d.getBody()});
      return out;
    });
  });
}

status rpc_node::set_revs_limit(const std::string& node, const std::string& db, const std::string& range,
                                uint32_t limit, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.setRevsLimitRequest();
    set_shard(req.initShard(), db, range);
    req.setLimit(limit);
    return req;
  });
}

void rpc_node::purge_docs(const std::string& node, const std::string& db, const std::string& range,
                          const std::vector<purge_info>& reqs, shard_copy::purge_done done) {
  if (!members_.has_feature(node, purges_feature))
    return done(status{errc::not_implemented, "node " + node + " runs a release without purge"});
  using answer = std::vector<std::vector<rev_id>>;
  start_call<answer>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.purgeDocsRequest();
        set_shard(req.initShard(), db, range);
        auto list = req.initPurges(static_cast<unsigned>(reqs.size()));
        for (unsigned i = 0; i < reqs.size(); ++i) write_purge(list[i], reqs[i]);
        return req.send().then([](capnp::Response<Node::PurgeDocsResults>&& r) -> result<answer> {
          if (status st = status_of(r.getStatus()); !st) return st;
          answer out;
          for (auto revs : r.getPurged()) out.push_back(read_revs(revs.getRevs()));
          return out;
        });
      },
      std::move(done));
}

result<purge_page> rpc_node::purge_infos(const std::string& node, const std::string& db, const std::string& range,
                                         uint64_t since, uint32_t limit, std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, purges_feature))
    return status{errc::not_implemented, "node " + node + " runs a release without purge"};
  return call<purge_page>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.purgeInfosRequest();
    set_shard(req.initShard(), db, range);
    req.setSince(since);
    req.setLimit(limit);
    return req.send().then([](capnp::Response<Node::PurgeInfosResults>&& r) -> result<purge_page> {
      if (status st = status_of(r.getStatus()); !st) return st;
      purge_page page;
      for (auto p : r.getInfos()) page.infos.push_back(read_purge(p));
      page.purge_seq = r.getPurgeSeq();
      page.oldest = r.getOldest();
      page.limit = r.getLimit();
      return page;
    });
  });
}

status rpc_node::set_purged_infos_limit(const std::string& node, const std::string& db, const std::string& range,
                                        uint32_t limit, std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, purges_feature))
    return {errc::not_implemented, "node " + node + " runs a release without purge"};
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.setPurgedInfosLimitRequest();
    set_shard(req.initShard(), db, range);
    req.setLimit(limit);
    return req;
  });
}

bool rpc_node::stores_attachments(const std::string& node) const {
  return members_.has_feature(node, attachments_feature);
}

result<std::string> rpc_node::read_blob(const std::string& node, const std::string& db, const std::string& range,
                                        const std::string& key, uint64_t offset, uint64_t length,
                                        std::chrono::milliseconds timeout) {
  return call<std::string>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.readBlobRequest();
    set_shard(req.initShard(), db, range);
    req.setKey(key);
    req.setOffset(offset);
    req.setLength(length);
    return req.send().then([](capnp::Response<Node::ReadBlobResults>&& r) -> result<std::string> {
      if (status st = status_of(r.getStatus()); !st) return st;
      auto bytes = r.getBytes();
      return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
    });
  });
}

result<bool> rpc_node::stage_blob(const std::string& node, const std::string& db, const std::string& range,
                                  const std::string& key, uint64_t offset, const std::string& piece,
                                  std::chrono::milliseconds timeout) {
  return call<bool>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.stageBlobRequest();
    set_shard(req.initShard(), db, range);
    req.setKey(key);
    req.setOffset(offset);
    req.setPiece(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(piece.data()), piece.size()));
    return req.send().then([](capnp::Response<Node::StageBlobResults>&& r) -> result<bool> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return r.getWhole();
    });
  });
}

status rpc_node::drop_staged(const std::string& node, const std::string& db, const std::string& range,
                             const std::string& key, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.dropStagedRequest();
    set_shard(req.initShard(), db, range);
    req.setKey(key);
    return req;
  });
}

}  // namespace settee
