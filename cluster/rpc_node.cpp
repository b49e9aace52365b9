#include "cluster/rpc_node.hpp"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/compat/tls.h>
#include <kj/timer.h>

#include <algorithm>
#include <future>
#include <map>
#include <optional>
#include <set>

#include <caf/all.hpp>

#include "actors/gather.hpp"
#include "actors/internal_replication.hpp"
#include "actors/local_copy.hpp"
#include "actors/messages.hpp"
#include "cluster/cluster_tls.hpp"
#include "cluster/legacy_calls.hpp"
#include "cluster/peer_auth.hpp"
#include "cluster/schema/cluster_rpc.capnp.h"
#include "node/check.hpp"
#include "node/clock.hpp"
#include "node/json.hpp"
#include "node/log.hpp"
#include "node/metrics.hpp"
#include "node/work_pool.hpp"

namespace settee {

namespace {

// What one accepted connection has proved. Shared by the connection (which closes when `drop`
// is fulfilled) and its node_server (which a call in flight may keep alive a little longer).
struct conn_gate {
  bool authenticated = false;
  std::string server_nonce;  // the outstanding challenge; empty once used
  kj::Own<kj::PromiseFulfiller<void>> drop;
};

// Serves the Node interface for one connection; forwards to the loop (defined below) on the loop's
// own thread. Every method but challenge and handshake is refused until the handshake proved the
// cluster secret: the gate is in dispatchCall, so a method appended later is behind it too.
class node_server final : public Node::Server {
 public:
  node_server(rpc_node::loop& l, std::shared_ptr<conn_gate> gate) : loop_(l), gate_(std::move(gate)) {}
  DispatchCallResult dispatchCall(uint64_t interface_id, uint16_t method_id,
                                  capnp::CallContext<capnp::AnyPointer, capnp::AnyPointer> context) override {
    // Ordinals in cluster_rpc.capnp: handshake @0, challenge @10.
    bool open = interface_id == capnp::typeId<Node>() && (method_id == 0 || method_id == 10);
    if (!open && !gate_->authenticated) return {refused(), false};
    return Node::Server::dispatchCall(interface_id, method_id, context);
  }
  kj::Promise<void> challenge(ChallengeContext context) override;
  kj::Promise<void> handshake(HandshakeContext context) override;
  kj::Promise<void> ping(PingContext) override { return kj::READY_NOW; }
  kj::Promise<void> shardInfo(ShardInfoContext context) override;
  kj::Promise<void> applyChanges(ApplyChangesContext context) override;
  kj::Promise<void> updateDocs(UpdateDocsContext context) override;
  kj::Promise<void> changesPage(ChangesPageContext context) override;
  kj::Promise<void> resolveSince(ResolveSinceContext context) override;
  kj::Promise<void> readDoc(ReadDocContext context) override;
  kj::Promise<void> allDocsPage(AllDocsPageContext context) override;
  kj::Promise<void> timeSeq(TimeSeqContext context) override;
  kj::Promise<void> openDocs(OpenDocsContext context) override;
  kj::Promise<void> localDoc(LocalDocContext context) override;
  kj::Promise<void> writeLocal(WriteLocalContext context) override;
  kj::Promise<void> localDocs(LocalDocsContext context) override;
  kj::Promise<void> dbUpdates(DbUpdatesContext context) override;
  kj::Promise<void> setRevsLimit(SetRevsLimitContext context) override;
  kj::Promise<void> readBlob(ReadBlobContext context) override;
  kj::Promise<void> stageBlob(StageBlobContext context) override;
  kj::Promise<void> dropStaged(DropStagedContext context) override;
  kj::Promise<void> compactDb(CompactDbContext context) override;
  kj::Promise<void> activeTasks(ActiveTasksContext context) override;
  kj::Promise<void> nodeStatus(NodeStatusContext context) override;
  kj::Promise<void> reshardState(ReshardStateContext context) override;
  kj::Promise<void> reshardJobs(ReshardJobsContext context) override;
  kj::Promise<void> editReshardJob(EditReshardJobContext context) override;
  kj::Promise<void> newReshardJob(NewReshardJobContext context) override;
  kj::Promise<void> exportChanges(ExportChangesContext context) override;
  kj::Promise<void> sealCopy(SealCopyContext context) override;
  kj::Promise<void> retireCopy(RetireCopyContext context) override;
  kj::Promise<void> createJob(CreateJobContext context) override;
  kj::Promise<void> reshardRequest(ReshardRequestContext context) override;
  kj::Promise<void> splitSeal(SplitSealContext context) override;

 private:
  static kj::Promise<void> refused() {
    return KJ_EXCEPTION(FAILED, "settee: unauthenticated connection (prove the cluster secret in handshake first)");
  }
  // Refuses the call and closes the connection.
  kj::Promise<void> refuse_and_drop(const std::string& why);
  rpc_node::loop& loop_;
  std::shared_ptr<conn_gate> gate_;
};

}  // namespace

struct rpc_node::loop : private kj::TaskSet::ErrorHandler {
  struct peer_conn {
    peer_address address;
    kj::Own<kj::AsyncIoStream> stream;
    kj::Own<capnp::TwoPartyClient> client;
    kj::Maybe<Node::Client> cap;
    int backoff_ms = 100;
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> wake;  // ends the backoff early (the peer dialled us)
    kj::Maybe<kj::Own<kj::PromiseFulfiller<void>>> stop;  // ends the dialling (the member was removed)
    bool dialling = false;                                // a dial loop runs (until its stop has taken effect)
    bool redial = false;                                  // added again while its stopped loop was still winding down
  };

  // One accepted connection: its own RPC system with its own node_server (and gate).
  struct server_conn {
    server_conn(kj::Own<kj::AsyncIoStream>&& s, capnp::Capability::Client bootstrap)
        : stream(kj::mv(s)),
          network(*stream, capnp::rpc::twoparty::Side::SERVER),
          rpc(capnp::makeRpcServer(network, kj::mv(bootstrap))) {}
    kj::Own<kj::AsyncIoStream> stream;
    capnp::TwoPartyVatNetwork network;
    capnp::RpcSystem<capnp::rpc::twoparty::VatId> rpc;
  };

  // The TLS context when the cluster uses TLS: trusts the cluster CA only, presents this node's
  // certificate, and requires one from every client.
  struct tls_state {
    tls_state(const rpc_options& o, kj::Timer& timer)
        : ca(kj::StringPtr(o.tls_ca_pem.c_str())),
          keypair{kj::TlsPrivateKey(kj::StringPtr(o.tls_key_pem.c_str())),
                  kj::TlsCertificate(kj::StringPtr(o.tls_cert_pem.c_str()))} {
      kj::TlsContext::Options options;
      options.useSystemTrustStore = false;
      options.verifyClients = true;
      options.trustedCertificates = kj::arrayPtr(&ca, 1);
      options.defaultKeypair = keypair;
      options.timer = timer;
      options.acceptTimeout = o.handshake_timeout_ms * kj::MILLISECONDS;
      context = kj::heap<kj::TlsContext>(kj::mv(options));
    }
    kj::TlsCertificate ca;
    kj::TlsKeypair keypair;
    kj::Own<kj::TlsContext> context;
  };

  loop(membership& members, const rpc_options& opts, kj::AsyncIoContext& io)
      : members(members), opts(opts), io(io), tasks(*this) {
    if (opts.tls) tls = kj::heap<tls_state>(opts, io.provider->getTimer());
  }

  membership& members;
  const rpc_options& opts;
  kj::AsyncIoContext& io;
  kj::Own<tls_state> tls;
  // Calls that may block (a write that waits for its commit) run here, never on this loop.
  work_pool blocking{8};

  // Runs `job` on the pool; the promise resolves on this loop once it has run (a dropped promise
  // makes the fulfilment a no-op). Results travel in what the job captured.
  kj::Promise<void> off_loop(std::function<void()> job) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    auto f = std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<void>>>(kj::mv(paf.fulfiller));
    blocking.submit([f, job = std::move(job)] {
      // A peer's malformed call that slipped past a check fails that call, never the node.
      try {
        job();
        (*f)->fulfill();
      } catch (const std::exception& e) {
        log::error(std::string("cluster RPC: a call failed: ") + e.what());
        (*f)->reject(KJ_EXCEPTION(FAILED, "settee: the call failed", e.what()));
      } catch (...) {
        log::error("cluster RPC: a call failed with an unknown exception");
        (*f)->reject(KJ_EXCEPTION(FAILED, "settee: the call failed"));
      }
    });
    return kj::mv(paf.promise);
  }
  std::map<std::string, kj::Own<peer_conn>> peers;
  std::set<std::string> removed;  // members removed from the cluster: not dialled, refused when they dial
  // Declared last, destroyed first: cancelling every promise chain before the connections, peers
  // and server they refer to go away.
  kj::TaskSet tasks;

  void taskFailed(kj::Exception&& e) override {
    warn_limited(std::string("rpc task failed: ") + e.getDescription().cStr());
  }

  log::rate_limited refusals;  // warnings that strangers can cause
  void warn_limited(const std::string& line) { refusals.warning(line); }

  kj::Promise<void> accept_loop(kj::ConnectionReceiver& listener) {
    return listener.accept().then([this, &listener](kj::Own<kj::AsyncIoStream>&& stream) {
      if (!tls) {
        serve(kj::mv(stream));
      } else {
        tasks.add(tls->context->wrapServer(kj::mv(stream))
                      .then([this](kj::Own<kj::AsyncIoStream>&& secured) { serve(kj::mv(secured)); },
                            [this](kj::Exception&& e) {
                              warn_limited(std::string("cluster RPC: TLS handshake with a client failed (is [cluster] "
                                                       "tls the same on every node, and the secret?): ") +
                                           e.getDescription().cStr());
                            }));
      }
      return accept_loop(listener);
    });
  }

  // Serves one connection until the peer hangs up, its proof fails, or it has not proved itself
  // within the handshake timeout.
  void serve(kj::Own<kj::AsyncIoStream>&& stream) {
    auto gate = std::make_shared<conn_gate>();
    auto dropped = kj::newPromiseAndFulfiller<void>();
    gate->drop = kj::mv(dropped.fulfiller);
    auto conn = kj::heap<server_conn>(kj::mv(stream), kj::heap<node_server>(*this, gate));
    auto& timer = io.provider->getTimer();
    auto deadline =
        timer.afterDelay(opts.handshake_timeout_ms * kj::MILLISECONDS).then([this, gate]() -> kj::Promise<void> {
          if (gate->authenticated) return kj::NEVER_DONE;
          warn_limited("cluster RPC: closing a connection that did not authenticate in time");
          return kj::READY_NOW;
        });
    auto ends = conn->network.onDisconnect().exclusiveJoin(kj::mv(dropped.promise)).exclusiveJoin(kj::mv(deadline));
    tasks.add(ends.attach(kj::mv(conn)));
  }

  void fill_hello(Hello::Builder h) {
    h.setName(members.self());
    h.setRelease(opts.release);
    auto f = h.initFeatures(static_cast<unsigned>(opts.features.size()));
    for (size_t i = 0; i < opts.features.size(); ++i) f.set(static_cast<unsigned>(i), opts.features[i]);
    h.setRpcHost(opts.advertised_host);
    h.setRpcPort(opts.port);
    h.setHttpPort(opts.http_port);
  }

  static peer_info info_of(Hello::Reader h) {
    peer_info info;
    info.release = h.getRelease();
    for (auto f : h.getFeatures()) info.features.emplace_back(f.cStr());
    return info;
  }

  // Dials a peer unless we already do. A member removed from the cluster is dialled again only when
  // it is added again (`readd`), not when it introduces itself.
  void add_peer(const peer_address& address, bool readd = false) {
    if (address.name == members.self()) return;
    if (removed.count(address.name)) {
      if (!readd) return;
      removed.erase(address.name);
    }
    if (auto known = peers.find(address.name); known != peers.end()) {
      peer_conn& pc = *known->second;
      if (pc.stop == nullptr) {  // dialling stopped at its removal: start again
        members.add_member(address.name);
        pc.address = address;
        if (pc.dialling) {
          pc.redial = true;  // once the old loop has ended
        } else {
          dial(pc);
        }
        return;
      }
      // It is up (it just dialled us): if we wait to dial it again, dial now.
      KJ_IF_MAYBE (w, pc.wake) {
        pc.backoff_ms = 100;
        (*w)->fulfill();
        pc.wake = nullptr;
      }
      return;
    }
    members.add_member(address.name);
    auto conn = kj::heap<peer_conn>();
    conn->address = address;
    peer_conn& pc = *conn;
    peers.emplace(address.name, kj::mv(conn));
    dial(pc);
  }

  // Stops dialling a removed member and closes our connection to it; it is refused if it dials.
  void remove_peer(const std::string& name) {
    removed.insert(name);
    members.remove_member(name);
    auto it = peers.find(name);
    if (it == peers.end()) return;
    KJ_IF_MAYBE (s, it->second->stop) {
      (*s)->fulfill();
    }
    it->second->stop = nullptr;
    it->second->redial = false;
  }

  // run() until remove_peer() stops it; then the connection is dropped.
  void dial(peer_conn& pc) {
    auto stopped = kj::newPromiseAndFulfiller<void>();
    pc.stop = kj::mv(stopped.fulfiller);
    pc.backoff_ms = 100;
    pc.dialling = true;
    tasks.add(run(pc).exclusiveJoin(kj::mv(stopped.promise)).then([this, &pc]() {
      pc.dialling = false;
      pc.wake = nullptr;
      pc.cap = nullptr;
      pc.client = nullptr;
      pc.stream = nullptr;
      if (pc.redial) {  // added again meanwhile
        pc.redial = false;
        dial(pc);
      } else {
        members.remove_member(pc.address.name);
      }
    }));
  }

  // The dialling side of the handshake (cluster/peer_auth.hpp): the server's challenge (an older
  // release does not know the call: a legacy peer), our proof, then the check of the server's.
  kj::Promise<capnp::Response<Node::HandshakeResults>> authenticate(peer_conn& pc, Node::Client cap) {
    auto& timer = io.provider->getTimer();
    auto challenged = cap.challengeRequest().send().then(
        [](capnp::Response<Node::ChallengeResults>&& r) { return std::string(r.getNonce().cStr()); },
        [](kj::Exception&& e) -> std::string {
          if (e.getType() == kj::Exception::Type::UNIMPLEMENTED) return "";
          kj::throwFatalException(kj::mv(e));
        });
    return timer.timeoutAfter(opts.handshake_timeout_ms * kj::MILLISECONDS, kj::mv(challenged))
        .then([this, &pc, &timer, cap](std::string server_nonce) mutable {
          bool legacy = server_nonce.empty();
          if (legacy && !opts.accept_legacy_peers) {
            log::warning("peer " + pc.address.name + " runs a release without cluster authentication; " +
                         "not connecting (see [cluster] accept_legacy_peers in docs/security.md)");
            kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "legacy peer refused"));
          }
          auto req = cap.handshakeRequest();
          auto h = req.initHello();
          fill_hello(h);
          std::string client_nonce = peer_auth::new_nonce();
          if (!legacy) {
            h.setNonce(client_nonce);
            h.setProof(peer_auth::client_proof(opts.secret, server_nonce, client_nonce, members.self()));
          }
          return timer.timeoutAfter(opts.handshake_timeout_ms * kj::MILLISECONDS, req.send())
              .then([this, &pc, legacy, client_nonce, server_nonce](capnp::Response<Node::HandshakeResults>&& r) {
                auto hello = r.getHello();
                std::string expected =
                    peer_auth::server_proof(opts.secret, client_nonce, server_nonce, hello.getName().cStr());
                if (!legacy && !peer_auth::matches(expected, hello.getProof().cStr())) {
                  log::warning("peer " + pc.address.name + " did not prove the cluster secret; not connecting");
                  kj::throwFatalException(KJ_EXCEPTION(DISCONNECTED, "peer failed authentication"));
                }
                return kj::mv(r);
              });
        });
  }

  kj::Promise<void> run(peer_conn& pc) {
    auto& timer = io.provider->getTimer();
    return io.provider->getNetwork()
        .parseAddress(pc.address.host, pc.address.port)
        .then([](kj::Own<kj::NetworkAddress> addr) { return addr->connect(); })
        .then([this](kj::Own<kj::AsyncIoStream> stream) -> kj::Promise<kj::Own<kj::AsyncIoStream>> {
          if (!tls) return kj::mv(stream);
          return tls->context->wrapClient(kj::mv(stream), tls_peer_name);
        })
        .then([this, &pc](kj::Own<kj::AsyncIoStream> stream) {
          pc.stream = kj::mv(stream);
          pc.client = kj::heap<capnp::TwoPartyClient>(*pc.stream);
          Node::Client cap = pc.client->bootstrap().castAs<Node>();
          pc.cap = cap;
          return authenticate(pc, cap).then([this, &pc](capnp::Response<Node::HandshakeResults>&& r) {
            auto hello = r.getHello();
            if (std::string(hello.getName().cStr()) != pc.address.name) {
              log::warning("peer at " + pc.address.host + ":" + std::to_string(pc.address.port) + " says it is " +
                           hello.getName().cStr() + ", expected " + pc.address.name);
            }
            members.connected(pc.address.name, info_of(hello));
            pc.backoff_ms = 100;
            // A peer that closes the connection (it stopped or restarted) is redialled at once,
            // not at the next failed ping: calls after its restart find the new connection.
            return ping_loop(pc).exclusiveJoin(pc.client->onDisconnect().then(
                []() -> kj::Promise<void> { return KJ_EXCEPTION(DISCONNECTED, "the peer closed the connection"); }));
          });
        })
        .catch_([this, &pc, &timer](kj::Exception&&) {
          members.disconnected(pc.address.name);
          pc.cap = nullptr;
          pc.client = nullptr;
          pc.stream = nullptr;
          int delay = pc.backoff_ms;
          pc.backoff_ms = std::min(opts.max_backoff_ms, pc.backoff_ms * 2);
          auto woken = kj::newPromiseAndFulfiller<void>();
          pc.wake = kj::mv(woken.fulfiller);
          return timer.afterDelay(delay * kj::MILLISECONDS).exclusiveJoin(kj::mv(woken.promise));
        })
        .then([this, &pc]() {
          pc.wake = nullptr;
          return run(pc);  // reconnect until the loop stops
        });
  }

  kj::Promise<void> ping_loop(peer_conn& pc) {
    auto& timer = io.provider->getTimer();
    return timer.afterDelay(opts.ping_interval_ms * kj::MILLISECONDS)
        .then([this, &pc, &timer]() {
          KJ_IF_MAYBE (cap, pc.cap) {
            return timer.timeoutAfter(opts.ping_timeout_ms * kj::MILLISECONDS, cap->pingRequest().send())
                .ignoreResult();
          }
          return kj::Promise<void>(KJ_EXCEPTION(DISCONNECTED, "no connection"));
        })
        .then([this, &pc]() { return ping_loop(pc); });
  }
};

namespace {

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

// A document as data: its tree in the shard file's encoding, its stored bodies.
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

// The inverse; a tree that does not decode (or fails rev_tree's checks) is an error, not a document.
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

// Peers' document bodies are parsed later as any client's: the same depth limit, checked here once.
status check_depth(capnp::List<DocUpdate>::Reader updates) {
  for (auto u : updates) {
    if (!within_json_depth(u.getBody().cStr())) {
      return status{errc::bad_request, "document " + std::string(u.getId().cStr()) + " nests deeper than " +
                                           std::to_string(max_json_depth()) + " levels ([couchdb] max_json_depth)"};
    }
  }
  return {};
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

doc_update read_update(DocUpdate::Reader u, bool new_edits) {
  doc_update d;
  d.id = u.getId();
  d.body = u.getBody();
  d.deleted = u.getDeleted();
  d.new_edits = new_edits;
  for (auto r : u.getRevs()) d.revs.push_back({r.getPos(), r.getHash()});
  d.managed_attachments = u.getManagedAttachments();
  for (auto b : u.getBlobs()) {
    auto bytes = b.getBytes();
    d.blobs.push_back({b.getKey(), std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size())});
  }
  return d;
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
      });
}

kj::Promise<void> node_server::applyChanges(ApplyChangesContext context) {
  auto params = context.getParams();
  if (auto st = check_depth(params.getUpdates()); !st) {
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
  if (auto st = check_depth(params.getUpdates()); !st) {
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

kj::Promise<void> node_server::timeSeq(TimeSeqContext context) {
  bool reset = context.getParams().getReset();
  return on_copy<time_seq_state>(
      loop_, context, [reset](local_copy& c) { return c.time_seq(reset); },
      [](Node::TimeSeqResults::Builder results, const time_seq_state& ts) {
        results.setUpdateSeq(ts.update_seq);
        auto bins = results.initBins();
        bins.setVersion(ts.bins.v);
        bins.setResetSeq(ts.bins.reset_seq);
        bins.setResetUntil(ts.bins.reset_until);
        auto times = bins.initTimes(static_cast<unsigned>(ts.bins.bins.size()));
        auto seqs = bins.initSeqs(static_cast<unsigned>(ts.bins.bins.size()));
        for (unsigned i = 0; i < ts.bins.bins.size(); ++i) {
          times.set(i, ts.bins.bins[i].time);
          seqs.set(i, ts.bins.bins[i].seq);
        }
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

// The node-level calls (actors/members.hpp), run on the pool by this node's member.
template <class T>
kj::Promise<void> on_member(rpc_node::loop& l, std::function<result<T>(cluster_member&)> work,
                            std::function<void(const T&)> answer, std::function<void(const status&)> fail) {
  cluster_member* self = l.opts.self;
  auto out = std::make_shared<result<T>>(status{errc::not_implemented, "no member calls on this node"});
  return l
      .off_loop([self, work = std::move(work), out] {
        if (self) *out = work(*self);
      })
      .then([out, answer = std::move(answer), fail = std::move(fail)]() {
        if (*out) {
          answer(**out);
        } else {
          fail(out->error());
        }
      });
}

kj::Promise<void> node_server::compactDb(CompactDbContext context) {
  std::string db = context.getParams().getDb();
  return on_member<bool>(
      loop_,
      [db](cluster_member& m) -> result<bool> {
        if (status st = m.compact(db); !st) return st;
        return true;
      },
      [context](const bool&) mutable { set_status(context.getResults().initStatus(), {}); },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::activeTasks(ActiveTasksContext context) {
  using list = std::vector<std::string>;
  return on_member<list>(
      loop_, [](cluster_member& m) { return m.active_tasks(); },
      [context](const list& tasks) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        auto out = results.initTasks(static_cast<unsigned>(tasks.size()));
        for (unsigned i = 0; i < tasks.size(); ++i) out.set(i, tasks[i]);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::nodeStatus(NodeStatusContext context) {
  return on_member<node_status>(
      loop_, [](cluster_member& m) { return m.figures(); },
      [context](const node_status& s) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        auto n = results.initNode();
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
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::reshardState(ReshardStateContext context) {
  auto params = context.getParams();
  std::optional<reshard_state> set;
  if (params.getSet()) set = reshard_state{params.getRunning(), params.getReason()};
  return on_member<reshard_state>(
      loop_,
      [set](cluster_member& m) -> result<reshard_state> {
        if (set)
          if (status st = m.set_reshard_state(*set); !st) return st;
        return m.get_reshard_state();
      },
      [context](const reshard_state& s) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        results.setRunning(s.running);
        results.setReason(s.reason);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
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

kj::Promise<void> node_server::reshardJobs(ReshardJobsContext context) {
  using list = std::vector<split_job>;
  return on_member<list>(
      loop_, [](cluster_member& m) { return m.reshard_jobs(); },
      [context](const list& jobs) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        auto out = results.initJobs(static_cast<unsigned>(jobs.size()));
        for (unsigned i = 0; i < jobs.size(); ++i) write_job(out[i], jobs[i]);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::editReshardJob(EditReshardJobContext context) {
  auto p = context.getParams();
  std::string id = p.getId();
  bool remove = p.getRemove();
  reshard_state want{p.getRunning(), p.getReason()};
  return on_member<bool>(
      loop_,
      [id, remove, want](cluster_member& m) -> result<bool> {
        status st = remove ? m.remove_reshard_job(id) : m.set_reshard_job_state(id, want);
        if (!st) return st;
        return true;
      },
      [context](const bool&) mutable { set_status(context.getResults().initStatus(), {}); },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::newReshardJob(NewReshardJobContext context) {
  auto p = context.getParams().getJob();
  new_job want{p.getType(), p.getDb(), p.getShard(), p.getSuffix(), p.getLeader(), p.getSource()};
  return on_member<split_job>(
      loop_, [want](cluster_member& m) { return m.create_reshard_job(want); },
      [context](const split_job& j) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        write_job(results.initMade(), j);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::exportChanges(ExportChangesContext context) {
  auto params = context.getParams();
  std::string db = params.getShard().getDb(), range = params.getShard().getRange();
  uint64_t since = params.getSince();
  bool with_local = params.getWithLocal();
  auto fn = loop_.opts.export_changes;
  auto out = std::make_shared<result<std::string>>(status{errc::not_implemented, "no moves here"});
  return loop_
      .off_loop([=] {
        if (fn) *out = fn(db, range, since, with_local);
      })
      .then([context, out]() mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), out->ok() ? status{} : out->error());
        if (*out) {
          const std::string& bytes = **out;
          results.setBatch(capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(bytes.data()), bytes.size()));
        }
      });
}

kj::Promise<void> node_server::sealCopy(SealCopyContext context) {
  auto params = context.getParams();
  std::string db = params.getShard().getDb(), range = params.getShard().getRange();
  bool seal = params.getSeal();
  auto fn = loop_.opts.seal_copy;
  auto out = std::make_shared<result<uint64_t>>(status{errc::not_implemented, "no moves here"});
  return loop_
      .off_loop([=] {
        if (fn) *out = fn(db, range, seal);
      })
      .then([context, out]() mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), out->ok() ? status{} : out->error());
        if (*out) results.setUpdateSeq(**out);
      });
}

kj::Promise<void> node_server::retireCopy(RetireCopyContext context) {
  auto params = context.getParams();
  std::string db = params.getDb(), shard = params.getShardId();
  uint64_t end_seq = params.getEndSeq();
  bool remove = params.getRemove();
  auto fn = loop_.opts.retire_copy;
  auto out = std::make_shared<status>(errc::not_implemented, "no moves here");
  return loop_
      .off_loop([=] {
        if (fn) *out = fn(db, shard, end_seq, remove);
      })
      .then([context, out]() mutable { set_status(context.getResults().initStatus(), *out); });
}

kj::Promise<void> node_server::createJob(CreateJobContext context) {
  std::string body = context.getParams().getBody();
  return on_member<std::string>(
      loop_, [body](cluster_member& m) { return answer_create_job(m, body); },
      [context](const std::string& job) mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), {});
        results.setJob(job);
      },
      [context](const status& st) mutable { set_status(context.getResults().initStatus(), st); });
}

kj::Promise<void> node_server::splitSeal(SplitSealContext context) {
  std::string db = context.getParams().getDb(), shard = context.getParams().getShardId();
  auto fn = loop_.opts.split_seal;
  auto out = std::make_shared<result<std::pair<uint64_t, std::string>>>(
      status{errc::not_implemented, "no splits of several copies here"});
  return loop_
      .off_loop([=] {
        if (fn) *out = fn(db, shard);
      })
      .then([context, out]() mutable {
        auto results = context.getResults();
        set_status(results.initStatus(), out->ok() ? status{} : out->error());
        if (*out) {
          results.setEndSeq((*out)->first);
          results.setUuid((*out)->second);
        }
      });
}

kj::Promise<void> node_server::reshardRequest(ReshardRequestContext context) {
  auto params = context.getParams();
  std::string method = params.getMethod(), id = params.getId(), body = params.getBody();
  bool state = params.getState();
  using answer = std::pair<int, std::string>;
  auto reply = [context](const answer& a) mutable {
    auto results = context.getResults();
    results.setCode(static_cast<uint16_t>(a.first));
    results.setBody(a.second);
  };
  return on_member<answer>(
      loop_, [=](cluster_member& m) -> result<answer> { return answer_reshard_request(m, method, id, state, body); },
      reply,
      [reply](const status&) mutable {
        reply({501, R"({"error":"not_implemented","reason":"resharding is not available on this node"})"});
      });
}

// This node's update log: no shard, but read on the pool all the same (it may open the file).
kj::Promise<void> node_server::dbUpdates(DbUpdatesContext context) {
  auto params = context.getParams();
  std::string uuid = params.getUuid();
  uint64_t seq = params.getSeq();
  size_t limit = std::clamp<size_t>(params.getLimit(), 1, 10000);
  auto read = loop_.opts.read_updates;
  auto out = std::make_shared<std::optional<result<log_page>>>();
  return loop_
      .off_loop([read, uuid, seq, limit, out] {
        out->emplace(read ? read(uuid, seq, limit) : result<log_page>(status{errc::not_implemented, "no update log"}));
      })
      .then([context, out]() mutable {
        auto results = context.getResults();
        result<log_page>& r = **out;
        if (!r) return set_status(results.initStatus(), r.error());
        results.setUuid(r->uuid);
        results.setTop(r->top);
        auto rows = results.initRows(static_cast<unsigned>(r->rows.size()));
        for (unsigned i = 0; i < r->rows.size(); ++i) {
          rows[i].setSeq(r->rows[i].first);
          rows[i].setDb(r->rows[i].second.db);
          rows[i].setInstance(r->rows[i].second.instance);
          rows[i].setTime(r->rows[i].second.time_s);
        }
      });
}

}  // namespace

rpc_node::rpc_node(membership& members, rpc_options opts) : members_(members), opts_(std::move(opts)) {
  for (auto& s : opts_.seeds) members_.add_member(s.name);
}

rpc_node::~rpc_node() {
  stop();
}

namespace {

// What the loop thread shares with the thread that stops it.
}  // namespace

// Calls to one peer's copy of one range that queue up while the loop is busy and then travel as one
// message: the waiters' items (document ids, or documents to write) are concatenated, and the
// answer's items go back to each waiter in the same order (rpc_node::open_docs, update_docs).
template <class Item, class Answer>
struct pending_batch {
  std::string node, db, range;
  doc_bodies bodies = doc_bodies::none;  // reads: which stored bodies
  std::vector<std::pair<std::vector<Item>, std::function<void(result<std::vector<Answer>>)>>> waiters;
  size_t items() const {
    size_t n = 0;
    for (auto& w : waiters) n += w.first.size();
    return n;
  }
  void fail(const status& st) {
    for (auto& w : waiters) w.second(st);
  }
};
struct pending_reads : pending_batch<std::string, doc_copy> {};
struct pending_writes : pending_batch<doc_update, doc_result> {};

struct loop_control {
  kj::Own<const kj::Executor> executor;
  kj::Own<kj::PromiseFulfiller<void>> stop;
  rpc_node::loop* state = nullptr;  // only touched on the loop thread

  // Work other threads hand to the loop without waiting for it (rpc_node::post): queued here, and
  // the loop is woken once per batch through a cross-thread fulfiller. Under load one wake-up
  // starts many calls; the caller never blocks on the loop.
  std::mutex mu;
  std::vector<std::function<void(rpc_node::loop*)>> inbox;
  std::map<std::string, pending_reads> reads;           // by peer, database, range and bodies
  std::map<std::string, pending_writes> writes;         // by peer, database and range
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake;  // armed while the loop waits for work
  bool running = false;                                 // the loop takes work
  // Send one batch of reads or writes (set by rpc_node::start; run on the loop).
  std::function<void(rpc_node::loop&, pending_reads&)> send_reads;
  std::function<void(rpc_node::loop&, pending_writes&)> send_writes;

  // Wakes the loop if it waits for work. mu held.
  void wake_locked() {
    if (wake) {
      wake->fulfill();
      wake = nullptr;
    }
  }

  // Runs on the loop: waits for work, runs it, and waits again.
  kj::Promise<void> drain(rpc_node::loop& l) {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<void>();
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!inbox.empty() || !reads.empty() || !writes.empty())
        paf.fulfiller->fulfill();
      else
        wake = kj::mv(paf.fulfiller);
    }
    return paf.promise.then([this, &l]() {
      std::vector<std::function<void(rpc_node::loop*)>> work;
      std::map<std::string, pending_reads> read_batch;
      std::map<std::string, pending_writes> write_batch;
      {
        std::lock_guard<std::mutex> lock(mu);
        work.swap(inbox);
        read_batch.swap(reads);
        write_batch.swap(writes);
      }
      for (auto& f : work) f(&l);
      for (auto& [key, w] : write_batch) send_writes(l, w);
      for (auto& [key, r] : read_batch) send_reads(l, r);
      return drain(l);
    });
  }
  // Stops taking work; what is queued runs with no loop (its callers learn the RPC is stopping).
  void close() {
    std::vector<std::function<void(rpc_node::loop*)>> work;
    std::map<std::string, pending_reads> read_batch;
    std::map<std::string, pending_writes> write_batch;
    {
      std::lock_guard<std::mutex> lock(mu);
      running = false;
      wake = nullptr;
      work.swap(inbox);
      read_batch.swap(reads);
      write_batch.swap(writes);
    }
    status stopping{errc::unavailable, "cluster RPC is stopping"};
    for (auto& f : work) f(nullptr);
    for (auto& [key, r] : read_batch) r.fail(stopping);
    for (auto& [key, w] : write_batch) w.fail(stopping);
  }
};

status rpc_node::start() {
  auto ready = std::make_shared<std::promise<status>>();
  auto ready_future = ready->get_future();
  auto control = std::make_shared<loop_control>();
  thread_ = std::thread([this, ready, control]() {
    bool started = false;
    try {
      mark_event_loop_thread();  // nothing here may wait for a commit (bridge.cpp checks)
      auto io = kj::setupAsyncIo();
      auto addr = io.provider->getNetwork().parseAddress(opts_.bind, opts_.port).wait(io.waitScope);
      auto listener = addr->listen();
      port_ = static_cast<uint16_t>(listener->getPort());
      opts_.port = port_;
      {
        loop state(members_, opts_, io);
        state.tasks.add(state.accept_loop(*listener));
        control->send_reads = [this](loop& l, pending_reads& r) { send_reads(l, r); };
        control->send_writes = [this](loop& l, pending_writes& w) { send_writes(l, w); };
        {
          std::lock_guard<std::mutex> lock(control->mu);
          control->running = true;
        }
        state.tasks.add(control->drain(state));
        for (auto& s : opts_.seeds) state.add_peer(s);
        auto paf = kj::newPromiseAndFulfiller<void>();
        control->executor = kj::getCurrentThreadExecutor().addRef();
        control->stop = kj::mv(paf.fulfiller);
        control->state = &state;
        started = true;
        ready->set_value({});
        paf.promise.wait(io.waitScope);
        control->close();
        control->stop = nullptr;
        control->state = nullptr;
      }  // the loop state goes before the listener and the event loop it uses
    } catch (const kj::Exception& e) {
      std::string what = std::string("cluster RPC: ") + e.getDescription().cStr();
      if (!started)
        ready->set_value({errc::internal, what});
      else
        log::error(what);
    }
  });
  status st = ready_future.get();
  if (!st) {
    thread_.join();
    return st;
  }
  control_ = control;
  stop_ = [control]() {
    control->executor->executeSync([&]() {
      if (control->stop) control->stop->fulfill();
    });
  };
  return {};
}

void rpc_node::stop() {
  if (stop_) {
    try {
      stop_();
    } catch (const kj::Exception&) {
      // the loop already ended
    }
    stop_ = nullptr;
  }
  if (thread_.joinable()) thread_.join();
}

void rpc_node::post(std::function<void(loop*)> work) {
  loop_control* c = control_.get();
  if (c) {
    std::unique_lock<std::mutex> lock(c->mu);
    if (c->running) {
      c->inbox.push_back(std::move(work));
      c->wake_locked();
      return;
    }
  }
  work(nullptr);
}

status rpc_node::on_loop(const std::function<void(loop&)>& start) {
  if (!control_ || !control_->executor) return {errc::unavailable, "cluster RPC is not running"};
  status st;
  try {
    control_->executor->executeSync([&]() {
      if (control_->state)
        start(*control_->state);
      else
        st = {errc::unavailable, "cluster RPC is stopping"};
    });
  } catch (const kj::Exception& e) {
    return {errc::unavailable, std::string("cluster RPC: ") + e.getDescription().cStr()};
  }
  return st;
}

namespace {

// The capability of a peer we are connected to right now (handshake done), else null.
Node::Client* connected_cap(rpc_node::loop& l, const membership& members, const std::string& peer) {
  auto it = l.peers.find(peer);
  if (it == l.peers.end() || !members.is_connected(peer)) return nullptr;
  KJ_IF_MAYBE (c, it->second->cap) {
    return c;
  }
  return nullptr;
}

// An answered call's latency, from `sent` (settee_rpc_duration_seconds{peer}).
void observe_answer(const std::string& peer, std::chrono::steady_clock::time_point sent) {
  metrics::node().rpc_seconds.observe(peer, std::chrono::duration<double>(mono::now() - sent).count());
}

status unavailable(const std::string& peer, const std::string& why) {
  return {errc::unavailable, "node " + peer + " is unavailable: " + why};
}

}  // namespace

status rpc_node::add_peer(const peer_address& peer) {
  return on_loop([&](loop& l) { l.add_peer(peer, true); });
}

status rpc_node::remove_peer(const std::string& name) {
  return on_loop([&](loop& l) { l.remove_peer(name); });
}

template <class T, class Send>
void rpc_node::start_call(const std::string& peer, Send send, std::function<void(result<T>)> done) {
  metrics::node().rpc_calls.add(peer);
  post([this, peer, send = std::move(send), done = std::move(done)](loop* l) mutable {
    auto failed = [&peer](status st) {
      metrics::node().rpc_errors.add(peer);
      return st;
    };
    if (!l) return done(failed(status{errc::unavailable, "cluster RPC is stopping"}));
    Node::Client* cap = connected_cap(*l, members_, peer);
    if (!cap) return done(failed(unavailable(peer, "not connected")));
    auto once = std::make_shared<std::function<void(result<T>)>>(std::move(done));
    auto& timer = l->io.provider->getTimer();
    const auto sent = mono::now();
    l->tasks.add(timer.timeoutAfter(opts_.call_timeout_ms * kj::MILLISECONDS, send(*cap))
                     .then(
                         [once, peer, sent](result<T>&& r) {
                           observe_answer(peer, sent);
                           (*once)(std::move(r));
                         },
                         [once, peer](kj::Exception&& e) {
                           metrics::node().rpc_errors.add(peer);
                           (*once)(unavailable(peer, e.getDescription().cStr()));
                         }));
  });
}

template <class T, class Send>
result<T> rpc_node::call(const std::string& peer, std::chrono::milliseconds timeout, Send send) {
  gather<T> g({1});
  start_call<T>(peer, send, g.slot(0, 0));
  auto answer = g.take(1, mono::now() + timeout);
  if (!answer[0][0]) return status{errc::timeout, "The request could not be processed in a reasonable amount of time."};
  return std::move(*answer[0][0]);
}

template <class Fill>
status rpc_node::call_status(const std::string& peer, std::chrono::milliseconds timeout, Fill fill) {
  auto r = call<bool>(peer, timeout, [fill](Node::Client& cap) {
    return fill(cap).send().then([](auto&& answer) -> result<bool> {
      if (status st = status_of(answer.getStatus()); !st) return st;
      return true;
    });
  });
  return r ? status{} : r.error();
}

void rpc_node::summary(const std::string& node, const std::string& db, const std::string& range,
                       answer<shard_summary> done) {
  start_call<shard_summary>(
      node,
      [=](Node::Client& cap) {
        auto req = cap.shardInfoRequest();
        set_shard(req.initShard(), db, range);
        return req.send().then([](capnp::Response<Node::ShardInfoResults>&& r) -> result<shard_summary> {
          if (status st = status_of(r.getStatus()); !st) return st;
          return shard_summary{r.getUuid(),         r.getUpdateSeq(), r.getDocCount(), r.getDocDelCount(),
                               r.getExternalSize(), r.getFileSize(),  r.getRevsLimit()};
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
          auto bins = r.getBins();
          if (bins.getVersion() == time_seq::version && bins.getTimes().size() == bins.getSeqs().size()) {
            for (unsigned i = 0; i < bins.getTimes().size(); ++i)
              out.bins.bins.push_back({bins.getTimes()[i], bins.getSeqs()[i]});
            out.bins.reset_seq = bins.getResetSeq();
            out.bins.reset_until = bins.getResetUntil();
          }
          return out;
        });
      },
      std::move(done));
}

bool rpc_node::typed(const std::string& node) const {
  return members_.has_feature(node, typed_feature);
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

bool rpc_node::runs_tasks(const std::string& node) const {
  return members_.has_feature(node, tasks_feature);
}

status rpc_node::compact_db(const std::string& node, const std::string& db, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.compactDbRequest();
    req.setDb(db);
    return req;
  });
}

result<std::vector<std::string>> rpc_node::active_tasks(const std::string& node, std::chrono::milliseconds timeout) {
  return call<std::vector<std::string>>(node, timeout, [=](Node::Client& cap) {
    return cap.activeTasksRequest().send().then(
        [](capnp::Response<Node::ActiveTasksResults>&& r) -> result<std::vector<std::string>> {
          if (status st = status_of(r.getStatus()); !st) return st;
          std::vector<std::string> out;
          for (auto t : r.getTasks()) out.emplace_back(t);
          return out;
        });
  });
}

result<node_status> rpc_node::status_of_node(const std::string& node, std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, node_status_feature))
    return status{errc::not_implemented, node + " does not report its figures (an older release)"};
  return call<node_status>(node, timeout, [=](Node::Client& cap) {
    return cap.nodeStatusRequest().send().then([](capnp::Response<Node::NodeStatusResults>&& r) -> result<node_status> {
      if (status st = status_of(r.getStatus()); !st) return st;
      auto n = r.getNode();
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
    });
  });
}

result<reshard_state> rpc_node::reshard_state_of(const std::string& node, const std::optional<reshard_state>& set,
                                                 std::chrono::milliseconds timeout) {
  if (!members_.has_feature(node, members_feature))
    return status{errc::not_implemented, node + " runs a release that cannot be asked for its resharding state"};
  return call<reshard_state>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.reshardStateRequest();
    req.setSet(set.has_value());
    if (set) {
      req.setRunning(set->running);
      req.setReason(set->reason);
    }
    return req.send().then([](capnp::Response<Node::ReshardStateResults>&& r) -> result<reshard_state> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return reshard_state{r.getRunning(), r.getReason()};
    });
  });
}

result<std::vector<split_job>> rpc_node::reshard_jobs(const std::string& node, std::chrono::milliseconds timeout) {
  using list = std::vector<split_job>;
  return call<list>(node, timeout, [=](Node::Client& cap) {
    return cap.reshardJobsRequest().send().then([](capnp::Response<Node::ReshardJobsResults>&& r) -> result<list> {
      if (status st = status_of(r.getStatus()); !st) return st;
      list out;
      for (auto j : r.getJobs()) out.push_back(read_job(j));
      return out;
    });
  });
}

status rpc_node::edit_reshard_job(const std::string& node, const std::string& id, bool remove, const reshard_state& s,
                                  std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.editReshardJobRequest();
    req.setId(id);
    req.setRemove(remove);
    req.setRunning(s.running);
    req.setReason(s.reason);
    return req;
  });
}

result<split_job> rpc_node::new_reshard_job(const std::string& node, const new_job& j,
                                            std::chrono::milliseconds timeout) {
  return call<split_job>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.newReshardJobRequest();
    auto b = req.initJob();
    b.setType(j.type);
    b.setDb(j.db);
    b.setShard(j.shard);
    b.setSuffix(j.suffix);
    b.setLeader(j.leader);
    b.setSource(j.source);
    return req.send().then([](capnp::Response<Node::NewReshardJobResults>&& r) -> result<split_job> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return read_job(r.getMade());
    });
  });
}

result<std::string> rpc_node::export_changes(const std::string& node, const std::string& db, const std::string& range,
                                             uint64_t since, bool with_local, std::chrono::milliseconds timeout) {
  return call<std::string>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.exportChangesRequest();
    set_shard(req.initShard(), db, range);
    req.setSince(since);
    req.setWithLocal(with_local);
    return req.send().then([](capnp::Response<Node::ExportChangesResults>&& r) -> result<std::string> {
      if (status st = status_of(r.getStatus()); !st) return st;
      auto bytes = r.getBatch();
      return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
    });
  });
}

result<uint64_t> rpc_node::seal_copy(const std::string& node, const std::string& db, const std::string& range,
                                     bool seal, std::chrono::milliseconds timeout) {
  return call<uint64_t>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.sealCopyRequest();
    set_shard(req.initShard(), db, range);
    req.setSeal(seal);
    return req.send().then([](capnp::Response<Node::SealCopyResults>&& r) -> result<uint64_t> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return r.getUpdateSeq();
    });
  });
}

status rpc_node::retire_copy(const std::string& node, const std::string& db, const std::string& shard, uint64_t end_seq,
                             bool remove, std::chrono::milliseconds timeout) {
  return call_status(node, timeout, [=](Node::Client& cap) {
    auto req = cap.retireCopyRequest();
    req.setDb(db);
    req.setShardId(shard);
    req.setEndSeq(end_seq);
    req.setRemove(remove);
    return req;
  });
}

result<std::string> rpc_node::create_job(const std::string& node, const std::string& body,
                                         std::chrono::milliseconds timeout) {
  return call<std::string>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.createJobRequest();
    req.setBody(body);
    return req.send().then([](capnp::Response<Node::CreateJobResults>&& r) -> result<std::string> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return std::string(r.getJob());
    });
  });
}

result<std::pair<uint64_t, std::string>> rpc_node::split_seal(const std::string& node, const std::string& db,
                                                              const std::string& shard,
                                                              std::chrono::milliseconds timeout) {
  return call<std::pair<uint64_t, std::string>>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.splitSealRequest();
    req.setDb(db);
    req.setShardId(shard);
    return req.send().then([](capnp::Response<Node::SplitSealResults>&& r) -> result<std::pair<uint64_t, std::string>> {
      if (status st = status_of(r.getStatus()); !st) return st;
      return std::make_pair(r.getEndSeq(), std::string(r.getUuid()));
    });
  });
}

result<std::pair<int, std::string>> rpc_node::reshard_request(const std::string& node, const std::string& method,
                                                              const std::string& id, bool state,
                                                              const std::string& body,
                                                              std::chrono::milliseconds timeout) {
  return call<std::pair<int, std::string>>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.reshardRequestRequest();
    req.setMethod(method);
    req.setId(id);
    req.setState(state);
    req.setBody(body);
    return req.send().then([](capnp::Response<Node::ReshardRequestResults>&& r) -> result<std::pair<int, std::string>> {
      return std::make_pair(static_cast<int>(r.getCode()), std::string(r.getBody()));
    });
  });
}

bool rpc_node::serves_db_updates(const std::string& node) const {
  return members_.has_feature(node, db_updates_feature);
}

result<log_page> rpc_node::db_updates(const std::string& node, const std::string& uuid, uint64_t seq, size_t limit,
                                      std::chrono::milliseconds timeout) {
  return call<log_page>(node, timeout, [=](Node::Client& cap) {
    auto req = cap.dbUpdatesRequest();
    req.setUuid(uuid);
    req.setSeq(seq);
    req.setLimit(static_cast<uint32_t>(std::min<size_t>(limit, UINT32_MAX)));
    return req.send().then([](capnp::Response<Node::DbUpdatesResults>&& r) -> result<log_page> {
      if (status st = status_of(r.getStatus()); !st) return st;
      log_page page;
      page.uuid = r.getUuid();
      page.top = r.getTop();
      for (auto row : r.getRows()) {
        page.rows.emplace_back(row.getSeq(), db_update_row{row.getDb(), "updated", row.getInstance(), row.getTime()});
      }
      return page;
    });
  });
}

}  // namespace settee
