// What this node answers about its shard copies and documents, and the handshake that opens a
// connection (node_server's methods; rpc_internal.hpp).
#include "cluster/rpc_internal.hpp"

namespace settee {

kj::Promise<void> node_server::refuse_and_drop(const std::string& why) {
  loop_.warn_limited("cluster RPC: refused a peer: " + why);
  gate_->authenticated = false;
  // Close after the refusal had a moment to reach the peer.
  auto gate = gate_;
  loop_.tasks.add(loop_.io.provider->getTimer().afterDelay(100 * kj::MILLISECONDS).then([gate]() {
    if (gate->drop) gate->drop->fulfill();
  }));
  return KJ_EXCEPTION(FAILED, "settee: " + why);
}

kj::Promise<void> node_server::challenge(ChallengeContext context) {
  if (gate_->authenticated) return refused();  // one handshake per connection
  gate_->server_nonce = peer_auth::new_nonce();
  context.getResults().setNonce(gate_->server_nonce);
  return kj::READY_NOW;
}

kj::Promise<void> node_server::handshake(HandshakeContext context) {
  auto theirs = context.getParams().getHello();
  std::string name = theirs.getName();
  std::string server_nonce = std::move(gate_->server_nonce);  // good for this one attempt
  gate_->server_nonce.clear();
  std::string client_nonce = theirs.getNonce();
  if (gate_->authenticated) return refused();
  if (theirs.getProof().size() > 0) {
    if (server_nonce.empty()) return refuse_and_drop("handshake without a challenge from " + name);
    std::string expected = peer_auth::client_proof(loop_.opts.secret, server_nonce, client_nonce, name);
    if (!peer_auth::matches(expected, theirs.getProof().cStr())) {
      return refuse_and_drop("wrong cluster secret from a peer calling itself " + name);
    }
  } else if (!loop_.opts.accept_legacy_peers) {
    return refuse_and_drop("peer " + name + " (release " + theirs.getRelease().cStr() +
                           ") did not prove the cluster secret; older releases need [cluster] accept_legacy_peers");
  }
  if (loop_.removed.count(name)) return refuse_and_drop("node " + name + " was removed from the cluster");
  gate_->authenticated = true;
  if (!name.empty() && theirs.getRpcPort() != 0) {
    // A node that introduces itself is a member; dial it back so the view is symmetric.
    loop_.add_peer({name, theirs.getRpcHost().cStr(), theirs.getRpcPort()});
  }
  auto hello = context.getResults().initHello();
  loop_.fill_hello(hello);
  if (theirs.getProof().size() > 0) {
    hello.setProof(peer_auth::server_proof(loop_.opts.secret, client_nonce, server_nonce, loop_.members.self()));
  }
  return kj::READY_NOW;
}

// Every call on a shard runs its shard work on the pool (finding the copy may open its file; a
// write waits for its commit) and builds its answer back on the loop: the loop itself never waits
// for storage. `work(copy)` returns the data; `answer(results, data)` encodes it.
template <class T, class Context, class Work, class Answer>
kj::Promise<void> on_copy(rpc_node::loop& l, Context context, Work work, Answer answer) {
  auto out = std::make_shared<std::optional<result<T>>>();
  auto find = l.opts.find_shard;
  std::string db = context.getParams().getShard().getDb(), range = context.getParams().getShard().getRange();
  auto timeout = std::chrono::milliseconds(l.opts.call_timeout_ms);
  return l
      .off_loop([find, db, range, timeout, out, work = std::move(work)]() mutable {
        auto h = find ? find(db, range) : result<shard_handle>(status{errc::not_found, "no shards here"});
        if (!h) return out->emplace(h.error()), void();
        local_copy copy(*h, "", timeout);
        out->emplace(work(copy));
      })
      .then([context, out, answer = std::move(answer)]() mutable {
        auto results = context.getResults();
        result<T>& r = **out;
        if (!r) return set_status(results.initStatus(), r.error());
        answer(results, *r);
      });
}

// on_copy for a call that answers only its status: `work(copy)` returns a status.
template <class Context, class Work>
kj::Promise<void> on_copy_status(rpc_node::loop& l, Context context, Work work) {
  return on_copy<bool>(
      l, context,
      [work = std::move(work)](local_copy& c) mutable -> result<bool> {
        if (auto st = work(c); !st) return st;
        return true;
      },
      [](auto, bool) {});
}

// Finds the copy on the pool, hands `op` to its replica, and resolves on this loop after the
// commit (op->st says how it went). `on_copy` runs on the pool with the copy found, before the op
// is handed over.
kj::Promise<void> commit_off_loop(rpc_node::loop& l, ShardRef::Reader ref, std::shared_ptr<write_op> op,
                                  std::function<void(const local_copy&)> after = {}) {
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  auto fulfiller = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
  auto find = l.opts.find_shard;
  std::string db = ref.getDb(), range = ref.getRange();
  auto timeout = std::chrono::milliseconds(l.opts.call_timeout_ms);
  l.blocking.submit([find, db, range, timeout, op, fulfiller, after = std::move(after)] {
    try {
      auto h = find ? find(db, range) : result<shard_handle>(status{errc::not_found, "no shards here"});
      if (!h) {
        op->st = h.error();
        (*fulfiller)->fulfill();
        return;
      }
      auto copy = std::make_shared<local_copy>(*h, "", timeout);
      copy->submit(op, [fulfiller, copy, after]() {
        if (after) after(*copy);
        (*fulfiller)->fulfill();
      });
    } catch (const std::exception& e) {  // as off_loop: the call fails, not the node
      log::error(std::string("cluster RPC: a write failed: ") + e.what());
      op->st = status{errc::internal, e.what()};
      (*fulfiller)->fulfill();
    }
  });
  return kj::mv(paf.promise);
}

kj::Promise<void> node_server::shardInfo(ShardInfoContext context) {
  return on_copy<shard_summary>(
      loop_, context, [](local_copy& c) { return c.summary(); },
      [](Node::ShardInfoResults::Builder results, const shard_summary& s) {
        results.setUuid(s.uuid);
        results.setUpdateSeq(s.update_seq);
        results.setDocCount(s.doc_count);
        results.setDocDelCount(s.doc_del_count);
        results.setExternalSize(s.external_size);
        results.setFileSize(s.file_size);
        results.setRevsLimit(s.revs_limit);
        results.setPurgeSeq(s.purge_seq);
      });
}

kj::Promise<void> node_server::applyChanges(ApplyChangesContext context) {
  auto params = context.getParams();
  if (auto st = check_updates(params.getUpdates()); !st) {
    set_status(context.getResults().initStatus(), st);
    return kj::READY_NOW;
  }
  auto op = std::make_shared<write_op>();
  for (auto u : params.getUpdates()) {
    if (u.getRevs().size() == 0) continue;  // nothing to merge
    op->docs.push_back(read_update(u, false));
  }
  auto update_seq = std::make_shared<uint64_t>(0);
  std::string db = params.getShard().getDb();
  return commit_off_loop(loop_, params.getShard(), op,
                         [update_seq](const local_copy& c) { *update_seq = c.handle().store->header().update_seq; })
      .then([this, context, op, update_seq, db]() mutable {
        status st = op->st;
        for (auto& r : op->results)
          if (st && !r.st) st = r.st;
        set_status(context.getResults().initStatus(), st);
        context.getResults().setApplied(static_cast<uint32_t>(count_added(op->results)));
        context.getResults().setUpdateSeq(*update_seq);
        if (op->st && loop_.opts.on_applied) loop_.opts.on_applied(db);
      });
}

kj::Promise<void> node_server::updateDocs(UpdateDocsContext context) {
  auto params = context.getParams();
  if (auto st = check_updates(params.getUpdates()); !st) {
    set_status(context.getResults().initStatus(), st);
    return kj::READY_NOW;
  }
  auto op = std::make_shared<write_op>();
  for (auto u : params.getUpdates()) op->docs.push_back(read_update(u, u.getNewEdits()));
  return commit_off_loop(loop_, params.getShard(), op).then([context, op]() mutable {
    auto results = context.getResults();
    set_status(results.initStatus(), op->st);
    if (!op->st) return;
    auto list = results.initResults(static_cast<unsigned>(op->results.size()));
    for (unsigned i = 0; i < op->results.size(); ++i) {
      set_status(list[i].initStatus(), op->results[i].st);
      list[i].initRev().setPos(op->results[i].rev.pos);
      list[i].getRev().setHash(op->results[i].rev.hash);
      list[i].setAdded(op->results[i].added);
      list[i].setKnown(op->results[i].known);
    }
  });
}

kj::Promise<void> node_server::changesPage(ChangesPageContext context) {
  auto params = context.getParams();
  changes_request req;
  req.since = params.getSince();
  req.limit = std::min<uint32_t>(params.getLimit(), 4096);
  req.descending = params.getDescending();
  req.with_docs = params.getWithDocs();
  req.conflicts = params.getConflicts();
  req.attachments = params.getAttachments();
  req.att_encoding_info = params.getAttEncodingInfo();
  req.not_before = params.getNotBefore();
  return on_copy<changes_page>(
      loop_, context, [req](local_copy& c) { return c.changes(req); },
      [](Node::ChangesPageResults::Builder results, const changes_page& page) {
        results.setPending(page.pending);
        results.setSkippedTo(page.skipped_to);
        auto rows = results.initRows(static_cast<unsigned>(page.rows.size()));
        for (unsigned i = 0; i < page.rows.size(); ++i) {
          const change_row& r = page.rows[i];
          auto b = rows[i];
          b.setSeq(r.e.seq);
          b.setId(r.e.id);
          b.setRev(r.e.rev);
          b.setDeleted(r.e.deleted);
          auto leaves = b.initLeafRevs(static_cast<unsigned>(r.e.leaf_revs.size()));
          for (unsigned k = 0; k < r.e.leaf_revs.size(); ++k) leaves.set(k, r.e.leaf_revs[k]);
          b.setTimeS(r.e.time_s);
          b.setDoc(r.doc);
        }
      });
}

kj::Promise<void> node_server::resolveSince(ResolveSinceContext context) {
  std::string prefix = context.getParams().getUuidPrefix();
  uint64_t seq = context.getParams().getSeq();
  return on_copy<resolved_since>(
      loop_, context, [prefix, seq](local_copy& c) { return c.resolve_since(prefix, seq); },
      [](Node::ResolveSinceResults::Builder results, const resolved_since& r) {
        results.setUuid(r.uuid);
        results.setUpdateSeq(r.update_seq);
        results.setSeq(r.seq);
        results.setResolution(static_cast<uint8_t>(r.resolution));
      });
}

// Release 0.2's document request, answered for 0.2 coordinators (opts.read_doc renders from this
// node's copy; 0.3 nodes use the typed calls). It may write (a `_local` PUT, `_revs_limit`).
kj::Promise<void> node_server::readDoc(ReadDocContext context) {
  auto params = context.getParams();
  auto results = context.getResults();
  if (!loop_.opts.read_doc) {
    set_status(results.initStatus(), {errc::not_implemented, "no document reader"});
    return kj::READY_NOW;
  }
  doc_request req;
  if (params.getWhat().size()) req.what = params.getWhat();
  if (params.getMethod().size()) req.method = params.getMethod();
  req.id = params.getId();
  req.range = params.getShard().getRange();
  for (auto p : params.getParams()) req.params.emplace_back(p.getName().cStr(), p.getValue().cStr());
  req.if_none_match = params.getIfNoneMatch();
  req.body = params.getBody();
  auto read_doc = loop_.opts.read_doc;
  return on_copy<doc_read>(
      loop_, context, [read_doc, req](local_copy& c) { return read_doc(c, req); },
      [](Node::ReadDocResults::Builder results, const doc_read& r) {
        results.setHttpStatus(static_cast<uint16_t>(r.http_status));
        results.setBody(r.body);
        results.setEtag(r.etag);
      });
}

kj::Promise<void> node_server::allDocsPage(AllDocsPageContext context) {
  auto p = context.getParams();
  all_docs_request req;
  req.start = p.getStartKey();
  req.end = p.getEndKey();
  req.descending = p.getDescending();
  req.inclusive_end = p.getInclusiveEnd();
  req.with_deleted = p.getWithDeleted();
  req.include_docs = p.getIncludeDocs();
  req.conflicts = p.getConflicts();
  req.attachments = p.getAttachments();
  req.att_encoding_info = p.getAttEncodingInfo();
  req.max_rows = p.getMaxRows();
  req.by_keys = p.getByKeys();
  for (auto k : p.getKeys()) req.keys.emplace_back(k.cStr());
  return on_copy<all_docs_page>(
      loop_, context, [req](local_copy& c) { return c.all_docs(req); },
      [](Node::AllDocsPageResults::Builder results, const all_docs_page& page) {
        results.setBefore(page.before);
        results.setDocCount(page.doc_count);
        auto rows = results.initRows(static_cast<unsigned>(page.rows.size()));
        for (unsigned i = 0; i < page.rows.size(); ++i) {
          const all_docs_row& r = page.rows[i];
          rows[i].setId(r.id);
          rows[i].setRev(r.rev);
          rows[i].setDeleted(r.deleted);
          rows[i].setFound(r.found);
          rows[i].setDoc(r.doc);
        }
      });
}

// A call answered by a reader of this node through `start(done)` on its own threads (an index
// update may take long): the loop's blocking pool is not held while it runs. `done` is called
// once, on any thread; an exception from `start` is the call's internal error.
template <class T>
kj::Promise<result<T>> answered_by(rpc_node::loop& loop, const char* what,
                                   std::function<void(std::function<void(result<T>)>)> start) {
  auto out = std::make_shared<std::optional<result<T>>>();
  auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
  auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
  auto once = std::make_shared<std::atomic<bool>>(false);
  loop.blocking.submit([=] {
    auto finish = [out, f, once](result<T> r) {
      if (once->exchange(true)) return;
      out->emplace(std::move(r));
      (*f)->fulfill();
    };
    try {
      start(finish);
    } catch (const std::exception& e) {
      log::error(std::string("cluster RPC: a ") + what + " call failed: " + e.what());
      finish(status{errc::internal, e.what()});
    }
  });
  return paf.promise.then([out]() mutable { return std::move(**out); });
}

kj::Promise<void> node_server::viewRows(ViewRowsContext context) {
  auto p = context.getParams();
  view_copy_request req;
  req.ddoc_id = p.getDdocId();
  req.rev = p.getRev();
  req.ddoc = p.getDdoc();
  req.signature = p.getSignature();
  req.scan.view = p.getView();
  req.scan.low = read_view_bound(p.getLow());
  req.scan.high = read_view_bound(p.getHigh());
  req.scan.descending = p.getDescending();
  req.scan.limit = p.getLimit();
  req.update = p.getUpdate();
  req.count_before = p.getCountBefore();
  req.lazy = p.getLazy();
  req.count_range = p.getCountRange();
  req.reduce = p.getReduce();
  req.grouped = p.getGrouped();
  req.group_level = p.getGroupLevel();
  req.describe = p.getDescribe();
  req.partition = p.getPartition();
  const std::string db = p.getShard().getDb(), range = p.getShard().getRange();
  auto with_copy = loop_.opts.with_copy;
  return answered_by<view_page>(loop_, "view",
                                [=](std::function<void(result<view_page>)> done) {
                                  if (!with_copy)
                                    return done(status{errc::not_implemented, "no view reader on this node"});
                                  with_copy(db, range, [&](result<shard_copy*> copy) {
                                    if (!copy) return done(copy.error());
                                    (*copy)->start_view(req, std::move(done));
                                  });
                                })
      .then([context](result<view_page>&& r) mutable {
        auto results = context.getResults();
        if (!r) return set_status(results.initStatus(), r.error());
        results.setTotal(r->total);
        results.setBefore(r->before);
        results.setIndexedSeq(r->indexed_seq);
        results.setPurgeSeq(r->purge_seq);
        results.setCopySeq(r->copy_seq);
        results.setDiskSize(r->disk_size);
        results.setActiveSize(r->active_size);
        results.setUpdating(r->updating);
        results.setCompacting(r->compacting);
        results.setCounted(r->counted);
        results.setReduction(r->reduction);
        results.setUuid(r->uuid);
        auto rows = results.initRows(static_cast<unsigned>(r->rows.size()));
        for (unsigned i = 0; i < r->rows.size(); ++i) {
          rows[i].setId(r->rows[i].id);
          rows[i].setKey(r->rows[i].key_json);
          const std::string& pos = r->rows[i].pos;
          rows[i].setPos(kj::arrayPtr(reinterpret_cast<const kj::byte*>(pos.data()), pos.size()));
          rows[i].setValue(r->rows[i].value_json);
        }
      });
}

kj::Promise<void> node_server::mangoRows(MangoRowsContext context) {
  auto p = context.getParams();
  mango_copy_request req;
  req.signature = p.getSignature();
  req.definition = p.getDefinition();
  req.selector = p.getSelector();
  for (auto r : p.getRanges()) req.ranges.emplace_back(bytes_of(r.getLow()), bytes_of(r.getHigh()));
  req.descending = p.getDescending();
  req.after = bytes_of(p.getAfter());
  req.limit = p.getLimit();
  req.conflicts = p.getConflicts();
  req.estimate = p.getEstimate();
  req.covered = p.getCovered();
  const std::string db = p.getShard().getDb(), range = p.getShard().getRange();
  auto with_copy = loop_.opts.with_copy;
  return answered_by<mango_page>(loop_, "Mango",
                                 [=](std::function<void(result<mango_page>)> done) {
                                   if (!with_copy)
                                     return done(status{errc::not_implemented, "no Mango reader on this node"});
                                   with_copy(db, range, [&](result<shard_copy*> copy) {
                                     if (!copy) return done(copy.error());
                                     (*copy)->start_mango(req, std::move(done));
                                   });
                                 })
      .then([context](result<mango_page>&& r) mutable {
        auto results = context.getResults();
        if (!r) return set_status(results.initStatus(), r.error());
        results.setKeysExamined(r->keys_examined);
        results.setDocsExamined(r->docs_examined);
        results.setBuilt(r->built);
        results.setEstimated(r->estimated);
        auto rows = results.initRows(static_cast<unsigned>(r->rows.size()));
        for (unsigned i = 0; i < r->rows.size(); ++i) {
          rows[i].setPos(data_of(r->rows[i].pos));
          rows[i].setDoc(r->rows[i].doc);
        }
      });
}

kj::Promise<void> node_server::searchCopy(SearchCopyContext context) {
  auto p = context.getParams();
  auto req = std::make_shared<result<search_copy_request>>(decode_request(p.getRequest()));
  const std::string db = p.getShard().getDb(), range = p.getShard().getRange();
  auto with_copy = loop_.opts.with_copy;
  return answered_by<search_copy_page>(loop_, "search",
                                       [=](std::function<void(result<search_copy_page>)> done) {
                                         if (!*req) return done(req->error());
                                         if (!with_copy)
                                           return done(status{errc::not_implemented, "no search on this node"});
                                         with_copy(db, range, [&](result<shard_copy*> copy) {
                                           if (!copy) return done(copy.error());
                                           (*copy)->start_search(**req, std::move(done));
                                         });
                                       })
      .then([context](result<search_copy_page>&& r) mutable {
        auto results = context.getResults();
        if (!r) return set_status(results.initStatus(), r.error());
        results.setPage(encode_page(*r));
      });
}

kj::Promise<void> node_server::timeSeq(TimeSeqContext context) {
  bool reset = context.getParams().getReset();
  return on_copy<time_seq_state>(
      loop_, context, [reset](local_copy& c) { return c.time_seq(reset); },
      [](Node::TimeSeqResults::Builder results, const time_seq_state& ts) {
        results.setUpdateSeq(ts.update_seq);
        write_time_seq(results.initBins(), ts.bins);
      });
}

kj::Promise<void> node_server::openDocs(OpenDocsContext context) {
  std::vector<std::string> ids;
  for (auto id : context.getParams().getIds()) ids.emplace_back(id.cStr());
  // Older coordinators ask `bodies` only: what they store of a document is its leaves'.
  doc_bodies bodies = !context.getParams().getBodies()     ? doc_bodies::none
                      : context.getParams().getAllBodies() ? doc_bodies::all
                                                           : doc_bodies::leaves;
  return on_copy<std::vector<doc_copy>>(
      loop_, context, [ids, bodies](local_copy& c) { return c.read_docs(ids, bodies); },
      [](Node::OpenDocsResults::Builder results, const std::vector<doc_copy>& docs) {
        auto list = results.initDocs(static_cast<unsigned>(docs.size()));
        for (unsigned i = 0; i < docs.size(); ++i) write_doc_copy(list[i], docs[i]);
      });
}

kj::Promise<void> node_server::localDoc(LocalDocContext context) {
  std::string id = context.getParams().getId();
  return on_copy<std::optional<local_doc>>(
      loop_, context, [id](local_copy& c) { return c.open_local(id); },
      [](Node::LocalDocResults::Builder results, const std::optional<local_doc>& d) {
        results.setFound(d.has_value());
        if (!d) return;
        results.setRev(d->rev);
        results.setBody(d->body);
      });
}

kj::Promise<void> node_server::writeLocal(WriteLocalContext context) {
  auto p = context.getParams();
  if (!within_json_depth(p.getBody().cStr())) {
    set_status(context.getResults().initStatus(), {errc::bad_request, "a _local document nests too deep"});
    return kj::READY_NOW;
  }
  local_update u;
  u.id = p.getId();
  u.rev = p.getRev();
  u.deleted = p.getDeleted();
  u.body = p.getBody();
  return on_copy<uint64_t>(
      loop_, context, [u](local_copy& c) { return c.write_local(u); },
      [](Node::WriteLocalResults::Builder results, uint64_t rev) { results.setRev(rev); });
}

kj::Promise<void> node_server::localDocs(LocalDocsContext context) {
  return on_copy<std::vector<local_doc>>(
      loop_, context, [](local_copy& c) { return c.list_local(); },
      [](Node::LocalDocsResults::Builder results, const std::vector<local_doc>& docs) {
        auto list = results.initDocs(static_cast<unsigned>(docs.size()));
        for (unsigned i = 0; i < docs.size(); ++i) {
          list[i].setId(docs[i].id);
          list[i].setRev(docs[i].rev);
          list[i].setBody(docs[i].body);
        }
      });
}

kj::Promise<void> node_server::setRevsLimit(SetRevsLimitContext context) {
  uint32_t limit = context.getParams().getLimit();
  if (limit == 0) {
    set_status(context.getResults().initStatus(), {errc::bad_request, "revs_limit must be positive"});
    return kj::READY_NOW;
  }
  return on_copy_status(loop_, context, [limit](local_copy& c) { return c.set_revs_limit(limit); });
}

kj::Promise<void> node_server::purgeDocs(PurgeDocsContext context) {
  auto params = context.getParams();
  auto op = std::make_shared<write_op>();
  op->what = write_op::kind::purge;
  for (auto p : params.getPurges()) {
    op->purges.push_back(read_purge(p));
    op->purges.back().seq = 0;  // this copy numbers its own
  }
  std::string db = params.getShard().getDb();
  return commit_off_loop(loop_, params.getShard(), op).then([this, context, op, db]() mutable {
    auto results = context.getResults();
    set_status(results.initStatus(), op->st);
    if (!op->st) return;
    auto list = results.initPurged(static_cast<unsigned>(op->purged.size()));
    for (unsigned i = 0; i < op->purged.size(); ++i) {
      write_revs(list[i].initRevs(static_cast<unsigned>(op->purged[i].size())), op->purged[i]);
    }
    if (loop_.opts.on_applied) loop_.opts.on_applied(db);
  });
}

kj::Promise<void> node_server::purgeInfos(PurgeInfosContext context) {
  uint64_t since = context.getParams().getSince();
  uint32_t limit = context.getParams().getLimit();
  return on_copy<purge_page>(
      loop_, context, [since, limit](local_copy& c) { return c.purge_infos(since, limit); },
      [](Node::PurgeInfosResults::Builder results, const purge_page& page) {
        auto list = results.initInfos(static_cast<unsigned>(page.infos.size()));
        for (unsigned i = 0; i < page.infos.size(); ++i) write_purge(list[i], page.infos[i]);
        results.setPurgeSeq(page.purge_seq);
        results.setOldest(page.oldest);
        results.setLimit(page.limit);
      });
}

kj::Promise<void> node_server::setPurgedInfosLimit(SetPurgedInfosLimitContext context) {
  uint32_t limit = context.getParams().getLimit();
  if (limit == 0) {
    set_status(context.getResults().initStatus(), {errc::bad_request, "`purge_infos_limit` must be positive integer"});
    return kj::READY_NOW;
  }
  return on_copy_status(loop_, context, [limit](local_copy& c) { return c.set_purged_infos_limit(limit); });
}

kj::Promise<void> node_server::readBlob(ReadBlobContext context) {
  auto params = context.getParams();
  std::string key = params.getKey();
  uint64_t offset = params.getOffset(), length = params.getLength();
  return on_copy<std::string>(
      loop_, context, [key, offset, length](local_copy& c) { return c.read_blob(key, offset, length); },
      [](Node::ReadBlobResults::Builder results, const std::string& bytes) {
        results.setBytes(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(bytes.data()), bytes.size()));
      });
}

kj::Promise<void> node_server::stageBlob(StageBlobContext context) {
  auto params = context.getParams();
  std::string key = params.getKey();
  uint64_t offset = params.getOffset();
  auto data = params.getPiece();
  std::string piece(reinterpret_cast<const char*>(data.begin()), data.size());
  return on_copy<bool>(
      loop_, context, [key, offset, piece](local_copy& c) { return c.stage_blob(key, offset, piece); },
      [](Node::StageBlobResults::Builder results, bool whole) { results.setWhole(whole); });
}

kj::Promise<void> node_server::dropStaged(DropStagedContext context) {
  std::string key = context.getParams().getKey();
  return on_copy_status(loop_, context, [key](local_copy& c) { return c.drop_staged(key); });
}

}  // namespace settee
